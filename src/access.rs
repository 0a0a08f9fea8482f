//! The access log: one line per response, formatted in Rust into a `LogFile`.
//!
//! The format is chosen once at startup: `text` (a template of `{field}`s, parsed
//! into segments here), or `json` (one object per line). Fields: `time` (UTC, ISO
//! 8601 with milliseconds), `client`, `method`, `target`, `version`, `status`,
//! `bytes` (body bytes sent), `duration_ms`, `request_id`, `pid`.
//!
//! In text lines the request target has `"`, `\` and bytes outside printable ASCII
//! written as `\xHH`, so a line always splits the same way; the other fields cannot
//! hold them (the parser and the request-id rules see to it).
//!
//! The default template is written by `push_default`, field after field with its
//! separators as fixed-size copies, rather than by walking its 17 segments (a
//! `memcpy` call and a `match` each): on the pipelined path that walk was most of
//! the line's ~1,500 instructions. `default_template_is_written_as_the_walk` keeps
//! the two byte-identical.

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::logfile::LogFile;

mod text;

use crate::logtime::{three_digits, Stamp};
use text::{digits_ending_at, push_millis, push_status, push_time, short_millis};

/// Where the response size's digits end in `push_default`'s tail: room for the
/// 20 digits of any `u64` and the leading zeros of its first three.
const BYTES_END: usize = 21;

/// The default text template.
pub const DEFAULT_TEMPLATE: &str =
    "{time} {client} \"{method} {target} {version}\" {status} {bytes} {duration_ms} {request_id}";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Time,
    Client,
    Method,
    Target,
    Version,
    Status,
    Bytes,
    DurationMs,
    RequestId,
    Pid,
}

impl Field {
    fn parse(name: &str) -> Option<Field> {
        Some(match name {
            "time" => Field::Time,
            "client" => Field::Client,
            "method" => Field::Method,
            "target" => Field::Target,
            "version" => Field::Version,
            "status" => Field::Status,
            "bytes" => Field::Bytes,
            "duration_ms" => Field::DurationMs,
            "request_id" => Field::RequestId,
            "pid" => Field::Pid,
            _ => return None,
        })
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Segment {
    Text(String),
    Field(Field),
}

/// A plain tag (the segments are kept beside it): matching an enum that holds a
/// `Vec` decodes the tag from the vector's capacity, eleven instructions a line.
#[derive(Clone, Copy)]
enum Format {
    /// `DEFAULT_TEMPLATE` (`text`, or a template equal to it): `push_default`.
    Default,
    /// A template of `segments`.
    Text,
    Json,
}

/// One response, as the access log sees it.
pub struct Entry<'a> {
    pub client: &'a str,
    pub method: &'a [u8],
    pub target: &'a [u8],
    pub version: &'a str,
    pub status: u16,
    pub bytes: usize,
    pub duration: Duration,
    pub request_id: &'a [u8],
    /// When the response was made: wall clock time since the Unix epoch.
    pub wall: Duration,
}

pub struct AccessLog {
    pub file: Py<LogFile>,
    lines: Lines,
    /// Paths not logged (health probes), compared with the request path.
    skip: Vec<Vec<u8>>,
}

/// How a line is written. The time text of the last millisecond written (`Stamp`)
/// is kept by the `LogFile`, under the lock a line takes anyway.
struct Lines {
    format: Format,
    segments: Vec<Segment>,
    pid: u32,
}

fn parse_template(template: &str) -> Result<Vec<Segment>, String> {
    let mut segments = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            segments.push(Segment::Text(rest[..open].to_owned()));
        }
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| format!("access log format: unclosed '{{' in {template:?}"))?;
        let name = &after[..close];
        let field = Field::parse(name).ok_or_else(|| {
            format!(
                "access log format: unknown field {{{name}}}; known: time, client, method, \
                 target, version, status, bytes, duration_ms, request_id, pid"
            )
        })?;
        segments.push(Segment::Field(field));
        rest = &after[close + 1..];
    }
    if !rest.is_empty() {
        segments.push(Segment::Text(rest.to_owned()));
    }
    if segments
        .iter()
        .any(|s| matches!(s, Segment::Text(t) if t.contains('\n')))
    {
        return Err("access log format: a line cannot contain a newline".to_owned());
    }
    Ok(segments)
}

