//! The HTTP router: a segment trie built once at startup, matched per request.
//!
//! Theory. Every pattern is a list of segments (see `params.rs`). Patterns
//! with the same *shape* (same static text and the same parameter kinds at the
//! same positions; names may differ) end at the same trie node, so a conflict is
//! two routes on one node whose method sets overlap, and disjoint method sets on
//! one node are how GET and POST share a path.
//!
//! Matching walks the request path one segment at a time, depth first, trying
//! the children of a node in a fixed priority: static, then `int`, then `str`,
//! then `path`. When a branch fails deeper down, the walk backtracks and tries
//! the next one. The trie is a tree and each depth consumes a fixed segment of
//! the path, so one lookup visits each node at most once, and the recursion is
//! only as deep as the longest pattern, whatever the request looks like.
//!
//! Methods. The first route, in that priority order, whose method set contains
//! the request method wins. HEAD is served by a GET route unless a route of
//! the same shape lists HEAD itself. If the path matches routes but none
//! allows the method, the answer is 405 with an Allow value: the union of the
//! methods of every matching route (HEAD wherever GET is), sorted
//! alphabetically and joined with ", ". Method names are compared exactly (they
//! are case-sensitive in HTTP); a method no route lists is simply not allowed.
//!
//! Trailing slashes are strict: "/items" and "/items/" are different paths, a
//! pattern ending in '/' matches only paths ending in '/', and nothing
//! redirects. A redirect policy is the application's business; silently
//! treating the two as one would give one resource two URLs.
//!
//! Percent-encoding. Each request segment is decoded before it is compared with
//! static text or returned as a parameter, so `%2F` stays inside its segment.
//! A path with an invalid escape (`%zz`, a truncated `%4`) or that decodes to
//! invalid UTF-8 matches nothing and is reported as `NotFound`: no route can
//! claim such a path, and keeping `Lookup` to three answers keeps the protocol
//! layer simple. The caller passes the path without its query string.
//!
//! Static routes. A pattern without parameters is also kept in a hash map by its
//! path. A request path without `%` that is a key there, on a node with a route for
//! the method, is answered from the map: the walk would reach the same node (static
//! children come first at every depth) and pick the same route. Anything else (an
//! escape, another method, a miss) takes the walk, so the answers are the walk's.
//!
//! Nothing needs freezing: every add leaves the structures ready for lookup
//! (static keys computed, implicit HEADs and Allow values rendered), so lookups
//! between adds are correct too. Routes are stored as the caller's indices; the handlers stay
//! in Python.

use std::borrow::Cow;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

pub use super::error::RouteError;
use super::params::{self, split_segment, Kind, ParamValue, Segment, Statics};

/// Node 0 is the root, which stands for the '/' every path starts with.
const ROOT: usize = 0;
/// GET and HEAD are interned first so that their bits are known constants
/// (needed for the implicit HEAD) and the commonest lookup compares once.
const GET: u64 = 1;
const HEAD: u64 = 1 << 1;
/// Method sets are `u64` masks over the router's method table.
const MAX_METHODS: usize = 64;

/// The answer to one request.
#[derive(Debug, PartialEq)]
pub enum Lookup<'a> {
    /// `params` are in the order they appear in the pattern.
    Found {
        route: usize,
        params: Vec<ParamValue<'a>>,
    },
    NotFound,
    /// `allow` is the value for the Allow header, e.g. "GET, HEAD, POST".
    MethodNotAllowed {
        allow: &'a str,
    },
}

/// One registered route, for listing (`veter routes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteInfo<'a> {
    /// The methods given to `add`, sorted alphabetically (no implicit HEAD).
    pub methods: Vec<&'a str>,
    pub pattern: &'a str,
    pub route: usize,
}

