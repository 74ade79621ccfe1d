"""The two graph engines side by side: `postel bench graphs --engine` and
`postel bench qa --engine`.

graphs: the scale movie graph (data/scale_movies.py) of `edges` relations is written as
GraphML and stored on ladybug (build_from_graphml). Each engine is then measured in a fresh
Python process, a worker's first job: the process's resident memory before opening the
graph and holding it; the open (networkx: decoding the GraphML; ladybug: opening the store
read-only); and the p50 of a FIND with conditions, a NEIGHBORS and a 2-hop GRAPHWALK over
sampled start nodes (the adapter's calls, caps at their defaults). Each child also reports a
digest of every answer: both engines must give the same.

qa: the QA movie graph (data/qa_movies.py) and its questions, each answered by the `right`
planner's GASL chain (qa_planners.right_chain) run by the GASL executor on each engine in
this process, no bus: per engine, the answers against the oracle, and the p50 per question.
Both engines must give the same answer to every question. (The whole-system run with the
graph on ladybug is `postel graph add --engine ladybug` then `postel bench qa`.)

Targets (issue 33, at 10^6 relations): ladybug's worker holds the graph in at most 150 MB,
opens it in at most 1 s, answers FIND no slower than networkx, and NEIGHBORS and 2-hop
GRAPHWALK at a p50 of at most 5 ms; `bench qa` p50 per question within 1.5x of networkx's.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from postel.services.gasl.engines.registry import ENGINES, Engine

TARGETS = {"rss_mb": 150.0, "open_s": 1.0, "walk_p50_ms": 5.0, "qa_ratio": 1.5}
SAMPLES = 200
# FIND with conditions: an indexed type and a text match, at several years
FIND = 'entity_type = "FILM" AND description CONTAINS "{year}"'


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def measure(engine: Engine, source: str, starts: list[str], years: list[str]) -> dict[str, Any]:
    """In a fresh process: open the graph on `engine`, time the searches, digest answers."""
    import postel.services.gasl.engines.ladybug_engine
    import postel.services.gasl.engines.networkx_engine  # noqa: F401
    from postel.services.gasl.engines.registry import open_engine
    from postel.services.gasl.parser import parse

    before = _rss_mb()
    began = time.perf_counter()
    adapter = open_engine(engine, source)
    opened = time.perf_counter() - began
    held = _rss_mb()
    digest = hashlib.sha256()
    wheres = [parse(f"FIND nodes WHERE {FIND.format(year=y)} AS f")[0].where for y in years]  # type: ignore[attr-defined]
    calls = {
        "find": [lambda w=w: adapter.find_nodes(w, 100) for w in wheres],
        "neighbors": [lambda s=s: adapter.neighbors([s], None, 1, None) for s in starts],
        "walk_2hop": [lambda s=s: adapter.walk([s], (), 2, None) for s in starts],
    }
    p50: dict[str, float] = {}
    for name, runs in calls.items():
        times = []
        for run in runs:
            began = time.perf_counter()
            found = run()
            times.append((time.perf_counter() - began) * 1000)
            digest.update(json.dumps([found.items, found.caps_hit], sort_keys=True).encode())
        p50[name] = round(statistics.median(times), 3)
    return {
        "engine": engine,
        "rss_before_mb": round(before, 1),
        "rss_mb": round(held, 1),
        "rss_after_mb": round(_rss_mb(), 1),
        "open_s": round(opened, 3),
        "p50_ms": p50,
        "answers": digest.hexdigest()[:16],
    }


def _child(engine: Engine, source: Path, starts: list[str], years: list[str]) -> dict[str, Any]:
    args = json.dumps([engine, str(source), starts, years])
    code = (
        "import json, sys; from postel_bench.engines import measure; "
        "print(json.dumps(measure(*json.loads(sys.argv[1]))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"measuring {engine} failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_engine_graphs(
    edges: int, engines: tuple[Engine, ...], seed: int = 7, scratch: Path | None = None
) -> dict[str, Any]:
    """The figures of `postel bench graphs --engine` (see the module docstring). With
    `scratch`, the generated GraphML and its store are kept there and reused by a later run
    of the same size and seed (at 10^6 relations they take minutes to make)."""
    with tempfile.TemporaryDirectory(prefix="postel-engines-") as temporary:
        folder = scratch or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        return _engine_graphs(folder, edges, engines, seed)


def _engine_graphs(
    folder: Path, edges: int, engines: tuple[Engine, ...], seed: int
) -> dict[str, Any]:
    from postel.services.gasl.engines.ladybug_engine import LadybugAdapter
    from postel.services.gasl.engines.ladybug_store import StoreInfo, build_from_graphml

    from postel_bench.data.scale_movies import write_scale_movie_graphml

    graphml = folder / f"movies-{edges}-{seed}.graphml"
    store = folder / f"movies-{edges}-{seed}.store"
    figures: dict[str, Any] = {"engines": {}}
    if not graphml.exists():
        partial = graphml.with_suffix(".partial")
        write_scale_movie_graphml(partial, edges, seed)
        partial.rename(graphml)
    if not (store / "store.json").exists():
        shutil.rmtree(store, ignore_errors=True)
        began = time.perf_counter()
        build_from_graphml(graphml, store)
        figures["store_build_s"] = round(time.perf_counter() - began, 2)
    figures["store_mb"] = round(
        sum(f.stat().st_size for f in store.rglob("*") if f.is_file()) / 2**20, 1
    )
    info = StoreInfo.read(store)
    figures.update(edges=info.relations, nodes=info.nodes)
    # the start nodes: films and people at random places in graph order
    sampler = LadybugAdapter.open(store)
    rng = random.Random(seed)
    starts = []
    for kind in ("FILM", "PERSON"):
        ids = [
            row[0]
            for row in sampler.store.query(
                "MATCH (n:Node) WHERE n.entity_type = $t RETURN n.id ORDER BY n.ord", {"t": kind}
            )
        ]
        starts += rng.sample(ids, min(len(ids), SAMPLES // 2))
    sampler.close()
    years = [str(1920 + rng.randrange(100)) for _ in range(20)]
    for engine in engines:
        source = graphml if engine == "networkx" else store
        figures["engines"][engine] = _child(engine, source, starts, years)
    figures["same_answers"] = len({e["answers"] for e in figures["engines"].values()}) == 1
    figures["targets"] = _graph_targets(figures["engines"])
    return figures


def _graph_targets(measured: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    ladybug = measured.get("ladybug")
    if ladybug is None:
        return {}
    out = {
        "rss_mb": {"value": ladybug["rss_mb"], "target": TARGETS["rss_mb"]},
        "open_s": {"value": ladybug["open_s"], "target": TARGETS["open_s"]},
        "neighbors_p50_ms": {
            "value": ladybug["p50_ms"]["neighbors"],
            "target": TARGETS["walk_p50_ms"],
        },
        "walk_2hop_p50_ms": {
            "value": ladybug["p50_ms"]["walk_2hop"],
            "target": TARGETS["walk_p50_ms"],
        },
    }
    if "networkx" in measured:
        out["find_p50_ms"] = {
            "value": ladybug["p50_ms"]["find"],
            "target": measured["networkx"]["p50_ms"]["find"],
        }
    for target in out.values():
        target["met"] = target["value"] <= target["target"]
    return out


def format_engine_graphs(figures: dict[str, Any]) -> str:
    engines = list(figures["engines"])
    rows = [
        ("worker RSS before the graph (MB)", lambda e: e["rss_before_mb"]),
        ("worker RSS holding it (MB)", lambda e: e["rss_mb"]),
        ("worker RSS after the searches (MB)", lambda e: e["rss_after_mb"]),
        ("open (s)", lambda e: e["open_s"]),
        ("FIND with conditions p50 (ms)", lambda e: e["p50_ms"]["find"]),
        ("NEIGHBORS p50 (ms)", lambda e: e["p50_ms"]["neighbors"]),
        ("2-hop GRAPHWALK p50 (ms)", lambda e: e["p50_ms"]["walk_2hop"]),
    ]
    lines = [
        f"graph: {figures['edges']} relations, {figures['nodes']} nodes (scale movie graph)",
        f"{'':38}" + "".join(f"{e:>14}" for e in engines),
    ]
    for label, value in rows:
        lines.append(
            f"{label:38}" + "".join(f"{value(figures['engines'][e]):>14}" for e in engines)
        )
    built = f"built in {figures['store_build_s']} s, " if "store_build_s" in figures else ""
    lines.append(f"ladybug store: {built}{figures['store_mb']} MB on disk")
    lines.append(f"same answers on every engine: {figures['same_answers']}")
    for name, target in figures["targets"].items():
        verdict = "met" if target["met"] else "MISSED"
        lines.append(f"target {name}: {target['value']} <= {target['target']}  {verdict}")
    return "\n".join(lines)


async def _answers(adapter: Any, chains: list[list[str]]) -> tuple[list[list[str]], list[float]]:
    from postel.messages.gasl import GaslPlan
    from postel.services.gasl.executor import GaslExecutor

    answers, times = [], []
    for commands in chains:
        executor = GaslExecutor(adapter, max_rows=0)
        began = time.perf_counter()
        await executor.execute_plan(GaslPlan(plan_id="q", commands=commands))
        times.append((time.perf_counter() - began) * 1000)
        rows = executor.context.values().get("ans", [])
        answers.append(sorted(str(row["id"]) for row in rows))
    return answers, times


def run_engine_qa(
    triples: int, count: int, engines: tuple[Engine, ...], seed: int = 7
) -> dict[str, Any]:
    """The figures of `postel bench qa --engine` (see the module docstring)."""
    from postel.services.gasl.engines.ladybug_store import build_from_graphml
    from postel.services.gasl.engines.registry import open_engine

    from postel_bench.data.qa_movies import qa_movie_graph, questions, write_graphml
    from postel_bench.qa_planners import right_chain

    graph = qa_movie_graph(triples, seed)
    asked = questions(graph, count, seed)
    chains = [right_chain(q) for q in asked]
    figures: dict[str, Any] = {"triples": graph.number_of_edges(), "questions": len(asked)}
    per_engine: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="postel-engines-qa-") as scratch:
        graphml = Path(scratch) / "qa.graphml"
        write_graphml(graph, graphml)
        del graph
        if "ladybug" in engines:
            build_from_graphml(graphml, Path(scratch) / "store")
        for engine in engines:
            began = time.perf_counter()
            adapter = open_engine(
                engine, graphml if engine == "networkx" else Path(scratch) / "store"
            )
            opened = time.perf_counter() - began
            answers, times = asyncio.run(_answers(adapter, chains))
            getattr(adapter, "close", lambda: None)()
            right = sum(a == sorted(q.answer) for a, q in zip(answers, asked, strict=True))
            per_engine[engine] = {
                "open_s": round(opened, 3),
                "p50_ms": round(statistics.median(times), 2),
                "oracle_matches": right,
                "answers": answers,
            }
    figures["engines"] = {
        e: {k: v for k, v in f.items() if k != "answers"} for e, f in per_engine.items()
    }
    figures["same_answers"] = len({json.dumps(f["answers"]) for f in per_engine.values()}) == 1
    if {"networkx", "ladybug"} <= per_engine.keys():
        ratio = per_engine["ladybug"]["p50_ms"] / max(per_engine["networkx"]["p50_ms"], 1e-9)
        figures["p50_ratio"] = round(ratio, 2)
    return figures


def format_engine_qa(figures: dict[str, Any]) -> str:
    lines = [f"QA movie graph: {figures['triples']} relations, {figures['questions']} questions"]
    lines.append(f"{'':30}" + "".join(f"{e:>14}" for e in figures["engines"]))
    for label, key in (("open (s)", "open_s"), ("p50 per question (ms)", "p50_ms")):
        lines.append(f"{label:30}" + "".join(f"{f[key]:>14}" for f in figures["engines"].values()))
    lines.append(
        f"{'answers = oracle':30}"
        + "".join(
            f"{f['oracle_matches']:>11}/{figures['questions']:<2}"
            for f in figures["engines"].values()
        )
    )
    lines.append(f"same answers on every engine: {figures['same_answers']}")
    if "p50_ratio" in figures:
        lines.append(
            f"ladybug p50 / networkx p50: {figures['p50_ratio']} (target <= {TARGETS['qa_ratio']})"
        )
    return "\n".join(lines)


def chosen_engines(value: str) -> tuple[Engine, ...]:
    """`--engine networkx|ladybug|both` as the engines to run."""
    return ENGINES if value == "both" else (value,)  # type: ignore[return-value]
