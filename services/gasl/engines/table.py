"""Records in a fixed order, selected by a WHERE against a deadline: the engine-independent
table and index machinery every graph engine reads its node and relation rows through.

A `Table` builds an equality index or a column on first use and keeps it; a `Layers` reads
two tables as one (a shared graph's rows, then a job's overlay's) without copying either.
Scans test records in chunks of `SCAN_CHUNK`, reading the clock between chunks.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from postel.services.gasl import ast
from postel.services.gasl.budget import Deadline
from postel.services.gasl.conditions import MISSING, evaluate
from postel.services.gasl.engines.caps import Bound
from postel.services.gasl.errors import BudgetSpent

# Records a scan tests between two reads of the clock.
SCAN_CHUNK = 4096


@dataclass
class Selection:
    """The ordinals of the records a select chose, and what limited it."""

    ordinals: list[int]
    caps_hit: list[str]
    examined: int
    used_index: bool


class Table:
    """Attribute dicts in a fixed order, with equality indexes built on first use.

    An index maps a value to the ordinals of the records holding it; list values are
    indexed per element, matching the any-element semantics of conditions. An attribute
    holding an unhashable value somewhere gets no index (those searches scan). An index
    build cut short by a deadline is dropped, never kept half-built.

    A scan tests each record with the WHERE compiled once into a test of its ordinal
    (`matcher`): equality reads the attribute's column, and CONTAINS, STARTS_WITH and
    ENDS_WITH read a lower-cased copy of it, each built on first use and kept (a build cut
    short by the deadline is dropped too). Records added later (`extend`, an overlay's)
    update what was built, so nothing is built twice.
    """

    def __init__(self, records: list[dict[str, Any]], use_indexes: bool) -> None:
        self.records = records
        self.use_indexes = use_indexes
        self._indexes: dict[str, dict[Hashable, list[int]] | None] = {}
        self._columns: dict[str, list[Any]] = {}
        self._folded: dict[str, list[Any]] = {}

    def __len__(self) -> int:
        return len(self.records)

    def record(self, ordinal: int) -> dict[str, Any]:
        return self.records[ordinal]

    def first(self, count: int) -> list[dict[str, Any]]:
        return self.records[:count]

    def extend(self, records: list[dict[str, Any]]) -> None:
        """Add records at the end, updating the columns and indexes built so far."""
        start = len(self.records)
        self.records.extend(records)
        for name, column in self._columns.items():
            column.extend(attrs.get(name, MISSING) for attrs in records)
        for name, folded in self._folded.items():
            folded.extend(_fold(attrs.get(name, MISSING)) for attrs in records)
        for name, index in self._indexes.items():
            if index is not None and not _index_into(index, name, records, start):
                self._indexes[name] = None

    def column(self, name: str, deadline: Deadline | None = None) -> list[Any]:
        """Each record's value of `name` (MISSING where it has none), by ordinal."""
        if name not in self._columns:
            self._columns[name] = _chunked(
                self.records, lambda attrs: attrs.get(name, MISSING), deadline
            )
        return self._columns[name]

    def folded(self, name: str, deadline: Deadline | None = None) -> list[Any]:
        """The column lower-cased for text matches: a str, a tuple of the strs of a list
        value, or None where no text can match."""
        if name not in self._folded:
            self._folded[name] = _chunked(self.column(name, deadline), _fold, deadline)
        return self._folded[name]

    def matcher(
        self, where: ast.Condition, deadline: Deadline | None = None
    ) -> Callable[[int], bool]:
        """`where` as a test of a record's ordinal, with the same meaning as `evaluate`."""
        match where:
            case ast.Compare(ast.Field(path), "=", ast.Value(value)) | ast.Compare(
                ast.Value(value), "=", ast.Field(path)
            ) if len(path) == 1 and not isinstance(value, list):
                column = self.column(path[0], deadline)
                return lambda o: (x := column[o]) == value or (type(x) is list and value in x)
            case ast.Compare(ast.Field(path), "!=", ast.Value(value)) | ast.Compare(
                ast.Value(value), "!=", ast.Field(path)
            ) if len(path) == 1 and not isinstance(value, list):
                # `!=` is true exactly where `=` is false (a missing field, every element of a
                # list differing): compiled too, so an AND chain of exclusions scans columns
                # as an OR chain of equalities does, not through the interpreter
                equal = self.matcher(ast.Compare(ast.Field(path), "=", ast.Value(value)))
                return lambda o: not equal(o)
            case ast.TextMatch(ast.Field(path), op, ast.Value(str() as text)) if len(path) == 1:
                return _text_matcher(self.folded(path[0], deadline), op, text.casefold())
            case ast.And(items):
                tests = [self.matcher(item, deadline) for item in items]
                return lambda o: all(test(o) for test in tests)
            case ast.Or(items):
                tests = [self.matcher(item, deadline) for item in items]
                return lambda o: any(test(o) for test in tests)
            case ast.Not(inner):
                test = self.matcher(inner, deadline)
                return lambda o: not test(o)
        records = self.records
        return lambda o: evaluate(where, records[o])

    def index(
        self, name: str, deadline: Deadline | None = None
    ) -> dict[Hashable, list[int]] | None:
        if name not in self._indexes:
            self._indexes[name] = self._build(name, deadline or Deadline.never())
        return self._indexes[name]

    def _build(self, name: str, deadline: Deadline) -> dict[Hashable, list[int]] | None:
        index: dict[Hashable, list[int]] = {}
        for start in range(0, len(self.records), SCAN_CHUNK):
            deadline.check()
            if not _index_into(index, name, self.records[start : start + SCAN_CHUNK], start):
                return None
        return index

    def candidates(self, where: ast.Condition, deadline: Deadline) -> list[int] | None:
        """Ordinals that may match, from indexes; None when the condition needs a scan."""
        found = self._plan(where, deadline)
        return None if found is None else sorted(found)

    def _plan(self, where: ast.Condition, deadline: Deadline) -> set[int] | None:
        match where:
            case ast.Compare(ast.Field(path), "=", ast.Value(value)) if len(path) == 1:
                return self._lookup(path[0], [value], deadline)
            case ast.Compare(ast.Value(value), "=", ast.Field(path)) if len(path) == 1:
                return self._lookup(path[0], [value], deadline)
            case ast.In(ast.Field(path), ast.Value(options), False) if len(path) == 1 and (
                isinstance(options, list)
            ):
                return self._lookup(path[0], options, deadline)
            case ast.And(items):
                parts = [p for p in (self._plan(i, deadline) for i in items) if p is not None]
                if not parts:
                    return None
                smallest = min(parts, key=len)
                return smallest.intersection(*[p for p in parts if p is not smallest])
            case ast.Or(items):
                planned = [self._plan(i, deadline) for i in items]
                if any(p is None for p in planned):
                    return None
                return set().union(*[p for p in planned if p is not None])
        return None

    def _lookup(self, name: str, values: Iterable[Any], deadline: Deadline) -> set[int] | None:
        # indexes hold no None (an attribute set to null is not indexed): those scan
        if not all(
            isinstance(v, Hashable) and not isinstance(v, tuple) and v is not None for v in values
        ):
            return None
        index = self.index(name, deadline)
        if index is None:
            return None
        out: set[int] = set()
        for v in values:
            deadline.tick()
            out.update(index.get(v, ()))
        return out

    def select(
        self, where: ast.Condition | None, limit: int | None, cap: int, deadline: Deadline
    ) -> Selection:
        """Records matching `where`, at most `limit` and `cap` of them, found by the deadline."""
        return _select([self], where, limit, cap, deadline)


class Layers:
    """The records of `base` followed by those of `top`, read without copying either: a
    job's overlay records after the shared graph's. Ordinals run on from base into top, so
    results come in the order a graph holding both would give."""

    def __init__(self, base: Table, top: Table) -> None:
        self.base = base
        self.top = top

    def __len__(self) -> int:
        return len(self.base) + len(self.top)

    def record(self, ordinal: int) -> dict[str, Any]:
        cut = len(self.base)
        return self.base.record(ordinal) if ordinal < cut else self.top.record(ordinal - cut)

    def first(self, count: int) -> list[dict[str, Any]]:
        return [*self.base.first(count), *self.top.first(max(0, count - len(self.base)))]

    def matcher(
        self, where: ast.Condition, deadline: Deadline | None = None
    ) -> Callable[[int], bool]:
        cut = len(self.base)
        below, above = self.base.matcher(where, deadline), self.top.matcher(where, deadline)
        return lambda o: below(o) if o < cut else above(o - cut)

    def index(self, name: str, deadline: Deadline | None = None) -> None:
        self.base.index(name, deadline)
        self.top.index(name, deadline)

    def select(
        self, where: ast.Condition | None, limit: int | None, cap: int, deadline: Deadline
    ) -> Selection:
        return _select([self.base, self.top], where, limit, cap, deadline)


def _select(
    layers: list[Table],
    where: ast.Condition | None,
    limit: int | None,
    cap: int,
    deadline: Deadline,
) -> Selection:
    """Records of the layers, in order, matching `where`: at most `limit` and `cap` of
    them, found by the deadline. Each layer answers from its own indexes, or is scanned."""
    bound = Bound.of(limit, cap, "max_results")
    wanted = bound.count
    hits: list[int] = []
    examined = done = 0
    indexed = where is not None
    try:
        offset = 0
        for table in layers:
            planned = None
            if where is not None and table.use_indexes:
                planned = table.candidates(where, deadline)
            indexed = indexed and planned is not None
            pool: Sequence[int] = range(len(table)) if planned is None else planned
            test = None if where is None else _test_of(table, where, planned, deadline)
            # in chunks: the deadline is read once per chunk, not per record
            for start in range(0, len(pool), SCAN_CHUNK):
                deadline.check()
                chunk = pool[start : start + SCAN_CHUNK]
                found = chunk if test is None else [o for o in chunk if test(o)]
                hits.extend(o + offset for o in found)
                if len(hits) > wanted:
                    # examined up to the first hit past those wanted (pools are ascending)
                    del hits[wanted + 1 :]
                    examined = done + start + bisect.bisect_left(chunk, hits[-1] - offset) + 1
                    return Selection(hits[:wanted], bound.cut(), examined, indexed)
                examined = done + start + len(chunk)
            done += len(pool)
            offset += len(table)
    except BudgetSpent as spent:
        return Selection(hits[:wanted], [spent.cap], examined, indexed)
    return Selection(hits, [], examined, indexed)


def _test_of(
    table: Table, where: ast.Condition, planned: list[int] | None, deadline: Deadline
) -> Callable[[int], bool]:
    """The test of each record of a pool: compiled over columns for a scan; for the few
    records an index chose, `evaluate` on each (building a column of the whole table would
    cost more than the lookup)."""
    if planned is None:
        return table.matcher(where, deadline)
    records = table.records
    return lambda o: evaluate(where, records[o])


def _index_into(
    index: dict[Hashable, list[int]], name: str, records: list[dict[str, Any]], start: int
) -> bool:
    """Add records (the first has ordinal `start`) to an index of `name`; False when one
    holds a value no index can hold."""
    for ordinal, attrs in enumerate(records, start):
        value = attrs.get(name)
        if value is None:
            continue
        values = value if isinstance(value, list) else (value,)
        for v in values:
            if not isinstance(v, Hashable) or isinstance(v, tuple):
                return False
            bucket = index.setdefault(v, [])
            if not bucket or bucket[-1] != ordinal:
                bucket.append(ordinal)
    return True


def _chunked(
    items: Sequence[Any], each: Callable[[Any], Any], deadline: Deadline | None
) -> list[Any]:
    """`each` of every item, the deadline read between chunks: a column of a large graph
    is built within the command's budget or not at all."""
    deadline = deadline or Deadline.never()
    out: list[Any] = []
    for start in range(0, len(items), SCAN_CHUNK):
        deadline.check()
        out.extend(map(each, items[start : start + SCAN_CHUNK]))
    return out


def _fold(value: Any) -> Any:
    if isinstance(value, str):
        return value.casefold()
    if isinstance(value, list):
        return tuple(_flat_texts(value))
    return None


def _flat_texts(values: list[Any]) -> Iterator[str]:
    for value in values:
        if isinstance(value, str):
            yield value.casefold()
        elif isinstance(value, list):
            yield from _flat_texts(value)


def _text_matcher(column: list[Any], op: str, needle: str) -> Callable[[int], bool]:
    """A text match on a folded column: a str, or any str of a list value."""
    if op == "CONTAINS":
        return lambda o: (
            (s := column[o]) is not None
            and (needle in s if type(s) is str else any(needle in e for e in s))
        )
    if op == "STARTS_WITH":
        return lambda o: (
            (s := column[o]) is not None
            and (s.startswith(needle) if type(s) is str else any(e.startswith(needle) for e in s))
        )
    return lambda o: (
        (s := column[o]) is not None
        and (s.endswith(needle) if type(s) is str else any(e.endswith(needle) for e in s))
    )
