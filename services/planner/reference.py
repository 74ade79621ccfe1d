"""Answers by reference: `COMPLETE: ${var}` makes a value the round store holds the task's
answer, whole, so the model points at rows instead of copying them.

`${var}` names a variable a plan assigned with `AS` or a declared state key; `${var.field}`
(any dotted path) one field of each of its rows (the rows that have it), or of the value
itself when it is one object. A declared key's own dotted name (`${found.people}`) names
that key. The newest round decides: the round just run is searched first (its variables,
then the state it left), then the variables of the task's earlier rounds, newest first,
skipping rounds a pivot abandoned; a name found in a round is read there (a missing field is
an error, not a reason to look further back).

An answer holding one reference is that reference whatever words surround it
(`"the films are ${films}"`); several different ones are an error. Every failure is a
ReferenceProblem worded for the model: the next round shows it, the answer is never empty.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from postel.messages.errors import NotFound
from postel.messages.limits import MAX_REFERENCE_BYTES
from postel.messages.pipeline import GaslPlanExecuted
from postel.services.gasl.conditions import MISSING, lookup
from postel.services.gasl.stage import ROUND_VARIABLES
from postel.services.gasl.state import MemoryStateBackend, StateStore

_REFERENCE = re.compile(r"\$\{\s*([A-Za-z_]\w*(?:\.\w+)*)\s*\}")
_FIELDS_SHOWN = 12

RoundReader = Callable[[int, int], Awaitable[dict[str, Any] | None]]
"""(task index, round) -> the state document that round left, with its variables
(services.gasl.stage.ROUND_VARIABLES); None when the store holds none."""


class ReferenceProblem(NotFound):
    """A reference that cannot be the answer, said so that the model can fix it."""


@dataclass(frozen=True)
class Reference:
    name: str
    path: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return "${" + ".".join((self.name, *self.path)) + "}"


def find_reference(answer: Any) -> Reference | None:
    """The reference an answer is, if it is one (also alone in a list: `["${ans}"]`);
    raises ReferenceProblem for several."""
    if isinstance(answer, list) and len(answer) == 1:
        answer = answer[0]
    if not isinstance(answer, str):
        return None
    found = list(dict.fromkeys(_REFERENCE.findall(answer)))
    if not found:
        return None
    if len(found) > 1:
        named = ", ".join("${" + name + "}" for name in found)
        raise ReferenceProblem(
            f"the answer names {len(found)} values ({named}); COMPLETE names one: "
            "${var} or ${var.field}"
        )
    name, *path = found[0].split(".")
    return Reference(name, tuple(path))


@dataclass(frozen=True)
class _Round:
    number: int
    variables: dict[str, Any]
    state: StateStore | None  # only the newest round's state is current


def rounds_to_search(message: GaslPlanExecuted) -> list[int]:
    """The round just run, then the task's earlier rounds not abandoned, newest first."""
    earlier = {note.round for note in message.history if not note.abandoned}
    earlier.discard(message.round)
    return [message.round, *sorted((r for r in earlier if r < message.round), reverse=True)]


async def resolve(
    reference: Reference, read_round: RoundReader | None, task_index: int, rounds: Sequence[int]
) -> Any:
    """The value `reference` names, whole (the JSON the round store kept)."""
    if read_round is None:
        raise ReferenceProblem(
            f"{reference.text} cannot be read here (no round store); write the answer itself"
        )
    searched: list[_Round] = []
    for index, number in enumerate(rounds):
        doc = await read_round(task_index, number)
        if doc is None:
            continue
        state = None
        if index == 0:
            backend = MemoryStateBackend()
            backend.save(doc)
            state = StateStore(backend)
        held = _Round(number, dict(doc.get(ROUND_VARIABLES) or {}), state)
        searched.append(held)
        value = _read(reference, held)
        if value is not MISSING:
            return _bounded(reference, value)
    raise ReferenceProblem(f"{reference.text} names nothing: {_known(searched)}")


def _read(reference: Reference, held: _Round) -> Any:
    if reference.name in held.variables:
        whole = held.variables[reference.name]
        return _project(reference, reference.name, whole, reference.path)
    if held.state is None:
        return MISSING
    parts = (reference.name, *reference.path)
    for cut in range(len(parts), 0, -1):  # the longest declared key first
        key = ".".join(parts[:cut])
        if held.state.has(key):
            return _project(reference, key, held.state.get(key), parts[cut:])
    return MISSING


def _project(reference: Reference, key: str, whole: Any, path: Sequence[str]) -> Any:
    if not path:
        return whole
    steps = tuple(path)
    if isinstance(whole, list):
        found = [lookup(row, steps) for row in whole]
        value = [item for item in found if item is not MISSING]
        if whole and not value:
            raise ReferenceProblem(
                f"{reference.text}: no row of {key} has the field {'.'.join(steps)!r}; "
                f"its rows have {_fields(whole)}"
            )
        return value
    value = lookup(whole, steps)
    if value is MISSING:
        has = _fields([whole]) if isinstance(whole, dict) else f"no fields (it is {_kind(whole)})"
        raise ReferenceProblem(
            f"{reference.text}: {key} has no field {'.'.join(steps)!r}; it has {has}"
        )
    return value


def _bounded(reference: Reference, value: Any) -> Any:
    size = len(json.dumps(value, ensure_ascii=False, default=str).encode())
    if size > MAX_REFERENCE_BYTES:
        raise ReferenceProblem(
            f"{reference.text} is {size} bytes, over the {MAX_REFERENCE_BYTES} an answer may "
            "hold; name one field (${var.id}) or narrow it first (SELECT, LIMIT)"
        )
    return value


def fields_of(rows: Sequence[Any], most: int = _FIELDS_SHOWN) -> list[str]:
    """The field names of the rows that are objects, in first-seen order."""
    names: dict[str, None] = {}
    for row in rows:
        if isinstance(row, dict):
            names.update(dict.fromkeys(str(k) for k in row))
        if len(names) >= most:
            break
    return list(names)[:most]


def _fields(rows: Sequence[Any]) -> str:
    names = fields_of(rows)
    return ", ".join(names) if names else "no fields (they are not objects)"


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else type(value).__name__


def _known(searched: Sequence[_Round]) -> str:
    if not searched:
        return "no round's variables are stored"
    parts = []
    for held in searched:
        names = sorted(held.variables)
        if held.state is not None:
            keys = held.state.keys()
            parts.append(
                f"round {held.number} assigned {', '.join(names) or 'nothing'}; "
                f"the state holds {', '.join(keys) or 'no declared key'}"
            )
        elif names:
            parts.append(f"round {held.number} assigned {', '.join(names)}")
    return "; ".join(parts)
