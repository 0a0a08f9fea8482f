//! A shell for tests and fuzzing: drives the core as the server does, with handlers
//! that answer `R <target>` (at once, or later when `finish_next` is called), and
//! writes down every event and every byte written.

use std::time::{Duration, Instant};

use super::{Begin, Body, Core, Env, Event, Feed, Shell};
use crate::http1::error::ParseError;
use crate::http1::limits::Limits;
use crate::http1::parse::{BodyKind, Head};

/// A request as the test shell keeps it.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub target: String,
    pub keep_alive: bool,
}

pub struct TestShell;

impl Shell for TestShell {
    type Held = Req;
    type Upload = String;
    type Running = Req;
    type Plan = ();
    type Active = ();
}

/// How the test shell's handlers behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handlers {
    /// Answer at once.
    Inline,
    /// Answer when the test calls `finish_next`.
    Later,
}

pub struct Driver {
    pub core: Core<TestShell>,
    pub limits: Limits,
    pub max_pipelined: usize,
    /// A handler slot of the worker is free.
    pub room: bool,
    pub handlers: Handlers,
    /// Targets whose body is streamed to the handler (`Event::Upload`).
    pub stream_prefix: Option<&'static str>,
    /// Targets that are WebSocket routes.
    pub websocket_prefix: Option<&'static str>,
    pub now: Instant,
    /// Every event, as text.
    pub log: Vec<String>,
    /// Every byte written to the transport.
    pub written: Vec<u8>,
    pub closed: bool,
    /// The transport's reading is paused.
    pub reading_paused: bool,
    /// The log entry of the streamed body being read, and its bytes so far.
    upload_entry: Option<usize>,
    upload_bytes: Vec<u8>,
}

impl Driver {
    pub fn new(handlers: Handlers) -> Self {
        let now = Instant::now();
        Driver {
            core: Core::new(now),
            limits: Limits::default(),
            max_pipelined: 16,
            room: true,
            handlers,
            stream_prefix: None,
            websocket_prefix: None,
            now,
            log: Vec::new(),
            written: Vec::new(),
            closed: false,
            reading_paused: false,
            upload_entry: None,
            upload_bytes: Vec::new(),
        }
    }

    /// The client sent `data`.
    pub fn feed(&mut self, data: &[u8]) {
        match self.core.received(data, self.now, &self.limits) {
            Feed::Hold => {}
            Feed::Direct => self.process(data),
            Feed::Joined(joined) => self.process(&joined),
        }
        self.flush();
        while self.core.output_freed() {
            self.drain();
        }
    }

    /// Parses input held back by a pause that has cleared.
    pub fn drain(&mut self) {
        let room = self.room;
        let env = Env {
            limits: &self.limits,
            max_pipelined: self.max_pipelined,
            room: || room,
        };
        if let Some(buffered) = self.core.take_buffered(&env) {
            self.process(&buffered);
        }
        self.flush();
    }

    /// Time passes.
    pub fn advance(&mut self, by: Duration) {
        self.now += by;
    }

    fn process(&mut self, data: &[u8]) {
        let mut pos = 0;
        loop {
            let room = self.room;
            let env = Env {
                limits: &self.limits,
                max_pipelined: self.max_pipelined,
                room: || room,
            };
            let event = self.core.next_event(data, &mut pos, &env);
            match event {
                Event::Wait => return,
                Event::Queued => self.log.push("queued".into()),
                Event::Head { head, start } => self.head(data, &mut pos, start, head),
                Event::Collected(collected) => {
                    if let (Some(req), body) = collected.into_parts() {
                        self.answer(req, &body);
                    }
                }
                Event::Upload { bytes } => {
                    let name = self.core.upload().cloned().unwrap_or_default();
                    self.uploaded(&name, &bytes, None);
                }
                Event::UploadEnd { bytes, end, upload } => {
                    let how = match end {
                        Ok(()) => "end".to_owned(),
                        Err(e) => format!("error {}", e.status()),
                    };
                    self.uploaded(&upload, &bytes, Some(&how));
                }
                Event::Reject(err) => self.reject(&err),
            }
        }
    }