#[derive(Debug)]
pub struct Router {
    /// The trie; nodes refer to each other by index into this vector.
    nodes: Vec<Node>,
    /// Bit `i` of every method mask stands for `methods[i]`.
    methods: Vec<Box<str>>,
    /// Every successful `add`, in registration order.
    entries: Vec<Entry>,
    /// Parameter names per caller route index, sorted by index.
    names: Vec<(usize, Vec<String>)>,
    /// Allow values for paths matching routes of several shapes.
    unions: AllowUnions,
    /// The node of every pattern without parameters, by its path.
    exact: FxHashMap<Box<[u8]>, usize>,
}

#[derive(Debug, Default)]
struct Node {
    statics: Statics,
    int_child: Option<usize>,
    str_child: Option<usize>,
    /// A `path` child is always a leaf: it takes the rest of the path.
    path_child: Option<usize>,
    /// The routes whose pattern ends here; their explicit methods are disjoint.
    endpoints: Vec<Endpoint>,
    /// Union of the endpoints' effective methods, and its rendered Allow value.
    allow_mask: u64,
    allow: Box<str>,
}

#[derive(Debug, Clone, Copy)]
struct Endpoint {
    route: usize,
    /// Index into `Router::entries`, for conflict messages.
    entry: usize,
    explicit: u64,
    /// `explicit` plus HEAD when it has GET and no endpoint here has HEAD.
    effective: u64,
}

#[derive(Debug)]
struct Entry {
    pattern: String,
    methods: u64,
    route: usize,
}

impl Default for Router {
    fn default() -> Self {
        Self::new()
    }
}

impl Router {
    #[must_use]
    pub fn new() -> Self {
        Self {
            nodes: vec![Node::default()],
            methods: vec!["GET".into(), "HEAD".into()],
            entries: Vec::new(),
            names: Vec::new(),
            unions: AllowUnions::default(),
            exact: FxHashMap::default(),
        }
    }

    /// Registers `pattern` for `methods` (upper-case method names) as the
    /// caller's `route` index. On error the router is left unchanged.
    ///
    /// One route index may be added for several patterns (one handler on two
    /// paths) as long as every pattern has the same parameter names in the
    /// same order, because `param_names` answers per index.
    ///
    /// # Errors
    ///
    /// `InvalidPattern` for a pattern that breaks a rule in `params.rs`, an
    /// empty or malformed method list, more than 64 distinct methods in the
    /// router, or a reused route index with other parameter names;
    /// `Conflict` for a route of the same shape sharing a method.
    pub fn add(&mut self, methods: &[&str], pattern: &str, route: usize) -> Result<(), RouteError> {
        let invalid = |reason: String| RouteError::InvalidPattern {
            pattern: pattern.to_owned(),
            reason,
        };
        let segments = params::parse_pattern(pattern).map_err(invalid)?;
        let (mask, new_methods) = self.method_mask(methods).map_err(invalid)?;

        if let Some(node) = self.find_node(&segments) {
            for endpoint in &self.nodes[node].endpoints {
                let overlap = endpoint.explicit & mask;
                if overlap != 0 {
                    return Err(RouteError::Conflict {
                        existing: self.entries[endpoint.entry].pattern.clone(),
                        new: pattern.to_owned(),
                        methods: self.method_names(overlap).map(str::to_owned).collect(),
                    });
                }
            }
        }

        let names: Vec<String> = segments
            .iter()
            .filter_map(|segment| match segment {
                Segment::Param { name, .. } => Some(name.clone()),
                Segment::Static(_) => None,
            })
            .collect();
        let names_slot = self.names.binary_search_by_key(&route, |(r, _)| *r);
        if let Ok(i) = names_slot {
            if self.names[i].1 != names {
                let other = self.entries.iter().find(|e| e.route == route);
                let other = other.map_or("", |e| e.pattern.as_str());
                return Err(invalid(format!(
                    "route index {route} is already used by {other:?}, whose parameter \
                     names differ; one index needs one list of names"
                )));
            }
        }

        // Every check has passed: from here on nothing fails.
        self.methods.extend(new_methods.into_iter().map(Box::from));
        let mut node = ROOT;
        let mut path = Some(String::new());
        for segment in &segments {
            node = self.child_or_insert(node, segment);
            path = match (path, segment) {
                (Some(mut path), Segment::Static(text)) => {
                    path.push('/');
                    path.push_str(text);
                    Some(path)
                }
                _ => None,
            };
        }
        if let Some(path) = path {
            self.exact.insert(path.into_bytes().into(), node);
        }
        let entry = self.entries.len();
        self.entries.push(Entry {
            pattern: pattern.to_owned(),
            methods: mask,
            route,
        });
        self.nodes[node].endpoints.push(Endpoint {
            route,
            entry,
            explicit: mask,
            effective: mask,
        });
        self.refresh_methods(node);
        if let Err(i) = names_slot {
            self.names.insert(i, (route, names));
        }
        Ok(())
    }

