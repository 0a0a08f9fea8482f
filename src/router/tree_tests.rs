//! Tests for `tree.rs` (kept apart so the module stays readable).

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
            // The static shortcut, where it answers, answers what the walk does.
            let exact = router.exact(method.as_bytes(), path.as_bytes());
            let same = match (exact, &got) {
                (None, _) => true,
                (Some(e), Lookup::Found { route, params }) => e == *route && params.is_empty(),
                (Some(_), _) => false,
            };
            let bad = !want.matches(&got) || !same;
            bad.then(|| format!("{method} {path}: want {want:?}, got {got:?}, exact {exact:?}"))
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
fn static_patterns_are_found_without_the_walk() {
    let router = table();
    assert_eq!(router.exact(b"GET", b"/items"), Some(1));
    assert_eq!(router.exact(b"HEAD", b"/items"), Some(1));
    assert_eq!(router.exact(b"POST", b"/users"), Some(3));
    // Another method, an escape, a parameter or a miss: the walk decides.
    assert_eq!(router.exact(b"PUT", b"/users"), None);
    assert_eq!(router.exact(b"GET", b"/it%65ms"), None);
    assert_eq!(router.exact(b"GET", b"/users/42"), None);
    assert_eq!(router.exact(b"GET", b"/nothing"), None);
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
        "users", "posts", "comments", "tags", "orders", "items", "carts", "invoices", "payments",
        "reviews", "sessions", "tokens", "teams", "projects", "issues", "files", "events",
        "alerts", "reports", "settings", "groups", "roles", "audit", "metrics", "health",
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
