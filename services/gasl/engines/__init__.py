"""The graph engines behind FIND, NEIGHBORS, GRAPHWALK, SUBGRAPH and GRAPHCONNECT.

One idea per module:

- `caps.py` — how far one command may search (`Caps`, `HARD_MAXIMA`) and the bounds that cut
  a result to its caps (`Bound`, `held`);
- `protocol.py` — what the executor needs of a graph (`GraphAdapter`, `OverlayView`) and what
  a search returns (`Found`);
- `table.py` — records with lazy columns and equality indexes, selected against a deadline
  (`Table`, and `Layers` reading two tables as one);
- `adjacency_search.py` — the searches answered by walking a graph held in memory
  (`AdjacencySearches`), over the reads it needs of that graph (`AdjacencyReads`);
- `networkx_engine.py` — a networkx graph as those reads, and its adapter (`NetworkXAdapter`);
- `overlay_view.py` — a shared graph and one job's overlay read together (`OverlaidAdapter`),
  the engine-independent part of that merge in `OverlayRows`;
- `ladybug_store.py` — a graph written to an on-disk LadybugDB store, streamed in bounded
  memory (`build_ladybug_store`), and `cypher_where.py`, a condition as Cypher WHERE;
- `ladybug_engine.py` — the adapter over such a store, opened read-only (`LadybugAdapter`);
- `registry.py` — which engine a graph gets (`default_engine`) and opening it (`open_engine`).

Every search is bounded by the caps and the deadline it is handed: one adapter is cached per
process and shared by every job (and thread) that reads the same graph, so caps travel with
each call. Nothing is re-exported here: import a name from the module that defines it, so
reading the caps or the protocol loads no engine.
"""
