"""Planner inputs as compact prompt text: the graph schema, the state, the history of rounds
and the records of the last plan. Every renderer bounds its own output; the round prompt
then fits the parts into its token budget (services.planner.round_prompt)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from postel.messages.gasl import ExecutionRecord
from postel.messages.pipeline import RoundNote
from postel.services.planner.reference import fields_of
from postel.services.validation.rows import NAME_FIELDS

_TEXT_CHARS = 60
_ROWS_SHOWN = 3
_ITEMS_SHOWN = 5
_TOP_TYPES = 10
_NESTED_ITEMS_SHOWN = 1  # inside a record: a node's first description says enough
# Row fields a model rarely needs to read and that dominate a node's size.
_NOISY_FIELDS = frozenset({"clusters", "file_paths", "source_ids", "edges", "extraction"})


def compact(value: Any, depth: int = 0) -> Any:
    """`value` shortened for a prompt: long text clipped, long lists cut, deep nesting elided."""
    if isinstance(value, str):
        return value if len(value) <= _TEXT_CHARS else value[: _TEXT_CHARS - 1] + "…"
    if isinstance(value, dict):
        if depth >= 2:
            return "{…}"
        return {str(k): compact(v, depth + 1) for k, v in value.items() if k not in _NOISY_FIELDS}
    if isinstance(value, list | tuple):
        shown = _ITEMS_SHOWN if depth == 0 else _NESTED_ITEMS_SHOWN
        items = [compact(v, depth + 1) for v in list(value)[:shown]]
        if len(value) > shown:
            items.append(f"… {len(value) - shown} more")
        return items
    return value


def dumps(value: Any) -> str:
    return json.dumps(compact(value), ensure_ascii=False, default=str)


def graph_text(summary: dict[str, Any] | None, max_types: int = 40) -> str:
    """A schema summary (services.gasl.schema_summary) in a few lines, ordered so that a cut
    to fit the prompt keeps the commonest entity types and the attributes."""
    if not summary:
        return "(no schema available)"
    types = [f"{name} {count}" for name, count in summary.get("entity_types", {}).items()]
    keywords = list(summary.get("relation_keywords", {}))
    lines = [
        f"{summary.get('nodes', '?')} nodes, {summary.get('edges', '?')} edges",
        "entity_type: " + (", ".join(types[:_TOP_TYPES]) or "(none)"),
        "node attributes: " + _attributes(summary.get("node_attributes", {})),
        "edge attributes: " + _attributes(summary.get("edge_attributes", {})),
        "edge keywords: " + (", ".join(keywords) if keywords else "(none)"),
    ]
    directions = summary.get("relation_directions", {})
    if summary.get("directed"):
        pointing = "; ".join(f"{name}: {way}" for name, way in directions.items())
        lines.append(
            "directed: edges point one way (NEIGHBORS and paths take DIRECTION out, in or "
            "both; default both)" + (f"; {pointing}" if pointing else "")
        )
    rest = types[_TOP_TYPES:max_types]
    if rest:
        more = len(types) - max_types
        lines.append(
            "more entity types: " + ", ".join(rest) + (f", … {more} more" if more > 0 else "")
        )
    examples = summary.get("example_ids", {})
    if examples:
        lines.append(
            "example ids: "
            + "; ".join(f"{name}: {', '.join(ids)}" for name, ids in examples.items())
        )
    return "\n".join(lines)


def _attributes(kinds: dict[str, str]) -> str:
    return ", ".join(f"{name} ({kind})" for name, kind in kinds.items()) or "(none)"


def state_text(state_summary: dict[str, Any]) -> str:
    """The state summary the gasl worker returns: one line per declared key."""
    keys = state_summary.get("keys")
    if not state_summary or keys == []:
        return "(empty: nothing declared yet)"
    if not isinstance(keys, list):
        return dumps(state_summary)
    lines = []
    for row in keys:
        if not isinstance(row, dict):
            lines.append(dumps(row))
            continue
        head = f"{row.get('key')} ({row.get('type')}, size {row.get('size', 0)})"
        sample = row.get("sample")
        lines.append(f"{head}: {dumps(sample)}" if sample else head)
        more = int(row.get("size") or 0) - len(sample or [])
        if more > 0:
            lines.append(f"   … {more} more not shown: name all as ${{{row.get('key')}}}")
    return "\n".join(lines)


def history_text(history: Sequence[RoundNote], newest_outcome: str | None = None) -> str:
    """The rounds so far, newest first, so a token cut drops the oldest; `newest_outcome`
    replaces the newest round's (its errors are in LAST RESULTS, not said twice)."""
    if not history:
        return "(first round)"
    lines = []
    for index, note in enumerate(reversed(history)):
        commands = "; ".join(note.plan.commands) if note.plan else "-"
        how = f" ({note.decision})" if note.decision else ""
        gone = " [abandoned: its state was dropped]" if note.abandoned else ""
        outcome = newest_outcome if newest_outcome and index == 0 else note.outcome or "pending"
        lines.append(
            f"round {note.round}{how}{gone}: hypothesis: {note.hypothesis or '-'} | "
            f"plan: {commands} | outcome: {outcome}"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class RecordText:
    """One record of the last plan as prompt lines: its head (command, status, count, what
    was written, the error with its hint, the fields), always shown whole, and its sample
    rows, which are what a tight prompt cuts."""

    head: tuple[str, ...]
    rows: tuple[str, ...]
    total: int  # rows the record stands for
    name_all: str  # how to name them all (`${var}`), or ""

    def text(self, shown: int) -> str:
        shown = max(0, min(shown, len(self.rows)))
        lines = list(self.head)
        if self.total > shown:
            lines.append(f"   {self.total - shown} more rows not shown{self.name_all}")
        if shown:
            lines.append("   rows: " + "; ".join(self.rows[:shown]))
        return "\n".join(lines)


def record_texts(records: Sequence[ExecutionRecord]) -> list[RecordText]:
    return [_record_text(index, record) for index, record in enumerate(records, start=1)]


def failure_line(records: Sequence[ExecutionRecord], error: str | None) -> str | None:
    """The worker's error, unless a record already shows it (it names a failed command's)."""
    if not error or any(r.error and (error in r.error or r.error in error) for r in records):
        return None
    return f"the gasl worker failed: {error}"


def results_text(
    texts: Sequence[RecordText],
    failure: str | None,
    shown: Sequence[int] | None = None,
    hidden: int = 0,
) -> str:
    """LAST RESULTS: the failure line, then each record with `shown[i]` sample rows (all it
    has by default); the `hidden` earliest records are left to one line (HISTORY has them)."""
    lines = [failure] if failure else []
    if hidden:
        lines.append(f"({hidden} earlier commands not shown: see this plan in HISTORY)")
    for index, text in enumerate(texts):
        if index >= hidden:
            lines.append(text.text(len(text.rows) if shown is None else shown[index]))
    return "\n".join(lines) or "(no plan has run yet)"


def _record_text(number: int, record: ExecutionRecord) -> RecordText:
    head = f"{number}. [{record.status}] {record.command} -> {record.count}"
    if record.variable:
        head += f" as {record.variable}"
    if record.caps_hit:
        head += f" (caps hit: {', '.join(record.caps_hit)})"
    lines = [head]
    written = record.detail.get("written")
    if written:
        lines.append(f"   you wrote: {written}; write it as above")
    if record.error:
        lines.append(f"   error: {record.error}")
    hint = record.detail.get("hint")
    if hint and str(hint) not in (record.error or ""):
        lines.append(f"   hint: {hint}")
    if not record.rows:
        return RecordText(tuple(lines), (), 0, "")
    fields = fields_of(record.rows)
    if fields:
        lines.append("   fields: " + ", ".join(fields))
    # one plain value (a COUNT's number) is the whole result, whatever its count says
    whole = len(record.rows) == 1 and not isinstance(record.rows[0], dict | list)
    total = len(record.rows) if whole else max(record.count, len(record.rows))
    named = f"; name all {total} as ${{{record.variable}}}" if record.variable else ""
    if named and fields:
        field = next((name for name in NAME_FIELDS if name in fields), fields[0])
        named += f" (one field of each: ${{{record.variable}.{field}}})"
    rows = tuple(dumps(row) for row in record.rows[:_ROWS_SHOWN])
    return RecordText(tuple(lines), rows, total, named)


def outcome_digest(
    records: Sequence[ExecutionRecord], error: str | None = None, *, errors_shown: bool = False
) -> str:
    """One line per plan for the history: each command's status and count (a failed one's
    error in brief; a worker failure no record holds, whole). With `errors_shown` the errors
    are in LAST RESULTS and the line points there instead."""
    elsewhere = "(see LAST RESULTS)"
    if error and failure_line(records, error):
        return f"gasl worker failed {elsewhere}" if errors_shown else f"gasl worker failed: {error}"
    if not records:
        return "nothing ran"
    parts = []
    for record in records:
        verb = record.command.split(maxsplit=1)[0] if record.command.strip() else "?"
        part = f"{verb} {record.status} {record.count}"
        if record.status == "error" and record.error:
            part += (
                f" {elsewhere}"
                if errors_shown
                else f" ({record.error.splitlines()[0][:_TEXT_CHARS]})"
            )
        parts.append(part)
    return ", ".join(parts)
