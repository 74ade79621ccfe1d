"""Replay (infra/client/replay.py): every model call recorded with its job, the job exported to one
file and re-run offline to the same result, with zero calls to any model endpoint; a changed
prompt is reported at the stage that asked it, with the diff."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from postel.infra.client.client import Client
from postel.infra.client.replay import JobExport, export_job, replay_gasl_rounds, replay_job
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import Settings
from postel.infra.store.calls import read_calls
from postel.infra.store.graphs import GraphRegistry
from postel.infra.store.keys import Keyspace
from postel.messages import JobOptions
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.prompts import Capability, templates
from postel_bench.data.documents import sample_document
from pydantic import SecretStr

from postel.testing.fake_model import FakeModel
from postel.testing.oracle import Oracle
from postel.testing.stage_model import StageModel, answering, one_task

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

CASSETTES = Path(__file__).parent.parent / "pipeline" / "cassettes"
INVOICE = "ACME Tools — Invoice 2026-118\n2 x hammer $40.00\nTOTAL DUE: $165.50"
GRAPH_QUESTION = "How many people are in the graph?"

# (cassette, prompt, desired type, graph, options, arguments): the pipeline tests' jobs
JOBS: dict[str, tuple[str, str, str, str | None, dict[str, Any], dict[str, Any]]] = {
    "reason": ("invoice_total.json", "get the total price", "float", None, {}, {"text": INVOICE}),
    "repairs": (
        "invoice_total_with_repairs.json",
        "get the total price",
        "float",
        None,
        {},
        {"text": INVOICE},
    ),
    "parse_error": ("graph_fix_parse_error.json", GRAPH_QUESTION, "int", "mmwr", {}, {}),
    "pivot": ("graph_pivot_after_empty.json", GRAPH_QUESTION, "int", "mmwr", {}, {}),
    "round_cap": (
        "graph_round_cap.json",
        GRAPH_QUESTION,
        "document",
        "mmwr",
        {"max_rounds": 2},
        {},
    ),
}


LOOP_DOCUMENT = sample_document(4)
LOOP_INTENT = {
    "detectedLanguage": "en",
    "normalizedRequest": "Write the report.",
    "intent": "Write the report.",
    "primaryGoal": "the report",
    "dataType": "documents",
}
LOOP_TASKS = one_task("Write the report")


def loop_model() -> Model:
    """Intent and task plan, then a document long enough for several continuations."""
    oracle = Oracle(LOOP_DOCUMENT, 300)

    def document(request: LLMRequest) -> str:
        return oracle.full_text(request.prompt_text())

    respond = StageModel(LOOP_INTENT, LOOP_TASKS, document)
    return Model(ScriptedClient(responder=respond), Capability.STANDARD)


@pytest.fixture
def counting_endpoint() -> Iterator[FakeModel]:
    """The model a replay falls back to: it must never be asked."""
    with FakeModel(lambda request: "not from the recording") as fake:
        yield fake


async def run_and_export(url: str, settings: Settings, job: str) -> JobExport:
    if job == "ai_loop":
        cassette, prompt, type_, graph = "", "Write the report.", "document", None
        options, arguments = {"max_tokens": 300}, {}
        model = loop_model()
    else:
        cassette, prompt, type_, graph, options, arguments = JOBS[job]
        model = Model(ScriptedClient.from_cassette(CASSETTES / cassette), Capability.STANDARD)
    async with (
        LocalSystem(settings, redis_url=url, resources={RESOURCE: model}),
        Client(url, settings) as client,
    ):
        if graph:
            await GraphRegistry(client.pool, client.keyspace).add(graph, DEMO_GRAPH)
        job_id = await client.submit(
            prompt, type=type_, graph=graph, options=JobOptions(**options), **arguments
        )
        await client.wait(job_id, timeout=60)
        return await export_job(client, job_id, Capability.STANDARD)


@pytest.fixture
async def fresh_redis(embedded_redis_url: str) -> AsyncIterator[str]:
    async with Client(embedded_redis_url) as client:
        await client.pool.flushdb()
    yield embedded_redis_url


@pytest.mark.parametrize("job", [*sorted(JOBS), "ai_loop"])
async def test_a_job_replays_to_the_same_result_without_any_model_call(
    job: str, fresh_redis: str, settings: Settings, counting_endpoint: FakeModel
) -> None:
    export = await run_and_export(fresh_redis, settings, job)
    assert export.calls and export.record.finished
    assert len(export.calls) == export.record.llm_calls, "every call recorded, once"
    replayed = JobExport.model_validate_json(export.model_dump_json())  # through the file form
    fallback = settings.model_copy(update={"llm_base_url": counting_endpoint.base_url})
    report = await replay_job(replayed, fallback)
    assert report.same, report
    assert report.calls_served == len(export.calls) and report.calls_forwarded == 0
    assert counting_endpoint.stats().total == 0
    if job == "ai_loop":
        iterations = [e for e in export.events if e.status == "continued"]
        assert len(iterations) >= 2, "the document took several continuations"
    rounds = await replay_gasl_rounds(replayed)
    assert len(rounds) == len(export.rounds) and all(check.same for check in rounds), rounds
    if export.rounds:
        assert export.graphs == {"mmwr": hashlib.sha256(DEMO_GRAPH.read_bytes()).hexdigest()}
        tampered = replayed.model_copy(deep=True)
        tampered.rounds[-1].records[-1].count += 1
        checks = await replay_gasl_rounds(tampered)
        assert not checks[-1].same and "recorded" in (checks[-1].difference or "")


def change_the_answer_prompt(monkeypatch: pytest.MonkeyPatch, added: str) -> None:
    """The generator's value prompt, changed on purpose (its system message grows)."""
    original = templates.TEMPLATES.get("generate_value")
    assert original.system is not None
    changed = original.model_copy(update={"system": original.system + added})
    monkeypatch.setitem(templates.TEMPLATES._templates, "generate_value", changed)


