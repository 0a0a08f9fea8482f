//! Request figures for the Prometheus endpoint: responses by route and status, and
//! a latency histogram by route, counted in the core when metrics are on.
//!
//! One lock per response (uncontended: the loop is single threaded), a few adds.
//! Routes are the router's indices; the slot after the last route counts what no
//! route matched (404, 405, requests the parser refused, shed ones answered first).
//! A hosted app's responses go to named slots after those (`named`): its
//! framework's path template, or the request method.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyList;

/// Upper bounds of the latency buckets, in seconds (Prometheus `le`), before `+Inf`.
pub const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

const BUCKET_NS: [u64; 14] = [
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

#[derive(Default, Clone)]
struct RouteStats {
    /// (status, responses), few per route: a short vector beats a map.
    by_status: Vec<(u16, u64)>,
    /// Responses per bucket (not cumulative); the last one is `+Inf`.
    buckets: [u64; BUCKETS.len() + 1],
    sum_ns: u64,
    count: u64,
}

/// Named slots at most: an app whose templates never repeat (or a fallback label
/// that varies) cannot grow the figures without bound; the rest count as unmatched.
pub const MAX_NAMED: usize = 1000;

pub struct Metrics {
    routes: Mutex<Vec<RouteStats>>,
    /// The slot of what no route matched (after the routes).
    unmatched: usize,
    /// Named slots (after `unmatched`), by name, and their names in slot order.
    names: Mutex<(HashMap<String, usize>, Vec<String>)>,
}

/// What a slot of `Metrics::snapshot` counts.
pub enum Label<'a> {
    Route(usize),
    Unmatched,
    Named(&'a str),
}

impl Metrics {
    pub fn new(route_count: usize) -> Self {
        Metrics {
            routes: Mutex::new(vec![RouteStats::default(); route_count + 1]),
            unmatched: route_count,
            names: Mutex::new((HashMap::new(), Vec::new())),
        }
    }

    /// The slot named `name` (made on first use; past `MAX_NAMED`, the unmatched one).
    pub fn named(&self, name: &str) -> usize {
        let mut names = self
            .names
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(&slot) = names.0.get(name) {
            return slot;
        }
        if names.1.len() >= MAX_NAMED {
            return self.unmatched;
        }
        let slot = self.unmatched + 1 + names.1.len();
        names.0.insert(name.to_owned(), slot);
        names.1.push(name.to_owned());
        self.routes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(RouteStats::default());
        slot
    }

    /// Counts one response: `route` is the router's index or a named slot, None
    /// when none matched.
    pub fn observe(&self, route: Option<usize>, status: u16, duration: Duration) {
        let mut routes = self
            .routes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let index = route
            .filter(|&r| r < routes.len())
            .unwrap_or(self.unmatched);
        let slot = &mut routes[index];
        match slot.by_status.iter_mut().find(|(s, _)| *s == status) {
            Some((_, n)) => *n += 1,
            None => slot.by_status.push((status, 1)),
        }
        let ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BUCKET_NS
            .iter()
            .position(|&le| ns <= le)
            .unwrap_or(BUCKET_NS.len());
        slot.buckets[bucket] += 1;
        slot.sum_ns = slot.sum_ns.saturating_add(ns);
        slot.count += 1;
    }

    /// `[(label, [(status, count)], [bucket counts], sum seconds, count)]` for every
    /// slot that answered at least once; `label` names a slot (`Label`).
    pub fn snapshot<'py>(
        &self,
        py: Python<'py>,
        label: impl Fn(Label<'_>) -> Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let routes = self
            .routes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let names = self
            .names
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .1
            .clone();
        let out = PyList::empty(py);
        for (index, stats) in routes.iter().enumerate() {
            if stats.count == 0 {
                continue;
            }
            #[allow(clippy::cast_precision_loss)] // nanoseconds as seconds: f64 is plenty
            let sum = stats.sum_ns as f64 / 1e9;
            let which = match index.cmp(&self.unmatched) {
                std::cmp::Ordering::Less => Label::Route(index),
                std::cmp::Ordering::Equal => Label::Unmatched,
                std::cmp::Ordering::Greater => Label::Named(&names[index - self.unmatched - 1]),
            };
            out.append((
                label(which),
                stats.by_status.clone(),
                stats.buckets.to_vec(),
                sum,
                stats.count,
            ))?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_statuses() {
        let m = Metrics::new(2);
        m.observe(Some(0), 200, Duration::from_micros(300));
        m.observe(Some(0), 200, Duration::from_millis(3));
        m.observe(Some(0), 500, Duration::from_secs(20));
        m.observe(None, 404, Duration::ZERO);
        m.observe(Some(9), 404, Duration::ZERO); // out of range counts as unmatched
        let routes = m.routes.lock().unwrap();
        let r0 = &routes[0];
        assert_eq!(r0.by_status, vec![(200, 2), (500, 1)]);
        assert_eq!(r0.buckets[0], 1); // <= 0.5 ms
        assert_eq!(r0.buckets[3], 1); // <= 5 ms
        assert_eq!(r0.buckets[BUCKETS.len()], 1); // +Inf
        assert_eq!(r0.count, 3);
        assert_eq!(routes[2].by_status, vec![(404, 2)]);
        assert_eq!(routes[1].count, 0);
    }

    #[test]
    fn named_slots_follow_the_routes_and_are_bounded() {
        let m = Metrics::new(1);
        let items = m.named("/items/{id}");
        assert_eq!(items, 2);
        assert_eq!(m.named("GET"), 3);
        assert_eq!(m.named("/items/{id}"), items);
        m.observe(Some(items), 200, Duration::ZERO);
        for i in 0..MAX_NAMED {
            m.named(&format!("/n{i}"));
        }
        assert_eq!(m.named("/one-too-many"), 1); // the unmatched slot
        let routes = m.routes.lock().unwrap();
        assert_eq!(routes[items].by_status, vec![(200, 1)]);
        assert_eq!(routes.len(), 2 + MAX_NAMED);
    }
}
