"""`postel bench bus`: what the runtime costs per hop and at rest, against arq in the same run.

Four sides cross five queues, each stage in its own worker processes (1, 2 and 4 processes per
stage by default), 10 jobs at once per process, JSON serializer everywhere
(bus_worker.py):
- postel: the relay workers (postel/testing/relay.py) woken by pushes (infra/runtime/wake.py);
- postel, poll 5 ms (before): the same relay workers on arq's Worker polling every 5 ms, as
  postel ran before (the baseline baselines/polling_worker.py);
- bare arq, poll 5 ms, and bare arq at its defaults (poll 0.5 s): a no-op function per stage
  that enqueues the next stage.
Figures:
- hop latency p50/p99: from a message's creation to the next stage starting it, with one job
  in flight (postel: the `received` event's wait_ms; bare arq: measured by the function);
- hops/s: `jobs` jobs submitted at once, five hops each, divided by the time until all finish;
- Redis time per hop, over that same throughput phase (the jobs' submission and waiting
  included, as each side's own client does them): the server's CPU (INFO cpu, used_cpu_sys +
  used_cpu_user: commands, I/O and the event loop) and the commands' own time (INFO
  commandstats usec, with per-command calls and usec per hop), the INFO calls themselves
  excluded from both. Redis counts a command a script runs both in the script's time and
  under its own name, so the commandstats total counts script work twice: an upper bound for
  postel, exact for bare arq (it runs no scripts). The CPU figure counts everything once;
- ratios postel / bare arq at a 5 ms poll, at each process count: hops/s and Redis CPU per
  hop;
- at rest (one process per stage, no jobs, after a settling second): Redis commands per
  second per worker process (INFO commandstats over the window, the INFO calls themselves
  excluded) and CPU per worker process (Linux /proc, percent of one core).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from postel.infra.client.client import Client
from postel.infra.runtime.settings import Settings
from postel.infra.store.connect import redis_client
from postel.infra.store.keys import CLUSTER_LANES
from postel.infra.store.redis_server import configured_or_scratch
from postel.infra.store.wire import connect_arq

from postel.testing.cluster import LoopbackCluster
from postel_bench.bus_worker import STAGES, bare_done, bare_queue

TARGET_P50_MS = 1.0
TARGET_P99_MS = 5.0
TARGET_IDLE_COMMANDS_S = 5.0
TARGET_IDLE_CPU_PCT = 1.0
SETTLE_S = 1.0


@dataclass(frozen=True)
class Side:
    key: str
    label: str
    postel: bool
    # arq at its 0.5 s poll needs ~1.25 s per sequential job: fewer latency samples
    latency_share: float = 1.0


SIDES = (
    Side("postel", "postel (push)", postel=True),
    Side("postel_poll", "postel, poll 5 ms (before)", postel=True),
    Side("arq_5ms", "bare arq, poll 5 ms", postel=False),
    Side("arq_default", "bare arq, defaults (poll 0.5 s)", postel=False, latency_share=0.1),
)
RECORDING_SIDES = (
    Side("calls_recorded", "postel, 1 model call per hop, recorded", postel=True),
    Side("calls_unrecorded", "postel, 1 model call per hop, not recorded", postel=True),
)
RECORDING_ROUNDS = 2
RECORDING_BATCHES = 3
"""Each recording side runs RECORDING_ROUNDS times, alternately, measuring RECORDING_BATCHES
batches of jobs each time; the best hops/s of each side counts (one batch varies by ±15 %)."""
TARGET_RECORDING_COST_PCT = 5.0


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux); None where /proc is not available."""
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return None
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class RedisUsage:
    """What Redis has spent so far: its CPU seconds and each command's calls and usec."""

    cpu_s: float
    commands: dict[str, tuple[int, int]]

    @classmethod
    async def read(cls, redis: aioredis.Redis) -> RedisUsage:
        cpu = await redis.info("cpu")
        stats = await redis.info("commandstats")
        return cls(
            float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"]),
            {
                name.removeprefix("cmdstat_"): (int(value["calls"]), int(value["usec"]))
                for name, value in stats.items()
                if name.startswith("cmdstat_")
            },
        )

    def per_hop(self, before: RedisUsage, hops: int) -> dict[str, Any]:
        """Usage since `before`, per hop, the INFO calls excluded (their usec is taken off
        the CPU figure too; the rest of their cost, a few µs a run, stays in)."""
        spent: dict[str, tuple[int, int]] = {}
        for name, (calls, usec) in self.commands.items():
            was_calls, was_usec = before.commands.get(name, (0, 0))
            if calls > was_calls:
                spent[name] = (calls - was_calls, usec - was_usec)
        info_usec = spent.pop("info", (0, 0))[1]
        cpu_us = (self.cpu_s - before.cpu_s) * 1e6 - info_usec
        ranked = sorted(spent.items(), key=lambda item: -item[1][1])
        return {
            "redis_cpu_us_per_hop": round(cpu_us / hops, 1),
            "redis_command_us_per_hop": round(sum(u for _c, u in spent.values()) / hops, 1),
            "redis_commands_per_hop": round(sum(c for c, _u in spent.values()) / hops, 2),
            "redis_by_command": {
                name: {"calls_per_hop": round(calls / hops, 2), "us_per_hop": round(usec / hops, 2)}
                for name, (calls, usec) in ranked
            },
        }