    /// The parameter names of `route` in pattern order; empty for an index
    /// that was never added.
    pub fn param_names(&self, route: usize) -> &[String] {
        match self.names.binary_search_by_key(&route, |(r, _)| *r) {
            Ok(i) => &self.names[i].1,
            Err(_) => &[],
        }
    }

    /// Every route in registration order.
    pub fn routes(&self) -> impl Iterator<Item = RouteInfo<'_>> + '_ {
        self.entries.iter().map(|entry| RouteInfo {
            methods: self.method_names(entry.methods).collect(),
            pattern: &entry.pattern,
            route: entry.route,
        })
    }

    /// The route of a pattern without parameters that `path` (raw bytes, the path
    /// only) is, if it has one for `method`: `lookup` would answer the same (see
    /// the module docs), and neither needs to be UTF-8 checked first. `None` says
    /// nothing: ask `lookup`.
    // A byte loop, measured: paths are short, and `contains` (a memchr) costs ~25
    // instructions more per request here.
    #[allow(clippy::manual_contains)]
    pub fn exact(&self, method: &[u8], path: &[u8]) -> Option<usize> {
        if path.iter().any(|&b| b == b'%') {
            return None;
        }
        let node = *self.exact.get(path)?;
        let bit = self.method_bit(method);
        let endpoints = &self.nodes[node].endpoints;
        endpoints
            .iter()
            .find(|e| e.effective & bit != 0)
            .map(|e| e.route)
    }

    fn method_bit(&self, method: &[u8]) -> u64 {
        // `GET` is always bit 0 (`new`, and `add` only appends): compared with a
        // constant it is a few instructions, where the loop's slice compare is a
        // `bcmp` call (~13 instructions more per GET, callgrind, pipelined).
        debug_assert_eq!(&*self.methods[0], "GET");
        if method == b"GET" {
            return 1;
        }
        self.methods
            .iter()
            .position(|m| m.as_bytes() == method)
            .map_or(0, |i| 1 << i)
    }

    /// Finds the route for `method` and `path` (the path only, no query).
    pub fn lookup<'a>(&'a self, method: &str, path: &'a str) -> Lookup<'a> {
        let Some(rest) = path.strip_prefix('/') else {
            return Lookup::NotFound;
        };
        let bit = self.method_bit(method.as_bytes());
        let mut search = Search {
            nodes: &self.nodes,
            bit,
            params: Vec::new(),
            allowed: 0,
            first: None,
        };
        if let Some(route) = search.walk(ROOT, Some(rest)) {
            return Lookup::Found {
                route,
                params: search.params,
            };
        }
        match search.first {
            None => Lookup::NotFound,
            // The usual case: one shape matched, its Allow was rendered at add.
            Some(node) if node.allow_mask == search.allowed => {
                Lookup::MethodNotAllowed { allow: &node.allow }
            }
            Some(_) => Lookup::MethodNotAllowed {
                allow: self.unions.get(search.allowed, &self.methods),
            },
        }
    }

