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
//! Nothing needs freezing: every add leaves the structures ready for lookup
//! (static keys computed, implicit HEADs and Allow values rendered), so lookups
//! between adds are correct too. Routes are stored as the caller's indices; the handlers stay
//! in Python.

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use super::params::{self, split_segment, Kind, ParamValue, Segment, Statics};

/// Node 0 is the root, which stands for the '/' every path starts with.
const ROOT: usize = 0;
/// GET and HEAD are interned first so that their bits are known constants
/// (needed for the implicit HEAD) and the commonest lookup compares once.
const GET: u64 = 1;
const HEAD: u64 = 1 << 1;
/// Method sets are `u64` masks over the router's method table.
const MAX_METHODS: usize = 64;

/// Why a route could not be added. Both messages are meant to be shown to the
/// user verbatim at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    /// The pattern (or the method list or route index given with it) breaks a rule.
    InvalidPattern { pattern: String, reason: String },
    /// `new` has the same shape as `existing` and shares `methods` with it.
    Conflict {
        existing: String,
        new: String,
        methods: Vec<String>,
    },
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidPattern { pattern, reason } => {
                write!(f, "invalid route pattern {pattern:?}: {reason}")
            }
            Self::Conflict {
                existing,
                new,
                methods,
            } => {
                let methods = methods.join(",");
                write!(
                    f,
                    "route conflict: {methods} {existing} overlaps {methods} {new}"
                )
            }
        }
    }
}

