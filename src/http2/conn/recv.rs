//! Frames in, other than header blocks: DATA under flow control, `RST_STREAM`,
//! SETTINGS and `WINDOW_UPDATE` (see the theory in `conn.rs`).

use super::{Connection, Event};
use crate::http2::error::{ErrorCode, H2Error};
use crate::http2::frame::{self, MAX_WINDOW};
use crate::http2::settings;

impl Connection {
    pub(super) fn on_data(
        &mut self,
        id: u32,
        data: &[u8],
        end_stream: bool,
        flow_len: u32,
    ) -> Result<(), H2Error> {
        if id > self.last_stream {
            return Err(H2Error::protocol());
        }
        if data.is_empty() && !end_stream {
            self.control()?;
        }
        // The connection window counts every DATA frame, whatever its stream.
        let len = i64::from(flow_len);
        if len > self.recv_window {
            return Err(H2Error::Connection(ErrorCode::FlowControlError));
        }
        self.recv_window -= len;
        self.recv_unannounced += flow_len;
        if self.recv_unannounced >= self.config.connection_window / 2 {
            frame::write_window_update(&mut self.out, 0, self.recv_unannounced);
            self.recv_window += i64::from(self.recv_unannounced);
            self.recv_unannounced = 0;
        }
        let Some(s) = self.streams.get_mut(&id) else {
            if self.was_reset_by_us(id) {
                return Ok(());
            }
            return Err(H2Error::Stream(id, ErrorCode::StreamClosed));
        };
        if s.recv_closed {
            return Err(H2Error::Stream(id, ErrorCode::StreamClosed));
        }
        if len > s.recv_window {
            return Err(H2Error::Stream(id, ErrorCode::FlowControlError));
        }
        s.recv_window -= len;
        s.received += data.len() as u64;
        if let Some(expected) = s.content_length {
            if s.received > expected || (end_stream && s.received != expected) {
                return Err(H2Error::Stream(id, ErrorCode::ProtocolError));
            }
        }
        // Padding (and a discarded body) is never consumed by the app: credit it now.
        let credit = if s.discard {
            flow_len
        } else {
            flow_len - u32::try_from(data.len()).unwrap_or(flow_len)
        };
        s.recv_closed = end_stream;
        if !s.discard {
            self.events.push_back(Event::Data {
                stream: id,
                data: data.to_vec(),
                end_stream,
            });
        }
        if s.is_closed() {
            self.streams.remove(&id);
        } else if credit > 0 {
            self.consumed(id, credit as usize);
        }
        Ok(())
    }

    pub(super) fn on_rst_stream(&mut self, id: u32, code: ErrorCode) -> Result<(), H2Error> {
        if id > self.last_stream {
            return Err(H2Error::protocol());
        }
        if self.streams.remove(&id).is_some() {
            self.events.push_back(Event::Reset { stream: id, code });
            if self.flood.reset() {
                return Err(H2Error::Connection(ErrorCode::EnhanceYourCalm));
            }
        }
        Ok(())
    }

    pub(super) fn on_settings(&mut self, ack: bool, payload: &[u8]) -> Result<(), H2Error> {
        if ack {
            self.settings_acked = true;
            return Ok(());
        }
        self.control()?;
        self.apply_settings(payload)?;
        let before = self.out.len();
        frame::write_settings_ack(&mut self.out);
        self.control_written(before)?;
        // A larger window may let buffered data out.
        self.schedule_all();
        self.flush();
        Ok(())
    }

    pub(super) fn apply_settings(&mut self, payload: &[u8]) -> Result<(), H2Error> {
        for (id, value) in settings::pairs(payload) {
            let delta = self.peer.apply(id, value)?;
            if id == settings::id::HEADER_TABLE_SIZE {
                self.encoder.set_peer_max_table_size(value as usize);
            }
            if delta != 0 {
                for s in self.streams.values_mut() {
                    if !s.grow_send_window(delta) {
                        return Err(H2Error::Connection(ErrorCode::FlowControlError));
                    }
                }
            }
        }
        Ok(())
    }

    pub(super) fn on_window_update(&mut self, id: u32, increment: u32) -> Result<(), H2Error> {
        if id == 0 {
            if increment == 0 {
                return Err(H2Error::protocol());
            }
            self.send_window += i64::from(increment);
            if self.send_window > i64::from(MAX_WINDOW) {
                return Err(H2Error::Connection(ErrorCode::FlowControlError));
            }
            self.flush();
            return Ok(());
        }
        if id > self.last_stream {
            return Err(H2Error::protocol());
        }
        let Some(s) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        if increment == 0 {
            return Err(H2Error::Stream(id, ErrorCode::ProtocolError));
        }
        if !s.grow_send_window(i64::from(increment)) {
            return Err(H2Error::Stream(id, ErrorCode::FlowControlError));
        }
        if s.has_output() && s.send_window > 0 && !s.queued {
            s.queued = true;
            self.queue.push_back(id);
        }
        self.flush();
        Ok(())
    }
}
