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

use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::logfile::LogFile;

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

enum Format {
    Text(Vec<Segment>),
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
    /// When the response was made (wall clock).
    pub wall: SystemTime,
}

pub struct AccessLog {
    pub file: Py<LogFile>,
    format: Format,
    pid: u32,
    /// Paths not logged (health probes), compared with the request path.
    skip: Vec<Vec<u8>>,
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

thread_local! {
    /// (unix second, `YYYY-MM-DDTHH:MM:SS`), formatted at most once a second.
    static SECOND: RefCell<(u64, [u8; 19])> = const { RefCell::new((u64::MAX, [0; 19])) };
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 1..=31, 1..=12
    (year, month as u32, day as u32)
}

fn push_2(out: &mut Vec<u8>, value: u64) {
    out.push(b'0' + u8::try_from(value / 10 % 10).unwrap_or(0));
    out.push(b'0' + u8::try_from(value % 10).unwrap_or(0));
}

/// Appends the current UTC time as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn push_time(out: &mut Vec<u8>, now: SystemTime) {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    SECOND.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.0 != secs {
            let (year, month, day) = civil(i64::try_from(secs / 86_400).unwrap_or(0));
            let rem = secs % 86_400;
            let mut text = Vec::with_capacity(19);
            let year = u64::try_from(year).unwrap_or(0);
            push_2(&mut text, year / 100);
            push_2(&mut text, year);
            text.push(b'-');
            push_2(&mut text, u64::from(month));
            text.push(b'-');
            push_2(&mut text, u64::from(day));
            text.push(b'T');
            push_2(&mut text, rem / 3600);
            text.push(b':');
            push_2(&mut text, rem / 60 % 60);
            text.push(b':');
            push_2(&mut text, rem % 60);
            let mut fixed = [0; 19];
            fixed.copy_from_slice(&text);
            *cached = (secs, fixed);
        }
        out.extend_from_slice(&cached.1);
    });
    let millis = u64::from(since.subsec_millis());
    out.push(b'.');
    out.push(b'0' + u8::try_from(millis / 100).unwrap_or(0));
    push_2(out, millis);
    out.push(b'Z');
}

/// Appends `duration` in milliseconds with microsecond precision (`12.345`).
fn push_millis(out: &mut Vec<u8>, duration: Duration) {
    let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
    let mut digits = itoa::Buffer::new();
    out.extend_from_slice(digits.format(micros / 1000).as_bytes());
    out.push(b'.');
    let frac = micros % 1000;
    out.push(b'0' + u8::try_from(frac / 100).unwrap_or(0));
    push_2(out, frac);
}

/// Appends `raw`, writing `"`, `\` and bytes outside printable ASCII as `\xHH`.
fn push_escaped(out: &mut Vec<u8>, raw: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in raw {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
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
        let format = match format {
            "json" => Format::Json,
            "text" => Format::Text(parse_template(DEFAULT_TEMPLATE).map_err(PyValueError::new_err)?),
            template if template.contains('{') => {
                Format::Text(parse_template(template).map_err(PyValueError::new_err)?)
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "access log format must be 'text', 'json' or a template with {{fields}}, not {other:?}"
                )))
            }
        };
        Ok(AccessLog {
            file,
            format,
            pid: std::process::id(),
            skip: skip.into_iter().map(String::into_bytes).collect(),
        })
    }

    /// Whether requests for `path` (the target without its query) are left out.
    pub fn skips(&self, path: &[u8]) -> bool {
        !self.skip.is_empty() && self.skip.iter().any(|p| p == path)
    }

    pub fn record(&self, py: Python<'_>, entry: &Entry<'_>) {
        let now = entry.wall;
        self.file.get().append_with(py, |out| match &self.format {
            Format::Text(segments) => {
                for segment in segments {
                    match segment {
                        Segment::Text(text) => out.extend_from_slice(text.as_bytes()),
                        Segment::Field(field) => self.push_field(out, *field, entry, now, false),
                    }
                }
            }
            Format::Json => self.push_json(out, entry, now),
        });
    }

    fn push_field(
        &self,
        out: &mut Vec<u8>,
        field: Field,
        e: &Entry<'_>,
        now: SystemTime,
        json: bool,
    ) {
        let mut digits = itoa::Buffer::new();
        match field {
            Field::Time => push_time(out, now),
            Field::Client => out.extend_from_slice(or_dash(e.client.as_bytes())),
            Field::Method => out.extend_from_slice(or_dash(e.method)),
            Field::Target if json => push_json_str(out, e.target),
            Field::Target => push_escaped(out, or_dash(e.target)),
            Field::Version => out.extend_from_slice(e.version.as_bytes()),
            Field::Status => out.extend_from_slice(digits.format(e.status).as_bytes()),
            Field::Bytes => out.extend_from_slice(digits.format(e.bytes).as_bytes()),
            Field::DurationMs => push_millis(out, e.duration),
            Field::RequestId => out.extend_from_slice(or_dash(e.request_id)),
            Field::Pid => out.extend_from_slice(digits.format(self.pid).as_bytes()),
        }
    }

    fn push_json(&self, out: &mut Vec<u8>, e: &Entry<'_>, now: SystemTime) {
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
            self.push_field(out, field, e, now, true);
        }
        for (key, field) in [
            ("\",\"status\":", Field::Status),
            (",\"bytes\":", Field::Bytes),
            (",\"duration_ms\":", Field::DurationMs),
            (",\"pid\":", Field::Pid),
        ] {
            out.extend_from_slice(key.as_bytes());
            self.push_field(out, field, e, now, true);
        }
        out.push(b'}');
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
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(civil(20_779), (2026, 11, 22));
    }

    #[test]
    fn time_and_duration_formats() {
        let mut out = Vec::new();
        push_time(
            &mut out,
            UNIX_EPOCH + Duration::from_millis(1_795_357_501_007),
        );
        assert_eq!(String::from_utf8(out).unwrap(), "2026-11-22T14:25:01.007Z");
        let mut out = Vec::new();
        push_millis(&mut out, Duration::from_micros(12_045));
        assert_eq!(out, b"12.045");
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
