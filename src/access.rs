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

use std::sync::Mutex;
use std::time::Duration;

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
    /// `DEFAULT_TEMPLATE` (`text`, or a template equal to it): `push_default`.
    Default,
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
    /// When the response was made: wall clock time since the Unix epoch.
    pub wall: Duration,
}

/// The time text of the last millisecond written, `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC):
/// the lines of one millisecond copy it, the first of the next rewrites its last
/// five bytes, and the first of the next second formats the date too.
struct Stamp {
    /// Milliseconds since the Unix epoch (`u64::MAX`: none yet).
    millis: u64,
    text: [u8; 24],
}

pub struct AccessLog {
    pub file: Py<LogFile>,
    lines: Lines,
    /// Paths not logged (health probes), compared with the request path.
    skip: Vec<Vec<u8>>,
}

/// How a line is written.
struct Lines {
    format: Format,
    pid: u32,
    /// The last millisecond written. A lock taken once a line, uncontended (lines
    /// are made holding the GIL): a thread-local cost a `__tls_get_addr` call (~80
    /// instructions) in this shared library.
    stamp: Mutex<Stamp>,
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

/// The last two decimal digits of `value`.
fn two_digits(value: u64) -> [u8; 2] {
    [
        b'0' + u8::try_from(value / 10 % 10).unwrap_or(0),
        b'0' + u8::try_from(value % 10).unwrap_or(0),
    ]
}

/// `000` to `999`, three bytes each: a number under 1000 is written with one
/// lookup instead of three divisions.
#[allow(clippy::cast_possible_truncation)] // digits: 0..=9
const DIGITS3: [u8; 3000] = {
    let mut table = [0; 3000];
    let mut n = 0;
    while n < 1000 {
        table[3 * n] = b'0' + (n / 100) as u8;
        table[3 * n + 1] = b'0' + (n / 10 % 10) as u8;
        table[3 * n + 2] = b'0' + (n % 10) as u8;
        n += 1;
    }
    table
};

/// The three digits of `value` (under 1000).
#[inline]
fn three_digits(value: u64) -> [u8; 3] {
    let at = usize::try_from(value).unwrap_or(0).min(999) * 3;
    [DIGITS3[at], DIGITS3[at + 1], DIGITS3[at + 2]]
}

/// `YYYY-MM-DDTHH:MM:SS` of the unix second `secs` (UTC).
fn second_text(secs: u64) -> [u8; 19] {
    let (year, month, day) = civil(i64::try_from(secs / 86_400).unwrap_or(0));
    let rem = secs % 86_400;
    let year = u64::try_from(year).unwrap_or(0);
    let [y1, y2] = two_digits(year / 100);
    let [y3, y4] = two_digits(year);
    let [mo1, mo2] = two_digits(u64::from(month));
    let [d1, d2] = two_digits(u64::from(day));
    let [h1, h2] = two_digits(rem / 3600);
    let [mi1, mi2] = two_digits(rem / 60 % 60);
    let [s1, s2] = two_digits(rem % 60);
    [
        y1, y2, y3, y4, b'-', mo1, mo2, b'-', d1, d2, b'T', h1, h2, b':', mi1, mi2, b':', s1, s2,
    ]
}

impl Stamp {
    const NONE: Stamp = Stamp {
        millis: u64::MAX,
        text: [0; 24],
    };

    /// The text of `wall` (since the Unix epoch), formatted when its millisecond
    /// is not the one kept.
    #[inline]
    fn text_of(&mut self, wall: Duration) -> &[u8; 24] {
        let millis = wall.as_secs() * 1000 + u64::from(wall.subsec_millis());
        if millis != self.millis {
            self.update(millis);
        }
        &self.text
    }

    #[cold]
    #[inline(never)]
    fn update(&mut self, millis: u64) {
        let secs = millis / 1000;
        if secs != self.millis / 1000 {
            self.text[..19].copy_from_slice(&second_text(secs));
        }
        let [m1, m2, m3] = three_digits(millis % 1000);
        self.text[19..].copy_from_slice(&[b'.', m1, m2, m3, b'Z']);
        self.millis = millis;
    }
}

fn locked(stamp: &Mutex<Stamp>) -> std::sync::MutexGuard<'_, Stamp> {
    stamp
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Appends the time `wall` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
fn push_time(out: &mut Vec<u8>, wall: Duration, stamp: &Mutex<Stamp>) {
    out.extend_from_slice(locked(stamp).text_of(wall));
}

/// Microseconds in `duration` (u64: 584,942 years; `as_micros` is a u128).
fn micros(duration: Duration) -> u64 {
    duration
        .as_secs()
        .saturating_mul(1_000_000)
        .saturating_add(u64::from(duration.subsec_micros()))
}

/// `duration` in milliseconds with microsecond precision when under 10 ms
/// (`7.001`), most answers: a fixed-size copy.
#[inline]
fn short_millis(duration: Duration) -> Option<[u8; 5]> {
    let micros = micros(duration);
    let whole = u8::try_from(micros / 1000).ok().filter(|&w| w < 10)?;
    let [f1, f2, f3] = three_digits(micros % 1000);
    Some([b'0' + whole, b'.', f1, f2, f3])
}

/// Appends `duration` in milliseconds with microsecond precision (`12.345`).
fn push_millis(out: &mut Vec<u8>, duration: Duration) {
    if let Some(text) = short_millis(duration) {
        out.extend_from_slice(&text);
        return;
    }
    let micros = micros(duration);
    out.extend_from_slice(itoa::Buffer::new().format(micros / 1000).as_bytes());
    let [f1, f2, f3] = three_digits(micros % 1000);
    out.extend_from_slice(&[b'.', f1, f2, f3]);
}

/// Appends an HTTP status (three digits).
#[inline]
fn push_status(out: &mut Vec<u8>, status: u16) {
    if (100..1000).contains(&status) {
        out.extend_from_slice(&three_digits(u64::from(status)));
    } else {
        out.extend_from_slice(itoa::Buffer::new().format(status).as_bytes());
    }
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
        let format = match format {
            "json" => Format::Json,
            "text" | DEFAULT_TEMPLATE => Format::Default,
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
            lines: Lines::new(format),
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
            .append_with(py, |out| self.lines.write(out, entry));
    }
}

impl Lines {
    fn new(format: Format) -> Self {
        Lines {
            format,
            pid: std::process::id(),
            stamp: Mutex::new(Stamp::NONE),
        }
    }

