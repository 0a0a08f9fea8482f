//! Observing one request: its id and start (`Exchange`, made when it is routed), what
//! trusted proxies say of it, and, when its answer is sent, the metrics and the
//! access log line.

use std::time::Instant;

use pyo3::prelude::*;

use super::{Connection, Shared};
use crate::access::Entry;
use crate::http1::encode;
use crate::request::{self, Exchange};

impl Connection {
    /// The id and start of a request about to be routed (see `request_id.rs`).
    pub(super) fn exchange_for(&self, py: Python<'_>, parts: &request::Parts) -> Exchange {
        let disp = &*self.disp;
        let id = match &disp.request_ids {
            Some(ids) => {
                let head = &parts.buf.bind(py).as_bytes()[parts.base..];
                ids.id_for(parts.first_header(head, ids.header.as_bytes()))
            }
            None => crate::request_id::Id::Off,
        };
        Exchange {
            id,
            started: Some(self.core.last_activity),
            route: std::sync::atomic::AtomicUsize::new(request::NO_ROUTE),
            forwarded: if self.proxied {
                Self::forwarded(disp, py, parts)
            } else {
                None
            },
            secure: disp.secure,
        }
    }

    /// What a trusted proxy's headers say about this request (proxy.rs).
    #[cold]
    #[inline(never)]
    fn forwarded(
        disp: &Shared,
        py: Python<'_>,
        parts: &request::Parts,
    ) -> Option<Box<crate::proxy::Forwarded>> {
        let trust = disp.proxies.as_ref()?;
        let head = &parts.buf.bind(py).as_bytes()[parts.base..];
        let headers = parts
            .headers
            .iter()
            .map(|h| (&head[h.name.clone()], &head[h.value.clone()]));
        crate::proxy::resolve(trust, headers).map(Box::new)
    }

    /// Counts a response for the metrics and writes its access log line (each when on).
    #[inline] // with both off (the default), one check where it is called
    pub(super) fn record_response(
        &self,
        py: Python<'_>,
        parts: &request::Parts,
        exchange: &Exchange,
        sent: encode::Sent,
    ) {
        let disp = &*self.disp;
        if disp.metrics.is_some() || disp.access.is_some() {
            self.record_observed(py, parts, exchange, sent);
        }
    }

    #[inline(never)]
    fn record_observed(
        &self,
        py: Python<'_>,
        parts: &request::Parts,
        exchange: &Exchange,
        sent: encode::Sent,
    ) {
        let disp = &*self.disp;
        let now = Instant::now();
        let took = exchange
            .started
            .map_or_else(Default::default, |s| now.saturating_duration_since(s));
        if let Some(metrics) = &disp.metrics {
            metrics.observe(exchange.route(), sent.status, took);
        }
        let Some(access) = &disp.access else {
            return;
        };
        let head = &parts.buf.bind(py).as_bytes()[parts.base..];
        if access.skips(&head[parts.path.clone()]) {
            return;
        }
        // The wall clock was read with `clock.0`, usually when this request's bytes
        // came: then the time since is `took`, not a second subtraction.
        let since_clock = if exchange.started == Some(self.clock.0) {
            took
        } else {
            now.saturating_duration_since(self.clock.0)
        };
        let forwarded_client = exchange.forwarded.as_ref().and_then(|f| f.client_text());
        access.record(
            py,
            &Entry {
                client: forwarded_client.as_deref().unwrap_or(&self.client_text),
                method: &head[parts.method.clone()],
                target: &head[parts.target.clone()],
                version: parts.version_text(),
                status: sent.status,
                bytes: sent.body_bytes,
                duration: took,
                request_id: exchange.id_bytes(),
                wall: self.clock.1 + since_clock,
            },
        );
    }
}