/// Whether `b` is written as it is in a text line's target.
fn plain(b: u8) -> bool {
    (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\'
}

/// Appends `raw`, writing `"`, `\` and bytes outside printable ASCII as `\xHH`.
#[inline]
fn push_escaped(out: &mut Vec<u8>, raw: &[u8]) {
    if raw.iter().all(|&b| plain(b)) {
        // Nearly every target: one copy, not a push per byte.
        out.extend_from_slice(raw);
    } else {
        push_escaping(out, raw);
    }
}

#[cold]
#[inline(never)]
fn push_escaping(out: &mut Vec<u8>, raw: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in raw {
        if plain(b) {
            out.push(b);
        } else {
            out.extend_from_slice(&[
                b'\\',
                b'x',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]);
        }
    }
}

/// `s`, or `-` for an empty field (so a text line always has every column).
fn or_dash(s: &[u8]) -> &[u8] {
    if s.is_empty() {
        b"-"
    } else {
        s
    }
}

/// Appends `raw` as the inside of a JSON string.
fn push_json_str(out: &mut Vec<u8>, raw: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in raw {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
        }
    }
}

impl AccessLog {
    /// `format`: `"text"`, `"json"`, or a text template holding `{field}`s.
    pub fn new(file: Py<LogFile>, format: &str, skip: Vec<String>) -> PyResult<Self> {
        let (format, segments) = match format {
            "json" => (Format::Json, Vec::new()),
            "text" | DEFAULT_TEMPLATE => (Format::Default, Vec::new()),
            template if template.contains('{') => (
                Format::Text,
                parse_template(template).map_err(PyValueError::new_err)?,
            ),
            other => {
                return Err(PyValueError::new_err(format!(
                    "access log format must be 'text', 'json' or a template with {{fields}}, not {other:?}"
                )))
            }
        };
        Ok(AccessLog {
            file,
            lines: Lines::new(format, segments),
            skip: skip.into_iter().map(String::into_bytes).collect(),
        })
    }

    /// Whether requests for `path` (the target without its query) are left out.
    pub fn skips(&self, path: &[u8]) -> bool {
        !self.skip.is_empty() && self.skip.iter().any(|p| p == path)
    }

    pub fn record(&self, py: Python<'_>, entry: &Entry<'_>) {
        self.file
            .get()
            .append_with(py, |out, stamp| self.lines.write(out, stamp, entry));
    }
}

impl Lines {
    fn new(format: Format, segments: Vec<Segment>) -> Self {
        Lines {
            format,
            segments,
            pid: std::process::id(),
        }
    }

    /// Appends `entry`'s line and its newline.
    fn write(&self, out: &mut Vec<u8>, stamp: &mut Stamp, entry: &Entry<'_>) {
        match self.format {
            Format::Default => Self::push_default(out, stamp, entry),
            Format::Text => {
                for segment in &self.segments {
                    match segment {
                        Segment::Text(text) => out.extend_from_slice(text.as_bytes()),
                        Segment::Field(field) => self.push_field(out, stamp, *field, entry, false),
                    }
                }
                out.push(b'\n');
            }
            Format::Json => self.push_json(out, stamp, entry),
        }
    }

