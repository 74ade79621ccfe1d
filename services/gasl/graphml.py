"""GraphML bytes to the nodes and edges `nx.read_graphml` would give, without networkx.

networkx builds a whole ElementTree, searches it element by element and builds a multigraph
it then copies; on a 10^5-relation knowledge graph that was most of the time `postel graph
add` spent. This reader takes the document in one streaming pass (expat, no tree) and
follows networkx's reader's rules with plain dicts (nodes, then edges; a multigraph only
when a pair repeats; GraphML edge ids as multigraph keys, a repeated key merging, or as an
`id` attribute; edges in networkx's iteration order), so its RawGraph equals
`RawGraph.of(nx.read_graphml(...))`, attribute order included (tests/graphs checks it).

It reads the GraphML that knowledge-graph tools write (keys, one graph, nodes and edges with
data). Anything else (yfiles extensions, ports, hyperedges, nested or several graphs, a
document networkx would refuse) goes to `nx.read_graphml` itself, which reads it or raises
its own error: the result never depends on which reader ran.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from xml.parsers import expat

import networkx as nx
from networkx.readwrite.graphml import GraphML
from postel.messages.errors import InvalidInput

_NS = "http://graphml.graphdrawing.org/xmlns}"
_GRAPHML, _KEY, _DEFAULT, _GRAPH = (_NS + t for t in ("graphml", "key", "default", "graph"))
_NODE, _EDGE, _DATA = (_NS + t for t in ("node", "edge", "data"))
# What networkx's reader refuses or reads specially: left to it.
_SPECIAL = {_NS + t for t in ("hyperedge", "port")}
_ITEMS = (_NODE, _EDGE)

_TYPES = GraphML()
_TYPES.construct_types()


@dataclass
class RawGraph:
    """A GraphML graph as networkx reads it: its nodes (in order, with their data) and its
    edges in the order `graph.edges(data=True)` gives them, one per relation."""

    directed: bool
    nodes: dict[str, dict[str, Any]]
    edges: list[tuple[str, str, dict[str, Any]]]

    @classmethod
    def of(cls, graph: nx.Graph) -> RawGraph:
        return cls(graph.is_directed(), dict(graph.nodes(data=True)), list(graph.edges(data=True)))


class _Unusual(Exception):
    """The document needs networkx's own reader (see the module docstring)."""


# (tag, attributes, [(key id, text or None)]) of one <node> or <edge>
_Element = tuple[str, dict[str, str], list[tuple[str, str | None]]]


class _Reader:
    """Collects keys, the graph's nodes and edges and their data in one expat pass."""

    def __init__(self, parser: Any) -> None:
        self.parser = parser
        self.keys: dict[str, tuple[str, str, str | None]] = {}  # id -> (name, type, default)
        self.graphs = 0
        self.edgedefault: str | None = None
        self.nodes: list[_Element] = []
        self.edges: list[_Element] = []
        self.graph_data: list[tuple[str, str | None]] = []
        self._path: list[str] = []
        self._skip = 0  # depth inside an element networkx ignores
        self._text: list[str] | None = None
        self._data_key = ""
        self._key: tuple[str, str, str] | None = None
        self._default: str | None = None
        self._default_seen = False

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        if self._skip:
            self._skip += 1
            return
        path = self._path
        depth = len(path)
        if tag == _DATA and depth == 3 and path[-1] in _ITEMS:  # the commonest: first
            self._start_data(attrs)
        elif depth == 2 and tag in _ITEMS and path[-1] == _GRAPH:
            if tag == _EDGE and "directed" in attrs:
                raise _Unusual
            (self.nodes if tag == _NODE else self.edges).append((tag, attrs, []))
        elif depth == 0:
            if tag != _GRAPHML:
                raise _Unusual
        elif depth == 1:
            if tag == _KEY:
                self._start_key(attrs)
            elif tag == _GRAPH:
                self.graphs += 1
                if self.graphs > 1:
                    raise _Unusual
                self.edgedefault = attrs.get("edgedefault")
            else:
                self._skip = 1
                return
        elif depth == 2:
            if path[-1] == _KEY:
                if tag != _DEFAULT or self._default_seen:
                    self._skip = 1
                    return
                self._default_seen = True
                self._start_text()
            elif tag == _DATA:
                self._start_data(attrs)
            elif tag in _SPECIAL or tag == _GRAPH:
                raise _Unusual
            else:
                self._skip = 1
                return
        elif depth == 3 and path[-1] in _ITEMS:
            if tag in _SPECIAL or tag == _GRAPH:
                raise _Unusual
            self._skip = 1
            return
        else:  # an element inside <data> or <default>: a yfiles extension
            raise _Unusual
        path.append(tag)

    def _start_key(self, attrs: dict[str, str]) -> None:
        if "yfiles.type" in attrs:
            raise _Unusual
        name, kind = attrs.get("attr.name"), attrs.get("attr.type")
        if name is None or kind is None:  # networkx warns or refuses: let it
            raise _Unusual
        self._key = (attrs.get("id", ""), name, kind)
        self._default, self._default_seen = None, False

    def _start_data(self, attrs: dict[str, str]) -> None:
        self._data_key = attrs.get("key", "")
        self._start_text()

    def _start_text(self) -> None:
        # text is collected only inside <data> and <default>: the handler is set for them
        # alone, so the whitespace between elements costs no call
        self._text = []
        self.parser.CharacterDataHandler = self._text.append

    def end(self, tag: str) -> None:
        if self._skip:
            self._skip -= 1
            return
        self._path.pop()
        if tag == _DATA:
            text = self._joined()
            if len(self._path) == 2:
                self.graph_data.append((self._data_key, text))
            else:
                (self.nodes if self._path[-1] == _NODE else self.edges)[-1][2].append(
                    (self._data_key, text)
                )
        elif tag == _DEFAULT:
            self._default = self._joined()
            if self._default is None:  # networkx converts None: an error or "None"
                raise _Unusual
        elif tag == _KEY:
            assert self._key is not None
            key_id, name, kind = self._key
            self.keys[key_id] = (name, kind, self._default)

    def _joined(self) -> str | None:
        # ElementTree's text of an empty element is None, which networkx reads as ""
        parts, self._text = self._text, None
        self.parser.CharacterDataHandler = None
        return "".join(parts) if parts else None