async def _commands_so_far(redis: aioredis.Redis) -> int:
    stats = await redis.info("commandstats")
    return sum(
        int(value["calls"])
        for name, value in stats.items()
        if name.startswith("cmdstat_") and name != "cmdstat_info"
    )


class Fleet:
    """`processes` worker processes per stage of one side, stopped on exit."""

    def __init__(self, side: Side, url: str, processes: int, run: str) -> None:
        self.side = side
        self.url = url
        self.processes = processes
        self.run = run
        self.ready_key = f"bench:bus:{run}:ready:{side.key}:{processes}"
        self.children: list[subprocess.Popen[bytes]] = []

    async def __aenter__(self) -> Fleet:
        env = {**os.environ, "POSTEL_REDIS_URL": self.url, "POSTEL_LOG_LEVEL": "WARNING"}
        for stage in range(STAGES):
            for _ in range(self.processes):
                self.children.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "postel_bench.bus_worker",
                            self.side.key,
                            str(stage),
                            *("--url", self.url, "--ready-key", self.ready_key),
                            *("--run", self.run),
                        ],
                        env=env,
                    )
                )
        redis = redis_client(self.url)
        try:
            async with asyncio.timeout(120):
                while int(await redis.get(self.ready_key) or 0) < len(self.children):
                    if any(child.poll() is not None for child in self.children):
                        raise RuntimeError(f"a {self.side.label} worker process exited at start")
                    await asyncio.sleep(0.05)
        finally:
            await redis.aclose()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for child in self.children:
            child.terminate()
        for child in self.children:
            try:
                await asyncio.to_thread(child.wait, 20)
            except subprocess.TimeoutExpired:
                child.kill()

    async def at_rest(self, window_s: float) -> dict[str, Any]:
        """Redis commands/s and CPU % per worker process while no job is queued."""
        redis = redis_client(self.url)
        try:
            await asyncio.sleep(SETTLE_S)
            cpu_before = [_cpu_seconds(child.pid) for child in self.children]
            commands_before = await _commands_so_far(redis)
            await asyncio.sleep(window_s)
            commands = await _commands_so_far(redis) - commands_before
            cpu_after = [_cpu_seconds(child.pid) for child in self.children]
        finally:
            await redis.aclose()
        used = [
            after - before
            for before, after in zip(cpu_before, cpu_after, strict=True)
            if before is not None and after is not None
        ]
        return {
            "idle_commands_per_s_per_process": round(commands / window_s / len(self.children), 2),
            "idle_cpu_pct_per_process": (
                round(100 * statistics.mean(used) / window_s, 2) if used else None
            ),
        }


async def _hop_waits(client: Client, latency_jobs: int) -> list[float]:
    """Every hop's wait of `latency_jobs` jobs run one at a time."""
    waits: list[float] = []
    for _ in range(latency_jobs):
        job_id = await client.submit("bench")
        await client.wait_all([job_id], timeout=60)
        events = await client.events.read(job_id)
        waits.extend(e.wait_ms for e in events if e.status == "received")
    return waits


async def _all_at_once(client: Client, jobs: int) -> float:
    """Seconds `jobs` jobs submitted at once take to complete, every one of them."""
    started = time.perf_counter()
    ids = await asyncio.gather(*(client.submit("bench") for _ in range(jobs)))
    records = await client.wait_all(ids, timeout=600)
    elapsed = time.perf_counter() - started
    if any(record.status != "completed" for record in records.values()):
        raise RuntimeError("a bench job did not complete")
    return elapsed


async def _postel_hops(
    url: str, settings: Settings, latency_jobs: int, jobs: int
) -> dict[str, Any]:
    async with Client(url, settings) as client:
        waits = await _hop_waits(client, latency_jobs)
        usage = await RedisUsage.read(client.pool)
        elapsed = await _all_at_once(client, jobs)
        spent = (await RedisUsage.read(client.pool)).per_hop(usage, jobs * STAGES)
    return {**_hop_figures(waits, jobs, elapsed), **spent}


