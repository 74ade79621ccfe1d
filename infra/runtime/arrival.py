"""A hop's `received` event, written with the hop's end when the hop is quick.

The take script (infra/runtime/wake.py) has already checked that a taken message will run,
so its `received` event needs no round trip of its own: it goes into the write that ends
the hop (the commit, or the `retried` record), ahead of that write's own events. A hop still
running `POSTEL_RECEIVED_WINDOW_MS` after it began writes its `received` event then, alone,
so a long hop (a model call) shows as running while it runs. A quick hop thus costs Redis one
script call and one round trip less.

What this changes for a reader: a quick hop's `received` entry is stamped when the hop ended,
at most the window after it began (the job page places a hop by its `duration_ms`, not by
that stamp), and a hop cut within the window (its process killed or closing) leaves no
`received` entry; its re-run records its own, with the next attempt number. A quick hop
whose job finished while it ran (cancelled) records only `dropped`, whose `duration_ms` says
how long it ran: a `received` stamped after the job's end would read as if it arrived then.
"""

from __future__ import annotations

import asyncio

import structlog
from postel.infra.store.connect import REDIS_UNAVAILABLE
from postel.infra.store.events import Event, EventLog

log = structlog.get_logger(__name__)


class Arrival:
    """The `received` event of one hop, until it is written."""

    def __init__(self, events: EventLog, event: Event, window_s: float) -> None:
        self.event = event
        self._events = events
        self._alone: asyncio.Task[bool] | None = None
        self._timer = asyncio.get_running_loop().call_later(window_s, self._write_alone)

    def _write_alone(self) -> None:
        self._alone = asyncio.ensure_future(self._record_alone())

    async def _record_alone(self) -> bool:
        try:
            await self._events.record(self.event)
        except REDIS_UNAVAILABLE as exc:
            log.warning("could not record `received`; it goes with the hop's end", error=str(exc))
            return False
        return True

    async def unwritten(self) -> list[Event]:
        """`[event]` if the caller is to write it with the hop's end; `[]` once it was
        written alone (waited for, so the hop's own events come after it). An alone write
        that failed (Redis lost) leaves the event to the caller."""
        self._timer.cancel()
        if self._alone is None or not await asyncio.shield(self._alone):
            return [self.event]
        return []

    def close(self) -> None:
        """The hop is over: a `received` not yet written is not written now."""
        self._timer.cancel()
