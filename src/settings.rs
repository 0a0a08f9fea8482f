//! The server settings the core reads, taken by attribute from a
//! `veter.config.ServerConfig`, where each one is declared, defaulted and checked
//! once (python/veter/options.py). Nothing here has a default of its own; the
//! `Dispatcher` still refuses values it cannot use (a timeout that is not finite).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::http1::limits::Limits;
use crate::timeouts::{self, Linger, Timeouts};

/// One field per `ServerConfig` attribute the core needs, by the same name.
#[derive(FromPyObject)]
#[allow(clippy::struct_excessive_bools)] // one field per setting
pub struct ServerSettings {
    pub server_header: Option<String>,
    pub keepalive_timeout: f64,
    pub header_timeout: f64,
    pub body_timeout: f64,
    pub write_timeout: f64,
    pub request_timeout: f64,
    pub linger_timeout: f64,
    pub linger_bytes: usize,
    pub max_concurrency: usize,
    pub max_connections: usize,
    pub queue_timeout: f64,
    pub max_start_line: usize,
    pub max_header_count: usize,
    pub max_header_bytes: usize,
    pub max_body_bytes: u64,
    pub max_chunk_ext_bytes: usize,
    pub max_trailer_bytes: usize,
    pub max_chunk_count: u64,
    pub max_pipelined: usize,
    pub request_id_header: Option<String>,
    pub access_log_format: String,
    pub proxy_headers: bool,
    pub forwarded_allow_ips: String,
    pub ssl_certfile: Option<String>,
    pub metrics_path: Option<String>,
    pub http2: bool,
    pub h2c: bool,
    pub http1: bool,
    pub h2c_upgrade: bool,
    pub h2_max_concurrent_streams: u32,
    pub h2_max_header_list_size: u32,
    pub h2_header_table_size: u32,
    pub h2_max_frame_size: u32,
    pub h2_initial_window_size: u32,
    pub h2_connection_window: u32,
    pub h2_max_continuation_frames: u32,
    pub h2_max_resets_per_second: u32,
    pub h2_max_control_frames_per_second: u32,
    pub h2_max_queued_control_bytes: usize,
}

impl ServerSettings {
    /// The connection timeouts, each a finite number of seconds (0 only where it means none).
    pub fn timeouts(&self) -> PyResult<Timeouts> {
        let required = |name: &str, value: f64| {
            timeouts::seconds(name, value, false)
                .map_err(PyValueError::new_err)?
                .ok_or_else(|| PyValueError::new_err(format!("{name} must be positive")))
        };
        Ok(Timeouts {
            keepalive: required("keepalive_timeout", self.keepalive_timeout)?,
            header: required("header_timeout", self.header_timeout)?,
            body: required("body_timeout", self.body_timeout)?,
            write: required("write_timeout", self.write_timeout)?,
            request: timeouts::seconds("request_timeout", self.request_timeout, true)
                .map_err(PyValueError::new_err)?,
        })
    }

    /// The lingering close, or None (a closing connection closes at once).
    pub fn linger(&self) -> PyResult<Option<Linger>> {
        let time = timeouts::seconds("linger_timeout", self.linger_timeout, true)
            .map_err(PyValueError::new_err)?;
        Ok(time.filter(|_| self.linger_bytes > 0).map(|time| Linger {
            time,
            bytes: self.linger_bytes,
        }))
    }

    /// HTTP/2's limits, or None when HTTP/2 is off.
    pub fn http2(&self) -> Option<crate::http2::settings::Config> {
        self.http2.then(|| crate::http2::settings::Config {
            max_concurrent_streams: self.h2_max_concurrent_streams,
            max_header_list_size: self.h2_max_header_list_size,
            header_table_size: self.h2_header_table_size,
            max_frame_size: self.h2_max_frame_size,
            initial_window_size: self.h2_initial_window_size,
            connection_window: self.h2_connection_window,
            max_continuation_frames: self.h2_max_continuation_frames,
            flood_window: std::time::Duration::from_secs(1),
            max_resets_per_window: self.h2_max_resets_per_second,
            max_control_frames_per_window: self.h2_max_control_frames_per_second,
            max_queued_control_bytes: self.h2_max_queued_control_bytes,
            ..crate::http2::settings::Config::default()
        })
    }

    /// The parser's limits.
    pub fn limits(&self) -> PyResult<Limits> {
        if self.max_chunk_count == 0 {
            // The last chunk counts, so 0 would refuse every chunked body.
            return Err(PyValueError::new_err("max_chunk_count must be at least 1"));
        }
        Ok(Limits {
            max_start_line: self.max_start_line,
            max_header_count: self.max_header_count,
            max_header_bytes: self.max_header_bytes,
            max_body_bytes: self.max_body_bytes,
            max_chunk_ext_bytes: self.max_chunk_ext_bytes,
            max_trailer_bytes: self.max_trailer_bytes,
            max_chunk_count: self.max_chunk_count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> ServerSettings {
        ServerSettings {
            server_header: Some("veter".into()),
            keepalive_timeout: 5.0,
            header_timeout: 10.0,
            body_timeout: 30.0,
            write_timeout: 30.0,
            request_timeout: 60.0,
            linger_timeout: 2.0,
            linger_bytes: 4 << 20,
            max_concurrency: 0,
            max_connections: 0,
            queue_timeout: 0.0,
            max_start_line: 8192,
            max_header_count: 100,
            max_header_bytes: 16384,
            max_body_bytes: 10 << 20,
            max_chunk_ext_bytes: 1024,
            max_trailer_bytes: 16384,
            max_chunk_count: 16384,
            max_pipelined: 64,
            request_id_header: Some("X-Request-ID".into()),
            access_log_format: "text".into(),
            proxy_headers: false,
            forwarded_allow_ips: "127.0.0.1,unix".into(),
            ssl_certfile: None,
            metrics_path: None,
            http2: true,
            h2c: true,
            http1: true,
            h2c_upgrade: true,
            h2_max_concurrent_streams: 100,
            h2_max_header_list_size: 16384,
            h2_header_table_size: 4096,
            h2_max_frame_size: 16384,
            h2_initial_window_size: 262_144,
            h2_connection_window: 1 << 20,
            h2_max_continuation_frames: 32,
            h2_max_resets_per_second: 200,
            h2_max_control_frames_per_second: 1000,
            h2_max_queued_control_bytes: 65536,
        }
    }

    #[test]
    fn timeouts_and_limits_come_from_the_settings() {
        let settings = defaults();
        let t = settings.timeouts().unwrap();
        assert_eq!(t.keepalive, std::time::Duration::from_secs(5));
        assert_eq!(t.request, Some(std::time::Duration::from_secs(60)));
        let l = settings.limits().unwrap();
        assert_eq!((l.max_start_line, l.max_chunk_count), (8192, 16384));
    }

    #[test]
    fn unusable_values_are_refused() {
        Python::initialize();
        let mut s = defaults();
        s.request_timeout = 0.0;
        assert_eq!(s.timeouts().unwrap().request, None); // 0: no deadline
        s.keepalive_timeout = 0.0;
        assert!(s.timeouts().is_err());
        s.keepalive_timeout = f64::NAN;
        assert!(s.timeouts().is_err());
        let mut s = defaults();
        s.max_chunk_count = 0;
        assert!(s.limits().is_err());
    }
}
