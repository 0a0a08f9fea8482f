//! Settings (RFC 9113 section 6.5): the limits this server keeps (`Config`,
//! advertised in its first SETTINGS frame) and those the client announces
//! (`PeerSettings`, checked and applied as each SETTINGS frame arrives).

use std::time::Duration;

use super::error::{ErrorCode, H2Error};
use super::frame::{DEFAULT_MAX_FRAME_SIZE, MAX_FRAME_SIZE_LIMIT, MAX_WINDOW};

/// SETTINGS identifiers (section 6.5.2, RFC 8441 section 3).
pub mod id {
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
    pub const ENABLE_CONNECT_PROTOCOL: u16 = 0x8;
}

/// The initial flow-control window of both sides before SETTINGS say otherwise.
pub const DEFAULT_WINDOW: u32 = 65_535;

/// What the server allows one connection. The defaults are safe for a public
/// server; every flood limit has one (see `conn.rs` for what each bounds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Streams a client may have open at once (`SETTINGS_MAX_CONCURRENT_STREAMS`);
    /// a HEADERS frame over it is refused with `REFUSED_STREAM`.
    pub max_concurrent_streams: u32,
    /// The decoded header list limit (`SETTINGS_MAX_HEADER_LIST_SIZE`, sizes as
    /// HPACK counts them); a request over it surfaces as `HeadersTooLarge`.
    /// The raw header block is refused at twice this (GOAWAY `ENHANCE_YOUR_CALM`),
    /// which is all the core ever buffers for one block.
    pub max_header_list_size: u32,
    /// HPACK dynamic table size the decoder allows (`SETTINGS_HEADER_TABLE_SIZE`).
    pub header_table_size: u32,
    /// The largest frame accepted (`SETTINGS_MAX_FRAME_SIZE`), 16 KiB to 16 MiB.
    pub max_frame_size: u32,
    /// Each stream's receive window (`SETTINGS_INITIAL_WINDOW_SIZE`): how much of a
    /// request body the client may send ahead of the app. 256 KiB: a single
    /// upload moves 256 KiB per round trip (~5 MB/s at 50 ms, ~250 MB/s on a
    /// LAN), while the body data a connection can make the server hold unread is
    /// at most `max_concurrent_streams` times this (25 MiB at the defaults;
    /// 1 MiB would be 100 MiB), because the connection window is replenished as
    /// DATA arrives.
    pub initial_window_size: u32,
    /// The connection's receive window. It is replenished as DATA arrives (the
    /// stream windows bound what is held), so a stalled stream never blocks the
    /// others; its size only caps bytes in flight per round trip.
    pub connection_window: u32,
    /// CONTINUATION frames allowed in one header block (CVE-2024-27316).
    pub max_continuation_frames: u32,
    /// The window the two rate limits below count in.
    pub flood_window: Duration,
    /// Streams the client resets after they were accepted, plus streams the
    /// server resets because of the client's errors, per window (Rapid Reset,
    /// CVE-2023-44487, and its server-reset variant): above it, GOAWAY
    /// `ENHANCE_YOUR_CALM`.
    pub max_resets_per_window: u32,
    /// Frames that make no progress on a request (SETTINGS, PING, PRIORITY,
    /// unknown types, empty DATA, HEADERS and CONTINUATION, frames answered by a
    /// `RST_STREAM`) per window: above it, GOAWAY `ENHANCE_YOUR_CALM`
    /// (CVE-2019-9512/9515/9518).
    pub max_control_frames_per_window: u32,
    /// Control frames the client's frames call for (PING and SETTINGS acks,
    /// `RST_STREAM`) queued for the writer and not taken yet, in bytes: above it,
    /// GOAWAY `ENHANCE_YOUR_CALM` (a client that sends pings and does not read).
    pub max_queued_control_bytes: usize,
    /// A stream whose buffered body went over this gets `Event::Writable` when
    /// it falls back to it.
    pub send_low_water: usize,
    /// Extended CONNECT (RFC 8441, WebSocket over HTTP/2).
    pub enable_connect_protocol: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_concurrent_streams: 100,
            max_header_list_size: 16 * 1024,
            header_table_size: 4096,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            initial_window_size: 256 * 1024,
            connection_window: 1024 * 1024,
            max_continuation_frames: 32,
            flood_window: Duration::from_secs(1),
            max_resets_per_window: 200,
            max_control_frames_per_window: 1000,
            max_queued_control_bytes: 64 * 1024,
            send_low_water: 64 * 1024,
            enable_connect_protocol: true,
        }
    }
}

