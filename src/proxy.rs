//! Proxy headers: who the client was, when the connection comes from a trusted proxy.
//!
//! Behind nginx or a load balancer the peer of every connection is the proxy. The
//! proxy says who its client was in `X-Forwarded-For` (with `X-Forwarded-Proto` and
//! `X-Forwarded-Host`) or in RFC 7239 `Forwarded`. Anyone can send those headers,
//! so they are read only on connections from an address in `forwarded_allow_ips`,
//! and then believed only as far as the chain of trusted proxies goes. The hops are
//! read from the right (the one the trusted peer added last): a hop that is itself
//! a trusted proxy is passed over, the first that is not is the client, as nginx's
//! realip module does with `real_ip_recursive on`. When every hop is trusted the
//! left-most is the client. A hop that is not an address (`unknown`, an obfuscated
//! name, garbage) ends the walk: the last address passed over stays the client,
//! because nothing to the left of an unreadable hop can be believed.
//!
//! When a trusted request carries `Forwarded`, only it is read; otherwise the
//! `X-Forwarded-*` headers. The scheme and host come from the same hop as the client
//! (`Forwarded`: its element; `X-Forwarded-Proto`/`-Host`: the value at the client's
//! position when there are as many values as addresses, else the right-most), or
//! from the right-most hop when no address could be read. A scheme other than
//! http/https/ws/wss and a host that is not a valid authority are ignored. Nothing
//! here fails: a value it cannot read leaves the connection's own facts in place.
//!
//! Pure Rust (no Python), tested below.

use std::net::IpAddr;

use ipnet::IpNet;

/// The peers whose proxy headers are believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    nets: Vec<IpNet>,
    unix: bool,
    any: bool,
}

impl TrustedProxies {
    /// Parses a comma-separated list of addresses, CIDR networks, `unix` (peers on a
    /// Unix socket) and `*` (every peer: only where nothing else can connect).
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut trusted = TrustedProxies::default();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if item == "*" {
                trusted.any = true;
                trusted.unix = true;
            } else if item.eq_ignore_ascii_case("unix") {
                trusted.unix = true;
            } else if let Ok(net) = item.parse::<IpNet>() {
                trusted.nets.push(net.trunc());
            } else if let Ok(ip) = item.parse::<IpAddr>() {
                trusted.nets.push(IpNet::from(ip));
            } else {
                return Err(format!(
                    "forwarded_allow_ips: {item:?} is not an IP address, a CIDR network (10.0.0.0/8), \
                     'unix' or '*'"
                ));
            }
        }
        Ok(trusted)
    }

    pub fn trusts_ip(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.any || self.nets.iter().any(|net| net.contains(&ip))
    }

    pub fn trusts_unix(&self) -> bool {
        self.unix
    }
}

/// What trusted proxy headers said about one request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Forwarded {
    /// The client's address and port (0 when the headers did not give one).
    pub client: Option<(IpAddr, u16)>,
    /// `http`, `https`, `ws` or `wss`.
    pub scheme: Option<&'static str>,
    /// The host the client asked for (an authority: host and maybe port).
    pub host: Option<String>,
}

impl Forwarded {
    /// The client as the access log writes it.
    pub fn client_text(&self) -> Option<String> {
        self.client.map(|(ip, _)| ip.to_string())
    }
}

/// Reads the proxy headers of a request whose connection comes from a trusted
/// peer; `headers` are its (name, value) pairs in order. None when the request
/// carries none of them.
pub fn resolve<'a>(
    trust: &TrustedProxies,
    headers: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> Option<Forwarded> {
    let mut forwarded: Vec<&[u8]> = Vec::new();
    let mut xff: Vec<&[u8]> = Vec::new();
    let mut proto: Vec<&[u8]> = Vec::new();
    let mut host: Vec<&[u8]> = Vec::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case(b"forwarded") {
            forwarded.extend(split_list(value));
        } else if name.eq_ignore_ascii_case(b"x-forwarded-for") {
            xff.extend(split_list(value));
        } else if name.eq_ignore_ascii_case(b"x-forwarded-proto") {
            proto.extend(split_list(value));
        } else if name.eq_ignore_ascii_case(b"x-forwarded-host") {
            host.extend(split_list(value));
        }
    }
    if !forwarded.is_empty() {
        let elements: Vec<Element> = forwarded.iter().map(|e| Element::parse(e)).collect();
        let fors: Vec<Option<&[u8]>> = elements.iter().map(|e| e.for_).collect();
        let (client, at) = walk(trust, &fors);
        let element = &elements[at.unwrap_or(elements.len() - 1)];
        return Some(Forwarded {
            client,
            scheme: element.proto.and_then(scheme_of),
            host: element.host.and_then(host_of),
        });
    }
    if xff.is_empty() && proto.is_empty() && host.is_empty() {
        return None;
    }
    let fors: Vec<Option<&[u8]>> = xff.iter().map(|h| Some(*h)).collect();
    let (client, at) = walk(trust, &fors);
    let pick = |values: &[&'a [u8]]| -> Option<&'a [u8]> {
        match at {
            Some(i) if values.len() == xff.len() => values.get(i).copied(),
            _ => values.last().copied(),
        }
    };
    Some(Forwarded {
        client,
        scheme: pick(&proto).and_then(scheme_of),
        host: pick(&host).and_then(host_of),
    })
}

