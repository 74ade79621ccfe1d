"""GASL benchmark: the executor against GrandCypher on generated graphs, in one run.

Questions:
- equality FIND on `nodes` nodes, with the attribute index and with a forced full scan;
- a CONTAINS scan on the same nodes;
- paths of length <= 3 between two node groups of a scale-free graph of `path_nodes` nodes;
- writes: what a CREATE_GROUPS, an ADD_FIELD and an UPDATE, and the first read after each,
  cost on scale-free graphs of growing size (`write_figures`).
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
from postel.infra.runtime.memory import MemoryPolicy
from postel.services.gasl.conditions import evaluate
from postel.services.gasl.engines.caps import Caps
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
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
    MemoryPolicy().settled()  # the graphs held as a worker's memory policy holds them
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


# The writes section: what one change costs on graphs of growing size.
WRITE_SIZES = (10_000, 100_000, 1_000_000)
_MEMBERS = 100  # nodes per `bucket` value: a CREATE_GROUPS of 100 members
_ROWS = 10_000  # rows per `batch` value: an ADD_FIELD on 10^4 rows
_CHANGES = ("create_groups", "add_field", "update")
# How much more a change (or the read after it) may cost on the largest graph than on the
# smallest: a write costs what it changes, not the size of the graph.
WRITE_TARGET = 3.0


def linked_graph(nodes: int, seed: int = 7) -> nx.Graph:
    """A scale-free graph built quickly (preferential attachment, two links per new node,
    by drawing from the list of every link end so far), in the shared attribute model:
    `bucket` puts 100 nodes in each value, `batch` 10^4 nodes (fewer on a smaller graph)."""
    rng = random.Random(seed)
    buckets = max(1, nodes // _MEMBERS)
    batches = max(1, nodes // _ROWS)
    ends: list[int] = [0, 1]
    edges: list[tuple[int, int]] = [(0, 1)]
    for new in range(2, nodes):
        for old in {ends[rng.randrange(len(ends))], ends[rng.randrange(len(ends))]}:
            edges.append((new, old))
            ends.extend((new, old))
    graph = nx.Graph()
    graph.add_nodes_from(
        (
            f"n{i}",
            {
                "id": f"n{i}",
                "entity_type": f"T{i % _TYPES}",
                "bucket": i % buckets,
                "batch": i % batches,
                "source_ids": [f"chunk-{i % 997}"],
            },
        )
        for i in range(nodes)
    )
    graph.add_edges_from((f"n{u}", f"n{v}") for u, v in edges)
    return graph


def write_figures(sizes: tuple[int, ...] = WRITE_SIZES, repeat: int = 5) -> dict[str, Any]:
    """Per-change cost (median ms of `repeat` changes, each on fresh rows) on a scale-free
    graph of each size: CREATE_GROUPS of 100 members, ADD_FIELD on 10^4 rows and a 100-item
    UPDATE, each followed by its first read (an indexed FIND, which reads the graph with
    the job's overlay); each against an indexed FIND before any write (`read_ms`), and
    the largest size against the smallest (target: within 3x). The baseline (`copy_ms`) is
    what the first command after a change cost when the overlay was merged into a copy."""
    if not sizes or min(sizes) < _MEMBERS * repeat:
        raise ValueError(f"the writes section needs graphs of at least {_MEMBERS * repeat} nodes")
    per_size = [_writes_at(size, repeat) for size in sizes]
    small, large = per_size[0], per_size[-1]
    ratios = {
        name: round(large[f"{name}_ms"] / small[f"{name}_ms"], 2) if small[f"{name}_ms"] else None
        for name in (*_CHANGES, *(f"{c}_read" for c in _CHANGES), "read")
    }
    met = all(ratio is not None and ratio <= WRITE_TARGET for ratio in ratios.values())
    return {
        "sizes": list(sizes),
        "by_size": per_size,
        "largest_vs_smallest": ratios,
        "target": WRITE_TARGET,
        "meets_target": met,
    }


def _writes_at(nodes: int, repeat: int) -> dict[str, Any]:
    started = time.perf_counter()
    graph = linked_graph(nodes)
    adapter = NetworkXAdapter.from_graph(graph)
    build_ms = (time.perf_counter() - started) * 1000
    executor = GaslExecutor(adapter, StateStore(), caps=Caps(max_results=_ROWS))
    buckets = max(1, nodes // _MEMBERS)

    def read(n: int) -> float:
        return _timed(executor, f"FIND nodes WHERE bucket = {(n * 7919) % buckets} AS read")

    for n in range(3):  # the bucket index and column are built once per graph, before
        read(n)
    reads = [read(n) for n in range(repeat)]
    times: dict[str, list[float]] = {}
    _timed(executor, "DECLARE found AS LIST")
    for n in range(repeat):
        bucket, batch = n, n % max(1, nodes // _ROWS)  # a bucket of its own: new members
        _timed(executor, f"FIND nodes WHERE bucket = {bucket} AS members")
        _timed(executor, f"FIND nodes WHERE batch = {batch} LIMIT {_ROWS} AS rows")
        changes = {
            "create_groups": "CREATE_GROUPS FROM members BY bucket AS groups",
            "add_field": "ADD_FIELD rows FIELD hop = bucket AS marked",
            "update": "UPDATE found WITH members",
        }
        for name, command in changes.items():
            times.setdefault(name, []).append(_timed(executor, command))
            times.setdefault(f"{name}_read", []).append(read(repeat + n))
    read_ms = statistics.median(reads)
    row: dict[str, Any] = {
        "nodes": nodes,
        "build_s": round(build_ms / 1000, 1),
        "read_ms": round(read_ms, 3),
    }
    for name, values in times.items():
        row[f"{name}_ms"] = round(statistics.median(values), 3)
        row[f"{name}_x_read"] = round(statistics.median(values) / read_ms, 1)
    created = executor.overlay.size
    row["overlay"] = {"nodes": created[0], "edges": created[1]}
    # the baseline: what the first command after each change cost when the overlay was
    # merged into a copy of the graph (copying it and building the copy's adapter)
    started = time.perf_counter()
    NetworkXAdapter.from_graph(graph.copy())
    row["copy_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return row


def _timed(executor: GaslExecutor, command: str) -> float:
    """The milliseconds one command ran, as its record says (parsing the plan and saving
    the state at its end are the plan's, not the command's); it must succeed."""
    [record] = asyncio.run(executor.execute(command))
    if record.status != "success":
        raise RuntimeError(f"bench command {command!r} ended {record.status}: {record.error}")
    return record.duration_ms


def format_write_figures(figures: dict[str, Any]) -> str:
    """The writes section, for people."""
    lines = [
        "writes (one change, then the first read after it; ms, median; x read = against "
        "an indexed FIND before any write; copy before = what the first command after a "
        "change cost when the overlay was merged into a copy of the graph)",
        f"{'nodes':>10}{'read':>9}{'groups':>9}{'read':>8}{'add_field':>11}{'read':>8}"
        f"{'update':>9}{'read':>8}{'copy before':>12}",
    ]
    for row in figures["by_size"]:
        cells = [f"{row['nodes']:>10,}", f"{row['read_ms']:>9.3f}"]
        for name, width in (("create_groups", 9), ("add_field", 11), ("update", 9)):
            cells.append(f"{row[f'{name}_ms']:>{width}.2f}")
            cells.append(f"{row[f'{name}_read_ms']:>8.3f}")
        cells.append(f"{row['copy_ms']:>12.1f}")
        lines.append("".join(cells))
    lines.append(
        f"{'x read':>10}{'':>9}{'groups':>9}{'read':>8}{'add_field':>11}{'read':>8}"
        f"{'update':>9}{'read':>8}"
    )
    for row in figures["by_size"]:
        cells = [f"{row['nodes']:>10,}", f"{'':>9}"]
        for name, width in (("create_groups", 9), ("add_field", 11), ("update", 9)):
            cells.append(f"{row[f'{name}_x_read']:>{width}.1f}")
            cells.append(f"{row[f'{name}_read_x_read']:>8.1f}")
        lines.append("".join(cells))
    ratios = figures["largest_vs_smallest"]
    large, small = figures["sizes"][-1], figures["sizes"][0]
    verdict = "met" if figures["meets_target"] else "NOT met"
    lines.append(
        f"{large:,} vs {small:,} nodes: "
        + ", ".join(f"{name} {ratio}x" for name, ratio in ratios.items())
        + f" (target within {figures['target']:g}x: {verdict})"
    )
    return "\n".join(lines)


def run_gasl_bench(
    nodes: int = 1_000_000,
    path_nodes: int = 100_000,
    repeat: int = 3,
    cypher: bool = True,
    write_sizes: tuple[int, ...] = WRITE_SIZES,
) -> dict[str, Any]:
    """Run every question in GASL (and GrandCypher unless `cypher=False`); figures in ms.

    GASL times are the best of `repeat` runs through the executor (parse, bind, search,
    record); GrandCypher runs once per question. The writes section runs on a graph of
    each of `write_sizes` nodes (none: no writes section).
    """
    figures: dict[str, Any] = {"nodes": nodes, "path_nodes": path_nodes}
    figures.update(_find_questions(nodes, repeat, cypher))
    figures["questions"].append(_path_question(path_nodes, repeat, cypher))
    by_name = {q["question"]: q for q in figures["questions"]}
    scan, hit = by_name["equality (scan)"]["gasl_ms"], by_name["equality (index)"]["gasl_ms"]
    figures["index_speedup"] = round(scan / hit, 1) if hit else None
    figures["state_updates"] = state_update_figures()
    if write_sizes:
        figures["writes"] = write_figures(write_sizes)
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
    if "writes" in figures:
        lines.append(format_write_figures(figures["writes"]))
    return "\n".join(lines)
