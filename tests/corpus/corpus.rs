//! Runs the request corpus (`tests/corpus/cases`, format in tests/corpus/README.md)
//! against the sans-IO parser and chunked decoder.
//!
//! A small connection model does what `src/protocol.rs` does with the parser's
//! answers: parse a head, read its body, record the request, go on with the next
//! one; stop at the first error (nothing after it is looked at) and after a request
//! that does not keep the connection alive. Every case runs with its input whole and
//! again arriving in small pieces, since the outcome must not depend on how TCP
//! split the bytes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;
use veter_core::http1::body::ChunkedDecoder;
use veter_core::http1::limits::Limits;
use veter_core::http1::parse::{parse_head, BodyKind, Version};

/// What happened to one request of a case, in the corpus's own terms.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Request(Request),
    Reject(u16),
    Incomplete,
}

#[derive(Clone, PartialEq, Eq)]
struct Request {
    method: Vec<u8>,
    target: Vec<u8>,
    version: &'static str,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    body: Vec<u8>,
    keep_alive: bool,
    expect_continue: bool,
    upgrade: bool,
}

/// Bytes shown escaped (`\r\n`, `\xff`), so a failure reads like the case file.
impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = |b: &[u8]| b.escape_ascii().to_string();
        let headers: Vec<_> = self
            .headers
            .iter()
            .map(|(n, v)| (text(n), text(v)))
            .collect();
        f.debug_struct("Request")
            .field("method", &text(&self.method))
            .field("target", &text(&self.target))
            .field("version", &self.version)
            .field("headers", &headers)
            .field("body", &text(&self.body))
            .field("keep_alive", &self.keep_alive)
            .field("expect_continue", &self.expect_continue)
            .field("upgrade", &self.upgrade)
            .finish()
    }
}

/// Where the model connection is between reads.
enum Reading {
    Head,
    Length {
        request: Request,
        remaining: u64,
    },
    Chunked {
        request: Request,
        decoder: Box<ChunkedDecoder>,
    },
}

/// The connection model: `feed` takes bytes as a socket would deliver them.
struct Model {
    limits: Limits,
    buf: Vec<u8>,
    reading: Reading,
    outcomes: Vec<Outcome>,
    stopped: bool,
}

impl Model {
    fn new(limits: Limits) -> Self {
        Self {
            limits,
            buf: Vec::new(),
            reading: Reading::Head,
            outcomes: Vec::new(),
            stopped: false,
        }
    }

    fn feed(&mut self, data: &[u8]) {
        if self.stopped {
            return;
        }
        self.buf.extend_from_slice(data);
        loop {
            match std::mem::replace(&mut self.reading, Reading::Head) {
                Reading::Head => {
                    if self.buf.is_empty() || !self.parse_head() {
                        return;
                    }
                }
                Reading::Length {
                    mut request,
                    remaining,
                } => {
                    let take = usize::try_from(remaining)
                        .unwrap_or(usize::MAX)
                        .min(self.buf.len());
                    request.body.extend(self.buf.drain(..take));
                    let remaining = remaining - take as u64;
                    if remaining > 0 {
                        self.reading = Reading::Length { request, remaining };
                        return;
                    }
                    self.finish(request);
                }
                Reading::Chunked {
                    mut request,
                    mut decoder,
                } => match decoder.decode(&self.buf, &mut request.body) {
                    Ok((used, true)) => {
                        self.buf.drain(..used);
                        self.finish(request);
                    }
                    Ok((used, false)) => {
                        assert_eq!(used, self.buf.len(), "an unfinished decoder takes all");
                        self.buf.clear();
                        self.reading = Reading::Chunked { request, decoder };
                        return;
                    }
                    Err(e) => return self.reject(e.status()),
                },
            }
            if self.stopped {
                return;
            }
        }
    }

    /// Parses a head from `buf`; false when it needs more bytes or the model stopped.
    fn parse_head(&mut self) -> bool {
        let head = match parse_head(&self.buf, &self.limits) {
            Ok(Some(head)) => head,
            Ok(None) => return false,
            Err(e) => {
                self.reject(e.status());
                return false;
            }
        };
        let b = &self.buf;
        let request = Request {
            method: b[head.method.clone()].to_vec(),
            target: b[head.target.clone()].to_vec(),
            version: match head.version {
                Version::Http10 => "1.0",
                Version::Http11 => "1.1",
                Version::Http2 => unreachable!("the HTTP/1.1 parser never reads HTTP/2"),
            },
            headers: head
                .headers
                .iter()
                .map(|h| (b[h.name.clone()].to_vec(), b[h.value.clone()].to_vec()))
                .collect(),
            body: Vec::new(),
            keep_alive: head.keep_alive,
            expect_continue: head.expect_continue,
            upgrade: head.upgrade,
        };
        self.buf.drain(..head.len);
        match head.body {
            BodyKind::Empty => self.finish(request),
            BodyKind::Length(remaining) => {
                self.reading = Reading::Length { request, remaining };
            }
            BodyKind::Chunked => {
                self.reading = Reading::Chunked {
                    request,
                    decoder: Box::new(ChunkedDecoder::new(&self.limits)),
                };
            }
        }
        !self.stopped
    }

    fn finish(&mut self, request: Request) {
        let keep_alive = request.keep_alive;
        self.outcomes.push(Outcome::Request(request));
        if !keep_alive {
            self.stopped = true;
        }
    }

    fn reject(&mut self, status: u16) {
        self.outcomes.push(Outcome::Reject(status));
        self.stopped = true;
    }

