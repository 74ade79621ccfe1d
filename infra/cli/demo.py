"""`postel demo`: the whole mission in one job, followed live.

It registers the bundled sample graph (nano-graphrag's knowledge graph of CDC MMWR reports)
as `mmwr`, asks which authors collaborate most and on what topics, with desired type
`document`, prints the job's page on the dashboard (of the Redis the job runs on: the running
system's web server when it knows the job, else one of its own), then every hop as it
happens and what it means: the intent's nine fields, the task plan (or that the model's was
unusable and the default was used), each HDT round's plan, its GASL commands with statuses,
counts and first rows found, each decision, the document's continuations and the
validator's verdict; then how it ended in plain words (a failure
first says FAILED, its kind in words and the reason), the validated document — marked as
the model's words — or what was delivered before the failure, and beside it the evidence GASL
found in the graph: each task's last round, its commands' exact results and the source ids
(provenance) behind them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from postel.infra.cli.support import clip
from postel.infra.client.client import Client
from postel.infra.client.session import connected, run_job
from postel.infra.runtime.model import provider_of
from postel.infra.runtime.settings import Settings
from postel.infra.store.calls import read_calls
from postel.infra.store.events import HANDLED, Event
from postel.infra.store.graphs import GraphInfo, GraphNotFound, GraphRegistry
from postel.infra.store.jobs import JobRecord
from postel.infra.store.redis_server import port_is_open
from postel.infra.store.stores import GaslRound, GaslStateStore
from postel.infra.web.security import web_token
from postel.infra.web.server import WebError, WebServer
from postel.messages import JobOptions, JobRequest, TypeSpec
from postel.messages.gasl import FAILED_STATUSES
from postel.messages.intent import Intent, LinkedEntity
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.linking.names import link
from postel.services.llm.ask import AnswerError, reads_as
from postel.services.planner.render import dumps
from postel.services.planner.schema_grammar import schema_choice
from postel.services.step import parse_command_lines
from postel.services.urls import shown_url

QUESTION = "Which authors in these reports collaborate most, and on what topics?"
# The bundled 135M model is asked what it can answer: one walk from a person the question
# names (docs/OFFLINE_MODEL.md); a capable model gets the whole mission above.
LOCAL_QUESTION = "Who are Briana Moreland's co-authors?"
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
    registry = GraphRegistry(client.pool, client.keyspace, storage=client.settings.graph_storage())
    digest = hashlib.sha256(DEMO_GRAPH.read_bytes()).hexdigest()
    try:
        info = await registry.info(GRAPH_NAME)
        if info.sha256 == digest:
            return info
    except GraphNotFound:
        pass
    return await registry.add(GRAPH_NAME, DEMO_GRAPH)


async def linked_to(client: Client, question: str) -> list[LinkedEntity]:
    """What the question links to in the graph: the intent worker's linker on the same
    stored index."""
    aids = await GraphRegistry(client.pool, client.keyspace).aids(GRAPH_NAME)
    return link(question, aids.names)


async def schema_lines(client: Client, question: str, linked: list[LinkedEntity]) -> list[str]:
    """The linked entities and which of the schema the planner will offer: the same pure
    functions on the same stored index and card as the workers'."""
    aids = await GraphRegistry(client.pool, client.keyspace).aids(GRAPH_NAME)
    focus = schema_choice(aids.card, question, linked)
    lines = ["linked entities:"]
    lines += [
        f"  {e.mention!r} -> {e.id!r} ({e.entity_type or 'no type'}, {e.how}, {e.score:g})"
        for e in linked
    ] or ["  none: the graph holds nothing the question names"]
    relations = ", ".join(f"{n} ({s} -> {t})" for n, s, t in focus.relations) or "none named"
    lines += [
        f"schema choices: relations {relations}; walks {focus.walks}; "
        f"types to keep {', '.join(focus.filter_types) or 'none'}"
    ]
    lines += [
        f"chain {number} from the schema card: {'; '.join(chain)}"
        for number, chain in enumerate(focus.chains, start=1)
    ] or ["no chain from the schema card: the model writes the plan"]
    return lines


def model_line(settings: Settings) -> str:
    provider = provider_of(settings)
    if provider == "local":
        return "model: SmolLM2-135M-Instruct, bundled and offline (tiny: expect weak answers)"
    if provider == "scripted":
        return f"model: scripted replay of {settings.llm_cassette}"
    return f"model: {settings.llm_model} at {shown_url(settings.llm_base_url or '')}"


