"""A stream every lane keeps (events, results, dead letters) read as one.

On one Redis there is one lane and these are plain stream reads. On a cluster each lane's
stream is in its own slot, so no one XREAD can name them all: each read sends one XREAD
(or XREVRANGE) per lane in a pipeline, which redis-py's cluster client sends to each shard,
and merges the answers by entry id (milliseconds, then sequence; the shards' clocks agree to
within what NTP keeps them). A reader's position is a `LaneCursor`: the last id read in
every lane.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from postel.infra.store.keys import Keyspace
from redis.asyncio import Redis

StreamOf = Callable[[str], str]
"""A lane's stream of one kind, named by the keyspace read: `keyspace.events`,
`keyspace.results`, `keyspace.dead_letters`."""

IDLE_POLL_S = 0.1
"""On a cluster a read with nothing new waits this long before asking again: a blocking XREAD
waits on one slot only."""


@dataclass(frozen=True)
class LaneEntry:
    lane: str
    id: str
    fields: dict[bytes, bytes]


def id_order(entry_id: str) -> tuple[int, int]:
    milliseconds, _, sequence = entry_id.partition("-")
    return int(milliseconds), int(sequence or 0)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class LaneCursor:
    """The last id read in every lane. Written as text, it is that id on one Redis (so a
    client's Last-Event-ID is a plain stream id there) and the lanes' ids joined by commas on
    a cluster."""

    def __init__(self, ids: dict[str, str]) -> None:
        self.ids = ids

    @classmethod
    def parse(cls, text: str, keyspace: Keyspace) -> LaneCursor:
        """From `text` as written, or from one stream id (every lane of `keyspace` from
        there on)."""
        lanes = keyspace.lanes()
        parts = text.split(",")
        if len(parts) == len(lanes):
            return cls(dict(zip(lanes, parts, strict=True)))
        if len(parts) == 1:
            return cls(dict.fromkeys(lanes, text))
        raise ValueError(f"a cursor names {len(lanes)} lane(s), not {len(parts)}: {text!r}")

    def text(self) -> str:
        return ",".join(self.ids.values())

    def advance(self, entries: list[LaneEntry]) -> None:
        for entry in entries:
            self.ids[entry.lane] = entry.id


def _merged(
    lanes: list[str], answers: list[list[tuple[bytes, dict[bytes, bytes]]]]
) -> list[LaneEntry]:
    entries = [
        LaneEntry(lane, _text(entry_id), fields)
        for lane, answer in zip(lanes, answers, strict=True)
        for entry_id, fields in answer
    ]
    return sorted(entries, key=lambda entry: id_order(entry.id))


async def newest(redis: Redis, keyspace: Keyspace, stream_of: StreamOf) -> LaneCursor:
    """Where every lane's stream ends now: reading after it yields only what comes next."""
    lanes = keyspace.lanes()
    async with redis.pipeline(transaction=False) as pipe:
        for lane in lanes:
            pipe.xrevrange(stream_of(lane), count=1)
        answers = await pipe.execute()
    return LaneCursor(
        {
            lane: _text(found[0][0]) if found else "0-0"
            for lane, found in zip(lanes, answers, strict=True)
        }
    )


async def read_after(
    redis: Redis, stream_of: StreamOf, cursor: LaneCursor, count: int, block_ms: int = 0
) -> list[LaneEntry]:
    """The entries after `cursor` (at most `count` per lane), oldest first, waiting up to
    `block_ms` for one if there are none; the cursor moves past them."""
    lanes = list(cursor.ids)
    if len(lanes) == 1:
        lane = lanes[0]
        stream = stream_of(lane)
        block = block_ms or None
        batches = await redis.xread({stream: cursor.ids[lane]}, count=count, block=block)
        entries = [LaneEntry(lane, _text(i), f) for _s, found in batches for i, f in found]
        cursor.advance(entries)
        return entries
    waited_s = 0.0
    while True:
        async with redis.pipeline(transaction=False) as pipe:
            for lane in lanes:
                pipe.xrange(stream_of(lane), min=f"({cursor.ids[lane]}", count=count)
            entries = _merged(lanes, await pipe.execute())
        if entries or waited_s * 1000 >= block_ms:
            cursor.advance(entries)
            return entries
        await asyncio.sleep(IDLE_POLL_S)
        waited_s += IDLE_POLL_S


async def read_newest(
    redis: Redis, keyspace: Keyspace, stream_of: StreamOf, count: int, min_id: str = "-"
) -> list[LaneEntry]:
    """The newest `count` entries of every lane together (at or after `min_id`), newest first."""
    lanes = keyspace.lanes()
    async with redis.pipeline(transaction=False) as pipe:
        for lane in lanes:
            pipe.xrevrange(stream_of(lane), max="+", min=min_id, count=count)
        answers = await pipe.execute()
    return _merged(lanes, answers)[::-1][:count]


async def length(redis: Redis, keyspace: Keyspace, stream_of: StreamOf) -> int:
    """The entries of every lane's stream together."""
    async with redis.pipeline(transaction=False) as pipe:
        for lane in keyspace.lanes():
            pipe.xlen(stream_of(lane))
        return sum(await pipe.execute())
