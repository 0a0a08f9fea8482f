//! HTTP/2 (RFC 9113), sans-IO: no sockets and no Python. `hpack` is its header
//! compression (RFC 7541). Each stream is served by an HTTP/1.1 connection of its
//! own in the shell (`protocol/h2/`); `as_h1` writes the request it reads and
//! `answer` reads back the answer it writes.

pub mod answer;
pub mod as_h1;
pub mod hpack;
