"""The dashboard's charts of the last hour, drawn from what Redis already holds: jobs
finished per minute by outcome (the results stream `postel:results`), and per stage the hop
latency (mean `wait_ms` of `received` events) and the model tokens used (`completed` and
`continued` events) per minute, from the capped global events stream `postel:events`.

Each chart is a small inline SVG the server draws (no script, no library): one column per
minute. Reading is bounded: at most CHART_EVENTS events and CHART_RESULTS results, the
newest; a busier hour says how much of it the chart covers.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from postel.infra.runtime.settings import WORKER_NAMES
from postel.infra.store import keys
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


def _minute(entry_id: bytes | str, start_ms: int) -> int:
    return (int(_text(entry_id).split("-")[0]) - start_ms) // 60_000


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
    chart = Chart(name, title, unit)
    means = {
        kind: {minute: sum(v) / len(v) for minute, v in per_minute.items()}
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
        every = [v for values in sums[kind].values() for v in values]
        mean = sum(every) / len(every)
        chart.lines.append(Line(kind, points, f"{kind}: mean {mean:,.0f} {unit}"))
        chart.legend.append((kind, f"{kind} {mean:,.0f} {unit}"))
    return chart


async def charts(redis: Redis) -> Charts:
    """The last hour's three charts."""
    now_ms = int(utc_now().timestamp() * 1000)
    start_ms = now_ms - now_ms % 60_000 - (WINDOW_MIN - 1) * 60_000
    async with redis.pipeline(transaction=False) as pipe:
        pipe.xrevrange(keys.RESULTS, max="+", min=str(start_ms), count=CHART_RESULTS)
        pipe.xrevrange(keys.EVENTS, max="+", min=str(start_ms), count=CHART_EVENTS)
        results, events = await pipe.execute()
    partial_ms = [
        int(_text(entries[-1][0]).split("-")[0])
        for entries, cap in ((results, CHART_RESULTS), (events, CHART_EVENTS))
        if len(entries) == cap
    ]
    outcomes: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for entry_id, fields in results:
        status = _text(fields.get(b"status", b""))
        if status == "failed" and b"message" in fields:
            try:
                if json.loads(fields[b"message"]).get("status") == "cancelled":
                    status = "cancelled"
            except (ValueError, AttributeError):
                pass
        outcomes[_minute(entry_id, start_ms)][status] += 1
    waits: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    tokens: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for entry_id, fields in events:
        status = fields.get(b"status")
        worker = _text(fields.get(b"worker", b""))
        minute = _minute(entry_id, start_ms)
        try:
            if status == b"received":
                waits[worker][minute].append(float(fields.get(b"wait_ms", 0)))
            elif status in (b"completed", b"continued"):
                used = int(fields.get(b"prompt_tokens", 0)) + int(
                    fields.get(b"completion_tokens", 0)
                )
                if used:
                    tokens[minute][worker] += used
        except ValueError:
            continue  # a malformed entry is left out of the charts, not the page
    return Charts(
        charts=[
            _stacked("outcomes", "Jobs finished per minute", "jobs", outcomes, OUTCOMES, start_ms),
            _lines("latency", "Hop latency (mean wait)", "ms", waits),
            _stacked("tokens", "Model tokens by stage", "tokens", tokens, WORKER_NAMES, start_ms),
        ],
        since=datetime.fromtimestamp(start_ms / 1000, tz=UTC),
        partial_from=datetime.fromtimestamp(max(partial_ms) / 1000, tz=UTC) if partial_ms else None,
    )