    /// Writes `DEFAULT_TEMPLATE`'s line (and its newline): what walking its
    /// segments writes, in as few copies as it can. A copy of a length known
    /// here is a few moves; of any other length, a `memcpy` call, and each checks
    /// the buffer's room.
    fn push_default(out: &mut Vec<u8>, stamp: &mut Stamp, e: &Entry<'_>) {
        {
            let mut head = [b' '; 25];
            head[..24].copy_from_slice(stamp.text_of(e.wall));
            out.extend_from_slice(&head);
        }
        out.extend_from_slice(or_dash(e.client.as_bytes()));
        // ` "GET ` in one copy for a method of 3 or 4 letters.
        match *e.method {
            [m1, m2, m3] => out.extend_from_slice(&[b' ', b'"', m1, m2, m3, b' ']),
            [m1, m2, m3, m4] => out.extend_from_slice(&[b' ', b'"', m1, m2, m3, m4, b' ']),
            _ => {
                out.extend_from_slice(b" \"");
                out.extend_from_slice(or_dash(e.method));
                out.push(b' ');
            }
        }
        push_escaped(out, or_dash(e.target));
        // ` HTTP/1.1" 200 ` in one copy: every version but `-` has 8 bytes, and
        // nearly every status 3 digits.
        match <[u8; 8]>::try_from(e.version.as_bytes()) {
            Ok([v1, v2, v3, v4, v5, v6, v7, v8]) if (100..1000).contains(&e.status) => {
                let [s1, s2, s3] = three_digits(u64::from(e.status));
                out.extend_from_slice(&[
                    b' ', v1, v2, v3, v4, v5, v6, v7, v8, b'"', b' ', s1, s2, s3, b' ',
                ]);
            }
            _ => {
                out.push(b' ');
                out.extend_from_slice(e.version.as_bytes());
                out.extend_from_slice(b"\" ");
                push_status(out, e.status);
                out.push(b' ');
            }
        }
        // `13 7.001 <32-byte id>\n` in one copy: most answers take under 10 ms,
        // and generated ids have 32 bytes. The size's digits are written to end
        // where the rest begins, so it goes in the same copy (itoa's buffer would
        // be a call and a copy of its own).
        if let (Some(millis), Ok(id)) = (
            short_millis(e.duration),
            <&[u8; 32]>::try_from(e.request_id),
        ) {
            let mut tail = [b' '; BYTES_END + 40];
            let start = digits_ending_at(&mut tail, BYTES_END, e.bytes as u64);
            tail[BYTES_END + 1..BYTES_END + 6].copy_from_slice(&millis);
            tail[BYTES_END + 7..BYTES_END + 39].copy_from_slice(id);
            tail[BYTES_END + 39] = b'\n';
            out.extend_from_slice(&tail[start..]);
        } else {
            out.extend_from_slice(itoa::Buffer::new().format(e.bytes).as_bytes());
            out.push(b' ');
            push_millis(out, e.duration);
            out.push(b' ');
            out.extend_from_slice(or_dash(e.request_id));
            out.push(b'\n');
        }
    }

    fn push_field(
        &self,
        out: &mut Vec<u8>,
        stamp: &mut Stamp,
        field: Field,
        e: &Entry<'_>,
        json: bool,
    ) {
        let mut digits = itoa::Buffer::new();
        match field {
            Field::Time => push_time(out, e.wall, stamp),
            Field::Client => out.extend_from_slice(or_dash(e.client.as_bytes())),
            Field::Method => out.extend_from_slice(or_dash(e.method)),
            Field::Target if json => push_json_str(out, e.target),
            Field::Target => push_escaped(out, or_dash(e.target)),
            Field::Version => out.extend_from_slice(e.version.as_bytes()),
            Field::Status => push_status(out, e.status),
            Field::Bytes => out.extend_from_slice(digits.format(e.bytes).as_bytes()),
            Field::DurationMs => push_millis(out, e.duration),
            Field::RequestId => out.extend_from_slice(or_dash(e.request_id)),
            Field::Pid => out.extend_from_slice(digits.format(self.pid).as_bytes()),
        }
    }