async def _bare_hops(url: str, run: str, tag: str, latency_jobs: int, jobs: int) -> dict[str, Any]:
    pool = await connect_arq(url)
    done = bare_done(run)

    async def start(key: str) -> None:
        await pool.enqueue_job(
            "hop", key, time.time(), _queue_name=bare_queue(run, 0), _job_id=f"{key}:0"
        )

    async def finish(count: int) -> None:
        for _ in range(count):
            if await pool.blpop([done], timeout=120) is None:
                raise RuntimeError("a bare arq bench job did not finish in 120 s")

    try:
        latency_keys = [f"{tag}:lat{n}" for n in range(latency_jobs)]
        for key in latency_keys:
            await start(key)
            await finish(1)
        usage = await RedisUsage.read(pool)
        started = time.perf_counter()
        await asyncio.gather(*(start(f"{tag}:thr{n}") for n in range(jobs)))
        await finish(jobs)
        elapsed = time.perf_counter() - started
        spent = (await RedisUsage.read(pool)).per_hop(usage, jobs * STAGES)
        results = await pool.mget(
            [f"arq:result:{key}:{stage}" for key in latency_keys for stage in range(STAGES)]
        )
    finally:
        await pool.aclose()
    waits = [float(json.loads(raw)["r"]) for raw in results if raw is not None]
    return {**_hop_figures(waits, jobs, elapsed), **spent}


def _hop_figures(waits: list[float], jobs: int, elapsed: float) -> dict[str, Any]:
    return {
        "hop_latency_p50_ms": round(_percentile(waits, 0.50), 3),
        "hop_latency_p99_ms": round(_percentile(waits, 0.99), 3),
        "latency_samples": len(waits),
        "hops_per_s": round(jobs * STAGES / elapsed, 1),
    }


async def run_bus_bench(
    settings: Settings,
    jobs: int = 200,
    processes: tuple[int, ...] = (1, 2, 4),
    idle_s: float = 10.0,
    latency_jobs: int = 100,
    sides_run: tuple[str, ...] = tuple(side.key for side in SIDES),
    recording: bool = True,
) -> dict[str, Any]:
    """The sides named in `sides_run` (all by default) on one Redis: POSTEL_REDIS_URL if
    set, else a fresh embedded server; with `recording`, the recording cost too."""
    run = uuid.uuid4().hex[:8]
    chosen = [side for side in SIDES if side.key in sides_run]
    figures: dict[str, Any] = {
        "jobs": jobs,
        "latency_jobs": latency_jobs,
        "idle_s": idle_s,
        "concurrency": settings.concurrency,
        "redis": "POSTEL_REDIS_URL" if settings.redis_url else "embedded",
        "load_average_at_start": round(os.getloadavg()[0], 2),
        "sides": {},
    }
    sides = figures["sides"]
    for side in chosen:
        sides[side.key] = {"label": side.label, "by_processes": {}}
    async with configured_or_scratch(settings.redis_url) as url:
        # sides side by side at each process count, so a machine whose load drifts during
        # the run (it is shared) skews them alike
        for count in processes:
            for side in chosen:
                samples = max(int(latency_jobs * side.latency_share), 5)
                async with Fleet(side, url, count, run) as fleet:
                    if count == processes[0]:
                        sides[side.key].update(await fleet.at_rest(idle_s))
                    if side.postel:
                        hops = await _postel_hops(url, settings, samples, jobs)
                    else:
                        hops = await _bare_hops(url, run, f"{side.key}{count}", samples, jobs)
                sides[side.key]["by_processes"][str(count)] = hops
        if recording:
            figures["recording"] = await _recording_cost(url, settings, processes[0], run, jobs)
    figures["load_average_at_end"] = round(os.getloadavg()[0], 2)
    if "postel" in sides and "arq_5ms" in sides:
        figures["postel_vs_arq_5ms"] = _against_arq(sides["postel"], sides["arq_5ms"])
    figures["targets"] = _targets(figures)
    return figures


