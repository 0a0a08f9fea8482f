//! HTTP/2 (RFC 9113) without I/O. So far its header compression, HPACK (`hpack`):
//! the sans-IO connection (frames in, events and frames out) builds on it, and the
//! Python-facing shell drives that connection as it drives the HTTP/1.1 core.

pub mod hpack;