def progress_line(event: Event, elapsed: float, *, commands: bool = True) -> str:
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
    if not commands:
        return lines[0]
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
    "internal_error": "a step met a bug in postel",
    "cancelled": "the job was cancelled",
}
"""Each way a job fails, in words (messages.pipeline.FailureStatus)."""


def verdict_lines(record: JobRecord) -> list[str]:
    """How the job ended, plainly: a failure says so first, with its kind in words and the
    reason, never "completed"."""
    if record.status == "completed":
        if not (isinstance(record.result, dict) and "sections" in record.result):
            return [f"job {record.job_id} completed. The validated answer:"]
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


def groundless_line(rounds: list[GaslRound]) -> str | None:
    """A warning when rounds ran and not one of their commands succeeded: whatever the
    document says, it rests on nothing found in the graph."""
    records = [record for executed in rounds for record in executed.records]
    if not rounds or any(record.status not in FAILED_STATUSES for record in records):
        return None
    return (
        f"WARNING: not one GASL command of the {len(rounds)} round(s) succeeded: the document "
        "rests on nothing found in the graph."
    )


INTENT_LABELS: dict[str, str] = {
    "detected_language": "language",
    "normalized_request": "request, normalised",
    "intent": "intent",
    "context_items": "context items",
    "primary_goal": "primary goal",
    "data_type": "data type",
    "expected_formats": "expected formats",
    "quality_requirements": "quality requirements",
    "success_criteria": "success criteria",
    "linked_entities": "linked entities",
}
"""The intent's nine fields and the linked entities (messages.intent.Intent), as the demo
names them."""

_VALUE_CHARS = 160
FOUND_ROWS = 2


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return clip(text, _VALUE_CHARS)


def intent_lines(intent: Intent) -> list[str]:
    """The intent's nine fields, one a line."""
    data = intent.model_dump(mode="json", by_alias=False)
    return [
        f"{'':10}{label + ':':<22} {_shown(data[name])}" for name, label in INTENT_LABELS.items()
    ]


async def read_intent(client: Client, job_id: str) -> Intent | str:
    """The intent the model answered, read back from the job's recorded calls with the
    intent worker's own reader; a sentence saying why when it cannot be shown."""
    calls = [
        call
        for call in await read_calls(client.pool, client.keyspace, job_id)
        if call.stage == "intent"
    ]
    if not calls:
        return "the intent's model call was not recorded (POSTEL_RECORD_CALLS=false)"
    try:
        return reads_as(Intent)(calls[-1].response.text)
    except AnswerError as exc:
        return f"the intent answer cannot be read back: {exc}"


def found_lines(executed: GaslRound) -> list[str]:
    """One round as run: its plan's reason, then each command with its status and count,
    and under it the first rows it found or its error."""
    lines = [f"{'':10}plan {executed.plan.plan_id}: {executed.plan.why or '(no reason given)'}"]
    for record in executed.records:
        lines.append(f"{'':10}{record.status:<15} {record.count:>6}  {record.command}")
        if record.error:
            lines.append(f"{'':14}error: {_shown(record.error)}")
        elif record.rows:
            rows = ", ".join(_shown(dumps(row)) for row in record.rows[:FOUND_ROWS])
            more = f" (+{record.count - FOUND_ROWS} more)" if record.count > FOUND_ROWS else ""
            lines.append(f"{'':14}found: {rows}{more}")
    return lines


VERDICTS = {
    "accepted": "validation: the document was accepted",
    "rejected": "validation: the document was REJECTED",
    "repair": "validation: the document failed a check and goes back for repair",
    "rewrite": "validation: the document goes back to be written again",
}


