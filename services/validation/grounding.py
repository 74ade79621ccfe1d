"""Grounding: a written answer must state what the graph analysis found.

When a job's graph tasks answered with rows (or a list, or a number), a text answer (`str` or
`document`) that names none of them is refused with a repair turn: "en_US.json" is no answer
to a question whose analysis found the reports' authors. `found_names` reads the names from
the tasks' answers; the writer is given the same names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from postel.messages.task import TaskOutcome

MAX_NAMES = 30
_NAME_FIELDS = ("id", "name", "title")
TEXT_KINDS = frozenset({"str", "document"})


def _names_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        return [str(value[f]) for f in _NAME_FIELDS if isinstance(value.get(f), str | int)][:1]
    if isinstance(value, list):
        return [name for item in value for name in _names_in(item)]
    return []


def found_names(outcomes: Iterable[TaskOutcome]) -> list[str]:
    """The names the graph tasks' answers hold (up to MAX_NAMES): the rows an answer by
    reference names (`COMPLETE: ${var}`), the items of a list answer, a number's digits. A
    prose answer gives none (the writer may word it otherwise), nor a task that found
    nothing or only wrote."""
    found: dict[str, None] = {}
    for outcome in outcomes:
        answer = outcome.answer
        if outcome.incomplete or not outcome.evidence:
            continue
        if isinstance(answer, int | float) and not isinstance(answer, bool):
            found.setdefault(f"{answer:g}", None)
        elif outcome.reference or isinstance(answer, list):
            found.update(dict.fromkeys(_names_in(answer)))
    return list(found)[:MAX_NAMES]


def ungrounded(value: Any, names: list[str]) -> str | None:
    """Why a written answer is not grounded in `names` (None when it names one of them,
    or when nothing was found)."""
    if not names:
        return None
    text = (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)).casefold()
    if any(name.casefold() in text for name in names):
        return None
    shown = ", ".join(json.dumps(n, ensure_ascii=False) for n in names[:8])
    return (
        f"it names none of the {len(names)} results the graph analysis found ({shown}): state them"
    )
