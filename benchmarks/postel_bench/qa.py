"""`postel bench qa`: knowledge-graph question answering through the whole system.

In a temporary directory it generates the QA movie graph (data/qa_movies.py,
`--triples` relations) and a question set of 1-, 2- and 3-hop questions whose answers
networkx computes (the oracle), writes the graph as GraphML, starts `postel up --no-web`
(its embedded Redis and five workers, one process) with every model call going over HTTP to
a fake OpenAI-compatible endpoint whose answers are scripted (qa_planners.py),
and registers the graph with `postel graph add`, both as the user would run them. Then it
submits every question as a job (desired type `list[str]`), one at a time, once per planner,
and compares each result with the oracle's set: exact set match, whole (an empty answer is
the empty list; a big one, 100 names or more, must come back complete by reference).

Figures: per planner, accuracy (overall and per hop count), HDT rounds, hops and seconds per
job, failures by status; the graph's `graph add` time and peak RSS, the worker's cold load
(its `graph.loaded` log line, and the first job's first planner hop), the worker process's
RSS before the graph, holding it, and at its peak. Targets: `right` equals the oracle on
every question in at most 2 rounds (3 where the answer is empty: the planner confirms a
"none" once, as any job must); `realistic` equals it on at least 95 %.

With `--local N`, a second `postel up` (same Redis data) routes the planner to the bundled
local model (POSTEL_PLANNER__LLM_PROVIDER=local) for the first N questions (planner `local`:
entities linked, the schema focus in its prompts and the per-job schema grammar); a third asks
the same questions the plain way (`local-plain`: POSTEL_SCHEMA_HELP=false, the whole schema
and the plain GASL grammar), so the two are measured in the same run. Their figures are
printed against LOCAL_TARGETS, outside the exit code (`local_scripted_calls` counts the calls
the scripted endpoint still answered: the intent's, never the planner's). `--port P` puts the
embedded Redis on P, the scripted endpoint on P+1 and the local model on P+2.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import structlog
from postel.infra.client.client import Client
from postel.infra.runtime.presence import wait_for
from postel.infra.runtime.settings import WORKER_NAMES, Settings
from postel.infra.store.jobs import JobRecord
from postel.infra.store.redis_server import free_port, port_is_open
from pydantic import BaseModel, Field

from postel.testing.fake_model import FakeModel
from postel_bench.data.qa_movies import (
    Question,
    hard_cases,
    qa_movie_graph,
    question_set_json,
    questions,
    write_graphml,
)
from postel_bench.peak import Measured
from postel_bench.qa_planners import PLANNERS, QaModel

log = structlog.get_logger(__name__)

GRAPH = "movies"
RIGHT_MAX_ROUNDS = 2
REALISTIC_MIN_ACCURACY = 0.95
# Issue 23's loading targets for a 10^5-triple graph on a 2-core machine: reported beside the
# figures, not part of the exit code (they belong to the graph registry, not the planners).
LOAD_TARGETS = {"graph_add_s": 10.0, "cold_load_s": 3.0, "worker_rss_mb": 250.0}
_ROUND_DECISIONS = frozenset({"continue", "refine", "pivot", "complete", "capped"})
_START_TIMEOUT_S = 180.0
_WRONG_SHOWN = 10

PlannerName = Literal["right", "realistic", "local", "local-plain"]
# Issue 34's targets for the bundled model with linking and the schema grammar (printed, not
# in the exit code: a 135M model's figures are measured, not promised).
LOCAL_TARGETS = {"1": 0.8, "2": 0.5, "3": 0.25}
LOCAL_P50_S = 30.0
# The local phases: planner name, and the settings that make it.
LOCAL_PHASES: dict[str, dict[str, str]] = {
    "local": {"POSTEL_SCHEMA_HELP": "true"},
    "local-plain": {"POSTEL_SCHEMA_HELP": "false"},
}


class QaConfig(BaseModel):
    triples: int = Field(default=100_000, ge=50, description="relations in the graph")
    questions: int = Field(default=60, ge=1, description="questions, spread over 1-3 hops")
    seed: int = 7
    planners: tuple[Literal["right", "realistic"], ...] = PLANNERS
    local: int = Field(default=0, ge=0, description="questions for the bundled local model")
    job_timeout_s: float = Field(default=300.0, gt=0)
    keep_dir: Path | None = None
    port: int | None = Field(default=None, ge=1, le=65533, description="Redis; +1, +2 others")
    local_phases: tuple[Literal["local", "local-plain"], ...] = Field(
        default=("local", "local-plain"), description="with --local: which ways to ask"
    )


@dataclass
class _Up:
    """A `postel up --no-web` process and where its output goes."""

    process: subprocess.Popen[bytes]
    url: str
    stderr_path: Path

    def rss_kb(self) -> dict[str, int]:
        """VmRSS and VmHWM (the peak) of the process, in kB."""
        found: dict[str, int] = {}
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                name, _, value = line.partition(":")
                if name in ("VmRSS", "VmHWM"):
                    found[name] = int(value.split()[0])
        return found

    def logged(self, event: str) -> list[dict[str, Any]]:
        """The JSON log lines of `event` the process wrote so far."""
        found = []
        for line in self.stderr_path.read_text(errors="replace").splitlines():
            if event in line:
                with contextlib.suppress(ValueError):
                    entry = json.loads(line)
                    if entry.get("event") == event:
                        found.append(entry)
        return found

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _postel(*args: str) -> list[str]:
    return [sys.executable, "-m", "postel", *args]


def _base_env(fake: FakeModel) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    return {
        **env,
        "POSTEL_LLM_PROVIDER": "openai",
        "POSTEL_LLM_BASE_URL": fake.base_url,
        "POSTEL_LOG_FORMAT": "json",
        "POSTEL_LOG_LEVEL": "INFO",
    }


async def _start_up(env: dict[str, str], directory: Path, port: int, label: str) -> _Up:
    stderr_path = directory / f"up-{label}.log"
    with (directory / f"up-{label}.out").open("wb") as out, stderr_path.open("wb") as err:
        process = subprocess.Popen(
            _postel("up", "--port", str(port), "--state-dir", str(directory / "state"), "--no-web"),
            env=env,
            stdout=out,
            stderr=err,
        )
    up = _Up(process, f"redis://127.0.0.1:{port}/0", stderr_path)
    try:
        async with asyncio.timeout(_START_TIMEOUT_S):
            while not port_is_open(port):
                if process.poll() is not None:
                    raise RuntimeError(
                        f"postel up exited ({process.returncode}); see {stderr_path}"
                    )
                await asyncio.sleep(0.1)
            async with Client(up.url, Settings(redis_url=up.url)) as client:
                for kind in WORKER_NAMES:
                    await wait_for(
                        client.pool, client.keyspace, kind, processes=1, timeout=_START_TIMEOUT_S
                    )
    except BaseException:
        up.stop()  # a process that never came up is not left behind
        raise
    return up


def _graph_add(url: str, graph_file: Path) -> dict[str, Any]:
    """`postel graph add` as a user runs it: its wall time and peak RSS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    started = time.perf_counter()
    measured = Measured(
        _postel("graph", "add", GRAPH, str(graph_file)),
        env={**env, "POSTEL_REDIS_URL": url, "POSTEL_LOG_LEVEL": "WARNING"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out_bytes, err_bytes = measured.process.communicate()
    code, peak_mb = measured.wait()
    seconds = time.perf_counter() - started
    out, err = out_bytes.decode(), err_bytes.decode()
    if code != 0:
        raise RuntimeError(f"postel graph add failed ({code}): {err or out}")
    return {
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak_mb, 1),
        "said": out.strip(),
    }


async def _ask(
    client: Client, planner: PlannerName, question: Question, timeout_s: float
) -> dict[str, Any]:
    job_id = f"qa-{planner}-{question.id}"
    await client.submit(question.text, type="list[str]", graph=GRAPH, job_id=job_id)
    try:
        record = await client.wait(job_id, timeout_s)
    except TimeoutError:
        record = await client.status(job_id)
    events = await client.events.read(job_id)
    done = [e for e in events if e.status == "completed"]
    rounds = [e for e in done if e.worker == "planner" and e.decision in _ROUND_DECISIONS]
    first_planner = next((e for e in done if e.worker == "planner"), None)
    return {
        "job_id": job_id,
        "planner": planner,
        "question": question.id,
        "hop_count": question.hop_count,
        "status": record.status,
        "failure": record.failure,
        "correct": _matches(record, question),
        "rounds": len(rounds),
        "decisions": [e.decision for e in rounds],
        "hops": len(done),
        "seconds": round(_seconds(record), 3),
        "first_planner_hop_ms": round(first_planner.duration_ms, 1) if first_planner else None,
        "llm_calls": record.llm_calls,
        # the planner's own: the local phases' model calls (the other stages are scripted)
        "planner_calls": sum(e.llm_calls for e in done if e.worker == "planner"),
        "answer_size": len(question.answer),
        "result_size": len(record.result) if isinstance(record.result, list) else None,
    }


def _matches(record: JobRecord, question: Question) -> bool:
    result = record.result
    if record.status != "completed" or not isinstance(result, list):
        return False
    return all(isinstance(item, str) for item in result) and set(result) == question.answer


def _seconds(record: JobRecord) -> float:
    end = record.finished_at or record.updated_at
    return (end - record.created_at).total_seconds()


def summarise(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """One planner's figures from its jobs."""
    seconds = [j["seconds"] for j in jobs]
    by_hops: dict[str, dict[str, int]] = {}
    for hop_count in sorted({j["hop_count"] for j in jobs}):
        mine = [j for j in jobs if j["hop_count"] == hop_count]
        by_hops[str(hop_count)] = {
            "questions": len(mine),
            "correct": sum(j["correct"] for j in mine),
        }
    correct = sum(j["correct"] for j in jobs)
    return {
        "questions": len(jobs),
        "correct": correct,
        "accuracy": round(correct / len(jobs), 4) if jobs else 0.0,
        "by_hops": by_hops,
        "rounds": _spread([j["rounds"] for j in jobs]),
        "hops": _spread([j["hops"] for j in jobs]),
        "seconds": _spread(seconds),
        "planner_calls": _spread([j["planner_calls"] for j in jobs]),
        # jobs over the right planner's round cap (one more where the answer is empty)
        "over_rounds": sum(j["rounds"] > RIGHT_MAX_ROUNDS + (j["answer_size"] == 0) for j in jobs),
        "failures": dict(Counter(j["failure"] or j["status"] for j in jobs if not j["correct"])),
    }


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "mean": round(statistics.fmean(values), 3),
        "p50": round(statistics.median(values), 3),
        "max": round(max(values), 3),
        "min": round(min(values), 3),
    }


def local_targets(planners: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The `local` planner's figures against LOCAL_TARGETS and LOCAL_P50_S (none without it)."""
    local = planners.get("local")
    if local is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for hops, least in LOCAL_TARGETS.items():
        row = local["by_hops"].get(hops)
        measured = round(row["correct"] / row["questions"], 3) if row else None
        out[f"{hops}-hop"] = {
            "measured": measured,
            "at_least": least,
            "holds": None if measured is None else measured >= least,
        }
    p50 = local["seconds"].get("p50")
    out["job_p50_s"] = {
        "measured": p50,
        "at_most": LOCAL_P50_S,
        "holds": None if p50 is None else p50 <= LOCAL_P50_S,
    }
    return out


def load_targets(graph: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The graph's load figures against LOAD_TARGETS (None where a figure is missing)."""
    worker = graph.get("worker", {})
    loads = [ms for ms in worker.get("cold_load_ms", []) if isinstance(ms, int | float)]
    measured = {
        "graph_add_s": graph.get("add", {}).get("seconds"),
        "cold_load_s": round(loads[0] / 1000, 2) if loads else None,
        "worker_rss_mb": worker.get("rss_holding_mb"),
    }
    return {
        name: {
            "measured": measured[name],
            "at_most": bound,
            "holds": None if measured[name] is None else measured[name] <= bound,
        }
        for name, bound in LOAD_TARGETS.items()
    }


def targets(planners: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Whether each planner meets its target (only the planners that ran)."""
    out: dict[str, dict[str, Any]] = {}
    right = planners.get("right")
    if right is not None:
        out["right"] = {
            "target": f"equals the oracle on every question in <= {RIGHT_MAX_ROUNDS} rounds "
            "(one more for an empty answer, confirmed once)",
            "holds": right["correct"] == right["questions"] and right["over_rounds"] == 0,
        }
    realistic = planners.get("realistic")
    if realistic is not None:
        out["realistic"] = {
            "target": f">= {REALISTIC_MIN_ACCURACY:.0%} of the oracle",
            "holds": realistic["accuracy"] >= REALISTIC_MIN_ACCURACY,
        }
    return out


async def run_qa(config: QaConfig) -> dict[str, Any]:
    """Run the benchmark; the figures `format_qa` prints."""
    with (
        tempfile.TemporaryDirectory(prefix="postel-qa-")
        if config.keep_dir is None
        else contextlib.nullcontext(str(config.keep_dir))
    ) as tmp:
        directory = Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        graph = qa_movie_graph(config.triples, config.seed)
        asked = questions(graph, config.questions, config.seed)
        graph_file = directory / "movies.graphml"
        write_graphml(graph, graph_file)
        (directory / "questions.json").write_text(question_set_json(asked))
        figures: dict[str, Any] = {
            "config": config.model_dump(mode="json"),
            "graph": {
                "nodes": graph.number_of_nodes(),
                "triples": graph.number_of_edges(),
                "graphml_mb": round(graph_file.stat().st_size / 2**20, 1),
                "generated_s": round(time.perf_counter() - started, 2),
            },
            "questions": {
                "count": len(asked),
                "by_hops": dict(Counter(str(q.hop_count) for q in asked)),
                "answer_sizes": _spread([len(q.answer) for q in asked]),
                "hard_cases": hard_cases(asked),
            },
        }
        model = QaModel(asked)
        jobs: list[dict[str, Any]] = []
        fake_port = config.port + 1 if config.port else 0
        with FakeModel(model.respond, port=fake_port) as fake:
            port = config.port or free_port()
            up = await _start_up(_base_env(fake), directory, port, "scripted")
            try:
                idle = up.rss_kb()
                figures["graph"]["add"] = await asyncio.to_thread(_graph_add, up.url, graph_file)
                async with Client(up.url, Settings(redis_url=up.url)) as client:
                    for planner in config.planners:
                        model.planner = planner
                        for question in asked:
                            jobs.append(await _ask(client, planner, question, config.job_timeout_s))
                            log.info(
                                "qa job",
                                **{k: jobs[-1][k] for k in ("job_id", "correct", "rounds")},
                            )
                if jobs:  # with no scripted planner, no job of this process loaded the graph
                    figures["graph"]["worker"] = _worker_figures(up, idle, jobs)
            finally:
                up.stop()
            phases = list(config.local_phases) if config.local else []
            for phase in phases:
                env = {
                    **_base_env(fake),
                    "POSTEL_PLANNER__LLM_PROVIDER": "local",
                    **LOCAL_PHASES[phase],
                }
                if config.port:
                    env["POSTEL_LOCAL_MODEL_PORT"] = str(config.port + 2)
                up = await _start_up(env, directory, port, phase)
                try:
                    idle = up.rss_kb()
                    model.calls.clear()
                    local: list[dict[str, Any]] = []
                    async with Client(up.url, Settings(redis_url=up.url)) as client:
                        # the set takes 1, 2 and 3 hops in turn: its first questions mix them
                        for question in asked[: config.local]:
                            local.append(
                                await _ask(client, phase, question, config.job_timeout_s)  # type: ignore[arg-type]
                            )
                            log.info(
                                "qa job",
                                **{
                                    k: local[-1][k]
                                    for k in ("job_id", "correct", "seconds", "planner_calls")
                                },
                                decisions=local[-1]["decisions"],
                            )
                    if phase == "local":
                        figures["graph"]["worker_local"] = _worker_figures(up, idle, local)
                        # which calls the scripted model still answered: not the planner's
                        figures["local_scripted_calls"] = dict(model.calls)
                    jobs += local
                finally:
                    up.stop()
        planners = {
            name: summarise([j for j in jobs if j["planner"] == name])
            for name in dict.fromkeys(j["planner"] for j in jobs)
        }
        figures["planners"] = planners
        figures["targets"] = targets(planners)
        figures["local_targets"] = local_targets(planners)
        figures["load_targets"] = load_targets(figures["graph"])
        figures["jobs"] = jobs
        figures["seconds"] = round(time.perf_counter() - started, 1)
        return figures


def _worker_figures(up: _Up, idle: dict[str, int], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """The worker process's load of the graph and its memory."""
    holding = up.rss_kb()
    loaded = up.logged("graph.loaded")
    first = jobs[0]["first_planner_hop_ms"] if jobs else None
    later = [j["first_planner_hop_ms"] for j in jobs[1:] if j["first_planner_hop_ms"]]
    return {
        "cold_load_ms": [entry.get("load_ms") for entry in loaded],
        "first_job_first_planner_hop_ms": first,
        "later_first_planner_hop_ms_p50": round(statistics.median(later), 1) if later else None,
        "rss_idle_mb": round(idle.get("VmRSS", 0) / 1024, 1),
        "rss_holding_mb": round(holding.get("VmRSS", 0) / 1024, 1),
        "rss_peak_mb": round(holding.get("VmHWM", 0) / 1024, 1),
    }


def format_qa(figures: dict[str, Any]) -> str:
    graph, asked = figures["graph"], figures["questions"]
    add = graph.get("add", {})
    hops = ", ".join(f"{n}-hop {c}" for n, c in sorted(asked["by_hops"].items()))
    sizes = asked["answer_sizes"]
    lines = [
        f"graph: {graph['nodes']:,} nodes, {graph['triples']:,} triples, "
        f"{graph['graphml_mb']} MB of GraphML (generated in {graph['generated_s']} s)",
        f"questions: {asked['count']} ({hops}); answer size p50 {sizes.get('p50')}, "
        f"max {sizes.get('max')}",
        "hard cases: "
        + ", ".join(f"{name.replace('_', ' ')} {n}" for name, n in asked["hard_cases"].items()),
        f"postel graph add: {add.get('seconds')} s, peak RSS {add.get('peak_rss_mb')} MB",
    ]
    for key, label in (("worker", "postel up"), ("worker_local", "postel up, local planner")):
        worker = graph.get(key)
        if worker is None:
            continue
        lines += [
            f"worker ({label}): cold load {_ms_list(worker['cold_load_ms'])} (graph.loaded); "
            f"first job's first planner hop {worker['first_job_first_planner_hop_ms']} ms, "
            f"later ones p50 {worker['later_first_planner_hop_ms_p50']} ms",
            f"worker RSS ({label}): {worker['rss_idle_mb']} MB before the graph, "
            f"{worker['rss_holding_mb']} MB holding it, peak {worker['rss_peak_mb']} MB",
        ]
    lines += [
        "",
        f"{'planner':<12}{'correct':>10}{'accuracy':>10}{'1-hop':>8}{'2-hop':>8}{'3-hop':>8}"
        f"{'rounds':>14}{'hops':>14}{'s/job':>16}  failures",
    ]
    for name, row in figures["planners"].items():
        per = {n: f"{v['correct']}/{v['questions']}" for n, v in row["by_hops"].items()}
        rounds, hops, seconds = row["rounds"], row["hops"], row["seconds"]
        lines.append(
            f"{name:<12}{row['correct']:>5}/{row['questions']:<4}{row['accuracy']:>10.1%}"
            f"{per.get('1', '-'):>8}{per.get('2', '-'):>8}{per.get('3', '-'):>8}"
            f"{_mean_max(rounds):>14}{_mean_max(hops):>14}"
            f"{seconds.get('p50', 0):>8.2f} p50 {seconds.get('max', 0):.1f} max  "
            f"{', '.join(f'{k} {v}' for k, v in row['failures'].items()) or '-'}"
        )
    lines.append("(rounds and hops: mean / max per job)")
    lines.append(
        "planner model calls per job (mean / max): "
        + "; ".join(
            f"{name} {_mean_max(row['planner_calls'])}" for name, row in figures["planners"].items()
        )
    )
    wrong = [j for j in figures["jobs"] if not j["correct"]]
    for job in wrong[:_WRONG_SHOWN]:
        lines.append(
            f"  wrong: {job['job_id']}: {job['failure'] or job['status']}, "
            f"{job['result_size']} names for {job['answer_size']}, rounds "
            + " ".join(job["decisions"])
        )
    if len(wrong) > _WRONG_SHOWN:
        lines.append(f"  … {len(wrong) - _WRONG_SHOWN} more wrong (--json lists every job)")
    loads = figures.get("load_targets", {})
    lines.append(
        "load against issue 23's targets (not in the exit code): "
        + "; ".join(
            f"{name} {row['measured']} <= {row['at_most']}: "
            + {True: "holds", False: "MISSED", None: "not measured"}[row["holds"]]
            for name, row in loads.items()
        )
    )
    local = figures.get("local_targets", {})
    if local:
        lines.append(
            "local (issue 34's targets, not in the exit code): "
            + "; ".join(
                f"{name} {row['measured']} "
                + (f">= {row['at_least']}" if "at_least" in row else f"<= {row['at_most']}")
                + ": "
                + {True: "holds", False: "MISSED", None: "not measured"}[row["holds"]]
                for name, row in local.items()
            )
        )
    for name, target in figures["targets"].items():
        lines.append(
            f"target {name}: {target['target']}: {'holds' if target['holds'] else 'MISSED'}"
        )
    lines.append(f"run: {figures['seconds']} s")
    return "\n".join(lines)


def _mean_max(spread: dict[str, float]) -> str:
    return f"{spread.get('mean', 0):.1f} / {spread.get('max', 0):.0f}"


def _ms_list(values: list[Any] | None) -> str:
    if not values:
        return "not logged"
    return ", ".join(f"{v} ms" for v in values)