    /// Appends `entry`'s line and its newline.
    fn write(&self, out: &mut Vec<u8>, entry: &Entry<'_>) {
        let now = entry.wall;
        match &self.format {
            Format::Default => self.push_default(out, entry),
            Format::Text(segments) => {
                for segment in segments {
                    match segment {
                        Segment::Text(text) => out.extend_from_slice(text.as_bytes()),
                        Segment::Field(field) => self.push_field(out, *field, entry, now, false),
                    }
                }
                out.push(b'\n');
            }
            Format::Json => self.push_json(out, entry, now),
        }
    }

    /// Writes `DEFAULT_TEMPLATE`'s line (and its newline): what walking its
    /// segments writes, in as few copies as it can. A copy of a length known
    /// here is a few moves; of any other length, a `memcpy` call, and each checks
    /// the buffer's room.
    fn push_default(&self, out: &mut Vec<u8>, e: &Entry<'_>) {
        {
            let mut head = [b' '; 25];
            head[..24].copy_from_slice(locked(&self.stamp).text_of(e.wall));
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
        out.extend_from_slice(itoa::Buffer::new().format(e.bytes).as_bytes());
        // ` 7.001 <32-byte id>\n` in one copy: most answers take under 10 ms, and
        // generated ids have 32 bytes.
        if let (Some(millis), Ok(id)) = (
            short_millis(e.duration),
            <&[u8; 32]>::try_from(e.request_id),
        ) {
            let mut tail = [b' '; 40];
            tail[1..6].copy_from_slice(&millis);
            tail[7..39].copy_from_slice(id);
            tail[39] = b'\n';
            out.extend_from_slice(&tail);
        } else {
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
        field: Field,
        e: &Entry<'_>,
        now: Duration,
        json: bool,
    ) {
        let mut digits = itoa::Buffer::new();
        match field {
            Field::Time => push_time(out, now, &self.stamp),
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

    fn push_json(&self, out: &mut Vec<u8>, e: &Entry<'_>, now: Duration) {
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
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(civil(20_779), (2026, 11, 22));
    }

    #[test]
    fn time_and_duration_formats() {
        let cache = Mutex::new(Stamp::NONE);
        let mut out = Vec::new();
        push_time(&mut out, Duration::from_millis(1_795_357_501_007), &cache);
        assert_eq!(String::from_utf8(out).unwrap(), "2026-11-22T14:25:01.007Z");
        // The cached second, then a new one.
        let mut out = Vec::new();
        push_time(&mut out, Duration::from_millis(1_795_357_501_999), &cache);
        push_time(
            &mut out,
            Duration::from_micros(1_795_357_501_999_999),
            &cache,
        );
        push_time(&mut out, Duration::from_secs(951_782_400), &cache);
        push_time(&mut out, Duration::from_secs(951_782_401), &cache);
        assert_eq!(
            out,
            b"2026-11-22T14:25:01.999Z2026-11-22T14:25:01.999Z2000-02-29T00:00:00.000Z2000-02-29T00:00:01.000Z"
        );
        for (micros, text) in [
            (12_045, "12.045"),
            (0, "0.000"),
            (9_999, "9.999"),
            (10_000, "10.000"),
            (123_456_789, "123456.789"),
        ] {
            let mut out = Vec::new();
            push_millis(&mut out, Duration::from_micros(micros));
            assert_eq!(String::from_utf8(out).unwrap(), text);
        }
        for status in [0, 7, 99, 100, 200, 404, 999, 1000, 65_535] {
            let mut out = Vec::new();
            push_status(&mut out, status);
            assert_eq!(out, status.to_string().as_bytes());
        }
    }

    #[test]
    fn default_template_is_written_as_the_walk() {
        let fast = Lines::new(Format::Default);
        let walk = Lines::new(Format::Text(parse_template(DEFAULT_TEMPLATE).unwrap()));
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
                    fast.write(&mut a, &entry);
                    walk.write(&mut b, &entry);
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
        Lines::new(Format::Default).write(&mut out, &entry);
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
