"""The form a registered graph is stored in: packed tables that load in a fraction of the
time GraphML takes to parse, and run no code when read.

A stored graph is one file (`write_packed` writes it as the graph streams out of the spool,
infra/store/graph_ingest.py; `decode` reads it back, as bytes or mapped into memory):

    MAGIC  (b"postel-graph\\n")
    4 bytes, big-endian: the header's length
    header (JSON): {"version": 1, "directed": bool, "nodes": int, "edges": int,
                    "relations": int, "shapes": [[keys, ref positions], ...],
                    "chunks": [{"kind": "nodes"|"edges", "rows": int, "bytes": int,
                                "crc32": int}, ...]}
    the chunks, back to back: each zlib-compressed JSON, a list of rows

A node row is `[id, shape, value, ...]`, an edge row `[source, target, shape, value, ...]`
with source and target as node numbers (their order in the node rows). A shape is the
attribute names of a row in order (so every attribute dict keeps its key order) and the
positions whose value is a node number standing for that node's id (a node's own `id`, an
edge's `source` and `target` when they are its ends: one string object per id in memory).
Values are JSON: the shared attribute model holds strings, numbers, booleans, lists and
dicts, which JSON carries exactly (floats by their shortest repr, NaN and infinities included).

Nodes come before edges and edges in the order they were added, so the loaded graph visits
neighbours in the same order as one parsed from the GraphML. Chunks hold at most
CHUNK_ROWS rows: decoding one holds the interpreter lock for milliseconds, not seconds.
Each chunk's CRC-32 is checked; a wrong magic, version, length or checksum is a
GraphFormatError naming it.
"""

from __future__ import annotations

import json
import mmap
import shutil
import struct
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from postel.messages.errors import InvalidInput
from postel.services.gasl.loaders import GraphTables

MAGIC = b"postel-graph\n"
VERSION = 1
CHUNK_ROWS = 4_000
_LENGTH = struct.Struct(">I")
# attributes whose string value is a node's id, stored as that node's number
_REF_KEYS = frozenset(("id", "source", "target"))

Shape = tuple[tuple[str, ...], tuple[int, ...]]
Stored = bytes | mmap.mmap


class GraphFormatError(InvalidInput):
    """A stored graph that cannot be read back (named in the message)."""


def _dumps(rows: list[list[Any]]) -> bytes:
    return zlib.compress(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode(), 6)


class _Shapes:
    def __init__(self) -> None:
        self.codes: dict[Shape, int] = {}

    def own_row(self, attrs: dict[str, Any], known: dict[str, int]) -> list[Any]:
        """[shape code, values...] of one attribute dict, with the ids in `known` (a node's
        own, an edge's ends) as their numbers."""
        values = list(attrs.values())
        refs = []
        for position, key in enumerate(attrs):
            if key in _REF_KEYS:
                value = values[position]
                if type(value) is str and value in known:
                    values[position] = known[value]
                    refs.append(position)
        return self._coded(attrs, values, refs)

    def _coded(self, attrs: dict[str, Any], values: list[Any], refs: list[int]) -> list[Any]:
        shape = (tuple(attrs), tuple(refs))
        code = self.codes.get(shape)
        if code is None:
            code = self.codes[shape] = len(self.codes)
        return [code, *values]


def read_header(stored: Stored) -> tuple[dict[str, Any], int]:
    """The header and the offset of the first chunk; GraphFormatError if it is not one."""
    if stored[: len(MAGIC)] != MAGIC:
        raise GraphFormatError("it is not a packed postel graph (wrong magic bytes)")
    at = len(MAGIC)
    if len(stored) < at + _LENGTH.size:
        raise GraphFormatError("it ends inside its header")
    (length,) = _LENGTH.unpack_from(stored, at)
    at += _LENGTH.size
    try:
        header = json.loads(stored[at : at + length])
    except ValueError as exc:
        raise GraphFormatError(f"its header is not readable JSON ({exc})") from exc
    if not isinstance(header, dict):
        raise GraphFormatError("its header is not a JSON object")
    version = header.get("version")
    if version != VERSION:
        raise GraphFormatError(
            f"it is in format version {version!r}, and this postel reads version {VERSION}: "
            "add the graph again from its GraphML"
        )
    return header, at + length