async def _recording_cost(
    url: str, settings: Settings, processes: int, run: str, jobs: int
) -> dict[str, Any]:
    """Hops/s of relay stages that each ask a scripted model once, with the job's calls
    recorded (infra/store/calls.py) and without; and how much one side's batches vary (their
    standard deviation, % of their mean): a cost within that spread is not measured."""
    batches: dict[str, list[float]] = {side.key: [] for side in RECORDING_SIDES}
    for _ in range(RECORDING_ROUNDS):
        for side in RECORDING_SIDES:
            async with Fleet(side, url, processes, run):
                # a fresh fleet's first batch runs at a third of the speed (its processes open
                # their connections and warm up): it is not measured
                await _postel_hops(url, settings, 0, jobs)
                for _ in range(RECORDING_BATCHES):
                    hops = await _postel_hops(url, settings, 0, jobs)
                    batches[side.key].append(hops["hops_per_s"])
    recorded, unrecorded = max(batches["calls_recorded"]), max(batches["calls_unrecorded"])
    spread = max(100 * statistics.stdev(v) / statistics.mean(v) for v in batches.values())
    return {
        "processes": processes,
        "hops_per_s_recorded": recorded,
        "hops_per_s_unrecorded": unrecorded,
        "cost_pct": round(100 * (1 - recorded / unrecorded), 1),
        "batch_spread_pct": round(spread, 1),
    }


def _against_arq(postel: dict[str, Any], arq: dict[str, Any]) -> dict[str, dict[str, float]]:
    """postel / bare arq (5 ms poll) at each process count: hops/s and Redis time per hop."""
    ratios = {}
    for count, ours in postel["by_processes"].items():
        theirs = arq["by_processes"][count]
        ratios[count] = {
            name: round(ours[name] / theirs[name], 2) if theirs[name] else 0.0
            # not the commandstats total: it counts a script's commands twice (see above)
            for name in ("hops_per_s", "redis_cpu_us_per_hop")
        }
    return ratios


def _targets(figures: dict[str, Any]) -> dict[str, bool]:
    """The targets whose sides ran."""
    sides = figures["sides"]
    if "postel" not in sides:
        return {}
    push = sides["postel"]
    runs = push["by_processes"]
    cpu = push["idle_cpu_pct_per_process"]
    targets = {
        "hop_p50_le_1ms": all(r["hop_latency_p50_ms"] <= TARGET_P50_MS for r in runs.values()),
        "hop_p99_le_5ms": all(r["hop_latency_p99_ms"] <= TARGET_P99_MS for r in runs.values()),
        "idle_le_5_commands_per_s": push["idle_commands_per_s_per_process"]
        <= TARGET_IDLE_COMMANDS_S,
        "idle_cpu_lt_1pct": cpu is not None and cpu < TARGET_IDLE_CPU_PCT,
    }
    if "postel_poll" in sides:
        before = sides["postel_poll"]["by_processes"]
        targets["hops_per_s_ge_before"] = all(
            runs[n]["hops_per_s"] >= before[n]["hops_per_s"] for n in runs
        )
    if ratios := figures.get("postel_vs_arq_5ms"):
        targets["redis_cpu_per_hop_le_arq"] = all(
            r["redis_cpu_us_per_hop"] <= 1.0 for r in ratios.values()
        )
        targets["hops_per_s_ge_arq"] = all(r["hops_per_s"] >= 1.0 for r in ratios.values())
    if "recording" in figures:
        targets["recording_costs_lt_5pct"] = (
            figures["recording"]["cost_pct"] < TARGET_RECORDING_COST_PCT
        )
    return targets


def format_bus_bench(figures: dict[str, Any]) -> str:
    rows = [
        f"bench bus: {STAGES} stages, {figures['concurrency']} jobs at once per process; "
        f"latency: {figures['latency_jobs']} jobs one at a time; hops/s: {figures['jobs']} "
        f"jobs at once; redis {figures['redis']}; load average {figures['load_average_at_start']}"
        f" at start, {figures['load_average_at_end']} at end (the machine's other work skews it)",
        f"{'':<34}{'procs/stage':>12}{'hop p50 ms':>12}{'hop p99 ms':>12}{'hops/s':>10}"
        f"{'redis cpu µs/hop':>18}{'cmd µs/hop':>12}{'cmds/hop':>10}",
    ]
    for side in figures["sides"].values():
        for count, run in side["by_processes"].items():
            rows.append(
                f"{side['label']:<34}{count:>12}{run['hop_latency_p50_ms']:>12}"
                f"{run['hop_latency_p99_ms']:>12}{run['hops_per_s']:>10}"
                f"{run['redis_cpu_us_per_hop']:>18}{run['redis_command_us_per_hop']:>12}"
                f"{run['redis_commands_per_hop']:>10}"
            )
    for count, ratio in figures.get("postel_vs_arq_5ms", {}).items():
        rows.append(
            f"postel / bare arq (5 ms poll) at {count} per stage: hops/s x{ratio['hops_per_s']}, "
            f"redis cpu per hop x{ratio['redis_cpu_us_per_hop']}"
        )
    if figures.get("postel_vs_arq_5ms"):
        rows.append(
            "(cmd µs/hop: INFO commandstats; a command a script runs counts in the script's "
            "time and again under its own name, so postel's is an upper bound)"
        )
    rows.append(f"at rest over {figures['idle_s']} s, one process per stage, per worker process:")
    rows.append(f"{'':<34}{'redis cmds/s':>14}{'cpu % core':>12}")
    for side in figures["sides"].values():
        cpu = side["idle_cpu_pct_per_process"]
        rows.append(
            f"{side['label']:<34}{side['idle_commands_per_s_per_process']:>14}"
            f"{'n/a' if cpu is None else cpu:>12}"
        )
    if recording := figures.get("recording"):
        rows.append(
            f"recording model calls ({recording['processes']} process per stage, one scripted "
            f"call per hop): {recording['hops_per_s_recorded']} hops/s recorded, "
            f"{recording['hops_per_s_unrecorded']} not recorded, cost {recording['cost_pct']} % "
            f"(best of {RECORDING_ROUNDS * RECORDING_BATCHES} batches a side; one side's "
            f"batches vary by {recording['batch_spread_pct']} %)"
        )
    targets = figures["targets"]
    rows.append(
        "targets (postel, push): "
        + ", ".join(f"{name} {'yes' if met else 'NO'}" for name, met in targets.items())
    )
    return "\n".join(rows)


