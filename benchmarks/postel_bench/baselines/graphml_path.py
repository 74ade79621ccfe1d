"""Baseline: adding and loading a graph as postel did before the packed form, by parsing
GraphML with networkx.

Reproduces the former `postel graph add` (parse the GraphML file with networkx to check it,
gzip the file's bytes for Redis and hash them; the Redis write is left out) and the former
cold load of a worker (gunzip the stored GraphML, parse it with networkx, build the
adapter). Today's path, infra/store/graphs.py, stores a packed form and reads it without
networkx's parser. `postel bench graphs` runs both in fresh processes in the same run, so
the time and memory the packed form saves are measured, not remembered.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import time
from pathlib import Path

import networkx as nx
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.loaders import normalise_graph


def add_graphml(graphml: Path, stored: Path) -> tuple[nx.Graph, float]:
    """Parse, gzip and hash `graphml` as the former add did; write what it stored to
    `stored`. Returns the parsed graph and the seconds the add took (the write not
    included)."""
    started = time.perf_counter()
    data = graphml.read_bytes()
    graph = normalise_graph(nx.read_graphml(str(graphml)))
    packed = gzip.compress(data, 6)
    hashlib.sha256(data).hexdigest()
    seconds = time.perf_counter() - started
    stored.write_bytes(packed)
    return graph, seconds


def load_stored_graphml(stored: Path) -> tuple[NetworkXAdapter, float]:
    """The former cold load of what `add_graphml` stored: the adapter and its seconds. The
    parsed GraphML is dropped before returning, as the former load dropped it."""
    packed = stored.read_bytes()
    started = time.perf_counter()
    raw = nx.read_graphml(io.BytesIO(gzip.decompress(packed)))
    adapter = NetworkXAdapter.from_graph(normalise_graph(raw))
    seconds = time.perf_counter() - started
    return adapter, seconds
