"""Typed syntax tree of GASL: conditions and commands, as frozen dataclasses.

Every command keeps `text`, its exact source slice, so records of nested commands (inside
TRY or ON) can name what ran. `walk` and `transform` visit any tree of these nodes, so code
that reads or rewrites a condition or command says only what it does with each kind of node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass, replace
from functools import cache
from typing import Any, Literal

# --- conditions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """An attribute of the item under test; `a.b.c` walks nested dicts."""

    path: tuple[str, ...]

    @property
    def name(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True)
class Value:
    """A literal, or a binding already resolved by the executor."""

    value: Any


@dataclass(frozen=True)
class Binding:
    """`${var}` or `${var.a.b}`: a context variable, resolved before evaluation."""

    name: str
    path: tuple[str, ...] = ()


@dataclass(frozen=True)
class Len:
    """`LEN x`: the size of a list, dict or string."""

    operand: Operand


Operand = Field | Value | Binding | Len


@dataclass(frozen=True)
class Compare:
    left: Operand
    op: Literal["=", "!=", ">", ">=", "<", "<="]
    right: Operand


@dataclass(frozen=True)
class In:
    left: Operand
    options: Operand
    negated: bool = False


@dataclass(frozen=True)
class TextMatch:
    left: Operand
    op: Literal["CONTAINS", "STARTS_WITH", "ENDS_WITH"]
    right: Operand


@dataclass(frozen=True)
class And:
    items: tuple[Condition, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Condition, ...]


@dataclass(frozen=True)
class Not:
    item: Condition


Condition = Compare | In | TextMatch | And | Or | Not

# --- references and endpoints -----------------------------------------------------------


@dataclass(frozen=True)
class VarRef:
    """A context variable named bare (`authors`) or as a binding (`${authors.items}`)."""

    name: str
    path: tuple[str, ...] = ()


@dataclass(frozen=True)
class EndpointVar:
    """Nodes taken from a variable: node records, path records or plain ids."""

    ref: VarRef


@dataclass(frozen=True)
class EndpointId:
    """One node named by its id."""

    node_id: str


@dataclass(frozen=True)
class EndpointWhere:
    """All nodes matching a condition."""

    where: Condition


Endpoint = EndpointVar | EndpointId | EndpointWhere

# --- commands ---------------------------------------------------------------------------

StateType = Literal["LIST", "DICT", "COUNTER"]
OnStatus = Literal["EMPTY", "ERROR", "PARTIAL", "SCHEMA_MISMATCH"]
AggFn = Literal["COUNT", "SUM", "AVG", "MIN", "MAX", "COLLECT"]


# Which way a walk takes a directed graph's edges: along them, against them, or either.
Direction = Literal["out", "in", "both"]


@dataclass(frozen=True)
class Command:
    text: str = field(default="", kw_only=True, compare=False)
    # what the model wrote when it used another spelling (services/gasl/dialect/)
    written: str = field(default="", kw_only=True, compare=False)

    @property
    def target(self) -> str | None:
        """The context variable this command assigns, if any."""
        return getattr(self, "into", None)


@dataclass(frozen=True)
class Declare(Command):
    key: str
    type: StateType
    description: str | None = None


@dataclass(frozen=True)
class FindItems(Command):
    kind: Literal["nodes", "edges"]
    where: Condition | None
    limit: int | None
    into: str


@dataclass(frozen=True)
class FindPaths(Command):
    start: Endpoint
    end: Endpoint
    where: Condition | None
    max_length: int | None
    limit: int | None
    into: str
    direction: Direction = "both"
    via: str | None = None


@dataclass(frozen=True)
class Process(Command):
    source: VarRef
    instruction: str
    into: str


@dataclass(frozen=True)
class Update(Command):
    key: str
    source: VarRef
    mode: Literal["MERGE", "REPLACE"] = "MERGE"


@dataclass(frozen=True)
class Analyze(Command):
    key: str
    instruction: str
    into: str


@dataclass(frozen=True)
class RequireExists(Command):
    ref: VarRef


@dataclass(frozen=True)
class Assert(Command):
    condition: Condition


@dataclass(frozen=True)
class On(Command):
    status: OnStatus
    ref: VarRef
    then: Command


@dataclass(frozen=True)
class Try(Command):
    body: tuple[Command, ...]
    catch: tuple[Command, ...]
    final: tuple[Command, ...] = ()


@dataclass(frozen=True)
class SetCap(Command):
    key: str
    value: Any


@dataclass(frozen=True)
class CancelPlan(Command):
    plan_id: str


@dataclass(frozen=True)
class SelectFields(Command):
    source: VarRef
    fields: tuple[Field, ...]
    into: str
    # the name each field takes in the rows when any is renamed (`who=id`); empty: their own
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class SelectWhere(Command):
    source: VarRef
    where: Condition
    into: str


@dataclass(frozen=True)
class Count(Command):
    source: VarRef
    into: str
    where: Condition | None = None


@dataclass(frozen=True)
class Aggregate(Command):
    source: VarRef
    by: Field | None
    fn: AggFn
    of: Field | None
    into: str


@dataclass(frozen=True)
class Rank(Command):
    source: VarRef
    by: Field
    descending: bool
    limit: int | None
    into: str


@dataclass(frozen=True)
class _Around(Command):
    """What a command about the nodes around `start` takes: within `depth` hops, along edges
    naming `via` (any edge when None), at most `limit` nodes."""

    start: Endpoint
    via: str | None
    depth: int | None
    limit: int | None
    into: str
    direction: Direction = "both"


@dataclass(frozen=True)
class Neighbors(_Around):
    """The nodes within `depth` hops of `start`, each with how it was reached."""


@dataclass(frozen=True)
class GraphWalk(Command):
    """Nodes reached from `start` within `depth` hops along edges of any `follow` relation
    (every edge when empty), each with the path that first reached it."""

    start: Endpoint
    follow: tuple[str, ...]
    depth: int | None
    limit: int | None
    into: str
    direction: Direction = "both"


@dataclass(frozen=True)
class Subgraph(_Around):
    """The nodes within `depth` hops of `start` and every edge among them."""


@dataclass(frozen=True)
class GraphConnect(Command):
    """How two node sets connect: a shortest path for each connected pair."""

    left: Endpoint
    right: Endpoint
    via: str | None
    max_length: int | None
    limit: int | None
    into: str
    direction: Direction = "both"


@dataclass(frozen=True)
class Join(Command):
    """Pairs of rows of two variables whose fields are equal."""

    left: VarRef
    right: VarRef
    left_field: Field
    right_field: Field
    into: str


@dataclass(frozen=True)
class Merge(Command):
    """The rows of several variables as one list, one row per `on` value."""

    sources: tuple[VarRef, ...]
    on: Field
    into: str


@dataclass(frozen=True)
class CompareSets(Command):
    """Which `on` values two variables share and which only one has."""

    left: VarRef
    right: VarRef
    on: Field
    into: str


@dataclass(frozen=True)
class AddField(Command):
    """Each row of `source` with one more field, computed from the row."""

    source: VarRef
    name: str
    value: Operand | Condition
    into: str


@dataclass(frozen=True)
class AddFieldByModel(Command):
    """Each row of `source` with one more field, read from it by the model."""

    source: VarRef
    name: str
    instruction: str
    into: str


@dataclass(frozen=True)
class Classify(Command):
    """Each row of `source` with a `class` the model gives it, one of `labels` if any."""

    source: VarRef
    labels: tuple[str, ...]
    instruction: str | None
    into: str


@dataclass(frozen=True)
class Show(Command):
    """A preview of a variable into the record; assigns nothing."""

    source: VarRef
    fields: tuple[Field, ...]
    names: tuple[str, ...]
    limit: int | None


@dataclass(frozen=True)
class CreateNodes(Command):
    """Overlay nodes made from rows: the row's `id_field` is the id."""

    source: VarRef
    id_field: Field
    entity_type: str | None
    into: str


