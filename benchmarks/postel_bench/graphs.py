"""`postel bench graphs`: how fast a big knowledge graph is added and loaded, and what a
worker holding it weighs, against the former path (networkx's GraphML parser) in one run.

The scale movie graph of `triples` relations (data/scale_movies.py) is written as
GraphML. Each measurement runs in a fresh Python process, so start-up and imports count and
every load is cold:

- add: `postel graph add` itself (the CLI, into an embedded Redis on a scratch directory);
  the former add, a process that parses and gzips the GraphML as postel did before the
  packed form (without its Redis write); both timed from outside, start-up included;
- load: a process that asks `GraphRegistry.adapter` for the graph, as a worker's first job
  does, and reports the load's time, its resident memory after it (the worker holding the
  graph) and the longest the event loop went without running while the graph loaded (a
  ticker wakes every 5 ms: a loop blocked by the load would show the whole load here);
  the former load, parse the stored GraphML into an adapter. Both timed inside the process.
  The former add and load are the baseline baselines/graphml_path.py.

Targets (TARGETS) are for 10^5 triples on a 2-core machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGETS = {"add_s": 10.0, "load_s": 3.0, "rss_mb": 250.0}
_TICK_S = 0.005


def _rss_mb() -> float:
    """This process's resident memory now (Linux), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


async def _load_new(redis_url: str, name: str) -> dict[str, Any]:
    from postel.infra.store.connect import keyspace_of, redis_client
    from postel.infra.store.graphs import AdapterCache, GraphRegistry

    client = redis_client(redis_url)
    longest = 0.0
    done = asyncio.Event()

    async def tick() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(_TICK_S)
            now = time.perf_counter()
            longest = max(longest, now - last - _TICK_S)
            last = now

    ticker = asyncio.create_task(tick())
    try:
        started = time.perf_counter()
        adapter = await GraphRegistry(client, keyspace_of(redis_url), AdapterCache()).adapter(name)
        seconds = time.perf_counter() - started
    finally:
        done.set()
        await ticker
        await client.aclose()
    return {
        "seconds": seconds,
        "rss_mb": _rss_mb(),
        "longest_loop_stall_ms": longest * 1000,
        "nodes": adapter.graph.number_of_nodes(),
    }


def _load_old(stored_path: str) -> dict[str, Any]:
    from postel_bench.baselines.graphml_path import load_stored_graphml

    adapter, seconds = load_stored_graphml(Path(stored_path))
    return {"seconds": seconds, "rss_mb": _rss_mb(), "nodes": adapter.graph.number_of_nodes()}


def _add_old(graphml: str, stored_path: str) -> dict[str, Any]:
    from postel_bench.baselines.graphml_path import add_graphml

    graph, seconds = add_graphml(Path(graphml), Path(stored_path))
    return {"seconds": seconds, "nodes": graph.number_of_nodes()}


def _run(command: list[str], env: dict[str, str] | None = None) -> tuple[str, float, float]:
    """Run a process to its end: (stdout, wall seconds, CPU seconds). CPU time shows the
    work itself where other processes share the cores; wall time is what a user waits."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command[2:5])} failed: {result.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result.stdout, wall, cpu


def _child(*args: str) -> dict[str, Any]:
    """Run one measurement in a fresh process; its last stdout line is its JSON, to which
    the process's wall and CPU time (start-up and imports included) are added."""
    out, wall, cpu = _run([sys.executable, "-m", "postel_bench.graphs", *args])
    figures: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    figures["process_s"], figures["process_cpu_s"] = wall, cpu
    return figures


def _add_new(redis_url: str, name: str, graphml: Path) -> dict[str, Any]:
    """`postel graph add` as a user runs it, timed from outside (start-up included)."""
    env = {**os.environ, "POSTEL_REDIS_URL": redis_url, "POSTEL_LOG_LEVEL": "WARNING"}
    command = [sys.executable, "-m", "postel", "graph", "add", name, str(graphml)]
    out, wall, cpu = _run(command, env)
    return {"seconds": wall, "cpu_s": cpu, "output": out.strip()}