    /// The mask for `methods`, and the names not yet in the method table (in
    /// the order their bits will get), without touching the table.
    fn method_mask<'m>(&self, methods: &[&'m str]) -> Result<(u64, Vec<&'m str>), String> {
        if methods.is_empty() {
            return Err("no HTTP method given".to_owned());
        }
        let mut mask = 0;
        let mut new: Vec<&str> = Vec::new();
        for &method in methods {
            let valid = !method.is_empty()
                && method.bytes().all(|b| {
                    b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-' || b == b'_'
                });
            if !valid {
                return Err(format!(
                    "invalid method {method:?}: methods are upper-case tokens such as \"GET\""
                ));
            }
            // Known methods keep their bit; new ones get the next free bits.
            let mut known = self.methods.iter().map(|m| &**m).chain(new.iter().copied());
            let index = known.position(|m| m == method).unwrap_or_else(|| {
                new.push(method);
                self.methods.len() + new.len() - 1
            });
            if index >= MAX_METHODS {
                return Err(format!(
                    "more than {MAX_METHODS} distinct methods in one router"
                ));
            }
            mask |= 1 << index;
        }
        Ok((mask, new))
    }

    /// The names of the methods in `mask`, sorted alphabetically.
    fn method_names(&self, mask: u64) -> impl Iterator<Item = &str> {
        sorted_names(&self.methods, mask).into_iter()
    }

    /// The node where `segments` end, if it exists; never creates one.
    fn find_node(&self, segments: &[Segment]) -> Option<usize> {
        segments.iter().try_fold(ROOT, |node, segment| {
            let node = &self.nodes[node];
            match segment {
                Segment::Static(text) => node.statics.get(text),
                Segment::Param { kind, .. } => node.param_child(*kind),
            }
        })
    }

    fn child_or_insert(&mut self, node: usize, segment: &Segment) -> usize {
        let fresh = self.nodes.len();
        let parent = &mut self.nodes[node];
        let child = match segment {
            Segment::Static(text) => {
                if let Some(child) = parent.statics.get(text) {
                    return child;
                }
                parent.statics.push(text, fresh);
                fresh
            }
            Segment::Param { kind, .. } => *parent.param_child_mut(*kind).get_or_insert(fresh),
        };
        if child == fresh {
            self.nodes.push(Node::default());
        }
        child
    }

    /// Recomputes the implicit HEAD and the Allow value of `node`.
    fn refresh_methods(&mut self, node: usize) {
        let node = &mut self.nodes[node];
        let explicit_head = node.endpoints.iter().any(|e| e.explicit & HEAD != 0);
        let mut union = 0;
        for endpoint in &mut node.endpoints {
            endpoint.effective = endpoint.explicit;
            if !explicit_head && endpoint.explicit & GET != 0 {
                endpoint.effective |= HEAD;
            }
            union |= endpoint.effective;
        }
        node.allow_mask = union;
        node.allow = render_allow(&self.methods, union);
    }
}

impl Node {
    fn param_child(&self, kind: Kind) -> Option<usize> {
        match kind {
            Kind::Int => self.int_child,
            Kind::Str => self.str_child,
            Kind::Path => self.path_child,
        }
    }

    fn param_child_mut(&mut self, kind: Kind) -> &mut Option<usize> {
        match kind {
            Kind::Int => &mut self.int_child,
            Kind::Str => &mut self.str_child,
            Kind::Path => &mut self.path_child,
        }
    }
}

/// The state of one lookup's depth-first walk.
struct Search<'a> {
    nodes: &'a [Node],
    /// The request method's bit, or 0 if no route lists it.
    bit: u64,
    /// Values captured on the current branch; popped when it is abandoned.
    params: Vec<ParamValue<'a>>,
    /// Union of the methods of every node the path matched, for the 405.
    allowed: u64,
    first: Option<&'a Node>,
}

