"""Which engine holds a graph, and opening a graph on it: the one place that names both.

- `networkx`: the graph decoded into every process that reads it; each GASL command is
  microseconds, and memory grows with the graph (about 860 MB per process at 10^6 edges).
- `ladybug`: an on-disk LadybugDB store (ladybug_store.py) every process opens read-only,
  its memory bounded by the buffer pool (`buffer_pool_size`), each command a few queries.

A graph of LADYBUG_FROM_RELATIONS relations or more goes to ladybug unless asked otherwise
(docs/GRAPHS.md, "Engines", gives the figures the constant comes from).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from postel.services.gasl.engines.protocol import GraphAdapter

Engine = Literal["networkx", "ladybug"]
ENGINES: tuple[Engine, ...] = get_args(Engine)

# From this many relations a graph is stored on ladybug by default: networkx holds a graph
# of 10^5 relations in about 100 MB per process, past the 75 MB a ladybug reader stays at.
LADYBUG_FROM_RELATIONS = 100_000


def default_engine(relations: int) -> Engine:
    """The engine a graph of `relations` relations gets when none is asked for."""
    return "ladybug" if relations >= LADYBUG_FROM_RELATIONS else "networkx"


def open_engine(
    engine: Engine, source: str | Path, *, buffer_pool_size: int | None = None
) -> GraphAdapter:
    """A graph's adapter: `source` is a GraphML file for networkx, a store folder (built by
    `build_ladybug_store`) for ladybug, opened read-only with `buffer_pool_size` bytes of
    buffer pool (default READ_BUFFER_POOL)."""
    if engine == "networkx":
        from postel.services.gasl.engines.networkx_engine import NetworkXAdapter

        return NetworkXAdapter.from_graphml(source)
    if engine == "ladybug":
        from postel.services.gasl.engines.ladybug_engine import READ_BUFFER_POOL, LadybugAdapter

        return LadybugAdapter.open(source, buffer_pool_size or READ_BUFFER_POOL)
    raise ValueError(f"unknown graph engine {engine!r}; engines are {', '.join(ENGINES)}")
