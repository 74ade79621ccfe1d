"""Edge and node lists (CSV or Parquet) as the rows a graph is built from.

How Neo4j, LightRAG and pandas export a graph as tables. The columns read:

edges: the source node, the first column present of `source`, `src_id` (LightRAG),
       `:START_ID` (neo4j-admin), `start_id`, `from`, `subject`, `head`; the target node, of
       `target`, `tgt_id`, `:END_ID`, `end_id`, `to`, `object`, `tail`; the relation's name,
       of `keywords`, `:TYPE` (Neo4j), `type`, `relation`, `predicate`, read as `keywords`;
       every other column is an attribute of the relation.
nodes: the node's id, of `id`, `entity_id` (LightRAG), `entity_name`, `:ID` (neo4j-admin),
       `name`; its type, of `entity_type`, `:LABEL` (Neo4j), `label`, `type`, read as
       `entity_type`; every other column is an attribute.

A Neo4j header's type suffix (`weight:float`, `:ID(Person)`) is dropped from the name, and
`int`, `long`, `float`, `double` and `boolean` values are converted. An empty cell is an
absent attribute. Every row then goes through the shared attribute model
(services/gasl/loaders.py) like a GraphML element.
"""

from __future__ import annotations

import codecs
import csv
from collections.abc import Callable, Iterator
from typing import Any

from postel.messages.errors import InvalidInput

SOURCE_COLUMNS = ("source", "src_id", ":START_ID", "start_id", "from", "subject", "head")
TARGET_COLUMNS = ("target", "tgt_id", ":END_ID", "end_id", "to", "object", "tail")
RELATION_COLUMNS = ("keywords", ":TYPE", "type", "relation", "predicate")
ID_COLUMNS = ("id", "entity_id", "entity_name", ":ID", "name")
TYPE_COLUMNS = ("entity_type", ":LABEL", "label", "type")

Read = Callable[[int], bytes]
Row = dict[str, Any]

_CONVERT: dict[str, Callable[[str], Any]] = {
    "int": int,
    "long": int,
    "float": float,
    "double": float,
    "boolean": lambda text: text.strip().lower() == "true",
}


class TableColumnsError(InvalidInput):
    """A table without the columns its role needs (named in the message)."""


def _column(name: str) -> tuple[str, Callable[[str], Any] | None]:
    """(name, converter) of a header cell: `weight:float` -> ("weight", float); `:ID(P)` and
    `:START_ID` keep their leading colon."""
    bare = name.split("(", 1)[0]
    if bare.startswith(":"):
        return bare, None
    head, _, kind = bare.rpartition(":")
    if head and kind.lower() in _CONVERT:
        return head, _CONVERT[kind.lower()]
    return bare, None


def _first(present: list[str], candidates: tuple[str, ...]) -> str | None:
    lowered = {name.lower(): name for name in present}
    for candidate in candidates:
        if candidate.lower() in lowered:
            return lowered[candidate.lower()]
    return None


class _Roles:
    """Which column of a table plays which part."""

    def __init__(self, names: list[str], kind: str, label: str) -> None:
        self.names = names
        if kind == "edges":
            source, target = _first(names, SOURCE_COLUMNS), _first(names, TARGET_COLUMNS)
            if source is None or target is None:
                raise TableColumnsError(
                    f"{label}: an edge list needs a source and a target column "
                    f"(one of {', '.join(SOURCE_COLUMNS)}; one of {', '.join(TARGET_COLUMNS)}); "
                    f"its columns are {', '.join(names)}"
                )
            self.ends: tuple[str, ...] = (source, target)
            self.renamed = _first(names, RELATION_COLUMNS), "keywords"
        else:
            node = _first(names, ID_COLUMNS)
            if node is None:
                raise TableColumnsError(
                    f"{label}: a node list needs an id column (one of {', '.join(ID_COLUMNS)}); "
                    f"its columns are {', '.join(names)}"
                )
            self.ends = (node,)
            self.renamed = _first(names, TYPE_COLUMNS), "entity_type"

    def split(self, row: Row) -> tuple[list[str], Row]:
        """The row's ends (id, or source and target) as strings, and its attributes."""
        ends = [str(row[name]) for name in self.ends]
        attrs: Row = {}
        renamed_from, renamed_to = self.renamed
        for name, value in row.items():
            if name in self.ends or value is None or value == "":
                continue
            attrs[renamed_to if name == renamed_from else name.lstrip(":")] = value
        return ends, attrs


def csv_rows(
    read: Read, kind: str, label: str, delimiter: str = ","
) -> Iterator[tuple[list[str], Row]]:
    """The rows of a CSV (or, with delimiter tab, TSV) table read through `read(n)`: each as
    its ends and its attributes. `kind` is "edges" or "nodes"."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()

    def lines() -> Iterator[str]:
        pending = ""
        while chunk := read(1 << 16):
            pending += decoder.decode(chunk)
            *complete, pending = pending.split("\n")
            for line in complete:
                yield line + "\n"
        pending += decoder.decode(b"", final=True)
        if pending:
            yield pending

    reader = csv.reader(lines(), delimiter=delimiter)
    header = next(reader, None)
    if header is None:
        raise TableColumnsError(f"{label} is empty: a table needs a header row")
    columns = [_column(cell.strip()) for cell in header]
    roles = _Roles([name for name, _ in columns], kind, label)
    for number, cells in enumerate(reader, start=2):
        if not cells:
            continue
        if len(cells) != len(columns):
            raise TableColumnsError(
                f"{label}: row {number} has {len(cells)} cells, its header {len(columns)}"
            )
        row: Row = {}
        for (name, convert), cell in zip(columns, cells, strict=True):
            if cell == "":
                continue
            try:
                row[name] = convert(cell) if convert else cell
            except ValueError as exc:
                raise TableColumnsError(f"{label}: row {number}, column {name}: {exc}") from None
        if any(name not in row for name in roles.ends):
            raise TableColumnsError(f"{label}: row {number} has no {' or '.join(roles.ends)}")
        yield roles.split(row)


def parquet_rows(
    source: Any, kind: str, label: str, batch_rows: int = 8192
) -> Iterator[tuple[list[str], Row]]:
    """The rows of a Parquet table (a path or a binary file object), a batch at a time; needs
    pyarrow (`pip install 'postel[parquet]'`)."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # an optional dependency
        raise TableColumnsError(
            f"{label}: reading Parquet needs pyarrow: pip install 'postel[parquet]'"
        ) from exc
    table = pq.ParquetFile(source)
    names = [_column(name)[0] for name in table.schema_arrow.names]
    roles = _Roles(names, kind, label)
    for batch in table.iter_batches(batch_size=batch_rows):
        for row in batch.to_pylist():
            renamed = {_column(name)[0]: value for name, value in row.items()}
            if any(renamed.get(name) is None for name in roles.ends):
                raise TableColumnsError(f"{label}: a row has no {' or '.join(roles.ends)}")
            yield roles.split(renamed)
