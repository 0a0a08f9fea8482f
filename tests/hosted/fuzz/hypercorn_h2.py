"""Hypercorn, the HTTP/2 run's peer, with one bug of its own mended so that it can
serve as the oracle (rules.py, NORMALISATIONS_H2 "hypercorn-data-after-answer"):
Hypercorn 0.18 forgets a stream once its app has answered, and DATA the client
still sends on it (a body the app did not read, RFC 9113 8.1 lets it come) raises
KeyError in its event loop, which drops the connection with every other stream on
it and leaves their apps waiting forever. Here such DATA is dropped and its
flow-control window given back, as Hypercorn already does for the stream's end.

python -m tests.hosted.fuzz.hypercorn_h2 module:app -b 127.0.0.1:PORT ...
(hypercorn's own arguments)."""

from __future__ import annotations

import sys
from typing import Any

import h2.events
from hypercorn.__main__ import main
from hypercorn.protocol.h2 import H2Protocol

_handle_events = H2Protocol._handle_events


async def _mended(self: H2Protocol, events: list[Any]) -> None:
    # One event at a time: a stream is known once the RequestReceived before its
    # DATA is handled, and forgotten once its app has answered.
    for event in events:
        if isinstance(event, h2.events.DataReceived) and event.stream_id not in self.streams:
            self.connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            await self._flush()
            continue
        await _handle_events(self, [event])
    if not events:
        await _handle_events(self, [])


H2Protocol._handle_events = _mended  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(main())