/// Walks the hops from the right: the client and its position (None: no hop
/// could be read, the peer stays the client).
fn walk(trust: &TrustedProxies, hops: &[Option<&[u8]>]) -> (Option<(IpAddr, u16)>, Option<usize>) {
    let mut chosen = None;
    for (i, hop) in hops.iter().enumerate().rev() {
        let Some((ip, port)) = hop.and_then(node) else {
            break;
        };
        chosen = Some(((ip, port), i));
        if !trust.trusts_ip(ip) {
            break;
        }
    }
    match chosen {
        Some((client, i)) => (Some(client), Some(i)),
        None => (None, None),
    }
}

/// The comma-separated members of a header value, trimmed, empty ones dropped;
/// commas inside quoted strings do not split.
fn split_list(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut members = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    let mut escaped = false;
    for (i, &b) in value.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if quoted && b == b'\\' {
            escaped = true;
        } else if b == b'"' {
            quoted = !quoted;
        } else if b == b',' && !quoted {
            members.push(&value[start..i]);
            start = i + 1;
        }
    }
    members.push(&value[start..]);
    members.into_iter().map(trim).filter(|m| !m.is_empty())
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// One element of `Forwarded`: its `for`, `proto` and `host` parameters.
#[derive(Default)]
struct Element<'a> {
    for_: Option<&'a [u8]>,
    proto: Option<&'a [u8]>,
    host: Option<&'a [u8]>,
}

impl<'a> Element<'a> {
    fn parse(element: &'a [u8]) -> Self {
        let mut out = Element::default();
        for pair in element.split(|&b| b == b';') {
            let Some(eq) = pair.iter().position(|&b| b == b'=') else {
                continue;
            };
            let key = trim(&pair[..eq]);
            let value = unquote(trim(&pair[eq + 1..]));
            let slot = if key.eq_ignore_ascii_case(b"for") {
                &mut out.for_
            } else if key.eq_ignore_ascii_case(b"proto") {
                &mut out.proto
            } else if key.eq_ignore_ascii_case(b"host") {
                &mut out.host
            } else {
                continue;
            };
            // A parameter given twice makes the element unreadable for it.
            *slot = if slot.is_some() {
                Some(b"" as &[u8])
            } else {
                Some(value)
            };
        }
        out
    }
}

/// A quoted string's content; an escaped one (rare, never an address) is left as
/// it is and then fails to parse as one.
fn unquote(value: &[u8]) -> &[u8] {
    match value {
        [b'"', inner @ .., b'"'] => inner,
        _ => value,
    }
}

/// An address hop: `192.0.2.1`, `192.0.2.1:8080`, `2001:db8::1`, `[2001:db8::1]`,
/// `[2001:db8::1]:8080`; an obfuscated port (`_abc`) reads as 0.
fn node(hop: &[u8]) -> Option<(IpAddr, u16)> {
    let text = std::str::from_utf8(hop).ok()?;
    if let Some(rest) = text.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        let ip: std::net::Ipv6Addr = ip.parse().ok()?;
        let port = match after {
            "" => 0,
            _ => port_of(after.strip_prefix(':')?)?,
        };
        return Some((IpAddr::V6(ip).to_canonical(), port));
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some((ip.to_canonical(), 0));
    }
    let (ip, port) = text.split_once(':')?;
    let ip: std::net::Ipv4Addr = ip.parse().ok()?;
    Some((IpAddr::V4(ip), port_of(port)?))
}

fn port_of(text: &str) -> Option<u16> {
    if text.starts_with('_') && text.len() > 1 {
        return Some(0);
    }
    numeric_port(text)
}

fn numeric_port(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn scheme_of(value: &[u8]) -> Option<&'static str> {
    ["http", "https", "ws", "wss"]
        .into_iter()
        .find(|s| value.eq_ignore_ascii_case(s.as_bytes()))
}