    fn push_json(&self, out: &mut Vec<u8>, stamp: &mut Stamp, e: &Entry<'_>) {
        const STRINGS: [(&str, Field); 6] = [
            ("{\"time\":\"", Field::Time),
            ("\",\"client\":\"", Field::Client),
            ("\",\"method\":\"", Field::Method),
            ("\",\"target\":\"", Field::Target),
            ("\",\"version\":\"", Field::Version),
            ("\",\"request_id\":\"", Field::RequestId),
        ];
        for (key, field) in STRINGS {
            out.extend_from_slice(key.as_bytes());
            self.push_field(out, stamp, field, e, true);
        }
        for (key, field) in [
            ("\",\"status\":", Field::Status),
            (",\"bytes\":", Field::Bytes),
            (",\"duration_ms\":", Field::DurationMs),
            (",\"pid\":", Field::Pid),
        ] {
            out.extend_from_slice(key.as_bytes());
            self.push_field(out, stamp, field, e, true);
        }
        out.extend_from_slice(b"}\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_into_segments() {
        let segments = parse_template("[{time}] {status} x").unwrap();
        assert_eq!(
            segments,
            vec![
                Segment::Text("[".into()),
                Segment::Field(Field::Time),
                Segment::Text("] ".into()),
                Segment::Field(Field::Status),
                Segment::Text(" x".into()),
            ]
        );
        assert!(parse_template("{nope}")
            .unwrap_err()
            .contains("unknown field {nope}"));
        assert!(parse_template("{time").unwrap_err().contains("unclosed"));
        assert!(parse_template(DEFAULT_TEMPLATE).is_ok());
    }

    #[test]
    fn default_template_is_written_as_the_walk() {
        let fast = Lines::new(Format::Default, Vec::new());
        let walk = Lines::new(Format::Text, parse_template(DEFAULT_TEMPLATE).unwrap());
        let (mut fast_stamp, mut walk_stamp) = (Stamp::NONE, Stamp::NONE);
        let targets: [&[u8]; 4] = [b"/", b"", b"/a?q=%22x&b=\"y\"", b"/\xff\x01 \\"];
        let versions = ["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "-"];
        let ids: [&[u8]; 3] = [b"0123456789abcdef0123456789abcdef", b"", b"rid-1"];
        for (i, target) in targets.iter().enumerate() {
            for (j, version) in versions.iter().enumerate() {
                for (k, status) in [200, 404, 101, 1000, 99].into_iter().enumerate() {
                    let entry = Entry {
                        client: if i == 1 { "" } else { "2001:db8::1" },
                        method: if j == 3 { b"" } else { b"GET" },
                        target,
                        version,
                        status,
                        bytes: [0, 13, 4096, 1 << 40][i],
                        duration: Duration::from_micros([0, 7_001, 12_345, 98_765_432][j]),
                        request_id: ids[(i + k) % 3],
                        wall: Duration::from_millis(
                            1_795_357_501_007 + 997 * (i as u64) + k as u64,
                        ),
                    };
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    fast.write(&mut a, &mut fast_stamp, &entry);
                    walk.write(&mut b, &mut walk_stamp, &entry);
                    assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
                    assert!(!a.is_empty());
                }
            }
        }
    }

    #[test]
    fn default_line_bytes() {
        let entry = Entry {
            client: "127.0.0.1",
            method: b"GET",
            target: b"/",
            version: "HTTP/1.1",
            status: 200,
            bytes: 13,
            duration: Duration::from_micros(1_234),
            request_id: b"0123456789abcdef0123456789abcdef",
            wall: Duration::from_millis(1_795_357_501_007),
        };
        let mut out = Vec::new();
        let mut stamp = Stamp::NONE;
        Lines::new(Format::Default, Vec::new()).write(&mut out, &mut stamp, &entry);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "2026-11-22T14:25:01.007Z 127.0.0.1 \"GET / HTTP/1.1\" 200 13 1.234 \
             0123456789abcdef0123456789abcdef\n"
        );
    }

    #[test]
    fn escaping() {
        let mut out = Vec::new();
        push_escaped(&mut out, b"/a\"b\\c\x7f");
        assert_eq!(out, b"/a\\x22b\\x5Cc\\x7F");
        let mut out = Vec::new();
        push_json_str(&mut out, b"/a\"b\\c\x01");
        assert_eq!(out, b"/a\\\"b\\\\c\\u0001");
    }
}
