//! Why a connection stops parsing or reading: one set of reasons, one predicate.

/// One reason to stop parsing what the client sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Pause {
    /// `max_pipelined` handlers of this connection are in flight.
    Pipeline = 1,
    /// Every handler slot of the worker is taken (`max_concurrency`): queued for one.
    Concurrency = 2,
    /// Responses wait to be written (a large batch, a paused transport or a streamed
    /// response): the requests behind them wait unparsed.
    Output = 4,
    /// A streamed request body has more unread bytes waiting than its high mark.
    Upload = 8,
    /// Accepted over `max_connections`: not read until a slot frees.
    Capacity = 16,
    /// The transport is above its high watermark (`pause_writing`).
    Transport = 32,
}

/// A set of [`Pause`] reasons.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pauses(u8);

impl Pauses {
    /// The reasons that hold input in the buffer until they clear.
    const HOLDING: u8 = Pause::Pipeline as u8
        | Pause::Concurrency as u8
        | Pause::Output as u8
        | Pause::Upload as u8
        | Pause::Capacity as u8;
    /// The reasons that also stop reading from the socket (bytes then wait in the
    /// kernel, where they cost this process nothing). `Output` alone does not: the
    /// batch is written at the end of the same call and parsing goes on after it.
    const STOP_READING: u8 = Pause::Pipeline as u8
        | Pause::Concurrency as u8
        | Pause::Upload as u8
        | Pause::Capacity as u8
        | Pause::Transport as u8;

    pub fn contains(self, reason: Pause) -> bool {
        self.0 & reason as u8 != 0
    }

    pub fn set(&mut self, reason: Pause) {
        self.0 |= reason as u8;
    }

    pub fn clear(&mut self, reason: Pause) {
        self.0 &= !(reason as u8);
    }

    /// Some reason keeps buffered input unparsed.
    pub fn holding(self) -> bool {
        self.0 & Self::HOLDING != 0
    }

    /// Some reason stops reading from the socket.
    pub fn stop_reading(self) -> bool {
        self.0 & Self::STOP_READING != 0
    }
}