    /// The outcomes once the input has ended: an unfinished request is `Incomplete`.
    fn end(mut self) -> Vec<Outcome> {
        let pending = !matches!(self.reading, Reading::Head) || !self.buf.is_empty();
        if !self.stopped && pending {
            self.outcomes.push(Outcome::Incomplete);
        }
        self.outcomes
    }
}

fn run(input: &[u8], limits: &Limits, piece: usize) -> Vec<Outcome> {
    let mut model = Model::new(limits.clone());
    for part in input.chunks(piece.max(1)) {
        model.feed(part);
    }
    model.end()
}

// ---------------------------------------------------------------------------------
// Reading case files.

/// Corpus strings carry one byte per character (U+0000 to U+00FF).
fn bytes_of(v: &Value, what: &str) -> Result<Vec<u8>, String> {
    let s = v.as_str().ok_or(format!("{what} is not a string"))?;
    s.chars()
        .map(|c| u8::try_from(u32::from(c)).map_err(|_| format!("{what}: {c:?} is not a byte")))
        .collect()
}

fn input_of(case: &Value) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for part in case["input"].as_array().ok_or("input is not a list")? {
        if part.is_string() {
            out.extend(bytes_of(part, "input part")?);
        } else {
            let text = bytes_of(&part["repeat"], "repeat")?;
            let times = part["times"].as_u64().ok_or("times is not a number")?;
            for _ in 0..times {
                out.extend_from_slice(&text);
            }
        }
    }
    Ok(out)
}

fn limits_of(case: &Value) -> Result<Limits, String> {
    let mut limits = Limits::default();
    let Some(map) = case.get("limits").and_then(Value::as_object) else {
        return Ok(limits);
    };
    for (key, value) in map {
        let n = value
            .as_u64()
            .ok_or(format!("limit {key} is not a number"))?;
        let size = usize::try_from(n).map_err(|e| e.to_string());
        match key.as_str() {
            "max_start_line" => limits.max_start_line = size?,
            "max_header_count" => limits.max_header_count = size?,
            "max_header_bytes" => limits.max_header_bytes = size?,
            "max_body_bytes" => limits.max_body_bytes = n,
            "max_chunk_ext_bytes" => limits.max_chunk_ext_bytes = size?,
            "max_trailer_bytes" => limits.max_trailer_bytes = size?,
            "max_chunk_count" => limits.max_chunk_count = n,
            other => return Err(format!("unknown limit {other}")),
        }
    }
    Ok(limits)
}

fn expected_of(case: &Value) -> Result<Vec<Outcome>, String> {
    let mut out = Vec::new();
    for item in case["expect"].as_array().ok_or("expect is not a list")? {
        if let Some(status) = item.get("reject") {
            let status = status.as_u64().ok_or("reject is not a status")?;
            out.push(Outcome::Reject(
                u16::try_from(status).map_err(|e| e.to_string())?,
            ));
        } else if item.get("incomplete").is_some() {
            out.push(Outcome::Incomplete);
        } else {
            out.push(Outcome::Request(request_of(item)?));
        }
    }
    Ok(out)
}

fn request_of(item: &Value) -> Result<Request, String> {
    let flag = |name: &str| item.get(name).and_then(Value::as_bool).unwrap_or(false);
    let mut headers = Vec::new();
    for pair in item["headers"].as_array().ok_or("headers is not a list")? {
        headers.push((
            bytes_of(&pair[0], "header name")?,
            bytes_of(&pair[1], "header value")?,
        ));
    }
    Ok(Request {
        method: bytes_of(&item["method"], "method")?,
        target: bytes_of(&item["target"], "target")?,
        version: match item["version"].as_str() {
            Some("1.0") => "1.0",
            Some("1.1") => "1.1",
            other => return Err(format!("bad version {other:?}")),
        },
        headers,
        body: bytes_of(&item["body"], "body")?,
        keep_alive: item["keep_alive"]
            .as_bool()
            .ok_or("keep_alive is not a bool")?,
        expect_continue: flag("expect_continue"),
        upgrade: flag("upgrade"),
    })
}

fn case_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("corpus folder") {
        let path = entry.expect("corpus entry").path();
        if path.is_dir() {
            case_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

/// Checks one case; `Err` says what differed.
fn check(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let input = input_of(&case)?;
    let limits = limits_of(&case)?;
    let want = expected_of(&case)?;
    let whole = run(&input, &limits, input.len());
    if whole != want {
        return Err(format!("expected {want:?}\n   got {whole:?}"));
    }
    // Re-parsing a growing head on every piece is quadratic: pieces only for
    // inputs of ordinary size.
    if input.len() <= 4096 {
        for piece in [1, 2, 7, 64] {
            let split = run(&input, &limits, piece);
            if split != want {
                return Err(format!("in {piece}-byte pieces: got {split:?}"));
            }
        }
    }
    Ok(())
}

#[test]
fn every_corpus_case_has_its_outcome() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/cases");
    let mut files = Vec::new();
    case_files(&root, &mut files);
    files.sort();
    assert!(files.len() >= 300, "only {} corpus cases", files.len());
    let mut failures = String::new();
    for path in &files {
        if let Err(why) = check(path) {
            let name = path.strip_prefix(&root).unwrap_or(path).display();
            let _ = writeln!(failures, "{name}: {why}");
        }
    }
    assert!(failures.is_empty(), "corpus failures:\n{failures}");
}
