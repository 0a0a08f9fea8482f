//! Request heads and trailers, checked as RFC 9113 section 8 requires while
//! the HPACK decoder hands their fields over one by one.
//!
//! A request that breaks a rule is malformed (section 8.1.1): the connection
//! resets its stream with `PROTOCOL_ERROR` and the app never sees it. The checks:
//! pseudo-header fields first, each at most once, only the request ones;
//! `:method`, `:scheme` and a non-empty `:path` (`*` only for OPTIONS, else
//! starting with `/`), or for CONNECT `:authority` alone, or for extended
//! CONNECT (RFC 8441, when enabled) `:protocol` with all four; lowercase token
//! field names; no connection-specific fields; `te` only `trailers`; values
//! without NUL, CR or LF nor leading or trailing whitespace; `content-length`
//! one decimal number (repeats allowed when equal, RFC 9110 section 8.6); a
//! `host` that agrees with `:authority`.
//!
//! A head keeps all its bytes in one buffer and the fields as ranges into it:
//! two allocations per request, not one per field.

use super::hpack::Origin;
use super::hpack::{bytes_eq, STATIC};
use super::stream::Fields;

/// A byte range into `RequestHead::buf`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Span {
    at: u32,
    len: u32,
}

/// A valid request head.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHead {
    buf: Vec<u8>,
    method: Span,
    scheme: Option<Span>,
    authority: Option<Span>,
    path: Option<Span>,
    protocol: Option<Span>,
    fields: Vec<(Span, Span)>,
    /// The `content-length` value, if the request has one.
    pub content_length: Option<u64>,
}

impl RequestHead {
    fn get(&self, s: Span) -> &[u8] {
        let at = s.at as usize;
        &self.buf[at..at + s.len as usize]
    }

    pub fn method(&self) -> &[u8] {
        self.get(self.method)
    }

    /// Absent only for CONNECT (without `:protocol`).
    pub fn scheme(&self) -> &[u8] {
        self.scheme.map_or(&[], |s| self.get(s))
    }

    pub fn authority(&self) -> Option<&[u8]> {
        self.authority.map(|s| self.get(s))
    }

    /// Empty only for CONNECT (without `:protocol`).
    pub fn path(&self) -> &[u8] {
        self.path.map_or(&[], |s| self.get(s))
    }

    /// Extended CONNECT's protocol (RFC 8441), e.g. `websocket`.
    pub fn protocol(&self) -> Option<&[u8]> {
        self.protocol.map(|s| self.get(s))
    }

    /// The regular fields, in the order received.
    pub fn fields(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + '_ {
        self.fields.iter().map(|&(n, v)| (self.get(n), self.get(v)))
    }

    /// The first field with this (lowercase) name.
    pub fn field(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    fn push(&mut self, bytes: &[u8]) -> Span {
        // A head is bounded by the header list limit, far below 4 GiB.
        let at = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf.extend_from_slice(bytes);
        Span {
            at,
            len: u32::try_from(bytes.len()).unwrap_or(0),
        }
    }
}

/// Why a request or trailer block is malformed (for tests and logs).
pub type Malformed = &'static str;

/// Builds a `RequestHead` from decoded fields; the first rule broken is kept
/// and later fields are skipped (the block is still decoded to the end, for
/// HPACK's sake).
pub struct RequestBuilder {
    head: RequestHead,
    has_method: bool,
    regular_seen: bool,
    host: Option<Span>,
    connect_protocol: bool,
    error: Option<Malformed>,
}

impl RequestBuilder {
    pub fn new(connect_protocol: bool) -> Self {
        Self::reusing(None, connect_protocol)
    }

    /// `new`, filling a head that served before (`Connection::recycle`): its
    /// buffers' capacity is kept, so a stream's head allocates nothing.
    pub fn reusing(spare: Option<RequestHead>, connect_protocol: bool) -> Self {
        let head = match spare {
            Some(mut head) => {
                head.buf.clear();
                head.fields.clear();
                RequestHead {
                    buf: head.buf,
                    fields: head.fields,
                    ..RequestHead::default()
                }
            }
            None => RequestHead {
                buf: Vec::with_capacity(256),
                fields: Vec::with_capacity(16),
                ..RequestHead::default()
            },
        };
        RequestBuilder {
            head,
            has_method: false,
            regular_seen: false,
            host: None,
            connect_protocol,
            error: None,
        }
    }

    pub fn field(&mut self, name: &[u8], value: &[u8]) {
        self.decoded(name, value, Origin::Other);
    }