@dataclass(frozen=True)
class CreateEdges(Command):
    """Overlay edges made from rows naming their two ends."""

    source: VarRef
    source_field: Field
    target_field: Field
    relation: str
    into: str


@dataclass(frozen=True)
class CreateGroups(Command):
    """Overlay group nodes, one per `by` value, linked to their member nodes."""

    source: VarRef
    by: Field
    into: str


# --- visiting a tree ----------------------------------------------------------------------


@cache
def _is_node_type(kind: type) -> bool:
    return is_dataclass(kind) and kind.__module__ == __name__


def _is_node(value: Any) -> bool:
    """Is `value` a syntax node (an instance of a dataclass of this module)?"""
    return _is_node_type(type(value))


@cache
def _field_names(kind: type) -> tuple[str, ...]:
    # A Value is a leaf: what it holds is data (a literal, a variable's value), never syntax.
    return () if kind is Value else tuple(f.name for f in fields(kind))


def children(node: Any) -> Iterator[Any]:
    """The nodes directly under `node`, in field order (a tuple field gives each element)."""
    for name in _field_names(type(node)):
        value = getattr(node, name)
        if _is_node(value):
            yield value
        elif isinstance(value, tuple):
            yield from (item for item in value if _is_node(item))


def walk(node: Any) -> Iterator[Any]:
    """`node` and every node under it, depth first, each parent before its children."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(children(current))))


def transform(node: Any, fn: Callable[[Any], Any]) -> Any:
    """A copy of the tree with `fn` applied to each node, parents first: where `fn` returns a
    new node, that node is the result and is not visited further (so a rewrite of `LEN ${v}`
    sees the binding whole); where it returns its argument, the children are transformed and
    the node rebuilt around them when any changed. Untouched subtrees are shared, not copied."""
    replaced = fn(node)
    if replaced is not node:
        return replaced
    changes: dict[str, Any] = {}
    for name in _field_names(type(node)):
        value = getattr(node, name)
        if _is_node(value):
            new = transform(value, fn)
            if new is not value:
                changes[name] = new
        elif isinstance(value, tuple):
            items = tuple(transform(item, fn) if _is_node(item) else item for item in value)
            if any(a is not b for a, b in zip(items, value, strict=True)):
                changes[name] = items
    return replace(node, **changes) if changes else node
