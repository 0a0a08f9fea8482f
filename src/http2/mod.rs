//! HTTP/2 (RFC 9113) without I/O: frames (`frame`), settings and limits
//! (`settings`), error codes (`error`), streams (`stream`), request checks
//! (`request`), flood limits (`flood`) and the server connection that ties them
//! together (`conn`, its theory at the top), over HPACK (`hpack`). Each stream is
//! served by an HTTP/1.1 connection of its own in the shell (`protocol/h2/`):
//! `as_h1` writes the request it reads and `answer` reads back the answer it writes
//! (a whole one as a record, `http1::record`, its fields already apart).

pub mod answer;
pub mod as_h1;
pub mod conn;
pub mod error;
pub mod flood;
pub mod frame;
pub mod hpack;
pub mod request;
pub mod settings;
pub mod stream;
pub mod upgrade;

pub use conn::{Connection, Event};
pub use error::ErrorCode;
pub use request::RequestHead;
pub use settings::Config;

#[cfg(test)]
mod bench_tests;
#[cfg(test)]
mod conn_tests;
#[cfg(test)]
mod flood_tests;
#[cfg(test)]
mod flow_tests;
#[cfg(test)]
mod frame_tests;
#[cfg(test)]
mod request_tests;
#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod testing;
