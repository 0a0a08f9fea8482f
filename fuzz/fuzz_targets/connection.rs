//! The connection core (src/conn/) on arbitrary bytes in arbitrary splits, driven
//! by the test shell (src/conn/drive.rs) as the server drives it.
//!
//! Input: one mode byte (bits 0-1: the most handlers in flight, 1-4; bit 2: handlers
//! answer later, after each piece; bit 3: `/s` routes stream their bodies and `/w`
//! routes are WebSocket routes), one piece-size byte, then the client's bytes (with
//! small limits half the time, as the other targets).
//!
//! Checks, beyond "no panic":
//! - nothing is parsed after a rejected request: no event follows a `reject`, and
//!   at most one error response is written;
//! - with handlers that answer at once, the split does not change what happens: the
//!   run in pieces sees the same requests and writes the same bytes as the run with
//!   everything in one piece, except that an error in input that never completes its
//!   line may be found only by the whole run (the server waits for a line end before
//!   parsing again; the header timeout ends such a connection), and `100 Continue`
//!   goes out only when a body did not come with its head.
#![no_main]

use libfuzzer_sys::fuzz_target;
use veter_fuzz::conn::drive::{Driver, Handlers};
use veter_fuzz::limits_from;

fuzz_target!(|data: &[u8]| {
    let Some((&[mode, step], rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let (limits, input) = limits_from(rest);
    let later = mode & 4 != 0;
    let run = |pieces: usize| {
        let mut d = Driver::new(if later { Handlers::Later } else { Handlers::Inline });
        d.limits = limits.clone();
        d.max_pipelined = usize::from(mode & 3) + 1;
        if mode & 8 != 0 {
            d.stream_prefix = Some("/s");
            d.websocket_prefix = Some("/w");
        }
        for piece in input.chunks(pieces.max(1)) {
            d.feed(piece);
            if later {
                while d.core.queue.iter().any(|s| s.pending.is_some()) {
                    d.finish_next();
                }
            }
        }
        check_nothing_after_reject(&d);
        d
    };
    let whole = run(input.len());
    let split = run(usize::from(step % 23) + 1);
    if later {
        return;
    }
    let (split_log, whole_log) = (&split.log, &whole.log);
    if split_log != whole_log {
        let n = whole_log.len();
        assert!(
            n > 0 && whole_log[n - 1].starts_with("reject") && split_log[..] == whole_log[..n - 1],
            "split {split_log:?}\nwhole {whole_log:?}"
        );
        assert!(final_answers(&whole).starts_with(&final_answers(&split)));
    } else {
        assert_eq!(final_answers(&split), final_answers(&whole));
    }
});

/// What was written without the `100 Continue` interim answers, which are sent only
/// when a body has not arrived with its head (so they depend on the split).
fn final_answers(d: &Driver) -> String {
    d.written_text().replace("HTTP/1.1 100 Continue\r\n\r\n", "")
}

fn check_nothing_after_reject(d: &Driver) {
    if let Some(at) = d.log.iter().position(|e| e.starts_with("reject")) {
        assert_eq!(at, d.log.len() - 1, "events after a reject: {:?}", d.log);
        assert!(d.core.is_stopped());
    }
    let errors = d.written_text().matches("E ").count();
    assert!(errors <= 1, "{errors} error responses: {:?}", d.written_text());
}
