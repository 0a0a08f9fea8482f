//! The crate's unsafe code, and only here: calls into the interpreter that `PyO3` has no safe
//! wrapper for, one file per concern. Every block says why it holds (`// SAFETY:`),
//! and tests exercise it (results, errors, reference counts). The rest of the
//! crate denies `unsafe_code` (Cargo.toml); only this module allows it, and only
//! where a callgrind A/B showed it pays.
#![allow(unsafe_code)]

pub mod ascii_text;
pub mod context_var;
pub mod dict_next;
pub mod iter_send;
pub mod request_reuse;