async def _cluster_hops(
    cluster: LoopbackCluster, settings: Settings, latency_jobs: int, jobs: int
) -> dict[str, Any]:
    """`_postel_hops` on a cluster, with each primary's Redis time per hop of the whole run."""
    shards = [aioredis.Redis(port=port) for port in cluster.primary_ports()]
    try:
        async with Client(cluster.url, settings) as client:
            waits = await _hop_waits(client, latency_jobs)
            before = [await RedisUsage.read(shard) for shard in shards]
            elapsed = await _all_at_once(client, jobs)
            spent = [
                (await RedisUsage.read(shard)).per_hop(usage, jobs * STAGES)
                for shard, usage in zip(shards, before, strict=True)
            ]
    finally:
        for shard in shards:
            await shard.aclose()
    cpu = [shard["redis_cpu_us_per_hop"] for shard in spent]
    return {
        **_hop_figures(waits, jobs, elapsed),
        "redis_cpu_us_per_hop_by_shard": cpu,
        "redis_cpu_us_per_hop_all_shards": round(sum(cpu), 1),
    }


async def run_cluster_bench(
    settings: Settings,
    shards: int,
    jobs: int = 200,
    processes: int = 1,
    latency_jobs: int = 100,
) -> dict[str, Any]:
    """postel's side on a real Redis Cluster of 1, 2 … `shards` primaries on loopback (made
    for the run, in a scratch directory): hops/s, hop latency and each primary's Redis CPU
    per hop, `processes` worker processes per stage."""
    run = uuid.uuid4().hex[:8]
    postel = next(side for side in SIDES if side.key == "postel")
    figures: dict[str, Any] = {
        "jobs": jobs,
        "processes_per_stage": processes,
        "lanes": CLUSTER_LANES,
        "cores": os.cpu_count(),
        "load_average_at_start": round(os.getloadavg()[0], 2),
        "by_shards": {},
    }
    for count in range(1, shards + 1):
        with (
            tempfile.TemporaryDirectory(prefix="postel-bench-cluster-") as directory,
            LoopbackCluster(Path(directory), primaries=count) as cluster,
        ):
            async with Fleet(postel, cluster.url, processes, run):
                samples = max(int(latency_jobs * postel.latency_share), 5)
                hops = await _cluster_hops(cluster, settings, samples, jobs)
        figures["by_shards"][str(count)] = hops
    figures["load_average_at_end"] = round(os.getloadavg()[0], 2)
    return figures


def format_cluster_bench(figures: dict[str, Any]) -> str:
    rows = [
        f"postel on a Redis Cluster: {figures['jobs']} jobs, {figures['processes_per_stage']} "
        f"process(es) per stage, {figures['lanes']} lanes, {figures['cores']} cores",
        f"{'shards':>6}{'hops/s':>10}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'redis cpu µs/hop, all shards':>30}  by shard",
    ]
    for count, run in figures["by_shards"].items():
        rows.append(
            f"{count:>6}{run['hops_per_s']:>10}{run['hop_latency_p50_ms']:>9}"
            f"{run['hop_latency_p99_ms']:>9}"
            f"{run['redis_cpu_us_per_hop_all_shards']:>30}  {run['redis_cpu_us_per_hop_by_shard']}"
        )
    return "\n".join(rows)