class Story:
    """The job's events told as a person reads them: each hop's line, then what it means:
    the intent's fields, the task plan, each round's plan and findings, the decisions and
    the validator's verdict."""

    def __init__(
        self, client: Client, settings: Settings, echo: Echo, linked: list[LinkedEntity]
    ) -> None:
        self.client = client
        self.linked = linked  # the intent stage's, not the model's: found the same way
        self.rounds = GaslStateStore(client.pool, client.keyspace, settings.job_ttl_s)
        self.echo = echo
        self.started = time.monotonic()

    async def tell(self, event: Event) -> None:
        if event.status == "received":
            return
        meaning = await self.meaning(event) if event.status in HANDLED else []
        # a round's findings list its commands themselves
        commands = not (event.worker == "gasl" and meaning)
        self.echo(progress_line(event, time.monotonic() - self.started, commands=commands))
        for line in meaning:
            self.echo(line)

    async def meaning(self, event: Event) -> list[str]:
        if event.worker == "intent":
            intent = await read_intent(self.client, event.job_id)
            if isinstance(intent, str):
                return [f"{'':10}intent: {intent}"]
            intent = intent.model_copy(update={"linked_entities": self.linked})
            return [f"{'':10}the intent, as the model analysed it:", *intent_lines(intent)]
        if event.worker == "planner" and event.type == "intent.analyzed":
            return [f"{'':10}{event.rationale}"]
        if event.worker == "gasl":
            done = [r for r in await self.rounds.rounds(event.job_id) if r.round == event.round]
            return found_lines(done[-1]) if done else []
        if event.worker == "validator" and event.decision in VERDICTS:
            return [f"{'':10}{VERDICTS[event.decision]}"]
        return []


async def _serves_job(settings: Settings, port: int, job_id: str) -> bool:
    """Whether the web server on `port` reads the Redis this job is on (it knows the job)."""
    token = web_token(settings)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with httpx.AsyncClient(timeout=5) as http:
            answer = await http.get(f"http://127.0.0.1:{port}/api/jobs/{job_id}", headers=headers)
    except httpx.HTTPError:
        return False
    return answer.status_code == 200


OWN_DASHBOARD = (
    "this demo serves its own dashboard, which ends when the demo does "
    "(`postel up` serves one that stays)"
)


async def dashboard(
    settings: Settings, redis_url: str, job_id: str, stack: contextlib.AsyncExitStack
) -> tuple[str | None, str]:
    """Where to watch the job, and a note: the web server on POSTEL_WEB_PORT when it serves
    this job's Redis (that of `postel up`), else one started here on loopback for as long
    as the demo runs (on a free port when POSTEL_WEB_PORT is taken by another system's),
    which the note says ends with the demo (OWN_DASHBOARD); None when none can be started."""
    port = settings.web_port
    if port_is_open(port):
        if await _serves_job(settings, port, job_id):
            return f"http://127.0.0.1:{port}/", ""
        note = f"port {port} serves another system's dashboard, not this demo's; "
        port = 0
    else:
        note = ""
    try:
        server = await stack.enter_async_context(WebServer(settings, redis_url, "127.0.0.1", port))
    except WebError as exc:
        if port == 0:
            return None, f"no dashboard: {note}{exc}"
        return await dashboard(
            settings.model_copy(update={"web_port": 0}), redis_url, job_id, stack
        )
    return server.url, f"{note}{OWN_DASHBOARD}"


async def run_demo(
    settings: Settings,
    echo: Echo,
    *,
    max_rounds: int,
    max_tokens: int,
    timeout: float,
    mission: bool | None = None,
) -> DemoOutcome:
    """`mission`: ask QUESTION (a document) rather than LOCAL_QUESTION (a list of names);
    None: the mission unless the model is the bundled one."""
    echo(model_line(settings))
    async with connected(settings) as client, contextlib.AsyncExitStack() as stack:
        info = await register_sample_graph(client)
        echo(
            f"graph {info.name}: {info.nodes} nodes, {info.edges} edges "
            f"({info.format}, version {info.version})"
        )
        if mission is None:
            mission = provider_of(settings) != "local"
        question = QUESTION if mission else LOCAL_QUESTION
        echo(f"question: {question}")
        linked = await linked_to(client, question) if settings.schema_help else []
        if settings.schema_help:
            for line in await schema_lines(client, question, linked):
                echo(line)
        request = JobRequest(
            prompt=question,
            desired_type=TypeSpec(kind="document") if mission else TypeSpec.parse("list[str]"),
            graph=GRAPH_NAME,
            options=JobOptions(max_rounds=max_rounds, max_tokens=max_tokens),
        )
        story = Story(client, settings, echo, linked)

        async def show(event: Event) -> None:
            if event.status == "submitted":
                web, note = await dashboard(settings, client.url, event.job_id, stack)
                if note:
                    echo(note)
                if web is not None:
                    echo(f"watch it live: {web}jobs/{event.job_id}")
            await story.tell(event)

        record = await run_job(client, request, timeout=timeout, on_event=show)
        rounds = await GaslStateStore(client.pool, client.keyspace, settings.job_ttl_s).rounds(
            record.job_id
        )
        return DemoOutcome(record, rounds)
