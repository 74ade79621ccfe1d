"""GASL benchmark: the executor against GrandCypher on generated graphs, in one run.

Questions:
- equality FIND on `nodes` nodes, with the attribute index and with a forced full scan;
- a CONTAINS scan on the same nodes;
- paths of length <= 3 between two node groups of a scale-free graph of `path_nodes` nodes.
GrandCypher answers the same questions on the same graphs (a directed copy for paths,
which it requires). Returns plain figures; `format_gasl_bench` renders them for people.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import networkx as nx
from postel.services.gasl.adapters import Caps, NetworkXAdapter
from postel.services.gasl.conditions import evaluate
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.parser import parse_one
from postel.services.gasl.state import StateStore

_TYPES = 50
_BUCKETS = 10_000
_GROUPS = 1_000
_PATH_LIMIT = 1000


def attribute_graph(nodes: int, seed: int = 7) -> nx.Graph:
    """Nodes only, in the shared attribute model: a type, a bucket and a name."""
    rng = random.Random(seed)
    graph = nx.Graph()
    graph.add_nodes_from(
        (
            f"n{i}",
            {
                "id": f"n{i}",
                "entity_type": f"T{rng.randrange(_TYPES)}",
                "bucket": i % _BUCKETS,
                "name": f"entity {i}",
                "source_ids": [f"chunk-{i % 997}"],
            },
        )
        for i in range(nodes)
    )
    return graph


def scale_free_graph(nodes: int, seed: int = 7) -> nx.Graph:
    """Barabási–Albert graph (m=2) with string ids and a `group` attribute."""
    raw = nx.barabasi_albert_graph(nodes, 2, seed=seed)
    graph = nx.relabel_nodes(raw, {i: f"n{i}" for i in raw.nodes})
    for i in range(nodes):
        graph.nodes[f"n{i}"].update(id=f"n{i}", group=f"g{i % _GROUPS}")
    return graph


def _time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, (time.perf_counter() - started) * 1000)
    return best, result


def _gasl(executor: GaslExecutor, command: str) -> int:
    records = asyncio.run(executor.execute(command))
    return records[-1].count


def _cypher(graph: nx.Graph, query: str) -> int:
    from grandcypher import GrandCypher

    result = GrandCypher(graph).run(query)
    return len(next(iter(result.values()))) if result else 0


def _row(
    name: str,
    executor: GaslExecutor,
    command: str,
    repeat: int,
    cypher: tuple[nx.Graph, str] | None,
) -> dict[str, Any]:
    gasl_ms, count = _time(lambda: _gasl(executor, command), repeat)
    row: dict[str, Any] = {"question": name, "gasl_ms": round(gasl_ms, 2), "results": count}
    if cypher is not None:
        graph, query = cypher
        cypher_ms, cypher_count = _time(lambda: _cypher(graph, query), 1)
        row.update(cypher_ms=round(cypher_ms, 2), cypher_results=cypher_count)
        row["speedup"] = round(cypher_ms / gasl_ms, 1) if gasl_ms else None
    return row


def _find_questions(nodes: int, repeat: int, cypher: bool) -> dict[str, Any]:
    started = time.perf_counter()
    graph = attribute_graph(nodes)
    generate_ms = round((time.perf_counter() - started) * 1000, 1)
    caps = Caps(max_results=nodes, max_expansions=10_000_000)
    indexed = NetworkXAdapter.from_graph(graph, use_indexes=True)
    scanning = NetworkXAdapter.from_graph(graph, use_indexes=False)
    index_ms, _ = _time(lambda: indexed.build_index("bucket"), 1)
    bucket = _BUCKETS // 2 + 42
    needle = str(nodes // 3)[:4]
    equality = f"FIND nodes WHERE bucket = {bucket} AS hits"
    contains = f'FIND nodes WHERE name CONTAINS "{needle}" AS hits'
    equality_cypher = f"MATCH (a) WHERE a.bucket == {bucket} RETURN a.id"
    contains_cypher = f'MATCH (a) WHERE a.name CONTAINS "{needle}" RETURN a.id'
    rows = [
        _row(
            "equality (index)",
            GaslExecutor(indexed, caps=caps),
            equality,
            repeat,
            (graph, equality_cypher) if cypher else None,
        ),
        _row("equality (scan)", GaslExecutor(scanning, caps=caps), equality, repeat, None),
        _row(
            "contains (scan)",
            GaslExecutor(indexed, caps=caps),
            contains,
            repeat,
            (graph, contains_cypher) if cypher else None,
        ),
    ]
    records = [attrs for _, attrs in graph.nodes(data=True)]
    per_node = {
        "equality": rows[1]["gasl_ms"] * 1000 / nodes,
        "contains": rows[2]["gasl_ms"] * 1000 / nodes,
        "equality_interpreted": _time(lambda: _interpreted(records, equality), 1)[0] * 1000 / nodes,
        "contains_interpreted": _time(lambda: _interpreted(records, contains), 1)[0] * 1000 / nodes,
    }
    return {
        "generate_ms": generate_ms,
        "index_build_ms": round(index_ms, 1),
        "questions": rows,
        "scan_us_per_node": {name: round(us, 3) for name, us in per_node.items()},
    }


def _interpreted(records: list[dict[str, Any]], command: str) -> int:
    """The scan as it ran before conditions were compiled: the condition tree walked once
    per record (the baseline of the same run)."""
    where = parse_one(command).where  # type: ignore[attr-defined]
    return sum(1 for record in records if evaluate(where, record))


def _path_question(path_nodes: int, repeat: int, cypher: bool) -> dict[str, Any]:
    graph = scale_free_graph(path_nodes)
    caps = Caps(max_results=path_nodes, max_paths=_PATH_LIMIT, max_expansions=10_000_000)
    command = (
        f'FIND paths FROM (group = "g7") TO (group = "g8") MAX_LENGTH 3 LIMIT {_PATH_LIMIT} AS p'
    )
    query = (
        'MATCH (a)-[*1..3]->(b) WHERE a.group == "g7" AND b.group == "g8" '
        f"RETURN a.id, b.id LIMIT {_PATH_LIMIT}"
    )
    executor = GaslExecutor(NetworkXAdapter.from_graph(graph), caps=caps)
    # GrandCypher walks variable-length patterns only on directed graphs.
    return _row(
        "paths <= 3 (scale-free)",
        executor,
        command,
        repeat,
        (graph.to_directed(), query) if cypher else None,
    )


def state_update_figures(sizes: tuple[int, ...] = (100, 5_000), updates: int = 200) -> dict:
    """Per-UPDATE time (median, ms) of a one-item UPDATE on a state of `size` keys, and of a
    one-item LIST MERGE into a key of `size` items, each state frozen as a snapshot first (as
    a round's state is): a write should cost what it changes, not the state's size."""
    figures: dict[str, Any] = {}
    for size in sizes:
        figures[f"keys_{size}_ms"] = _median_ms(_wide_state(size), updates, spread=size)
        figures[f"items_{size}_ms"] = _median_ms(_deep_state(size), updates, spread=1)
    small, large = min(sizes), max(sizes)
    for kind in ("keys", "items"):
        base = figures[f"{kind}_{small}_ms"]
        figures[f"{kind}_ratio"] = round(figures[f"{kind}_{large}_ms"] / base, 2) if base else None
    figures["sizes"] = [small, large]
    return figures


def _wide_state(size: int) -> StateStore:
    state = StateStore()
    for n in range(size):
        state.declare(f"k{n}", "LIST")
    return state


def _deep_state(size: int) -> StateStore:
    state = StateStore()
    state.declare("k0", "LIST")
    state.update("k0", [{"id": n, "name": f"item {n}"} for n in range(size)], "MERGE")
    return state


def _median_ms(state: StateStore, updates: int, spread: int) -> float:
    """One-item UPDATEs of keys k0..k<spread-1> in turn, after freezing the state."""
    state.current  # noqa: B018 - a snapshot, as the state a round starts from
    times = []
    for n in range(updates):
        started = time.perf_counter()
        state.update(f"k{n % spread}", {"id": -n - 1}, "MERGE")
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 4)


def run_gasl_bench(
    nodes: int = 1_000_000, path_nodes: int = 100_000, repeat: int = 3, cypher: bool = True
) -> dict[str, Any]:
    """Run every question in GASL (and GrandCypher unless `cypher=False`); figures in ms.

    GASL times are the best of `repeat` runs through the executor (parse, bind, search,
    record); GrandCypher runs once per question.
    """
    figures: dict[str, Any] = {"nodes": nodes, "path_nodes": path_nodes}
    figures.update(_find_questions(nodes, repeat, cypher))
    figures["questions"].append(_path_question(path_nodes, repeat, cypher))
    by_name = {q["question"]: q for q in figures["questions"]}
    scan, hit = by_name["equality (scan)"]["gasl_ms"], by_name["equality (index)"]["gasl_ms"]
    figures["index_speedup"] = round(scan / hit, 1) if hit else None
    figures["state_updates"] = state_update_figures()
    return figures


def format_gasl_bench(figures: dict[str, Any]) -> str:
    """A table of the figures, for people."""
    lines = [
        f"GASL bench: {figures['nodes']:,} nodes (find), {figures['path_nodes']:,} nodes (paths)",
        f"graph generation {figures['generate_ms']:.0f} ms, "
        f"bucket index build {figures['index_build_ms']:.0f} ms",
        f"{'question':<26}{'gasl ms':>12}{'results':>9}{'grandcypher ms':>16}{'results':>9}"
        f"{'x faster':>10}",
    ]
    for q in figures["questions"]:
        cypher_ms = f"{q['cypher_ms']:.1f}" if "cypher_ms" in q else "-"
        cypher_n = str(q.get("cypher_results", "-"))
        speedup = f"{q['speedup']}" if q.get("speedup") is not None else "-"
        lines.append(
            f"{q['question']:<26}{q['gasl_ms']:>12.2f}{q['results']:>9}{cypher_ms:>16}"
            f"{cypher_n:>9}{speedup:>10}"
        )
    lines.append(f"index vs scan (equality): {figures['index_speedup']}x")
    per_node = figures["scan_us_per_node"]
    for name in ("equality", "contains"):
        lines.append(
            f"{name} scan per node: {per_node[name]:.3f} us compiled, "
            f"{per_node[f'{name}_interpreted']:.3f} us interpreted (before)"
        )
    updates = figures["state_updates"]
    small, large = updates["sizes"]
    for kind, what in (("keys", "state keys"), ("items", "items in the merged LIST")):
        lines.append(
            f"one-item UPDATE, {what}: {updates[f'{kind}_{small}_ms']:.4f} ms at {small:,}, "
            f"{updates[f'{kind}_{large}_ms']:.4f} ms at {large:,} "
            f"({updates[f'{kind}_ratio']}x; target within 2x)"
        )
    return "\n".join(lines)
