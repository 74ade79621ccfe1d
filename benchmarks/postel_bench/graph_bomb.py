"""`postel bench graph-bomb`: the upload that once took the web process to 1.79 GB, through
every process that touches it, each one's peak memory (its own ru_maxrss, measured through
postel_bench.peak's launcher) against the 300 MB bound.

The bomb: GraphML of `edges` parallel edges between two nodes, 61 bytes each (64 MiB at the
default 1.1 M), gzip-compressed to a few hundred KB. The processes, each fresh, on a scratch
Redis:

1. `postel graph add bomb bomb.graphml.gz` (the CLI), with the default limits: refused
   (POSTEL_GRAPH_MAX_PARALLEL) after streaming and spooling all of it;
2. `postel web`, the bomb PUT to /api/graphs/bomb gzip-encoded: refused (413);

Refused, the bomb reaches no worker. With `stored=ENGINE` (`--stored ladybug`) the limit is
lifted (POSTEL_GRAPH_MAX_PARALLEL=0) and two more processes run:

3. `postel graph add bomb bomb.graphml.gz --engine ENGINE`: stored, one row per relation;
4. a gasl worker's process: fetches that version into its cache, opens it read-only with
   its memory policy, and runs a GASL plan on it (FIND, NEIGHBORS, edges between the two).

Exit 1 if a process passes the bound or does other than expected.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from postel_bench.peak import Measured

BOUND_MB = 300.0
EDGES = 1_100_000
_EDGE = b'<edge source="a" target="b"><data key="d0">1.0</data></edge>\n'
_HEAD = (
    b'<?xml version="1.0" encoding="utf-8"?>\n'
    b'<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
    b'<key id="d0" for="edge" attr.name="weight" attr.type="double"/>\n'
    b'<graph edgedefault="undirected">\n<node id="a"/>\n<node id="b"/>\n'
)
_TAIL = b"</graph>\n</graphml>\n"
PLAN = [
    "FIND nodes AS both",
    'NEIGHBORS "a" AS near',
    'FIND edges WHERE source = "a" LIMIT 5 AS some',
]


def write_bomb(path: Path, edges: int) -> int:
    """Write the bomb gzip-compressed; the GraphML's size unpacked."""
    block = _EDGE * 10_000
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(_HEAD)
        for _ in range(edges // 10_000):
            out.write(block)
        out.write(_EDGE * (edges % 10_000))
        out.write(_TAIL)
    return len(_HEAD) + len(_EDGE) * edges + len(_TAIL)


def _run(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    started = time.perf_counter()
    measured = Measured(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = measured.process.communicate()
    code, peak = measured.wait()
    return {
        "exit": code,
        "peak_mb": round(peak, 1),
        "seconds": round(time.perf_counter() - started, 1),
        "said": (out.decode().strip() or err.decode().strip()).splitlines()[-1:],
    }


def _postel(*args: str) -> list[str]:
    return [sys.executable, "-m", "postel", *args]


def _upload(env: dict[str, str], port: int, bomb: Path) -> dict[str, Any]:
    """`postel web` serving, the bomb uploaded to it, then stopped."""
    command = _postel("web", "--port", str(port))
    process = Measured(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(f"{base}/api/graphs", timeout=1.0)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        started = time.perf_counter()
        answer = httpx.put(
            f"{base}/api/graphs/bomb",
            content=bomb.read_bytes(),
            headers={"content-encoding": "gzip", "content-type": "application/xml"},
            timeout=600.0,
        )
        seconds = time.perf_counter() - started
    finally:
        process.send_signal(signal.SIGINT)
    code, peak = process.wait()
    detail = answer.json().get("detail")
    return {
        "status": answer.status_code,
        "peak_mb": round(peak, 1),
        "seconds": round(seconds, 1),
        "said": [detail if isinstance(detail, str) else json.dumps(detail)[:300]],
        "exit": code,
    }


async def _worker_job(name: str) -> dict[str, Any]:
    """In a fresh process: what a gasl worker does with a job on graph `name`."""
    from postel.infra.runtime.memory import MemoryPolicy
    from postel.infra.runtime.settings import Settings
    from postel.infra.store.connect import keyspace_of, redis_client
    from postel.infra.store.graphs import GraphRegistry
    from postel.services.gasl.executor import GaslExecutor

    settings = Settings()
    url = settings.effective_redis_url
    client = redis_client(url)
    policy = MemoryPolicy(settings.graph_versions)
    try:
        registry = GraphRegistry(
            client, keyspace_of(url), policy.graphs, storage=settings.graph_storage()
        )
        adapter = await registry.adapter(name)
        executor = GaslExecutor(adapter, bulk=policy.rows_made)
        run = await executor.execute_plan({"plan_id": "bomb", "commands": PLAN})
    finally:
        await client.aclose()
    return {"records": [[r.status, r.count, r.caps_hit] for r in run.records]}


def _worker(env: dict[str, str]) -> dict[str, Any]:
    command = [sys.executable, "-m", "postel_bench.graph_bomb", "worker", "bomb"]
    figures = _run(command, env)
    if figures["exit"] == 0:
        figures["records"] = json.loads(figures.pop("said")[0])["records"]
    return figures


async def run_graph_bomb(edges: int, port: int, stored: str | None = None) -> dict[str, Any]:
    """Every figure of one run (see the module docstring)."""
    from postel.infra.store.redis_server import configured_or_scratch

    with tempfile.TemporaryDirectory(prefix="postel-bench-bomb-") as tmp:
        bomb = Path(tmp) / "bomb.graphml.gz"
        unpacked = await asyncio.to_thread(write_bomb, bomb, edges)
        packed = bomb.stat().st_size
        async with configured_or_scratch(None) as url:
            env = {
                **os.environ,
                "POSTEL_REDIS_URL": url,
                "POSTEL_STATE_DIR": str(Path(tmp) / "state"),
                "POSTEL_LOG_LEVEL": "WARNING",
            }
            env.pop("POSTEL_GRAPH_MAX_PARALLEL", None)
            refused = await asyncio.to_thread(_run, _postel("graph", "add", "bomb", str(bomb)), env)
            web = await asyncio.to_thread(_upload, env, port, bomb)
            processes = {"cli_refused": refused, "web_refused": web}
            expected = {
                "cli_refused": refused["exit"] == 2
                and "POSTEL_GRAPH_MAX_PARALLEL" in str(refused["said"]),
                "web_refused": web["status"] == 413,
            }
            if stored is not None:
                stored_env = {**env, "POSTEL_GRAPH_MAX_PARALLEL": "0"}
                add = _postel("graph", "add", "bomb", str(bomb), "--engine", stored)
                processes["cli_stored"] = await asyncio.to_thread(_run, add, stored_env)
                processes["worker"] = await asyncio.to_thread(_worker, stored_env)
                expected["cli_stored"] = processes["cli_stored"]["exit"] == 0
                expected["worker"] = processes["worker"]["exit"] == 0
    return {
        "bomb": {"edges": edges, "gzip_bytes": packed, "graphml_bytes": unpacked},
        "bound_mb": BOUND_MB,
        "processes": processes,
        "as_expected": expected,
        "within_bound": {k: v["peak_mb"] < BOUND_MB for k, v in processes.items()},
    }


def format_graph_bomb(figures: dict[str, Any]) -> str:
    bomb = figures["bomb"]
    lines = [
        f"graph bomb: {bomb['edges']:,} parallel edges between two nodes, "
        f"{bomb['graphml_bytes'] / 1_048_576:.1f} MiB of GraphML, "
        f"{bomb['gzip_bytes'] / 1024:.0f} KiB gzip; bound {figures['bound_mb']:.0f} MB per process",
        f"{'process':<14}{'peak MB':>9}{'s':>7}  {'ok':<4}what happened",
    ]
    for name, row in figures["processes"].items():
        ok = figures["as_expected"][name] and figures["within_bound"][name]
        said = row.get("records") or row.get("said")
        lines.append(
            f"{name:<14}{row['peak_mb']:>9.1f}{row['seconds']:>7.1f}  {'yes' if ok else 'NO':<4}"
            f"{str(said)[:150]}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        # the child process's one line, read by the bench (its logs go to stderr)
        sys.stdout.write(json.dumps(asyncio.run(_worker_job(sys.argv[2]))) + "\n")
