//! HTTP/1.1 without I/O: parsing requests, decoding bodies, encoding responses
//! (and, for an HTTP/2 stream, a whole response as a `record`).

pub mod body;
pub mod encode;
pub mod error;
pub mod limits;
pub mod parse;
pub mod record;
