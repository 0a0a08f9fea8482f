//! The route of a request, looked up once: at its head, where it decides how the
//! body is read, and carried to the handler's call.

use crate::router::params::ParamValue;
use crate::router::tree::{Lookup, Router};

/// A route lookup kept beyond the input it was made from (a request whose body
/// arrives in later reads): the route is looked up once per request.
pub(super) enum Routed {
    Found {
        route: usize,
        params: Vec<ParamValue<'static>>,
    },
    NotFound,
    MethodNotAllowed {
        allow: String,
    },
}

impl Routed {
    pub(super) fn keep(lookup: Lookup<'_>) -> Self {
        match lookup {
            Lookup::Found { route, params } => Routed::Found {
                route,
                params: params.into_iter().map(ParamValue::into_owned).collect(),
            },
            Lookup::NotFound => Routed::NotFound,
            Lookup::MethodNotAllowed { allow } => Routed::MethodNotAllowed {
                allow: allow.to_owned(),
            },
        }
    }

    pub(super) fn lookup(&mut self) -> Lookup<'_> {
        match self {
            Routed::Found { route, params } => Lookup::Found {
                route: *route,
                params: std::mem::take(params),
            },
            Routed::NotFound => Lookup::NotFound,
            Routed::MethodNotAllowed { allow } => Lookup::MethodNotAllowed { allow },
        }
    }
}

/// The router's answer for a request head whose bytes are `head`: a pattern without
/// parameters straight from the bytes, anything else by the walk.
pub(super) fn route_for<'a>(
    router: &'a Router,
    head: &'a [u8],
    method: &std::ops::Range<usize>,
    path: &std::ops::Range<usize>,
) -> Lookup<'a> {
    let (method, path) = (&head[method.clone()], &head[path.clone()]);
    match router.exact(method, path) {
        Some(route) => Lookup::Found {
            route,
            params: Vec::new(),
        },
        // The parser only accepts visible ASCII in the method and target.
        None => router.lookup(
            std::str::from_utf8(method).unwrap_or(""),
            std::str::from_utf8(path).unwrap_or(""),
        ),
    }
}