async def test_a_changed_prompt_is_reported_at_its_stage_with_the_diff(
    fresh_redis: str,
    settings: Settings,
    counting_endpoint: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    export = await run_and_export(fresh_redis, settings, "reason")
    change_the_answer_prompt(monkeypatch, "\nAlways answer in euros.")
    report = await replay_job(export, settings, strict=True)
    assert not report.same
    assert report.divergence is not None and report.divergence.startswith("generator")
    assert report.diff is not None and "+Always answer in euros." in report.diff
    assert report.status == "llm_error", "strict: the first unrecorded call fails the job"
    assert counting_endpoint.stats().total == 0


def test_postel_export_and_replay_commands(
    tmp_path: Path,
    embedded_redis_url: str,
    settings: Settings,
    in_process: Callable[..., Result],
) -> None:
    export_and_replay(embedded_redis_url, tmp_path, settings, in_process)


def test_a_job_run_on_a_cluster_exports_and_replays_as_on_one_redis(
    tmp_path: Path,
    cluster_url: str,
    settings: Settings,
    in_process: Callable[..., Result],
) -> None:
    export_and_replay(cluster_url, tmp_path, settings, in_process)


def export_and_replay(
    url: str, tmp_path: Path, settings: Settings, in_process: Callable[..., Result]
) -> None:
    """A job run on `url`, exported and shown by the CLI, then replayed (on a scratch Redis)
    to the same result, and to a divergence once a recorded prompt is changed."""
    export = asyncio.run(run_and_export(url, settings, "reason"))
    env = {"POSTEL_REDIS_URL": url}
    out = tmp_path / "job.json"
    done = in_process("export", export.job_id, "-o", str(out), env=env)
    assert done.exit_code == 0, done.stderr
    written = json.loads(out.read_text())
    assert written["format"] == "postel.job-export" and len(written["calls"]) == 3
    assert "api_key" not in out.read_text()
    shown = in_process("calls", export.job_id, env=env)
    assert shown.exit_code == 0 and "intent" in shown.stdout and "165.50" in shown.stdout
    replayed = in_process("replay", str(out), "--strict")
    assert replayed.exit_code == 0, replayed.stdout + replayed.stderr
    assert "same result" in replayed.stdout
    written["calls"][-1]["request"]["messages"][-1]["content"] += " (changed)"
    out.write_text(json.dumps(written))
    diverged = in_process("replay", str(out), "--strict")
    assert diverged.exit_code == 1
    assert "generator" in diverged.stdout and "(changed)" in diverged.stdout


async def test_without_strict_a_changed_prompt_goes_to_the_configured_model(
    fresh_redis: str,
    settings: Settings,
    counting_endpoint: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    export = await run_and_export(fresh_redis, settings, "reason")
    change_the_answer_prompt(monkeypatch, " Be brief.")
    configured = settings.model_copy(update={"llm_base_url": counting_endpoint.base_url})
    report = await replay_job(export, configured)
    # the changed call is asked for real; its answer differs, so the validator asks for
    # repairs the recording never saw, which go there too
    assert report.calls_forwarded >= 1
    assert counting_endpoint.stats().total == report.calls_forwarded
    assert report.divergences[0].kind == "changed"
    assert not report.same and report.divergence and report.divergence.startswith("generator")


reason_responder = StageModel(
    {**LOOP_INTENT, "normalizedRequest": "the total", "dataType": "numbers"},
    one_task("total"),
    answering("$165.50"),
)


API_KEY = "sk-never-recorded-4242"


def start_intent_worker(url: str, model_url: str) -> subprocess.Popen[bytes]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env = {**base, "POSTEL_REDIS_URL": url, "POSTEL_LLM_BASE_URL": model_url}
    env["POSTEL_LLM_API_KEY"] = API_KEY
    env["POSTEL_LOG_LEVEL"] = "WARNING"
    return subprocess.Popen([sys.executable, "-m", "postel", "worker", "intent"], env=env)


async def test_a_call_cut_by_sigkill_and_made_again_is_recorded_once(
    fresh_redis: str, settings: Settings
) -> None:
    with FakeModel(reason_responder) as fake:
        fake.set_faults(mode="hang")
        served = settings.model_copy(
            update={"llm_base_url": fake.base_url, "llm_api_key": SecretStr(API_KEY)}
        )
        others = [load_worker(name) for name in ("planner", "gasl", "generator", "validator")]
        doomed = start_intent_worker(fresh_redis, fake.base_url)
        replacement = None
        try:
            async with (
                LocalSystem(served, redis_url=fresh_redis, specs=others),
                Client(fresh_redis, served) as client,
            ):
                job_id = await client.submit("get the total price", type="float")
                async with asyncio.timeout(30):
                    while fake.stats().in_flight == 0:
                        await asyncio.sleep(0.05)
                doomed.send_signal(signal.SIGKILL)
                doomed.wait(10)
                fake.set_faults(mode="ok")
                replacement = start_intent_worker(fresh_redis, fake.base_url)
                assert await client.result(job_id, timeout=60) == 165.5
                calls = await read_calls(client.pool, client.keyspace, job_id)
                raw = await client.pool.lrange(KEYS.job_calls(job_id), 0, -1)
        finally:
            for process in (doomed, replacement):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait(10)
        asked = fake.stats().by_fault
    assert asked.get("hang") == 1, "the killed worker's call was cut"
    assert [c.stage for c in calls] == ["intent", "planner", "generator"]
    assert [c.ordinal for c in calls] == [0, 0, 0]
    assert not any(API_KEY.encode() in entry for entry in raw), "the API key is never recorded"


def test_a_call_over_the_size_cap_is_recorded_cut_and_marked() -> None:
    from postel.infra.store.calls import RecordedCall
    from postel.messages.limits import MAX_RECORDED_CALL_BYTES
    from postel.services.llm import ChatMessage, LLMResponse, Usage
    from postel.services.llm.call_log import LoggedCall

    def call(prompt: str, answer: str) -> LoggedCall:
        request = LLMRequest(messages=[ChatMessage(role="user", content=prompt)])
        usage = Usage(prompt_tokens=1, completion_tokens=1)
        response = LLMResponse(
            text=answer, finish_reason="stop", usage=usage, model="m", latency_ms=1.0
        )
        return LoggedCall("intent", "job:submitted", 0, request, response)

    small = RecordedCall.of(call("é" * 1000, "ok"))
    assert not small.truncated and small.request.messages[0].content == "é" * 1000
    big = RecordedCall.of(call("é" * MAX_RECORDED_CALL_BYTES, "😀" * MAX_RECORDED_CALL_BYTES))
    assert big.truncated
    assert len(big.request.messages[0].content.encode()) <= MAX_RECORDED_CALL_BYTES
    assert len(big.response.text.encode()) <= MAX_RECORDED_CALL_BYTES
    assert big.response.text == "😀" * (MAX_RECORDED_CALL_BYTES // 4), "cut between characters"


async def test_recording_turned_off_records_nothing(fresh_redis: str, settings: Settings) -> None:
    unrecorded = settings.model_copy(update={"record_calls": False})
    export = await run_and_export(fresh_redis, unrecorded, "reason")
    assert export.record.status == "completed" and export.record.llm_calls == 3
    assert export.calls == []


def routed_to(settings: Settings, url: str, *stages: str) -> Settings:
    """`settings` with each of `stages` given its own route to `url` (with a key)."""
    return settings.model_copy(
        update={
            stage: settings.queue(stage).model_copy(
                update={"llm_base_url": url, "llm_api_key": SecretStr(API_KEY)}
            )
            for stage in stages
        }
    )


async def test_a_replay_replaces_every_route_with_the_recording(
    fresh_redis: str, settings: Settings, counting_endpoint: FakeModel
) -> None:
    export = await run_and_export(fresh_redis, settings, "reason")
    live = counting_endpoint.base_url
    routed = routed_to(settings, live, "intent", "planner", "generator")
    routed = routed.model_copy(update={"llm_base_url": live})
    for strict in (False, True):
        report = await replay_job(export, routed, strict=strict)
        assert report.same, report
        assert report.calls_served == len(export.calls) and report.calls_forwarded == 0
    assert counting_endpoint.stats().total == 0, "no route was called, the recording served all"


async def test_strict_fails_naming_the_route_a_call_would_have_taken(
    fresh_redis: str,
    settings: Settings,
    counting_endpoint: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    export = await run_and_export(fresh_redis, settings, "reason")
    change_the_answer_prompt(monkeypatch, " Be brief.")
    secret_url = f"http://user:pw-4242@127.0.0.1:{counting_endpoint.port}/v1?api-key=k-4242"
    report = await replay_job(export, routed_to(settings, secret_url, "generator"), strict=True)
    assert not report.same and report.status == "llm_error"
    assert report.divergence is not None
    route = f"the generator route (POSTEL_GENERATOR__LLM_*: openai at {counting_endpoint.base_url}"
    assert route in report.divergence, report.divergence
    assert "4242" not in report.model_dump_json(), "the route is named without its secrets"
    assert counting_endpoint.stats().total == 0


def test_postel_replay_strict_with_stage_routes_calls_nothing(
    tmp_path: Path,
    embedded_redis_url: str,
    settings: Settings,
    counting_endpoint: FakeModel,
    in_process: Callable[..., Result],
) -> None:
    export = asyncio.run(run_and_export(embedded_redis_url, settings, "reason"))
    out = tmp_path / "job.json"
    out.write_text(export.model_dump_json())
    env: dict[str, str] = {}
    for stage in ("INTENT", "PLANNER", "GENERATOR"):
        env[f"POSTEL_{stage}__LLM_BASE_URL"] = counting_endpoint.base_url
        env[f"POSTEL_{stage}__LLM_API_KEY"] = API_KEY
    replayed = in_process("replay", str(out), "--strict", env=env)
    assert replayed.exit_code == 0, replayed.stdout + replayed.stderr
    assert "same result" in replayed.stdout and "3 model calls served" in replayed.stdout
    written = json.loads(out.read_text())
    del written["calls"][0]  # the intent call, unrecorded now
    out.write_text(json.dumps(written))
    diverged = in_process("replay", str(out), "--strict", env=env)
    assert diverged.exit_code == 1, diverged.stdout + diverged.stderr
    assert "the intent route (POSTEL_INTENT__LLM_*: openai at" in diverged.stdout
    assert API_KEY not in diverged.stdout + diverged.stderr
    assert counting_endpoint.stats().total == 0
