"""Export a job, and replay it offline from its recorded model calls.

`export_job` gathers what a job was and did into one JSON document (`JobExport`, its JSON
Schema written by `postel schema`): the request, the record with the result, every event,
every recorded model call (infra/store/calls.py) and the same calls as a cassette the scripted
provider can play, the GASL rounds with their records, and the sha256 of each graph the job used.

`replay_job` runs the job again on a fresh embedded system, under the same job id (so every
message id is the same), with a model that answers from the recording
(services/llm/replay.py), and compares: the result byte for byte, the messages each stage
produced, and each model call's request. It reports the first divergence, named by stage: a
call the recording does not hold (with a diff of the prompts), or a stage that produced a
different message. Every stage's calls go to the recording, whatever model route the
settings give the stage. Strict, the first unrecorded call fails the replayed job, named with
the route it would have gone to; otherwise such a call goes to its stage's configured model.
The graphs must be given (`--graph NAME=FILE`; the bundled `mmwr` is found by itself) and
must be the version the job ran against: their sha256 is checked against the export's.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any, Literal

from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model, open_model, provider_of, route_key
from postel.infra.runtime.settings import ROUTE_FIELDS, WORKER_NAMES, Settings
from postel.infra.store.calls import RecordedCall, read_calls
from postel.infra.store.events import HANDLED, Event
from postel.infra.store.graphs import GraphRegistry, parse_graphml
from postel.infra.store.jobs import JobRecord
from postel.infra.store.redis_server import free_port
from postel.infra.store.stores import GaslRound, GaslStateStore
from postel.messages import ExecutionRecord, JobRequest
from postel.messages.errors import InvalidInput
from postel.services.gasl import GaslExecutor
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.gasl.model import LLMGaslModel
from postel.services.gasl.state import MemoryStateBackend, StateStore
from postel.services.llm import MeteredClient
from postel.services.llm.call_log import LoggedCall, current_call_log, logging_calls
from postel.services.llm.models import LLMRequest, LLMResponse
from postel.services.llm.replay import Divergence, ReplayClient
from postel.services.prompts import Capability
from postel.services.urls import shown_url
from pydantic import BaseModel, Field

EXPORT_FORMAT = "postel.job-export"


class ReplayInputError(InvalidInput):
    """An export or a graph that cannot be replayed (named in the message)."""


class JobExport(BaseModel):
    """One job, whole: what `postel export` writes and `postel replay` reads."""

    format: Literal["postel.job-export"] = EXPORT_FORMAT
    version: Literal[1] = 1
    job_id: str
    capability: Capability = Field(description="the prompt style the job's model was asked in")
    request: JobRequest
    record: JobRecord
    events: list[Event]
    calls: list[RecordedCall] = Field(description="every model call, in commit order")
    cassette: list[dict[str, Any]] = Field(
        description="the calls as a cassette for POSTEL_LLM_PROVIDER=scripted"
    )
    rounds: list[GaslRound] = Field(description="the HDT rounds' GASL plans and records")
    graphs: dict[str, str] = Field(description="graph name -> sha256 of the version used")


class ReplayReport(BaseModel):
    same: bool
    status: str
    recorded_status: str
    result_equal: bool
    divergence: str | None = None
    diff: str | None = None
    calls_served: int
    calls_forwarded: int
    divergences: list[Divergence]


def capability_of(settings: Settings) -> Capability:
    """The prompt style this process's model is asked in (infra/runtime/model.py decides the
    same)."""
    if settings.llm_capability is not None:
        return Capability(settings.llm_capability)
    local = settings.llm_provider == "local" or (
        settings.llm_provider is None and not settings.llm_base_url
    )
    return Capability.MINIMAL if local else Capability.STANDARD


def as_cassette(calls: list[RecordedCall]) -> list[dict[str, Any]]:
    return [
        {
            "match": call.request.last_user_message(),
            "response": call.response.text,
            "finish_reason": call.response.finish_reason,
            "verbatim": True,
            "usage": call.response.usage.model_dump(exclude={"estimated"}),
            "model": call.response.model,
        }
        for call in calls
    ]


async def export_job(client: Client, job_id: str, capability: Capability) -> JobExport:
    """The job as one document; `capability` is the prompt style recorded for it when its
    calls do not say (the exporting process's own)."""
    record = await client.status(job_id)
    if record.request is None:
        raise ReplayInputError(f"job {job_id} has no stored request to export")
    calls = await read_calls(client.pool, client.keyspace, job_id)
    graphs: dict[str, str] = {}
    if record.request.graph:
        info = await GraphRegistry(client.pool, client.keyspace).info(record.request.graph)
        graphs[info.name] = info.sha256
    asked_in = next((Capability(c.capability) for c in calls if c.capability), capability)
    return JobExport(
        job_id=job_id,
        capability=asked_in,
        request=record.request,
        record=record,
        events=await client.events.read(job_id),
        calls=calls,
        cassette=as_cassette(calls),
        rounds=await GaslStateStore(client.pool, client.keyspace, 0).rounds(job_id),
        graphs=graphs,
    )


def read_export(path: Path) -> JobExport:
    try:
        return JobExport.model_validate_json(path.read_bytes())
    except ValueError as exc:
        raise ReplayInputError(f"{path} is not a postel job export: {exc}") from exc


def _handled(events: list[Event]) -> list[tuple[str, str, str]]:
    return [(e.worker, e.type, e.message_id) for e in events if e.status in HANDLED]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


async def _add_graphs(client: Client, export: JobExport, files: dict[str, Path]) -> None:
    registry = GraphRegistry(client.pool, client.keyspace, storage=client.settings.graph_storage())
    for name, sha256 in export.graphs.items():
        path = files.get(name) or (DEMO_GRAPH if name == "mmwr" else None)
        if path is None:
            raise ReplayInputError(f"the job used graph {name!r}: give it with --graph {name}=FILE")
        info = await registry.add(name, path)
        if info.sha256 != sha256:
            raise ReplayInputError(
                f"graph {name!r} from {path} is not the version the job used "
                f"(sha256 {info.sha256[:12]}…, the job's {sha256[:12]}…)"
            )


def offline(settings: Settings) -> Settings:
    """`settings` with every worker kind's own model route removed, so that every stage of
    the replayed system calls the one model the replay gives it (the recording)."""
    cleared = dict.fromkeys(ROUTE_FIELDS)
    return settings.model_copy(
        update={name: settings.queue(name).model_copy(update=cleared) for name in WORKER_NAMES}
    )


def _routed(settings: Settings, stage: str) -> Settings:
    return settings.route(stage) if stage in WORKER_NAMES else settings


def route_of(settings: Settings, stage: str) -> str:
    """The route `stage`'s calls take under `settings`, without secrets: which settings set
    it, the provider, endpoint and model."""
    routed = _routed(settings, stage)
    where = f"POSTEL_{stage.upper()}__LLM_*" if routed is not settings else "POSTEL_LLM_*"
    provider = provider_of(routed)
    endpoint = f" at {shown_url(routed.llm_base_url)}" if routed.llm_base_url else ""
    return f"the {stage} route ({where}: {provider}{endpoint}, model {routed.llm_model})"


class _ConfiguredModels:
    """Each stage's configured model (its own route, or the global one), started at its
    first call: most replays never ask one."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.models: dict[str, Model] = {}

    async def complete(self, request: LLMRequest) -> LLMResponse:
        hop = current_call_log()
        routed = _routed(self.settings, hop.stage if hop else "")
        key = route_key(routed)
        if key not in self.models:
            self.models[key] = await open_model(routed)
        return await self.models[key].client.complete(request)

    async def aclose(self) -> None:
        for model in self.models.values():
            await model.aclose()


async def replay_job(
    export: JobExport,
    settings: Settings,
    *,
    graphs: dict[str, Path] | None = None,
    strict: bool = False,
    timeout_s: float = 300.0,
) -> ReplayReport:
    """Run the exported job again on a fresh embedded system and compare. Every stage's
    calls go to the recording, whatever route `settings` give it; a call the recording
    cannot answer fails the job when `strict` (naming the route it would have taken), else
    goes to the model `settings` configure for its stage."""
    recorded = [
        LoggedCall(c.stage, c.message_id, c.ordinal, c.request, c.response) for c in export.calls
    ]
    fallback = None if strict else _ConfiguredModels(settings)
    model = ReplayClient(
        recorded, fallback, strict=strict, route_of=lambda stage: route_of(settings, stage)
    )
    replaying = offline(settings)
    with tempfile.TemporaryDirectory(prefix="postel-replay-") as state_dir:
        system = LocalSystem(
            replaying,
            port=free_port(),
            state_dir=Path(state_dir),
            resources={RESOURCE: Model(model, export.capability)},  # type: ignore[arg-type]
        )
        try:
            async with system, Client(system.url, replaying) as client:
                await _add_graphs(client, export, graphs or {})
                await client.submit_request(export.request, job_id=export.job_id)
                record = await client.wait(export.job_id, timeout=timeout_s)
                events = await client.events.read(export.job_id)
        finally:
            await model.aclose()
    return _compare(export, record, events, model)


def _compare(
    export: JobExport, record: JobRecord, events: list[Event], model: ReplayClient
) -> ReplayReport:
    result_equal = (
        _canonical(record.result) == _canonical(export.record.result)
        and record.status == export.record.status
        and record.failure == export.record.failure
    )
    divergence: str | None = None
    diff: str | None = None
    if model.divergences:
        first = model.divergences[0]
        divergence, diff = first.describe(), first.diff
    else:
        before, after = _handled(export.events), _handled(events)
        for index, (was, now) in enumerate(zip(before, after, strict=False)):
            if was != now:
                divergence = (
                    f"{was[0]} handled {was[2]} ({was[1]}) in the recording; the replay's "
                    f"hop {index + 1} was {now[0]} handling {now[2]} ({now[1]})"
                )
                break
        else:
            if len(before) != len(after):
                divergence = f"the recording has {len(before)} hops, the replay {len(after)}"
        if divergence is None and not result_equal:
            divergence = "the last stage produced a different result"
    return ReplayReport(
        same=result_equal and divergence is None,
        status=record.failure or record.status,
        recorded_status=export.record.failure or export.record.status,
        result_equal=result_equal,
        divergence=divergence,
        diff=diff,
        calls_served=model.served,
        calls_forwarded=model.forwarded,
        divergences=model.divergences,
    )


class RoundCheck(BaseModel):
    """One HDT round's plan run again: whether its records are the recorded ones."""

    task_index: int
    round: int
    same: bool
    difference: str | None = None


def _comparable(record: ExecutionRecord) -> dict[str, Any]:
    """A record without its timings, which no two runs share."""
    return record.model_dump(mode="json", exclude={"duration_ms"})


async def replay_gasl_rounds(
    export: JobExport, graphs: dict[str, Path] | None = None
) -> list[RoundCheck]:
    """Run each recorded round's plan again, in order, against the same graph version, each
    task's state carried from round to round as the gasl worker carries it, PROCESS/ANALYZE
    answered from the recording; compare every command's record with the recorded one."""
    if not export.rounds:
        return []
    name = export.request.graph
    assert name is not None, "a job with GASL rounds names its graph"
    path = (graphs or {}).get(name) or (DEMO_GRAPH if name == "mmwr" else None)
    if path is None:
        raise ReplayInputError(f"the job used graph {name!r}: give it with --graph {name}=FILE")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != export.graphs.get(name):
        raise ReplayInputError(f"graph {name!r} from {path} is not the version the job used")
    adapter = NetworkXAdapter.from_graph(parse_graphml(data).graph)
    recorded = [
        LoggedCall(c.stage, c.message_id, c.ordinal, c.request, c.response) for c in export.calls
    ]
    model = LLMGaslModel(MeteredClient(ReplayClient(recorded)), export.capability)
    hops = [e.message_id for e in export.events if e.worker == "gasl" and e.status == "completed"]
    # the state each (task, round) left: a round starts from its base round's, as in the worker
    states: dict[tuple[int, int], dict[str, Any] | None] = {}
    checks: list[RoundCheck] = []
    for hop, recorded_round in zip(hops, export.rounds, strict=False):
        task, base = recorded_round.task_index, recorded_round.base_round
        start = states.get((task, recorded_round.round - 1 if base is None else base))
        backend = MemoryStateBackend()
        if start is not None:
            backend.save(start)
        store = StateStore(backend, query=export.request.prompt)
        executor = GaslExecutor(adapter, state=store, model=model)
        with logging_calls("gasl", hop):
            run = await executor.execute_plan(recorded_round.plan)
        states[(task, recorded_round.round)] = backend.load()
        difference = None
        for was, now in zip(recorded_round.records, run.records, strict=False):
            if _comparable(was) != _comparable(now):
                difference = f"{was.command!r}: recorded {was.status} {was.count}, now "
                difference += f"{now.status} {now.count}"
                break
        if difference is None and len(recorded_round.records) != len(run.records):
            difference = f"{len(recorded_round.records)} records recorded, {len(run.records)} now"
        checks.append(
            RoundCheck(
                task_index=recorded_round.task_index,
                round=recorded_round.round,
                same=difference is None,
                difference=difference,
            )
        )
    return checks
