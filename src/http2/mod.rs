//! HTTP/2 (RFC 9113), sans-IO: no sockets and no Python. Each stream is served by an
//! HTTP/1.1 connection of its own in the shell (`protocol/h2/`); `as_h1` writes the
//! request it reads and `answer` reads back the answer it writes.

pub mod answer;
pub mod as_h1;