    /// Writes down a streamed body as one entry that grows as its pieces come (they
    /// come as TCP cut them), ended by how it ended.
    fn uploaded(&mut self, name: &str, bytes: &[u8], end: Option<&str>) {
        let entry = if let Some(i) = self.upload_entry {
            i
        } else {
            self.log.push(String::new());
            self.upload_bytes.clear();
            self.log.len() - 1
        };
        self.upload_bytes.extend_from_slice(bytes);
        let mut text = format!("upload {name} {}", show(&self.upload_bytes));
        if let Some(end) = end {
            text.push(' ');
            text.push_str(end);
        }
        self.log[entry] = text;
        self.upload_entry = end.is_none().then_some(entry);
    }

    fn head(&mut self, data: &[u8], pos: &mut usize, start: usize, head: Head) {
        let at = &data[start..];
        let req = Req {
            method: String::from_utf8_lossy(&at[head.method.clone()]).into_owned(),
            target: String::from_utf8_lossy(&at[head.target.clone()]).into_owned(),
            keep_alive: head.keep_alive,
        };
        let kind = head.body;
        let (expect, upgrade) = (head.expect_continue, head.upgrade);
        self.core.recycle(head.headers);
        if upgrade
            && matches!(kind, BodyKind::Empty)
            && self
                .websocket_prefix
                .is_some_and(|p| req.target.starts_with(p))
        {
            self.core.upgrade(data, pos);
            self.log.push(format!("upgrade {}", req.target));
            return;
        }
        if !matches!(kind, BodyKind::Empty)
            && self
                .stream_prefix
                .is_some_and(|p| req.target.starts_with(p))
        {
            self.core
                .stream_body(req.target.clone(), &kind, expect, &self.limits);
            self.answer(req, b"<streamed>");
            return;
        }
        match self.core.begin_body(&kind, expect, data, pos, &self.limits) {
            Begin::Ready(Body::Empty) => self.answer(req, b""),
            Begin::Ready(Body::Slice(range)) => self.answer(req, &data[range]),
            Begin::Ready(Body::Owned(body)) => self.answer(req, &body),
            Begin::Collecting => self.core.hold(req),
            Begin::Reject(err) => self.reject(&err),
        }
    }

    fn answer(&mut self, req: Req, body: &[u8]) {
        self.log
            .push(format!("{} {} {}", req.method, req.target, show(body)));
        if !req.keep_alive {
            self.core.last_request();
        }
        match self.handlers {
            Handlers::Inline => self.core.emit(response(&req.target)),
            Handlers::Later => {
                self.core.reserve(req, self.now);
            }
        }
    }

    fn reject(&mut self, err: &ParseError) {
        self.log.push(format!("reject {}", err.status()));
        self.core.emit(format!("E {}\n", err.status()).into_bytes());
    }

    /// The oldest running handler answers.
    pub fn finish_next(&mut self) {
        let Some(slot) = self.core.queue.iter_mut().find(|s| s.pending.is_some()) else {
            return;
        };
        let req = slot.pending.take().expect("found above");
        slot.bytes = Some(response(&req.target));
        self.core.handler_done();
        self.drain();
    }

    /// Moves what is ready to the transport.
    pub fn flush(&mut self) {
        let actions = self.core.collect(|()| ((), ()));
        if actions.write {
            self.written.extend_from_slice(&self.core.out);
            self.core.out.clear();
        }
        if actions.close {
            self.closed = true;
        }
        if actions.pause_reading {
            self.reading_paused = true;
        }
        if actions.resume_reading {
            self.reading_paused = false;
        }
    }

    pub fn written_text(&self) -> String {
        String::from_utf8_lossy(&self.written).into_owned()
    }
}

/// The test handlers' answer to `target`.
pub fn response(target: &str) -> Vec<u8> {
    format!("R {target}\n").into_bytes()
}

/// Bytes as text, byte by byte (so a split never changes how they read).
fn show(bytes: &[u8]) -> String {
    format!("[{}]", bytes.escape_ascii())
}
