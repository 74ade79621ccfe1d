"""The dashboard's charts of the last hour, drawn from what Redis already holds: jobs
finished per minute by outcome (the results stream `postel:results`), and per stage the hop
latency (mean `wait_ms`) and the model tokens used per minute, both from the handled hops'
`completed` and `continued` events in the capped global events stream `postel:events`.

Each chart is a small inline SVG the server draws (no script, no library): one column per
minute. The web process keeps the hour's bins (`ChartWindow`) and reads only what was added
since its last read, at most CHART_EVENTS events and CHART_RESULTS results at once; a busier
hour, or a burst of more than that, says from when the charts count.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from postel.infra.runtime.settings import WORKER_NAMES
from postel.infra.store import lanes
from postel.infra.store.keys import Keyspace
from postel.infra.store.lanes import LaneCursor, id_order
from postel.messages import utc_now
from redis.asyncio import Redis

WINDOW_MIN = 60
CHART_EVENTS = 20_000
CHART_RESULTS = 5_000
WIDTH = 600  # SVG units: 10 per minute
HEIGHT = 100
_COLUMN = WIDTH / WINDOW_MIN
OUTCOMES = ("completed", "failed", "cancelled")


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    kind: str
    title: str


@dataclass
class Line:
    kind: str
    points: str
    title: str


@dataclass
class Chart:
    """One chart: stacked bars or lines, the largest value on its axis (`top`, in `unit`),
    and a legend of the kinds drawn with their totals."""

    name: str
    title: str
    unit: str
    top: float = 0.0
    bars: list[Bar] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.bars and not self.lines

    @property
    def peak(self) -> str:
        """The axis's top, in words: the busiest minute's sum, or the highest mean."""
        return f"peak {self.top:,.0f} {self.unit}" + (" a minute" if self.bars else "")


@dataclass
class Charts:
    charts: list[Chart]
    since: datetime
    partial_from: datetime | None
    """Set when the hour held more events than were read: the charts start here."""


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _minute(entry_id: bytes | str) -> int:
    """The minute (since the epoch) a stream entry was written in."""
    return int(_text(entry_id).split("-")[0]) // 60_000


def _clock(start_ms: int, minute: int) -> str:
    return (
        datetime.fromtimestamp(start_ms / 1000 + minute * 60, tz=UTC).astimezone().strftime("%H:%M")
    )


def _stacked(
    name: str,
    title: str,
    unit: str,
    counts: dict[int, dict[str, float]],
    kinds: tuple[str, ...],
    start_ms: int,
) -> Chart:
    chart = Chart(name, title, unit)
    chart.top = max((sum(row.values()) for row in counts.values()), default=0.0)
    totals: dict[str, float] = defaultdict(float)
    for minute, row in sorted(counts.items()):
        base = 0.0
        for kind in kinds:
            value = row.get(kind, 0.0)
            if not value:
                continue
            totals[kind] += value
            height = value / chart.top * HEIGHT
            chart.bars.append(
                Bar(
                    x=minute * _COLUMN + 1,
                    y=HEIGHT - base - height,
                    width=_COLUMN - 2,
                    height=height,
                    kind=kind,
                    title=f"{_clock(start_ms, minute)} · {kind}: {value:,.0f} {unit}",
                )
            )
            base += height
    chart.legend = [(kind, f"{kind} {totals[kind]:,.0f}") for kind in kinds if totals[kind]]
    return chart


def _lines(name: str, title: str, unit: str, sums: dict[str, dict[int, list[float]]]) -> Chart:
    """A line per kind of the mean per minute; `sums` holds [sum, count] per kind and minute."""
    chart = Chart(name, title, unit)
    means = {
        kind: {minute: total / count for minute, (total, count) in per_minute.items() if count}
        for kind, per_minute in sums.items()
    }
    chart.top = max((m for per in means.values() for m in per.values()), default=0.0)
    for kind in WORKER_NAMES:
        per_minute = means.get(kind)
        if not per_minute:
            continue
        # a step per minute: a minute alone still shows, as a dash across its column
        points = " ".join(
            f"{minute * _COLUMN + edge:.1f},{HEIGHT - value / chart.top * HEIGHT:.1f}"
            for minute, value in sorted(per_minute.items())
            for edge in (1, _COLUMN - 1)
        )
        total = sum(t for t, _ in sums[kind].values())
        count = sum(c for _, c in sums[kind].values())
        mean = total / count
        chart.lines.append(Line(kind, points, f"{kind}: mean {mean:,.0f} {unit}"))
        chart.legend.append((kind, f"{kind} {mean:,.0f} {unit}"))
    return chart


class ChartWindow:
    """The last hour in one-minute bins, kept by the web process: the first read takes the
    newest CHART_EVENTS events and CHART_RESULTS results of the hour, each later one only
    what was added since (a burst of more than that starts over, as a first read). Bins
    older than the hour are dropped."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._reset()

    def _reset(self) -> None:
        self.last_event: LaneCursor | None = None
        self.last_result: LaneCursor | None = None
        self.partial_from_ms: int | None = None
        self.outcomes: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.waits: dict[str, dict[int, list[float]]] = defaultdict(
            lambda: defaultdict(lambda: [0.0, 0])
        )
        self.tokens: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    async def read(self, redis: Redis, keyspace: Keyspace) -> Charts:
        """The charts as of now, from `redis` whose keys `keyspace` names."""
        async with self._lock:
            now_ms = int(utc_now().timestamp() * 1000)
            first = now_ms // 60_000 - (WINDOW_MIN - 1)
            start_ms = first * 60_000
            if not await self._catch_up(redis, keyspace, start_ms):
                self._reset()
                await self._catch_up(redis, keyspace, start_ms)
            self._drop_before(first)
            return Charts(
                charts=[
                    _stacked(
                        "outcomes",
                        "Jobs finished per minute",
                        "jobs",
                        _relative(self.outcomes, first),
                        OUTCOMES,
                        start_ms,
                    ),
                    _lines(
                        "latency",
                        "Hop latency (mean wait)",
                        "ms",
                        {kind: _relative(v, first) for kind, v in self.waits.items()},
                    ),
                    _stacked(
                        "tokens",
                        "Model tokens by stage",
                        "tokens",
                        _relative(self.tokens, first),
                        WORKER_NAMES,
                        start_ms,
                    ),
                ],
                since=datetime.fromtimestamp(start_ms / 1000, tz=UTC),
                partial_from=datetime.fromtimestamp(self.partial_from_ms / 1000, tz=UTC)
                if self.partial_from_ms is not None and self.partial_from_ms > start_ms
                else None,
            )

    async def _catch_up(self, redis: Redis, keyspace: Keyspace, start_ms: int) -> bool:
        """Add what was written since the last read; False when more came than one read
        takes (the window then starts over from the newest). Every lane's streams are read
        and merged (infra/store/lanes.py)."""
        if self.last_result is None or self.last_event is None:
            results = await lanes.read_newest(
                redis, keyspace, keyspace.results, CHART_RESULTS, str(start_ms)
            )
            events = await lanes.read_newest(
                redis, keyspace, keyspace.events, CHART_EVENTS, str(start_ms)
            )
            results.reverse()
            events.reverse()
            capped = [
                id_order(entries[0].id)[0]
                for entries, cap in ((results, CHART_RESULTS), (events, CHART_EVENTS))
                if len(entries) == cap
            ]
            self.partial_from_ms = max(capped) if capped else None
            # nothing yet: the next read starts at the hour's beginning, not the stream's
            self.last_result = LaneCursor.parse(f"{start_ms}-0", keyspace)
            self.last_event = LaneCursor.parse(f"{start_ms}-0", keyspace)
            self.last_result.advance(results)
            self.last_event.advance(events)
        else:
            results = await lanes.read_after(
                redis, keyspace.results, self.last_result, CHART_RESULTS
            )
            events = await lanes.read_after(redis, keyspace.events, self.last_event, CHART_EVENTS)
            if len(results) >= CHART_RESULTS or len(events) >= CHART_EVENTS:
                return False
        for entry in results:
            self._result(entry.id, entry.fields)
        for entry in events:
            self._event(entry.id, entry.fields)
        return True

    def _result(self, entry_id: bytes | str, fields: dict[bytes, bytes]) -> None:
        status = _text(fields.get(b"status", b""))
        if status == "failed" and b"message" in fields:
            try:
                if json.loads(fields[b"message"]).get("status") == "cancelled":
                    status = "cancelled"
            except (ValueError, AttributeError):
                pass
        self.outcomes[_minute(entry_id)][status] += 1

    def _event(self, entry_id: bytes | str, fields: dict[bytes, bytes]) -> None:
        status = fields.get(b"status")
        worker = _text(fields.get(b"worker", b""))
        minute = _minute(entry_id)
        try:
            if status in (b"completed", b"continued"):
                pair = self.waits[worker][minute]
                pair[0] += float(fields.get(b"wait_ms", 0))
                pair[1] += 1
                used = int(fields.get(b"prompt_tokens", 0)) + int(
                    fields.get(b"completion_tokens", 0)
                )
                if used:
                    self.tokens[minute][worker] += used
        except ValueError:
            return  # a malformed entry is left out of the charts, not the page

    def _drop_before(self, first: int) -> None:
        for bins in (self.outcomes, self.tokens, *self.waits.values()):
            for minute in [m for m in bins if m < first]:
                del bins[minute]


def _relative(bins: dict[int, Any], first: int) -> dict[int, Any]:
    return {minute - first: value for minute, value in bins.items()}


def chart_window(app_state: Any) -> ChartWindow:
    """The web application's window (one per application, made on first use)."""
    window = getattr(app_state, "chart_window", None)
    if window is None:
        window = app_state.chart_window = ChartWindow()
    return window
