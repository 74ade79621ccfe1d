"""The evidence a writer is given, fitted into its token budget by leaving out list items,
and saying exactly what was left out.

What the planner found is JSON (services.planner.finish.evidence_of): per task its answer
(for an answer by reference, the state value itself, whole), its findings and its sources.
When that is over the budget, lists are shortened to as many first items as still fit, in
this order: lists in the findings and sources first, then lists inside each answer's rows
(a node's descriptions), then the answers' own rows. Lists of one kind (one path, with row
numbers as `*`) are shortened alike, the heaviest kind first, and every kind shortened is
reported: how many lists, how many of their items were left out. Only when no list is left
to shorten is the text itself cut, and said to be.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from postel.services.llm.tokens import count_tokens, truncate_to_tokens

# a token is at most 6 characters (services.llm.tokens), so longer text is over budget
# without counting it
_MAX_TOKEN_CHARS = 6
_NOTE_LINE_TOKENS = 30

Path = tuple[str | int, ...]


def fit_evidence(evidence: dict[str, Any], max_tokens: int) -> str:
    """`evidence` as JSON within `max_tokens`, followed by what was left out to fit."""
    text = _dumps(evidence)
    if _fits(text, max_tokens):
        return text
    doc = copy.deepcopy(evidence)
    originals: dict[Path, int] = {}  # each shortened list's length before it was cut
    for group in (_in_findings, _inside_answer_rows, _answer_rows):
        while not _fits(_dumps(doc), max_tokens - _note_tokens(doc, originals)):
            kinds: dict[str, list[tuple[Path, list[Any]]]] = {}
            for path, items in _lists(doc):
                if group(path) and items:
                    kinds.setdefault(_pattern(path), []).append((path, items))
            if not kinds:
                break
            # the kind of list that weighs most is shortened first, all its lists alike
            lists = max(kinds.values(), key=lambda found: sum(len(_dumps(i)) for _, i in found))
            for path, items in lists:
                originals.setdefault(path, len(items))
            room = max_tokens - _note_tokens(doc, originals) - _NOTE_LINE_TOKENS
            kept = _most_that_fit(doc, lists, room)
            for path, items in lists:
                _set(doc, path, items[:kept])
    note = _note(doc, originals)
    text, clipped = truncate_to_tokens(_dumps(doc), max(max_tokens - count_tokens(note), 0))
    if clipped:
        note += "\n…(the text above is cut short to fit as well)"
    return text + note


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _fits(text: str, max_tokens: int) -> bool:
    return len(text) <= max_tokens * _MAX_TOKEN_CHARS and count_tokens(text) <= max_tokens


def _most_that_fit(
    doc: dict[str, Any], lists: list[tuple[Path, list[Any]]], max_tokens: int
) -> int:
    """The most first items every list in `lists` may keep for `doc` to fit (0 if none),
    always fewer than the longest has."""
    low, high = 0, max(len(items) for _, items in lists) - 1
    while low < high:
        middle = (low + high + 1) // 2
        for path, items in lists:
            _set(doc, path, items[:middle])
        if _fits(_dumps(doc), max_tokens):
            low = middle
        else:
            high = middle - 1
    return low


def _lists(value: Any, path: Path = ()) -> Iterator[tuple[Path, list[Any]]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _lists(item, (*path, key))
    elif isinstance(value, list):
        yield path, value
        for index, item in enumerate(value):
            yield from _lists(item, (*path, index))


def _answer_at(path: Path) -> bool:
    return len(path) >= 3 and path[0] == "tasks" and path[2] == "answer"


def _in_findings(path: Path) -> bool:
    return not _answer_at(path) and path != ("tasks",)  # the tasks themselves all stay


def _inside_answer_rows(path: Path) -> bool:
    return _answer_at(path) and len(path) > 3


def _answer_rows(path: Path) -> bool:
    return _answer_at(path) and len(path) == 3


def _set(doc: Any, path: Path, value: Any) -> None:
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value


def _pattern(path: Path) -> str:
    """`tasks[0].answer[*].description`: the task stays numbered, rows become `*`."""
    text = ""
    for index, step in enumerate(path):
        if isinstance(step, int):
            text += f"[{step}]" if index == 1 and path[0] == "tasks" else "[*]"
        else:
            text += f".{step}" if text else step
    return text


def _get(doc: Any, path: Path) -> Any:
    """The value at `path`, or None when a cut list took the row it was in."""
    value = doc
    for step in path:
        try:
            value = value[step]
        except (IndexError, KeyError, TypeError):
            return None
    return value


def _note(doc: dict[str, Any], originals: dict[Path, int]) -> str:
    cuts: dict[str, list[int]] = {}  # kind -> [lists, items left out, items before]
    for path, total in originals.items():
        now = _get(doc, path)
        if not isinstance(now, list):
            continue  # its row was left out, which the outer list reports
        cut = cuts.setdefault(_pattern(path), [0, 0, 0])
        cut[0] += 1
        cut[1] += total - len(now)
        cut[2] += total
    if not cuts:
        return ""
    lines = ["\nLEFT OUT TO FIT (the lists above hold their first items only):"]
    for pattern, (lists, left_out, total) in cuts.items():
        which = f"of {lists} lists" if lists > 1 else "of the list"
        lines.append(f"- {pattern}: {left_out} of {total} items {which} left out")
    return "\n".join(lines)


def _note_tokens(doc: dict[str, Any], originals: dict[Path, int]) -> int:
    # the note grows as lists are cut: leave room for it and one more line
    return count_tokens(_note(doc, originals)) + _NOTE_LINE_TOKENS