def _converter(kind: str) -> Any:
    python_type = _TYPES.python_type[kind]
    if python_type is bool:
        return lambda text: _TYPES.convert_bool[text.lower()]
    return python_type


def _decoder(keys: dict[str, tuple[str, str, str | None]]) -> Any:
    converters = {key_id: (name, _converter(kind)) for key_id, (name, kind, _) in keys.items()}

    def decode(pairs: list[tuple[str, str | None]]) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for key_id, text in pairs:
            name, convert = converters[key_id]  # an unknown key: networkx names it
            data[name] = "" if text is None else convert(text)
        return data

    # defaults are not applied to nodes or edges, but a bad one makes the file unreadable
    for _, kind, default in keys.values():
        if default is not None:
            _converter(kind)(default)
        elif kind not in _TYPES.python_type:
            raise _Unusual
    return decode


def _build(reader: _Reader) -> RawGraph:
    """The graph from the collected elements, as networkx's GraphMLReader would build it:
    a multigraph whose pairs map edge keys to data, then `RawGraph.of` its result."""
    decode = _decoder(reader.keys)
    directed = reader.edgedefault == "directed"
    nodes: dict[str, dict[str, Any]] = {}
    for _, attrs, pairs in reader.nodes:
        nodes.setdefault(str(attrs.get("id")), {}).update(decode(pairs))
    # u -> v -> {key: data}; an undirected pair's dict is shared by both ends
    adj: dict[str, dict[str, dict[Any, dict[str, Any]]]] = {}
    multigraph = False
    with_ids: list[tuple[dict[str, Any], str]] = []
    for _, attrs, pairs in reader.edges:
        source, target = str(attrs.get("source")), str(attrs.get("target"))
        data = decode(pairs)
        edge_id: Any = attrs.get("id")
        if edge_id:
            with_ids.append((data, edge_id))
            with contextlib.suppress(ValueError):  # networkx's edge_key_type
                edge_id = int(edge_id)
        else:
            edge_id = data.get("key")
        for end in (source, target):
            if end not in nodes:
                nodes[end] = {}
        keyed = adj.setdefault(source, {}).get(target)
        if keyed is None:
            keyed = adj[source][target] = {}
            if not directed:
                adj.setdefault(target, {})[source] = keyed
        else:
            multigraph = True
        if edge_id is None:
            edge_id = len(keyed)
            while edge_id in keyed:
                edge_id += 1
        if edge_id in keyed:
            keyed[edge_id].update(data)
        else:
            keyed[edge_id] = data
    decode(reader.graph_data)
    if not multigraph:  # networkx keeps a simple graph's GraphML edge ids as `id`
        for data, edge_id in with_ids:
            data["id"] = edge_id
    return RawGraph(directed, nodes, list(_edges(nodes, adj, directed)))