impl Config {
    /// The values clamped to what the protocol allows.
    pub(crate) fn clamped(&self) -> Config {
        let mut c = self.clone();
        c.max_frame_size = c
            .max_frame_size
            .clamp(DEFAULT_MAX_FRAME_SIZE, MAX_FRAME_SIZE_LIMIT);
        c.initial_window_size = c.initial_window_size.min(MAX_WINDOW);
        c.connection_window = c.connection_window.clamp(DEFAULT_WINDOW, MAX_WINDOW);
        c
    }

    /// The pairs of this server's SETTINGS frame (defaults left out).
    pub(crate) fn advertised(&self) -> Vec<(u16, u32)> {
        let mut pairs = vec![
            (id::MAX_CONCURRENT_STREAMS, self.max_concurrent_streams),
            (id::INITIAL_WINDOW_SIZE, self.initial_window_size),
            (id::MAX_HEADER_LIST_SIZE, self.max_header_list_size),
        ];
        if self.header_table_size != 4096 {
            pairs.push((id::HEADER_TABLE_SIZE, self.header_table_size));
        }
        if self.max_frame_size != DEFAULT_MAX_FRAME_SIZE {
            pairs.push((id::MAX_FRAME_SIZE, self.max_frame_size));
        }
        if self.enable_connect_protocol {
            pairs.push((id::ENABLE_CONNECT_PROTOCOL, 1));
        }
        pairs
    }
}

/// The client's settings, as last announced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerSettings {
    pub header_table_size: u32,
    pub initial_window_size: u32,
    pub max_frame_size: u32,
    /// Advisory (section 6.5.2); kept for the shell.
    pub max_header_list_size: Option<u32>,
}

impl Default for PeerSettings {
    fn default() -> Self {
        PeerSettings {
            header_table_size: 4096,
            initial_window_size: DEFAULT_WINDOW,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            max_header_list_size: None,
        }
    }
}

/// The (identifier, value) pairs of a SETTINGS payload (its length a multiple
/// of six, checked by `frame::parse`).
pub fn pairs(payload: &[u8]) -> impl Iterator<Item = (u16, u32)> + '_ {
    payload.chunks_exact(6).map(|p| {
        (
            u16::from_be_bytes([p[0], p[1]]),
            u32::from_be_bytes([p[2], p[3], p[4], p[5]]),
        )
    })
}

impl PeerSettings {
    /// Applies one setting, checking its value (section 6.5.2). Unknown
    /// identifiers are ignored. Returns the change of the initial window, which
    /// the caller applies to every open stream.
    pub fn apply(&mut self, id: u16, value: u32) -> Result<i64, H2Error> {
        match id {
            id::HEADER_TABLE_SIZE => self.header_table_size = value,
            id::ENABLE_PUSH | id::ENABLE_CONNECT_PROTOCOL if value > 1 => {
                return Err(H2Error::protocol());
            }
            id::INITIAL_WINDOW_SIZE => {
                if value > MAX_WINDOW {
                    return Err(H2Error::Connection(ErrorCode::FlowControlError));
                }
                let delta = i64::from(value) - i64::from(self.initial_window_size);
                self.initial_window_size = value;
                return Ok(delta);
            }
            id::MAX_FRAME_SIZE => {
                if !(DEFAULT_MAX_FRAME_SIZE..=MAX_FRAME_SIZE_LIMIT).contains(&value) {
                    return Err(H2Error::protocol());
                }
                self.max_frame_size = value;
            }
            id::MAX_HEADER_LIST_SIZE => self.max_header_list_size = Some(value),
            _ => {}
        }
        Ok(0)
    }
}