impl<'a> Search<'a> {
    /// `rest` is what follows the '/' after the segments matched so far, or
    /// `None` once the path is used up. Returns the winning route.
    fn walk(&mut self, index: usize, rest: Option<&'a str>) -> Option<usize> {
        let node = &self.nodes[index];
        let Some(rest) = rest else {
            return self.at_end(node);
        };
        if !node.statics.is_empty() || node.int_child.is_some() || node.str_child.is_some() {
            let (raw, next, escaped) = split_segment(rest);
            let segment = if escaped {
                // An invalid escape fails every branch from here, the path
                // child's too (it decodes a rest that contains this segment).
                params::percent_decode(raw)?
            } else {
                Cow::Borrowed(raw)
            };
            if let Some(child) = node.statics.get(&segment) {
                if let Some(route) = self.walk(child, next) {
                    return Some(route);
                }
            }
            if let Some(child) = node.int_child {
                if let Some(value) = params::parse_int(&segment) {
                    if let Some(route) = self.descend(ParamValue::Int(value), child, next) {
                        return Some(route);
                    }
                }
            }
            if let Some(child) = node.str_child {
                if !segment.is_empty() {
                    if let Some(route) = self.descend(ParamValue::Str(segment), child, next) {
                        return Some(route);
                    }
                }
            }
        }
        if let Some(child) = node.path_child {
            if !rest.is_empty() {
                let value = params::percent_decode(rest)?;
                return self.descend(ParamValue::Str(value), child, None);
            }
        }
        None
    }

    fn descend(
        &mut self,
        value: ParamValue<'a>,
        child: usize,
        rest: Option<&'a str>,
    ) -> Option<usize> {
        self.params.push(value);
        let found = self.walk(child, rest);
        if found.is_none() {
            self.params.pop();
        }
        found
    }

    /// The path ends at `node`: pick its route for the method, or note its
    /// methods for the Allow value.
    fn at_end(&mut self, node: &'a Node) -> Option<usize> {
        if let Some(endpoint) = node.endpoints.iter().find(|e| e.effective & self.bit != 0) {
            return Some(endpoint.route);
        }
        if !node.endpoints.is_empty() {
            self.allowed |= node.allow_mask;
            self.first.get_or_insert(node);
        }
        None
    }
}

fn sorted_names(methods: &[Box<str>], mask: u64) -> Vec<&str> {
    let mut names: Vec<&str> = (0..methods.len())
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| &*methods[i])
        .collect();
    names.sort_unstable();
    names
}

fn render_allow(methods: &[Box<str>], mask: u64) -> Box<str> {
    sorted_names(methods, mask).join(", ").into()
}

/// Allow values for paths that match routes of several shapes with different
/// method sets (`/users/me` and `/users/{id}`, say). Which unions occur depends
/// on the paths requested, and rendering every possible union at build time
/// could take 2^methods strings, so each union is rendered the first time it is
/// needed and kept. This is the one thing a lookup writes; `OnceLock` makes it
/// safe under concurrent lookups, and the list only ever grows by one entry per
/// distinct union, which the route table bounds. Entries never go stale: method
/// bits are only ever appended, so a mask always names the same methods.
#[derive(Debug, Default)]
struct AllowUnions {
    head: OnceLock<Box<Union>>,
}

#[derive(Debug)]
struct Union {
    mask: u64,
    allow: Box<str>,
    next: OnceLock<Box<Union>>,
}

impl AllowUnions {
    fn get(&self, mask: u64, methods: &[Box<str>]) -> &str {
        let mut slot = &self.head;
        loop {
            let union = slot.get_or_init(|| {
                Box::new(Union {
                    mask,
                    allow: render_allow(methods, mask),
                    next: OnceLock::new(),
                })
            });
            if union.mask == mask {
                return &union.allow;
            }
            slot = &union.next;
        }
    }
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