/// A host as a client could have sent it in `Host`: a name or an IPv4 address, or
/// an IPv6 literal in brackets, each with an optional port.
fn host_of(value: &[u8]) -> Option<String> {
    if value.is_empty() || value.len() > 255 {
        return None;
    }
    let ok = value.iter().all(|&b| {
        b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b':' | b'[' | b']')
    });
    if !ok {
        return None;
    }
    if value[0] == b'[' {
        let text = std::str::from_utf8(value).ok()?;
        let (ip, after) = text[1..].split_once(']')?;
        ip.parse::<std::net::Ipv6Addr>().ok()?;
        if !after.is_empty() {
            numeric_port(after.strip_prefix(':')?)?;
        }
    } else if value.contains(&b'[') || value.contains(&b']') {
        return None;
    } else if let Some(colon) = value.iter().position(|&b| b == b':') {
        let port = std::str::from_utf8(&value[colon + 1..]).ok()?;
        if colon == 0 {
            return None;
        }
        numeric_port(port)?;
    }
    Some(String::from_utf8_lossy(value).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trust(spec: &str) -> TrustedProxies {
        TrustedProxies::parse(spec).unwrap()
    }

    fn run(spec: &str, headers: &[(&str, &str)]) -> Option<Forwarded> {
        resolve(
            &trust(spec),
            headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
        )
    }

    fn client(spec: &str, headers: &[(&str, &str)]) -> Option<String> {
        run(spec, headers).and_then(|f| f.client_text())
    }

    #[test]
    fn parses_the_trusted_list() {
        let t = trust("127.0.0.1, 10.0.0.0/8 ,::1,fd00::/8, unix");
        assert!(t.trusts_ip("127.0.0.1".parse().unwrap()));
        assert!(t.trusts_ip("10.20.30.40".parse().unwrap()));
        assert!(!t.trusts_ip("11.0.0.1".parse().unwrap()));
        assert!(t.trusts_ip("::1".parse().unwrap()));
        assert!(t.trusts_ip("fd12::5".parse().unwrap()));
        // An IPv4 peer on a dual-stack socket arrives as ::ffff:a.b.c.d.
        assert!(t.trusts_ip("::ffff:10.1.2.3".parse().unwrap()));
        assert!(t.trusts_unix());
        assert!(!trust("127.0.0.1").trusts_unix());
        assert!(trust("*").trusts_ip("203.0.113.9".parse().unwrap()));
        assert!(trust("").nets.is_empty());
        for bad in ["10.0.0.0/33", "localhost", "1.2.3", "10.0.0.1/x"] {
            let err = TrustedProxies::parse(bad).unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn the_right_most_untrusted_hop_is_the_client() {
        let spec = "127.0.0.1,10.0.0.0/8";
        let table: &[(&str, Option<&str>)] = &[
            ("203.0.113.7", Some("203.0.113.7")),
            ("203.0.113.7, 10.0.0.2", Some("203.0.113.7")),
            // A forged left part is never reached.
            ("1.1.1.1, 203.0.113.7, 10.0.0.2", Some("203.0.113.7")),
            // Every hop trusted: the left-most.
            ("10.0.0.9, 10.0.0.2", Some("10.0.0.9")),
            // Unreadable hops end the walk at the last address read.
            ("203.0.113.7, garbage", None),
            ("203.0.113.7, garbage, 10.0.0.3", Some("10.0.0.3")),
            ("unknown", None),
            ("", None),
            (" , ,", None),
            ("2001:db8::7", Some("2001:db8::7")),
            ("[2001:db8::7]:443", Some("2001:db8::7")),
            ("[2001:db8::7", None),
            ("203.0.113.7:5000", Some("203.0.113.7")),
            ("::ffff:203.0.113.7", Some("203.0.113.7")),
            ("203.0.113.7:99999", None),
            ("203.0.113.7\u{0}", None),
        ];
        for (xff, want) in table {
            let got = client(spec, &[("X-Forwarded-For", xff)]);
            assert_eq!(got.as_deref(), *want, "X-Forwarded-For: {xff:?}");
        }
    }

    #[test]
    fn several_header_lines_are_one_list() {
        let got = client(
            "10.0.0.0/8",
            &[
                ("x-forwarded-for", "198.51.100.1"),
                ("X-FORWARDED-FOR", "10.0.0.1"),
            ],
        );
        assert_eq!(got.as_deref(), Some("198.51.100.1"));
    }

    #[test]
    fn many_hops_do_not_fail() {
        let hops = vec!["10.0.0.1"; 5000].join(",");
        let got = client("10.0.0.0/8", &[("X-Forwarded-For", &hops)]);
        assert_eq!(got.as_deref(), Some("10.0.0.1"));
        let junk = "\u{7f},;;==\"\"[[]]".repeat(500);
        assert_eq!(client("*", &[("X-Forwarded-For", &junk)]), None);
        assert!(run("*", &[("Forwarded", &junk)]).is_some_and(|f| f.client.is_none()));
    }

    #[test]
    fn proto_and_host_follow_the_client_hop() {
        let f = run(
            "127.0.0.1",
            &[
                ("X-Forwarded-For", "203.0.113.7"),
                ("X-Forwarded-Proto", "https"),
                ("X-Forwarded-Host", "api.example.com"),
            ],
        )
        .unwrap();
        assert_eq!(f.scheme, Some("https"));
        assert_eq!(f.host.as_deref(), Some("api.example.com"));
        // As many protos as hops: the client's position.
        let f = run(
            "10.0.0.0/8",
            &[
                ("X-Forwarded-For", "203.0.113.7, 10.0.0.2"),
                ("X-Forwarded-Proto", "https, http"),
            ],
        )
        .unwrap();
        assert_eq!(f.scheme, Some("https"));
        // Otherwise the right-most (what the trusted peer said).
        let f = run(
            "10.0.0.0/8",
            &[
                ("X-Forwarded-For", "1.2.3.4, 203.0.113.7"),
                ("X-Forwarded-Proto", "https"),
            ],
        )
        .unwrap();
        assert_eq!(f.scheme, Some("https"));
        for bad in ["javascript", "", "https x", "ftp"] {
            let f = run("*", &[("X-Forwarded-Proto", bad)]);
            assert_eq!(f.and_then(|f| f.scheme), None, "{bad:?}");
        }
        assert_eq!(
            run("*", &[("X-Forwarded-Proto", "HTTPS")]).unwrap().scheme,
            Some("https")
        );
        for (host, ok) in [
            ("example.com:8443", true),
            ("[2001:db8::1]:443", true),
            ("[2001:db8::1]", true),
            ("10.1.2.3", true),
            ("evil.com/path", false),
            ("a b", false),
            ("host:port", false),
            (":80", false),
            ("[nothex]", false),
            ("x]y", false),
        ] {
            let got = run("*", &[("X-Forwarded-Host", host)]).and_then(|f| f.host);
            assert_eq!(got.is_some(), ok, "{host:?}");
        }
    }

    #[test]
    fn forwarded_rfc7239() {
        let spec = "10.0.0.0/8";
        let f = run(
            spec,
            &[(
                "Forwarded",
                "for=192.0.2.60;proto=https;host=shop.example, for=10.0.0.5;proto=http;host=inner",
            )],
        )
        .unwrap();
        assert_eq!(f.client_text().as_deref(), Some("192.0.2.60"));
        assert_eq!(f.scheme, Some("https"));
        assert_eq!(f.host.as_deref(), Some("shop.example"));
        let f = run(
            spec,
            &[("Forwarded", "For=\"[2001:db8:cafe::17]:4711\";Proto=HTTPS")],
        )
        .unwrap();
        assert_eq!(f.client, Some(("2001:db8:cafe::17".parse().unwrap(), 4711)));
        assert_eq!(f.scheme, Some("https"));
        // An obfuscated or unknown node: the peer stays the client; proto still read.
        let f = run(spec, &[("Forwarded", "for=_hidden;proto=https")]).unwrap();
        assert_eq!(f.client, None);
        assert_eq!(f.scheme, Some("https"));
        let f = run(spec, &[("Forwarded", "for=unknown")]).unwrap();
        assert_eq!(f.client, None);
        // Forwarded wins over X-Forwarded-For.
        let f = run(
            spec,
            &[
                ("X-Forwarded-For", "198.51.100.9"),
                ("Forwarded", "for=192.0.2.1"),
            ],
        )
        .unwrap();
        assert_eq!(f.client_text().as_deref(), Some("192.0.2.1"));
        // A quoted comma does not split elements; a repeated parameter is unreadable.
        let f = run(spec, &[("Forwarded", "for=192.0.2.2;ext=\"a,b\"")]).unwrap();
        assert_eq!(f.client_text().as_deref(), Some("192.0.2.2"));
        let f = run(spec, &[("Forwarded", "for=192.0.2.2;for=192.0.2.3")]).unwrap();
        assert_eq!(f.client, None);
        assert_eq!(
            run(spec, &[("Forwarded", "for=192.0.2.2:_x")])
                .unwrap()
                .client
                .map(|c| c.1),
            Some(0)
        );
    }

    #[test]
    fn no_proxy_headers_no_answer() {
        assert_eq!(run("*", &[("Host", "a"), ("X-Forwarded", "1.2.3.4")]), None);
    }
}
