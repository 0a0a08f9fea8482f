//! `Upgrade: h2c` (RFC 7540 section 3.2; RFC 9113 dropped it, clients still send
//! it): an HTTP/1.1 request that asks to continue in clear-text HTTP/2.
//!
//! The request must carry `Upgrade` with the `h2c` token, `Connection` with
//! `Upgrade` and `HTTP2-Settings`, and exactly one `HTTP2-Settings` (base64url of a
//! SETTINGS payload). The server answers `101` and the request becomes stream 1.
//! A request with a body is not upgraded (RFC 7540 lets a server ignore the
//! Upgrade; reading a body before switching would hold it all): it is served as
//! HTTP/1.1, as every request a server declines to upgrade is.

use crate::http1::parse::HeaderSpan;

/// The answer that switches: the HTTP/2 server preface (SETTINGS) follows it.
pub const SWITCHING: &[u8] =
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

/// What an upgrade needs from the request.
#[derive(Debug, PartialEq, Eq)]
pub struct Upgrade {
    /// The decoded SETTINGS payload of `HTTP2-Settings`.
    pub settings: Vec<u8>,
    /// The request's head as stream 1's connection reads it: the same request line
    /// and fields, without the three that asked for the upgrade.
    pub head: Vec<u8>,
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// The upgrade `head` asks for, or None to serve it as HTTP/1.1. `buf` holds the
/// head from its first byte; `spans` are its fields; `request_line` its first line.
pub fn requested(buf: &[u8], request_line: &[u8], spans: &[HeaderSpan]) -> Option<Upgrade> {
    let (mut upgrade, mut connection, mut settings) = (false, false, None);
    for h in spans {
        let (name, value) = (&buf[h.name.clone()], &buf[h.value.clone()]);
        if name.eq_ignore_ascii_case(b"upgrade") {
            upgrade |= has_token(value, b"h2c");
        } else if name.eq_ignore_ascii_case(b"connection") {
            connection |= has_token(value, b"http2-settings");
        } else if name.eq_ignore_ascii_case(b"http2-settings") {
            if settings.is_some() {
                return None; // more than one: not a valid upgrade
            }
            settings = Some(value);
        }
    }
    if !(upgrade && connection) {
        return None;
    }
    let settings = base64url(settings?)?;
    let mut head = Vec::with_capacity(buf.len());
    head.extend_from_slice(request_line);
    head.extend_from_slice(b"\r\n");
    for h in spans {
        let name = &buf[h.name.clone()];
        if [&b"upgrade"[..], b"connection", b"http2-settings"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
        {
            continue;
        }
        head.extend_from_slice(name);
        head.extend_from_slice(b": ");
        head.extend_from_slice(&buf[h.value.clone()]);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    Some(Upgrade { settings, head })
}

/// Decodes base64url without padding (RFC 4648 section 5; `=` tolerated at the end).
fn base64url(text: &[u8]) -> Option<Vec<u8>> {
    let text = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in text {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).ok()?);
        }
    }
    // Leftover bits must be zero padding of fewer than 6 bits.
    (bits < 6 && acc & ((1 << bits) - 1) == 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http1::limits::Limits;
    use crate::http1::parse::parse_head;

    fn upgrade_of(raw: &[u8]) -> Option<Upgrade> {
        let Ok(Some(head)) = parse_head(raw, &Limits::default()) else {
            panic!("not a head");
        };
        let line_end = raw.windows(2).position(|w| w == b"\r\n").unwrap();
        requested(raw, &raw[..line_end], &head.headers)
    }

    #[test]
    fn an_upgrade_request_gives_its_settings_and_a_head_without_the_upgrade() {
        // SETTINGS_MAX_CONCURRENT_STREAMS = 100, SETTINGS_INITIAL_WINDOW_SIZE = 65535
        let up = upgrade_of(
            b"GET /a HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert_eq!(up.settings, [0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 0xff, 0xff]);
        assert_eq!(
            up.head,
            b"GET /a HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n\r\n"
        );
    }

    #[test]
    fn anything_less_is_not_an_upgrade() {
        for raw in [
            &b"GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: websocket\r\nHTTP2-Settings: AAMAAABk\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\nHTTP2-Settings: AAMAAABk\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AA*A\r\n\r\n",
        ] {
            assert_eq!(upgrade_of(raw), None, "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn base64url_decodes_with_and_without_padding() {
        assert_eq!(base64url(b"").unwrap(), b"");
        assert_eq!(base64url(b"AA").unwrap(), [0]);
        assert_eq!(base64url(b"AA==").unwrap(), [0]);
        assert_eq!(base64url(b"_-8").unwrap(), [0xff, 0xef]);
        assert_eq!(base64url(b"AB"), None, "non-zero padding bits");
        assert_eq!(base64url(b"A"), None, "six bits are no byte");
    }
}
