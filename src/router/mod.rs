//! Routing (method, path) to a route index; built once at startup.

pub mod error;
pub mod params;
pub mod tree;
