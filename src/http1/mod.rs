//! HTTP/1.1 without I/O: parsing requests, decoding bodies, encoding responses.

pub mod body;
pub mod encode;
pub mod error;
pub mod limits;
pub mod parse;