    /// `field`, with what the decoder knows of it: a static entry's name skips
    /// the name's checks and look-ups (`ROLES`), a whole static entry the
    /// value's too. The same verdicts as `field` (tested on every entry).
    #[inline]
    pub fn decoded(&mut self, name: &[u8], value: &[u8], origin: Origin) {
        if self.error.is_some() {
            return;
        }
        let checked = match origin {
            Origin::Static(i) => self.with_role(ROLES[usize::from(i)], name, value),
            Origin::StaticName(i) => {
                check_value(value).and_then(|()| self.with_role(ROLES[usize::from(i)], name, value))
            }
            Origin::Other => self.check(name, value),
        };
        if let Err(e) = checked {
            self.error = Some(e);
        }
    }

    fn check(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        check_value(value)?;
        if name.first() == Some(&b':') {
            let role = match name {
                b":method" => Role::Method,
                b":scheme" => Role::Scheme,
                b":authority" => Role::Authority,
                b":path" => Role::Path,
                b":protocol" => Role::Protocol,
                _ => Role::UnknownPseudo,
            };
            return self.with_role(role, name, value);
        }
        check_regular(name, value)?;
        let role = match name {
            b"content-length" => Role::ContentLength,
            b"host" => Role::Host,
            _ => Role::Regular,
        };
        self.with_role(role, name, value)
    }

    /// The rest of the checks, once the value's bytes and a regular name's are
    /// known to be allowed.
    fn with_role(&mut self, role: Role, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        let slot = match role {
            Role::Regular | Role::ContentLength | Role::Host => {
                return self.regular(role, name, value);
            }
            Role::ConnectionSpecific => return Err("connection-specific field"),
            _ if self.regular_seen => return Err("pseudo-header after a regular field"),
            Role::Method => {
                if self.has_method {
                    return Err("duplicate :method");
                }
                if value.is_empty() || !value.iter().all(|&b| TOKEN[usize::from(b)]) {
                    return Err("bad :method");
                }
                self.has_method = true;
                self.head.method = self.head.push(value);
                return Ok(());
            }
            Role::Scheme => &mut self.head.scheme,
            Role::Authority => &mut self.head.authority,
            Role::Path => &mut self.head.path,
            Role::Protocol if self.connect_protocol => &mut self.head.protocol,
            Role::Protocol | Role::UnknownPseudo => return Err("unknown pseudo-header"),
        };
        if slot.is_some() {
            return Err("duplicate pseudo-header");
        }
        let at = u32::try_from(self.head.buf.len()).unwrap_or(u32::MAX);
        *slot = Some(Span {
            at,
            len: u32::try_from(value.len()).unwrap_or(0),
        });
        self.head.buf.extend_from_slice(value);
        Ok(())
    }

    fn regular(&mut self, role: Role, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        self.regular_seen = true;
        if role == Role::ContentLength {
            let n = parse_length(value)?;
            if self.head.content_length.is_some_and(|m| m != n) {
                return Err("content-length values differ");
            }
            self.head.content_length = Some(n);
        }
        let n = self.head.push(name);
        let v = self.head.push(value);
        if role == Role::Host {
            self.host = Some(v);
        }
        self.head.fields.push((n, v));
        Ok(())
    }

    /// The head, or why it is malformed.
    pub fn finish(self) -> Result<RequestHead, Malformed> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let h = self.head;
        if !self.has_method {
            return Err("no :method");
        }
        let connect = h.method() == b"CONNECT";
        if connect && h.protocol.is_none() {
            if h.authority.is_none() || h.scheme.is_some() || h.path.is_some() {
                return Err("CONNECT takes :authority only");
            }
        } else {
            if h.protocol.is_some() && (!connect || h.authority.is_none()) {
                return Err(":protocol without CONNECT and :authority");
            }
            if h.scheme.map_or(true, |s| s.len == 0) {
                return Err("no :scheme");
            }
            let path = h.path();
            if path.is_empty() {
                return Err("no :path");
            }
            if path == b"*" {
                if h.method() != b"OPTIONS" {
                    return Err(":path * without OPTIONS");
                }
            } else if path[0] != b'/' {
                return Err(":path not absolute");
            }
        }
        if let (Some(host), Some(authority)) = (self.host, h.authority) {
            if !h.get(host).eq_ignore_ascii_case(h.get(authority)) {
                return Err("host differs from :authority");
            }
        }
        Ok(h)
    }
}

/// Builds a trailer list (section 8.1: no pseudo-header fields).
#[derive(Default)]
pub struct TrailersBuilder {
    fields: Fields,
    error: Option<Malformed>,
}