impl std::error::Error for RouteError {}

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
        for segment in &segments {
            node = self.child_or_insert(node, segment);
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

    /// Finds the route for `method` and `path` (the path only, no query).
    pub fn lookup<'a>(&'a self, method: &str, path: &'a str) -> Lookup<'a> {
        let Some(rest) = path.strip_prefix('/') else {
            return Lookup::NotFound;
        };
        let bit = self
            .methods
            .iter()
            .position(|m| **m == *method)
            .map_or(0, |i| 1 << i);
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
mod tests {
    use super::*;

    /// What a lookup should answer, in a form that fits on one table line.
    #[derive(Debug)]
    enum Want {
        F(usize, &'static [P]),
        N,
        M(&'static str),
    }

    #[derive(Debug)]
    enum P {
        S(&'static str),
        I(i64),
    }

    use Want::{F, M, N};
    use P::{I, S};

    impl Want {
        fn matches(&self, got: &Lookup<'_>) -> bool {
            match (self, got) {
                (F(route, want), Lookup::Found { route: r, params }) => {
                    route == r
                        && want.len() == params.len()
                        && want.iter().zip(params).all(|(w, g)| match (w, g) {
                            (S(w), ParamValue::Str(g)) => w == g,
                            (I(w), ParamValue::Int(g)) => w == g,
                            _ => false,
                        })
                }
                (N, Lookup::NotFound) => true,
                (M(want), Lookup::MethodNotAllowed { allow }) => want == allow,
                _ => false,
            }
        }
    }

    /// Checks every `(method, path, want)` and reports all failures at once.
    fn check(router: &Router, cases: &[(&str, &str, Want)]) {
        let failures: Vec<String> = cases
            .iter()
            .filter_map(|(method, path, want)| {
                let got = router.lookup(method, path);
                let bad = !want.matches(&got);
                bad.then(|| format!("{method} {path}: want {want:?}, got {got:?}"))
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Adds a route written as "GET,POST /pattern".
    fn add(router: &mut Router, spec: &str, route: usize) -> Result<(), RouteError> {
        let (methods, pattern) = spec.split_once(' ').unwrap();
        let methods: Vec<&str> = methods.split(',').filter(|m| !m.is_empty()).collect();
        router.add(&methods, pattern, route)
    }

    const TABLE: &[&str] = &[
        "GET /",                       // 0
        "GET /items",                  // 1
        "GET /items/",                 // 2
        "GET,POST /users",             // 3
        "GET /users/me",               // 4
        "GET /users/{id:int}",         // 5
        "GET /users/{name}",           // 6
        "DELETE /users/{id:int}",      // 7
        "GET /users/{name}/posts",     // 8
        "GET /files/{rest:path}",      // 9
        "GET /files/readme",           // 10
        "GET /a/{x}/c",                // 11
        "GET /a/b/d",                  // 12
        "GET /n/{v:int}/x",            // 13
        "GET /n/{s}/y",                // 14
        "GET /caf%C3%A9",              // 15
        "HEAD /head-only",             // 16
        "GET /explicit-head",          // 17
        "HEAD /explicit-head",         // 18
        "PUT /mix/{x}",                // 19
        "GET /mix/static",             // 20
        "PROPFIND /dav/{p:path}",      // 21
        "GET /s/{a}/{b:int}/{c:path}", // 22
        "GET /prefix-shared-1",        // 23
        "GET /prefix-shared-2",        // 24
        "GET /abcdefg",                // 25
        "GET /abcdefgh",               // 26
    ];

    fn table() -> Router {
        let mut router = Router::new();
        for (route, spec) in TABLE.iter().enumerate() {
            add(&mut router, spec, route).unwrap();
        }
        router
    }

    #[test]
    fn lookups() {
        let cases: &[(&str, &str, Want)] = &[
            // static, root, trailing slash strictness
            ("GET", "/", F(0, &[])),
            ("GET", "/items", F(1, &[])),
            ("GET", "/items/", F(2, &[])),
            ("GET", "/users/", N),
            ("GET", "/users/42/", N),
            ("GET", "/items/extra", N),
            ("GET", "/nothing", N),
            ("GET", "", N),
            ("GET", "*", N),
            ("GET", "users", N),
            ("GET", "//", N),
            // methods, HEAD via GET, 405 with exact Allow values
            ("POST", "/users", F(3, &[])),
            ("HEAD", "/users", F(3, &[])),
            ("PUT", "/users", M("GET, HEAD, POST")),
            ("BREW", "/users", M("GET, HEAD, POST")),
            ("get", "/users", M("GET, HEAD, POST")),
            ("GET", "/head-only", M("HEAD")),
            ("HEAD", "/head-only", F(16, &[])),
            ("GET", "/explicit-head", F(17, &[])),
            ("HEAD", "/explicit-head", F(18, &[])),
            ("POST", "/explicit-head", M("GET, HEAD")),
            // params of each kind, int rules falling through to str
            ("GET", "/users/me", F(4, &[])),
            ("GET", "/users/42", F(5, &[I(42)])),
            ("GET", "/users/-7", F(5, &[I(-7)])),
            ("GET", "/users/007", F(5, &[I(7)])),
            ("GET", "/users/9223372036854775807", F(5, &[I(i64::MAX)])),
            (
                "GET",
                "/users/9223372036854775808",
                F(6, &[S("9223372036854775808")]),
            ),
            ("GET", "/users/+5", F(6, &[S("+5")])),
            ("GET", "/users/-", F(6, &[S("-")])),
            ("GET", "/users/4x", F(6, &[S("4x")])),
            ("GET", "/users/bob", F(6, &[S("bob")])),
            ("GET", "/users//posts", N),
            ("GET", "/users/bob/posts", F(8, &[S("bob")])),
            ("GET", "/s/x/1/a/b", F(22, &[S("x"), I(1), S("a/b")])),
            ("DELETE", "/users/42", F(7, &[I(42)])),
            // 405 unions over every shape the path matches
            ("DELETE", "/users/bob", M("GET, HEAD")),
            ("DELETE", "/users/me", M("GET, HEAD")),
            ("POST", "/users/42", M("DELETE, GET, HEAD")),
            ("POST", "/mix/static", M("GET, HEAD, PUT")),
            ("POST", "/mix/other", M("PUT")),
            ("PUT", "/mix/static", F(19, &[S("static")])),
            ("GET", "/dav/x", M("PROPFIND")),
            ("PROPFIND", "/dav/x/y", F(21, &[S("x/y")])),
            // path params
            ("GET", "/prefix-shared-2", F(24, &[])),
            ("GET", "/prefix-shared-3", N),
            ("GET", "/abcdefg", F(25, &[])),
            ("GET", "/abcdefgh", F(26, &[])),
            ("GET", "/abcdefgi", N),
            ("GET", "/abcdef", N),
            ("GET", "/abcdefg%00", N),
            ("GET", "/files/readme", F(10, &[])),
            ("GET", "/files/a/b/c", F(9, &[S("a/b/c")])),
            ("GET", "/files/readme/x", F(9, &[S("readme/x")])),
            ("GET", "/files/a%20b/c", F(9, &[S("a b/c")])),
            ("GET", "/files/a%2Fb", F(9, &[S("a/b")])),
            ("GET", "/files//", F(9, &[S("/")])),
            ("GET", "/files/", N),
            ("GET", "/files", N),
            // priority and backtracking
            ("GET", "/a/b/d", F(12, &[])),
            ("GET", "/a/b/c", F(11, &[S("b")])),
            ("GET", "/n/5/x", F(13, &[I(5)])),
            ("GET", "/n/5/y", F(14, &[S("5")])),
            ("GET", "/n/q/x", N),
            // percent-decoding
            ("GET", "/users/%62ob", F(6, &[S("bob")])),
            ("GET", "/users/m%65", F(4, &[])),
            ("GET", "/users/%31%32", F(5, &[I(12)])),
            ("GET", "/users/a%2Fb", F(6, &[S("a/b")])),
            ("GET", "/users/a%2Fb/posts", F(8, &[S("a/b")])),
            ("GET", "/caf%C3%A9", F(15, &[])),
            ("GET", "/caf%c3%a9", F(15, &[])),
            ("GET", "/café", F(15, &[])),
            ("GET", "/it%65ms", F(1, &[])),
            ("GET", "/items%2F", N),
            // invalid percent-encoding matches nothing
            ("GET", "/users/%zz", N),
            ("GET", "/users/%4", N),
            ("GET", "/users/%FF", N),
            ("GET", "/users/%C3", N),
            ("GET", "/files/ok/%zz", N),
            ("DELETE", "/users/%zz", N),
            ("GET", "/%zz/me", N),
        ];
        check(&table(), cases);
    }

    #[test]
    fn params_borrow_unless_decoded() {
        let router = table();
        let Lookup::Found { params, .. } = router.lookup("GET", "/users/bob") else {
            panic!("no match");
        };
        assert!(matches!(
            params[..],
            [ParamValue::Str(Cow::Borrowed("bob"))]
        ));
        let Lookup::Found { params, .. } = router.lookup("GET", "/users/b%6Fb") else {
            panic!("no match");
        };
        assert!(matches!(&params[..], [ParamValue::Str(Cow::Owned(s))] if s == "bob"));
    }

    #[test]
    fn allow_unions_are_rendered_once() {
        let router = table();
        let allow = |method, path| match router.lookup(method, path) {
            Lookup::MethodNotAllowed { allow } => allow,
            other => panic!("{method} {path}: {other:?}"),
        };
        let mix = allow("POST", "/mix/static");
        let users = allow("POST", "/users/42");
        assert_eq!((mix, users), ("GET, HEAD, PUT", "DELETE, GET, HEAD"));
        assert!(std::ptr::eq(mix, allow("DELETE", "/mix/static")));
        assert!(std::ptr::eq(users, allow("PATCH", "/users/7")));
    }

    #[test]
    fn conflicts() {
        // (first route, second route, the methods they share; "" = no conflict)
        let cases = [
            ("GET /users/{id}", "GET /users/{name}", "GET"),
            ("GET /a", "GET /a", "GET"),
            ("GET,POST,DELETE /a", "PUT,DELETE,GET /a", "DELETE,GET"),
            ("GET /caf%C3%A9", "GET /café", "GET"),
            ("GET /f/{p:path}", "GET /f/{q:path}", "GET"),
            ("GET /u/{id:int}/x", "GET /u/{n:int}/x", "GET"),
            ("HEAD /h", "HEAD /h", "HEAD"),
            ("GET /", "GET,POST /", "GET"),
            ("GET /a", "POST /a", ""),
            ("GET /a", "HEAD /a", ""),
            ("GET /u/{id:int}", "GET /u/{id}", ""),
            ("GET /u/{id}", "GET /u/{id:path}", ""),
            ("GET /u/{id}", "GET /u/me", ""),
            ("GET /x", "GET /x/", ""),
            ("GET /x/{a}", "GET /y/{a}", ""),
        ];
        for (first, second, shared) in cases {
            let mut router = Router::new();
            add(&mut router, first, 0).unwrap();
            let want = if shared.is_empty() {
                Ok(())
            } else {
                Err(RouteError::Conflict {
                    existing: first.split_once(' ').unwrap().1.to_owned(),
                    new: second.split_once(' ').unwrap().1.to_owned(),
                    methods: shared.split(',').map(str::to_owned).collect(),
                })
            };
            assert_eq!(add(&mut router, second, 1), want, "{first} then {second}");
        }
    }

    #[test]
    fn invalid_routes() {
        // Each is added after "GET /users/{id}" as route 0; (route, spec, reason fragment)
        let cases = [
            (1, "GET items", "must start with '/'"),
            (1, "GET /a//b", "empty segment"),
            (1, "GET /x{id}", "whole segment"),
            (1, "GET /{1a}", "not an identifier"),
            (1, "GET /{a:float}", "unknown parameter type"),
            (1, "GET /{a}/{a}", "duplicate parameter name"),
            (1, "GET /{p:path}/x", "must be the last segment"),
            (1, "GET /%zz", "percent-encoded"),
            (1, " /ok", "no HTTP method"),
            (1, "get /ok", "invalid method \"get\""),
            (1, "GET,,x /ok", "invalid method \"x\""),
            (1, "GET;POST /ok", "invalid method \"GET;POST\""),
            (
                0,
                "GET /other/{name}",
                "route index 0 is already used by \"/users/{id}\"",
            ),
        ];
        for (route, spec, fragment) in cases {
            let mut router = Router::new();
            add(&mut router, "GET /users/{id}", 0).unwrap();
            let pattern = spec.split_once(' ').unwrap().1;
            match add(&mut router, spec, route) {
                Err(RouteError::InvalidPattern { pattern: p, reason }) => {
                    assert_eq!(p, pattern);
                    assert!(reason.contains(fragment), "{spec}: {reason}");
                }
                other => panic!("{spec}: {other:?}"),
            }
            // A failed add leaves the router as it was.
            assert_eq!(router.routes().count(), 1);
            assert_eq!(router.lookup("GET", pattern), Lookup::NotFound);
        }
    }

    #[test]
    fn too_many_methods() {
        let mut router = Router::new();
        let names: Vec<String> = (0..62).map(|i| format!("M{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        router.add(&names, "/a", 0).unwrap();
        let err = add(&mut router, "ONE,TWO /b", 1).unwrap_err();
        assert!(
            err.to_string().contains("more than 64 distinct methods"),
            "{err}"
        );
        add(&mut router, "M61,GET /b", 1).unwrap();
        check(
            &router,
            &[("M61", "/b", F(1, &[])), ("ONE", "/b", M("GET, HEAD, M61"))],
        );
    }

    #[test]
    fn failed_add_changes_nothing() {
        let mut router = table();
        let before: Vec<String> = router.routes().map(|r| format!("{r:?}")).collect();
        assert!(add(&mut router, "GET,NEW /users/{other}", 99).is_err());
        assert!(add(&mut router, "GET /fresh/{x}", 5).is_err());
        let after: Vec<String> = router.routes().map(|r| format!("{r:?}")).collect();
        assert_eq!(before, after);
        check(
            &router,
            &[("GET", "/fresh/1", N), ("NEW", "/users/x", M("GET, HEAD"))],
        );
    }

    #[test]
    fn messages() {
        let mut router = Router::new();
        add(&mut router, "GET /users/{id}", 0).unwrap();
        let err = add(&mut router, "GET /users/{name}", 1).unwrap_err();
        let want = "route conflict: GET /users/{id} overlaps GET /users/{name}";
        assert_eq!(err.to_string(), want);
        let err = add(&mut router, "GET /x{y}", 2).unwrap_err();
        let want = "invalid route pattern \"/x{y}\": \
                    \"x{y}\": a parameter must fill a whole segment, like /{name}/";
        assert_eq!(err.to_string(), want);
    }

    #[test]
    fn names_and_listing() {
        let mut router = table();
        assert_eq!(router.param_names(22), ["a", "b", "c"]);
        assert_eq!(router.param_names(5), ["id"]);
        assert!(router.param_names(0).is_empty());
        assert!(router.param_names(1000).is_empty());
        // One index on two patterns with the same names is fine.
        add(&mut router, "GET /people/{name}", 6).unwrap();
        assert_eq!(router.param_names(6), ["name"]);
        let listed: Vec<RouteInfo<'_>> = router.routes().collect();
        assert_eq!(listed.len(), TABLE.len() + 1);
        let users = RouteInfo {
            methods: vec!["GET", "POST"],
            pattern: "/users",
            route: 3,
        };
        assert_eq!(listed[3], users);
        assert_eq!(listed[16].methods, ["HEAD"]);
        assert_eq!(listed[TABLE.len()].pattern, "/people/{name}");
    }

    #[test]
    fn lookup_between_adds() {
        let mut router = Router::new();
        add(&mut router, "GET /a/{x}", 0).unwrap();
        check(&router, &[("POST", "/a/b", M("GET, HEAD"))]);
        add(&mut router, "POST /a/b", 1).unwrap();
        check(
            &router,
            &[
                ("POST", "/a/b", F(1, &[])),
                ("PUT", "/a/b", M("GET, HEAD, POST")),
            ],
        );
        add(&mut router, "HEAD /a/{y}", 2).unwrap();
        check(
            &router,
            &[
                ("HEAD", "/a/c", F(2, &[S("c")])),
                ("PUT", "/a/c", M("GET, HEAD")),
            ],
        );
    }

    #[test]
    fn shareable_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Router>();
    }

    /// `cargo test --release -- --ignored --nocapture bench_lookup`
    #[test]
    #[ignore = "timing, run by hand in release mode"]
    fn bench_lookup() {
        use std::hint::black_box;
        use std::time::Instant;

        let resources = [
            "users", "posts", "comments", "tags", "orders", "items", "carts", "invoices",
            "payments", "reviews", "sessions", "tokens", "teams", "projects", "issues", "files",
            "events", "alerts", "reports", "settings", "groups", "roles", "audit", "metrics",
            "health",
        ];
        // 25 "GET,POST /api/v1/{name}" routes, and 25 detail routes alternating
        // between "/api/v1/{name}/{id:int}" and "/api/v1/{name}/{slug}/details".
        let mut router = Router::new();
        let (mut statics, mut params) = (Vec::new(), Vec::new());
        for (i, name) in resources.iter().enumerate() {
            let list = format!("/api/v1/{name}");
            router.add(&["GET", "POST"], &list, 2 * i).unwrap();
            let (detail, path) = if i % 2 == 0 {
                (format!("{list}/{{id:int}}"), format!("{list}/{i}"))
            } else {
                (
                    format!("{list}/{{slug}}/details"),
                    format!("{list}/some-slug/details"),
                )
            };
            router.add(&["GET"], &detail, 2 * i + 1).unwrap();
            statics.push(list);
            params.push(path);
        }
        for (label, paths) in [("static", &statics), ("param", &params)] {
            let n: u32 = 1_000_000;
            let start = Instant::now();
            for i in 0..n {
                let path = &paths[i as usize % paths.len()];
                let got = router.lookup(black_box("GET"), black_box(path));
                assert!(matches!(got, Lookup::Found { .. }));
                black_box(got);
            }
            let ns = start.elapsed().as_secs_f64() * 1e9 / f64::from(n);
            println!("{label}: {ns:.1} ns/lookup over {n} lookups, 50 routes");
        }
    }
}