def _chunks(stored: Stored) -> Iterator[tuple[dict[str, Any], str, list[list[Any]]]]:
    header, at = read_header(stored)
    yield header, "", []
    for index, chunk in enumerate(header["chunks"]):
        data = stored[at : at + chunk["bytes"]]
        at += chunk["bytes"]
        where = f"chunk {index} ({chunk['kind']})"
        if len(data) != chunk["bytes"]:
            raise GraphFormatError(f"it is cut short in {where}")
        if zlib.crc32(data) != chunk["crc32"]:
            raise GraphFormatError(f"{where} fails its CRC-32 check")
        try:
            rows = json.loads(zlib.decompress(data))
        except (zlib.error, ValueError) as exc:
            raise GraphFormatError(f"{where} cannot be decoded ({exc})") from exc
        if not isinstance(rows, list) or len(rows) != chunk["rows"]:
            raise GraphFormatError(f"{where} does not hold its {chunk['rows']} rows")
        yield header, chunk["kind"], rows
    if at != len(stored):
        raise GraphFormatError(f"it has {len(stored) - at} bytes after its last chunk")


def decode(stored: Stored) -> GraphTables:
    """The tables of a stored graph, bytes or a file mapped into memory (blocking: run it in a
    thread for big graphs)."""
    ids: list[str] = []
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[tuple[str, str, dict[str, Any]]] = []
    try:
        chunks = _chunks(stored)
        header, _, _ = next(chunks)
        shapes = [(tuple(keys), tuple(refs)) for keys, refs in header["shapes"]]
        for _, kind, rows in chunks:
            if kind == "nodes":
                for row in rows:
                    node = row[0]
                    ids.append(node)
                    nodes[node] = _attrs(shapes, ids, row, 1)
            else:
                edges.extend(
                    (ids[row[0]], ids[row[1]], _attrs(shapes, ids, row, 2)) for row in rows
                )
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, GraphFormatError):
            raise
        raise GraphFormatError(f"its header or a row is malformed ({exc!r})") from exc
    if (len(nodes), len(edges)) != (header["nodes"], header["edges"]):
        raise GraphFormatError(
            f"it holds {len(nodes)} nodes and {len(edges)} edges, its header says "
            f"{header['nodes']} and {header['edges']}"
        )
    return GraphTables(bool(header["directed"]), nodes, edges)


def _attrs(shapes: list[Shape], ids: list[str], row: list[Any], at: int) -> dict[str, Any]:
    keys, refs = shapes[row[at]]
    values = row[at + 1 :]
    if len(values) != len(keys):
        raise IndexError(f"{len(values)} values for {len(keys)} attributes")
    for position in refs:
        values[position] = ids[values[position]]
    return dict(zip(keys, values, strict=True))


def write_packed(
    path: Path,
    directed: bool,
    nodes: Iterable[tuple[str, dict[str, Any]]],
    edges: Iterable[tuple[int, int, str, str, dict[str, Any]]],
    relations: Any,
) -> dict[str, Any]:
    """Write a graph in the packed form to `path` as it streams, a chunk at a time: `nodes`
    in their order, then `edges` as (source number, target number, source id, target id,
    attributes). `relations()` gives the relations counted once the edges are through.
    Returns the header. Memory holds one chunk and the shapes, never the graph."""
    shapes = _Shapes()
    chunks: list[dict[str, Any]] = []
    counts = {"nodes": 0, "edges": 0}
    with tempfile.TemporaryFile(dir=path.parent) as body:

        def flush(kind: str, rows: list[list[Any]]) -> None:
            data = _dumps(rows)
            body.write(data)
            counts[kind] += len(rows)
            chunks.append(
                {"kind": kind, "rows": len(rows), "bytes": len(data), "crc32": zlib.crc32(data)}
            )

        rows: list[list[Any]] = []
        for number, (node, attrs) in enumerate(nodes):
            rows.append([node, *shapes.own_row(attrs, {node: number})])
            if len(rows) >= CHUNK_ROWS:
                flush("nodes", rows)
                rows = []
        if rows:
            flush("nodes", rows)
        rows = []
        for u, v, source, target, attrs in edges:
            rows.append([u, v, *shapes.own_row(attrs, {source: u, target: v})])
            if len(rows) >= CHUNK_ROWS:
                flush("edges", rows)
                rows = []
        if rows:
            flush("edges", rows)
        header = {
            "version": VERSION,
            "directed": directed,
            "nodes": counts["nodes"],
            "edges": counts["edges"],
            "relations": relations(),
            "shapes": [[list(keys), list(refs)] for keys, refs in shapes.codes],
            "chunks": chunks,
        }
        head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
        body.seek(0)
        with path.open("wb") as out:
            out.write(MAGIC + _LENGTH.pack(len(head)) + head)
            shutil.copyfileobj(body, out, 1 << 20)
    return header