impl TrailersBuilder {
    pub fn field(&mut self, name: &[u8], value: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let checked = check_value(value).and_then(|()| {
            if name.first() == Some(&b':') {
                return Err("pseudo-header in trailers");
            }
            check_regular(name, value)
        });
        match checked {
            Ok(()) => self.fields.push((name.to_vec(), value.to_vec())),
            Err(e) => self.error = Some(e),
        }
    }

    pub fn finish(self) -> Result<Fields, Malformed> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.fields),
        }
    }
}

/// What a field's name makes it, for the checks that depend on the name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Method,
    Scheme,
    Authority,
    Path,
    Protocol,
    /// `:status`, or a name no request has.
    UnknownPseudo,
    /// A regular field section 8.2.2 forbids (the static table has only
    /// `transfer-encoding`; `te` is not in it).
    ConnectionSpecific,
    ContentLength,
    Host,
    Regular,
}

/// The role of each static entry's name, by index (0 unused): what `check`
/// finds for it, decided once at compile time. Every static name is a
/// lowercase token (`static_names_are_tokens` in the tests).
static ROLES: [Role; 62] = static_roles();

const fn static_roles() -> [Role; 62] {
    let mut roles = [Role::Regular; 62];
    let mut i = 1;
    while i < 62 {
        let name = STATIC[i - 1].0;
        roles[i] = if bytes_eq(name, b":method") {
            Role::Method
        } else if bytes_eq(name, b":scheme") {
            Role::Scheme
        } else if bytes_eq(name, b":authority") {
            Role::Authority
        } else if bytes_eq(name, b":path") {
            Role::Path
        } else if bytes_eq(name, b":protocol") {
            Role::Protocol
        } else if name[0] == b':' {
            Role::UnknownPseudo
        } else if bytes_eq(name, b"connection")
            || bytes_eq(name, b"keep-alive")
            || bytes_eq(name, b"proxy-connection")
            || bytes_eq(name, b"transfer-encoding")
            || bytes_eq(name, b"upgrade")
        {
            Role::ConnectionSpecific
        } else if bytes_eq(name, b"te") {
            panic!("te would need its value checked");
        } else if bytes_eq(name, b"content-length") {
            Role::ContentLength
        } else if bytes_eq(name, b"host") {
            Role::Host
        } else {
            Role::Regular
        };
        i += 1;
    }
    roles
}

/// A regular field's name and the fields HTTP/2 forbids (section 8.2).
fn check_regular(name: &[u8], value: &[u8]) -> Result<(), Malformed> {
    if name.is_empty() || !name.iter().all(|&b| NAME[usize::from(b)]) {
        return Err("bad field name");
    }
    match name {
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade" => {
            Err("connection-specific field")
        }
        b"te" if !value.eq_ignore_ascii_case(b"trailers") => Err("te other than trailers"),
        _ => Ok(()),
    }
}

/// Section 8.2.1: no NUL, CR or LF; no whitespace at either end.
fn check_value(value: &[u8]) -> Result<(), Malformed> {
    // Most values are short (a method, a path, an authority): a plain loop costs
    // less than memchr's setup for them (callgrind, h2_plaintext).
    let forbidden = if value.len() < 32 {
        value.iter().any(|&b| matches!(b, 0 | b'\r' | b'\n'))
    } else {
        memchr::memchr3(0, b'\r', b'\n', value).is_some()
    };
    if forbidden {
        return Err("forbidden byte in a value");
    }
    let ws = |b: &u8| *b == b' ' || *b == b'\t';
    if value.first().is_some_and(ws) || value.last().is_some_and(ws) {
        return Err("whitespace around a value");
    }
    Ok(())
}

fn parse_length(value: &[u8]) -> Result<u64, Malformed> {
    if value.is_empty() || value.len() > 19 {
        return Err("bad content-length");
    }
    value.iter().try_fold(0_u64, |n, &b| {
        if b.is_ascii_digit() {
            Ok(n * 10 + u64::from(b - b'0'))
        } else {
            Err("bad content-length")
        }
    })
}

/// RFC 9110 tchar.
const TOKEN: [bool; 256] = token_table(false);
/// tchar without uppercase letters: an HTTP/2 field name.
const NAME: [bool; 256] = token_table(true);

const fn token_table(lowercase_only: bool) -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        #[allow(clippy::cast_possible_truncation)] // b < 256
        let c = b as u8;
        t[b] = c.is_ascii_digit()
            || c.is_ascii_lowercase()
            || (c.is_ascii_uppercase() && !lowercase_only)
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
}