async def run_graphs_bench(triples: int, redis_url: str | None = None) -> dict[str, Any]:
    """Every figure of one run (see the module docstring)."""
    from postel.infra.store.connect import keyspace_of, redis_client
    from postel.infra.store.graphs import GraphRegistry
    from postel.infra.store.redis_server import configured_or_scratch

    from postel_bench.data.scale_movies import write_scale_movie_graphml

    name = "bench-movies"
    with tempfile.TemporaryDirectory(prefix="postel-bench-graphs-") as tmp:
        graphml = Path(tmp) / "movies.graphml"
        graph = await asyncio.to_thread(write_scale_movie_graphml, graphml, triples)
        async with configured_or_scratch(redis_url) as url:
            added = await asyncio.to_thread(_add_new, url, name, graphml)
            client = redis_client(url)
            try:
                info = await GraphRegistry(client, keyspace_of(url)).info(name)
            finally:
                await client.aclose()
            loaded = await asyncio.to_thread(_child, "load", url, name)
        stored_old = str(Path(tmp) / "movies.graphml.gz")
        old_add = await asyncio.to_thread(_child, "add-old", str(graphml), stored_old)
        old_load = await asyncio.to_thread(_child, "load-old", stored_old)
    new = {
        "add_s": added["seconds"],
        "add_cpu_s": added["cpu_s"],
        "load_s": loaded["seconds"],
        "rss_mb": loaded["rss_mb"],
        "longest_loop_stall_ms": loaded["longest_loop_stall_ms"],
        "stored_bytes": info.stored_bytes,
    }
    old = {
        "add_s": old_add["process_s"],
        "add_cpu_s": old_add["process_cpu_s"],
        "load_s": old_load["seconds"],
        "rss_mb": old_load["rss_mb"],
        "stored_bytes": Path(stored_old).stat().st_size if Path(stored_old).exists() else None,
    }
    return {
        "triples": graph.number_of_edges(),
        "nodes": info.nodes,
        "relations": info.edges,
        "graphml_bytes": info.size_bytes,
        "packed": new,
        "graphml_parse": old,
        "speedup": {
            "add": old["add_s"] / new["add_s"],
            "load": old["load_s"] / new["load_s"],
            "rss": old["rss_mb"] / new["rss_mb"],
        },
        "targets": {
            key: {"target": limit, "measured": new[key], "met": new[key] <= limit}
            for key, limit in TARGETS.items()
        },
    }


def format_graphs_bench(figures: dict[str, Any]) -> str:
    new, old = figures["packed"], figures["graphml_parse"]
    lines = [
        f"graphs bench: {figures['triples']:,} triples, {figures['nodes']:,} nodes, "
        f"GraphML {figures['graphml_bytes'] / 1e6:.1f} MB, "
        f"packed {new['stored_bytes'] / 1e6:.1f} MB",
        f"{'':<34}{'packed':>10}{'GraphML parse':>15}{'ratio':>8}",
        f"{'graph add (s)':<34}{new['add_s']:>10.2f}{old['add_s']:>15.2f}"
        f"{figures['speedup']['add']:>7.1f}x",
        f"{'cold load in a fresh process (s)':<34}{new['load_s']:>10.2f}{old['load_s']:>15.2f}"
        f"{figures['speedup']['load']:>7.1f}x",
        f"{'RSS holding the graph (MB)':<34}{new['rss_mb']:>10.0f}{old['rss_mb']:>15.0f}"
        f"{figures['speedup']['rss']:>7.1f}x",
        f"{'graph add, CPU time (s)':<34}{new['add_cpu_s']:>10.2f}{old['add_cpu_s']:>15.2f}"
        f"{old['add_cpu_s'] / new['add_cpu_s']:>7.1f}x",
        f"longest event-loop stall during the load: {new['longest_loop_stall_ms']:.0f} ms",
        "targets (10^5 triples, 2 cores):",
    ]
    for key, target in figures["targets"].items():
        verdict = "met" if target["met"] else "MISSED"
        lines.append(
            f"  {key:<8} <= {target['target']:<6g} measured {target['measured']:.2f}  {verdict}"
        )
    return "\n".join(lines)


def _main(argv: list[str]) -> None:
    mode, *args = argv
    if mode == "load":
        figures = asyncio.run(_load_new(*args))
    elif mode == "load-old":
        figures = _load_old(*args)
    elif mode == "add-old":
        figures = _add_old(*args)
    else:
        raise SystemExit(f"unknown bench step {mode!r}")
    sys.stdout.write(json.dumps(figures) + "\n")


if __name__ == "__main__":
    _main(sys.argv[1:])