def _edges(
    nodes: dict[str, Any], adj: dict[str, dict[str, dict[Any, dict[str, Any]]]], directed: bool
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """In networkx's edge order: by node, then neighbour, then key; an undirected edge once,
    from its end that comes first."""
    seen: set[str] = set()
    for node in nodes:
        for other, keyed in adj.get(node, {}).items():
            if directed or other not in seen:
                for data in keyed.values():
                    yield node, other, data
        seen.add(node)


def read_graphml_bytes(data: bytes) -> RawGraph:
    """The graph in GraphML `data`, exactly as `nx.read_graphml` reads it (blocking)."""
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    parser.buffer_size = 1 << 16
    reader = _Reader(parser)
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    try:
        parser.Parse(data, True)
        if reader.graphs != 1:
            raise _Unusual
        return _build(reader)
    except Exception:  # anything unusual or wrong: networkx reads it or says what is wrong
        return RawGraph.of(nx.read_graphml(io.BytesIO(data)))


class GraphMLUnusual(InvalidInput):
    """A GraphML document the streaming reader does not take (yfiles extensions, ports,
    hyperedges, nested or several graphs, an edge's own `directed`): its message says which
    reader to use."""


@dataclass
class StreamedElement:
    """A <node> or <edge> as it was read: its XML attributes and its data, each as (key id,
    text) in document order; `decode` of the streamed graph makes them typed attributes."""

    kind: str  # "node" or "edge"
    attrs: dict[str, str]
    pairs: list[tuple[str, str | None]]


class _StreamingReader(_Reader):
    """The fast reader, handing each node and edge on as soon as it closes instead of
    keeping them: memory holds one element at a time."""

    def __init__(self, parser: Any, sink: Any) -> None:
        super().__init__(parser)
        self.sink = sink

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        try:
            super().start(tag, attrs)
        except _Unusual:
            raise GraphMLUnusual(
                f"the element <{tag.rpartition('}')[2]}> is outside the plain GraphML that is "
                "streamed (keys, one graph, nodes and edges with data): save the graph without "
                "editor extensions, or as a CSV edge list"
            ) from None

    def end(self, tag: str) -> None:
        try:
            super().end(tag)
        except _Unusual:
            raise GraphMLUnusual("a <default> of a key is empty") from None
        if not self._skip and len(self._path) == 2 and tag in _ITEMS:
            held = self.nodes if tag == _NODE else self.edges
            _, attrs, pairs = held.pop()
            self.sink(StreamedElement("node" if tag == _NODE else "edge", attrs, pairs))


@dataclass
class StreamedGraphML:
    """What a streamed document said besides its elements: directed or not, and its keys."""

    directed: bool
    keys: dict[str, tuple[str, str, str | None]]

    def decoder(self) -> Any:
        """Typed attributes of an element's (key id, text) pairs, as networkx types them; a
        ValueError names an unknown key or a value that is not of its key's type."""
        try:
            decode = _decoder(self.keys)
        except _Unusual:
            raise GraphMLUnusual("a <key> has a type GraphML does not define") from None

        def typed(pairs: list[tuple[str, str | None]]) -> dict[str, Any]:
            try:
                return decode(pairs)  # type: ignore[no-any-return]
            except KeyError as exc:
                raise ValueError(f"data refers to the undeclared key {exc}") from None

        return typed


def stream_graphml(read: Any, sink: Any, *, chunk_bytes: int = 1 << 16) -> StreamedGraphML:
    """Read GraphML from `read(n) -> bytes` in chunks, calling `sink(StreamedElement)` for
    every node and edge as it closes (blocking; memory holds one chunk and one element).
    A document outside the plain GraphML graph tools write is a GraphMLUnusual; one that is
    not XML is expat's error."""
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    parser.buffer_size = chunk_bytes
    reader = _StreamingReader(parser, sink)
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    while chunk := read(chunk_bytes):
        parser.Parse(chunk, False)
    parser.Parse(b"", True)
    if reader.graphs != 1:
        raise GraphMLUnusual(f"it holds {reader.graphs} graphs, not one")
    return StreamedGraphML(reader.edgedefault == "directed", reader.keys)
