"""`postel demo`: the whole mission in one job, followed live.

It registers the bundled sample graph (nano-graphrag's knowledge graph of CDC MMWR reports)
as `mmwr`, asks which authors collaborate most and on what topics, with desired type
`document`, prints the job's page on the dashboard, then every hop as it happens (stage,
HDT round, continuation iteration, tokens, each HDT round's decision and the GASL commands
it ran with their statuses and result counts), then how it ended in plain words (a failure
first says FAILED, its kind in words and the reason), the validated document — marked as
the model's words — or what was delivered before the failure, and beside it the evidence GASL
found in the graph: each task's last round, its commands' exact results and the source ids
(provenance) behind them.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from postel.infra.client import Client
from postel.infra.events import Event
from postel.infra.graphs import GraphInfo, GraphNotFound, GraphRegistry
from postel.infra.jobs import JobRecord
from postel.infra.model import provider_of
from postel.infra.redis_server import port_is_open
from postel.infra.session import connected, run_job
from postel.infra.settings import Settings
from postel.infra.stores import GaslRound, GaslStateStore
from postel.infra.web.server import WebError, WebServer
from postel.messages import JobOptions, JobRequest, TypeSpec
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.planner.render import dumps
from postel.services.step import parse_command_lines

QUESTION = "Which authors in these reports collaborate most, and on what topics?"
GRAPH_NAME = "mmwr"

Echo = Callable[[str], None]

ROWS_SHOWN = 5
SOURCES_SHOWN = 8


@dataclass
class DemoOutcome:
    record: JobRecord
    rounds: list[GaslRound]


async def register_sample_graph(client: Client) -> GraphInfo:
    """The bundled graph under `mmwr`; re-registered only if the stored copy differs."""
    registry = GraphRegistry(client.pool)
    digest = hashlib.sha256(DEMO_GRAPH.read_bytes()).hexdigest()
    try:
        info = await registry.info(GRAPH_NAME)
        if info.sha256 == digest:
            return info
    except GraphNotFound:
        pass
    return await registry.add(GRAPH_NAME, DEMO_GRAPH)


def model_line(settings: Settings) -> str:
    provider = provider_of(settings)
    if provider == "local":
        return "model: SmolLM2-135M-Instruct, bundled and offline (tiny: expect weak answers)"
    if provider == "scripted":
        return f"model: scripted replay of {settings.llm_cassette}"
    return f"model: {settings.llm_model} at {settings.llm_base_url}"


def progress_line(event: Event, elapsed: float) -> str:
    where = {
        "planner": f" round {event.round}" if event.type == "gasl.plan_executed" else "",
        "gasl": f" round {event.round}",
        "generator": f" iteration {event.iteration}" if event.iteration else "",
    }.get(event.worker, "")
    parts = [f"[{elapsed:6.1f}s] {event.worker:<9} {event.status:<13} {event.type}{where}"]
    if event.llm_calls:
        parts.append(
            f"llm {event.llm_calls}x, {event.prompt_tokens}+{event.completion_tokens} tokens"
        )
    if event.finish_reason:
        parts.append(f"finish {event.finish_reason}, {event.sections} sections so far")
    if event.decision:
        parts.append(f"{event.decision}: {event.rationale}" if event.rationale else event.decision)
    if event.error:
        parts.append(f"error: {event.error[:160]}")
    lines = [" | ".join(parts)]
    lines.extend(
        f"{'':10}{status:<15} {count:>6}  {command}"
        for status, count, command in parse_command_lines(event.commands)
    )
    return "\n".join(lines)


FAILURES: dict[str, str] = {
    "invalid_request": "the request cannot be served as it stands",
    "intent_failed": "the request could not be analysed",
    "plan_failed": "the work could not be planned",
    "llm_error": "the model could not be reached or answered with an error",
    "loop_detected": "the model repeated itself while writing",
    "iteration_cap": "the document was still unfinished at the iteration cap",
    "validation_failed": "the output did not pass validation, repairs included",
    "deadline_exceeded": "the job ran past its deadline",
    "hop_timeout": "a step ran past its time limit",
    "out_of_tries": "a step failed on every try",
    "cancelled": "the job was cancelled",
}
"""Each way a job fails, in words (messages.pipeline.FailureStatus)."""


def verdict_lines(record: JobRecord) -> list[str]:
    """How the job ended, plainly: a failure says so first, with its kind in words and the
    reason, never "completed"."""
    if record.status == "completed":
        return [f"job {record.job_id} completed. The validated document, in the model's words:"]
    if record.status != "failed":
        return [f"job {record.job_id} did not finish: it is {record.status} at {record.stage}"]
    failure = record.failure or "failed"
    words = FAILURES.get(failure, failure)
    return [
        f"job {record.job_id} FAILED: {words} ({failure}).",
        f"reason: {record.error or 'none given'}",
        "No validated document was produced.",
    ]


def evidence_lines(rounds: list[GaslRound]) -> list[str]:
    """What GASL found, exactly: each task's last round, every command with its status and
    result count, the first rows and the source ids behind them."""
    last: dict[int, GaslRound] = {}
    for executed in rounds:
        last[executed.task_index] = executed
    lines: list[str] = []
    for executed in last.values():
        lines.append(f"task {executed.task_index}, round {executed.round} ({executed.plan.why})")
        for record in executed.records:
            lines.append(f"  {record.status:<15} {record.count:>6}  {record.command}")
            lines.extend(f"      {dumps(row)}" for row in record.rows[:ROWS_SHOWN])
            if record.provenance:
                shown = ", ".join(record.provenance[:SOURCES_SHOWN])
                more = len(record.provenance) - SOURCES_SHOWN
                lines.append(f"      sources: {shown}" + (f" (+{more} more)" if more > 0 else ""))
            if record.error:
                lines.append(f"      error: {record.error}")
    return lines


@contextlib.asynccontextmanager
async def dashboard(settings: Settings, redis_url: str) -> AsyncIterator[str]:
    """Where to watch the job: the web server of `postel up` (or `postel web`) listening on
    POSTEL_WEB_PORT, or one started on loopback for as long as the demo runs."""
    if port_is_open(settings.web_port):
        yield f"http://127.0.0.1:{settings.web_port}/"
        return
    try:
        server = WebServer(settings, redis_url, "127.0.0.1", settings.web_port)
        await server.start()
    except WebError:
        server = WebServer(settings, redis_url, "127.0.0.1", 0)
        await server.start()
    try:
        yield server.url
    finally:
        await server.stop()


async def run_demo(
    settings: Settings, echo: Echo, *, max_rounds: int, max_tokens: int, timeout: float
) -> DemoOutcome:
    echo(model_line(settings))
    async with connected(settings) as client, dashboard(settings, client.url) as web:
        info = await register_sample_graph(client)
        echo(
            f"graph {info.name}: {info.nodes} nodes, {info.edges} edges "
            f"({info.format}, version {info.version})"
        )
        echo(f"question: {QUESTION}")
        request = JobRequest(
            prompt=QUESTION,
            desired_type=TypeSpec(kind="document"),
            graph=GRAPH_NAME,
            options=JobOptions(max_rounds=max_rounds, max_tokens=max_tokens),
        )
        started = time.monotonic()

        def show(event: Event) -> None:
            if event.status == "submitted":
                echo(f"watch it live: {web}jobs/{event.job_id}")
            if event.status != "received":
                echo(progress_line(event, time.monotonic() - started))

        record = await run_job(client, request, timeout=timeout, on_event=show)
        rounds = await GaslStateStore(client.pool, settings.job_ttl_s).rounds(record.job_id)
        return DemoOutcome(record, rounds)
