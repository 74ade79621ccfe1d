"""The AI loop as messages on the real bus: continuation messages until the JSON parses,
any generator process may take the next iteration, and runaway models end in their
documented statuses."""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime.actor import Actor, Runtime
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import Settings
from postel.infra.runtime.submit import start_job
from postel.infra.store.events import run_commands
from postel.infra.store.keys import Keyspace
from postel.infra.store.wire import connect_arq
from postel.messages import (
    GenerationContinued,
    GenerationRequested,
    Intent,
    JobOptions,
    JobProgress,
    JobRequest,
    SectionsDocument,
    TypeSpec,
)
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.llm.tokens import count_tokens
from postel.services.prompts import Capability
from postel_bench.data.documents import repetitive_document, sample_document
from postel_bench.loop_bus import run_loop_bus_bench
from support import script, with_support

from postel.testing.oracle import Oracle, serialise

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

DOCUMENT = sample_document(4)
MAX_TOKENS = 300


def generation_request(
    job_id: str, max_tokens: int = MAX_TOKENS, cap: int = 50
) -> GenerationRequested:
    request = JobRequest(
        prompt="Write the report.",
        desired_type=TypeSpec(kind="document"),
        options=JobOptions(max_tokens=max_tokens, max_iterations=cap),
    )
    intent = Intent(
        detected_language="en",
        normalized_request=request.prompt,
        intent=request.prompt,
        primary_goal="the report",
        data_type="documents",
    )
    return GenerationRequested(
        job_id=job_id,
        message_id=f"{job_id}:gen:t0",
        request=request,
        progress=JobProgress(intent=intent),
        task_id="t0",
        instructions=request.prompt,
    )


def oracle_model(
    document: dict[str, Any],
    calls: list[str] | None = None,
    requests: list[LLMRequest] | None = None,
    max_tokens: int = MAX_TOKENS,
) -> Model:
    oracle = Oracle(document, max_tokens)

    def respond(request: LLMRequest) -> str:
        if calls is not None:
            calls.append(request.prompt_text())
        if requests is not None:
            requests.append(request)
        return oracle.full_text(request.prompt_text())

    return Model(ScriptedClient(responder=respond), Capability.STANDARD)


def loop_system(redis_url: str, settings: Settings, model: Model) -> LocalSystem:
    specs = [load_worker("generator"), load_worker("validator")]
    return LocalSystem(settings, redis_url=redis_url, specs=specs, resources={RESOURCE: model})


def same_document(left: Any, right: Any) -> bool:
    return SectionsDocument.model_validate(left) == SectionsDocument.model_validate(right)


def minimum_calls(document: dict[str, Any], max_tokens: int) -> int:
    return math.ceil(count_tokens(serialise(document)) / max_tokens)


async def test_a_cut_off_document_continues_until_it_parses(
    redis_url: str, settings: Settings
) -> None:
    requests: list[LLMRequest] = []
    async with (
        loop_system(redis_url, settings, oracle_model(DOCUMENT, requests=requests)),
        Client(redis_url, settings) as client,
    ):
        first = generation_request("loop1")
        await start_job(client.pool, client.events, client.jobs, first, source="test")
        result = await client.result("loop1", timeout=60)
        events = [e for e in await client.events.read("loop1") if e.worker == "generator"]
    assert same_document(result, DOCUMENT)
    done = [e for e in events if e.status in ("continued", "completed")]
    assert len(done) >= 3, "the document needed continuations"
    assert [e.status for e in done] == ["continued"] * (len(done) - 1) + ["completed"]
    assert [e.iteration for e in done] == list(range(1, len(done) + 1))
    assert [e.type for e in done][1:] == ["generation.continued"] * (len(done) - 1)
    assert all(e.finish_reason == "length" for e in done[:-1]) and done[-1].finish_reason == "stop"
    assert all(e.prompt_tokens > 0 and e.completion_tokens > 0 and e.llm_calls == 1 for e in done)
    assert [e.sections for e in done] == sorted(e.sections for e in done)
    assert done[-1].elements == sum(len(s["elements"]) for s in DOCUMENT["sections"])
    assert len(done) == minimum_calls(DOCUMENT, MAX_TOKENS)
    # A continuation is the rest of the JSON text: only the first call has the schema.
    assert requests[0].json_schema is not None
    assert all(request.json_schema is None for request in requests[1:])


def numbered(template: str, count: int) -> str:
    """Long text whose every stretch is told apart by its running number."""
    return "".join(template.format(n) for n in range(count))


LONG = {
    "sections": [
        {
            "id": "h",
            "content_type": "heading",
            "elements": [{"level": 1, "text": numbered("Über {} ", 40)}],
        },
        {
            "id": "p",
            "content_type": "paragraph",
            "elements": [{"text": numbered('say "中文" {} 😀\n', 40)}],
        },
        {
            "id": "l",
            "content_type": "bullet_list",
            "elements": [{"items": ["a", numbered("ß{} ", 90)]}],
        },
        {
            "id": "t",
            "content_type": "table",
            "elements": [
                {"headers": ["k", "v"], "rows": [["x", numbered("\\ cell {} ", 50)], ["y", 2.5]]}
            ],
        },
        {
            "id": "c",
            "content_type": "code_block",
            "elements": [
                {"language": "py", "code": "print('" + numbered("🇩🇪{}", 60) + "')\nx = 1\n"}
            ],
        },
    ]
}


async def test_elements_longer_than_max_tokens_are_continued_inside_them(
    redis_url: str, settings: Settings
) -> None:
    max_tokens = 40
    strings = [
        LONG["sections"][0]["elements"][0]["text"],
        LONG["sections"][1]["elements"][0]["text"],
        LONG["sections"][2]["elements"][0]["items"][1],
        LONG["sections"][3]["elements"][0]["rows"][0][1],
        LONG["sections"][4]["elements"][0]["code"].split("\n")[0],
    ]
    assert all(count_tokens(json.dumps(text)) > max_tokens for text in strings)
    model = oracle_model(LONG, max_tokens=max_tokens)
    async with loop_system(redis_url, settings, model), Client(redis_url, settings) as client:
        first = generation_request("long", max_tokens=max_tokens, cap=200)
        await start_job(client.pool, client.events, client.jobs, first, source="test")
        result = await client.result("long", timeout=120)
        events = [e for e in await client.events.read("long") if e.worker == "generator"]
    assert serialise(result) == serialise(LONG), "exactly, character for character"
    done = [e for e in events if e.status in ("continued", "completed")]
    assert len(done) == minimum_calls(LONG, max_tokens)


async def test_an_iteration_run_twice_adds_nothing_twice(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    calls: list[str] = []
    pool = await connect_arq(redis_url)
    try:
        runtime = Runtime.create(pool, KEYS, settings)
        runtime.resources[RESOURCE] = oracle_model(DOCUMENT, calls)
        actor = Actor(load_worker("generator"), runtime)
        first = generation_request("twice")
        await run_commands(pool, runtime.jobs.created_commands("twice", first.request, "-"))
        await actor.run(first.model_dump(mode="json"), attempt=1)
        second = GenerationContinued(
            job_id="twice", message_id="twice:gen:t0:0:2", task_id="t0", iteration=2
        )
        await actor.run(second.model_dump(mode="json"), attempt=1)
        state_key = KEYS.loop_state("twice", "t0", 0)
        after_first_run = await redis_client.get(state_key)
        # The worker died after saving the state but before committing: run it again.
        await redis_client.delete(KEYS.done("twice:gen:t0:0:2"))
        await actor.run(second.model_dump(mode="json"), attempt=2)
        assert await redis_client.get(state_key) == after_first_run
        assert len(calls) == 2, "the applied iteration did not call the model again"
        assert await redis_client.zcard(KEYS.queue("generator")) == 2, "no forked iteration 3"
    finally:
        await pool.aclose()


@pytest.mark.parametrize(
    ("make_answer", "status"),
    [
        # never closes its JSON, but says something new each time
        (
            lambda n: (
                f'{{"sections": [{{"id": "s{n}", "content_type": "paragraph", '
                f'"elements": [{{"text": "part {n}"}}, {{"text": "never clo'
            ),
            "iteration_cap",
        ),
        # repeats the very same cut-off answer
        (
            lambda n: (
                '{"sections": [{"id": "s", "content_type": "paragraph", '
                '"elements": [{"text": "again and ag'
            ),
            "loop_detected",
        ),
        # continues once, then sends that continuation again, ending it itself each time
        (
            lambda n: (
                '{"sections": [{"id": "s", "content_type": "paragraph", '
                '"elements": [{"text": "again and ag'
                if n == 1
                else " again and"
            ),
            "loop_detected",
        ),
        # continues with the same words, always cut at max_tokens: a document that repeats
        # itself cannot be told from this, so the cap ends it
        (
            lambda n: (
                '{"sections": [{"id": "s", "content_type": "paragraph", '
                '"elements": [{"text": "again and ag'
                if n == 1
                else " again and" * 600
            ),
            "iteration_cap",
        ),
    ],
    ids=["never-closes", "repeats-itself", "sends-its-answer-again", "repeats-cut-answers"],
)
async def test_runaway_models_end_in_their_documented_status(
    redis_url: str, settings: Settings, make_answer: Any, status: str
) -> None:
    counter = {"n": 0}

    def respond(request: LLMRequest) -> str:
        counter["n"] += 1
        return make_answer(counter["n"])

    model = Model(ScriptedClient(responder=respond), Capability.STANDARD)
    async with loop_system(redis_url, settings, model), Client(redis_url, settings) as client:
        first = generation_request("runaway", max_tokens=1000, cap=5)
        await start_job(client.pool, client.events, client.jobs, first, source="test")
        with pytest.raises(JobFailedError) as failure:
            await client.result("runaway", timeout=60)
    assert failure.value.status == status
    if status == "loop_detected":
        assert failure.value.error.startswith("the model is stuck at iteration ")
        assert failure.value.error.endswith(("(no_progress)", "(repeated_output)"))
    assert counter["n"] <= 5, "stopped within the iteration cap"
    assert isinstance(failure.value.partial, dict) and "sections" in failure.value.partial


async def test_loop_across_two_generator_processes_survives_sigkill(
    redis_url: str, settings: Settings, tmp_path: Path
) -> None:
    document_file = tmp_path / "document.json"
    document_file.write_text(json.dumps(DOCUMENT))
    env = {**os.environ, "POSTEL_REDIS_URL": redis_url, "POSTEL_LOG_LEVEL": "WARNING"}
    command = script("oracle_generator", str(document_file), str(MAX_TOKENS), "--delay", "1.0")
    env = with_support(env)
    processes = {p.pid: p for p in (subprocess.Popen(command, env=env) for _ in range(2))}
    killed: int | None = None
    try:
        async with (
            LocalSystem(settings, redis_url=redis_url, specs=[load_worker("validator")]),
            Client(redis_url, settings) as client,
        ):
            first = generation_request("crash")
            await start_job(client.pool, client.events, client.jobs, first, source="test")
            async for event in client.follow("crash"):
                received = event.worker == "generator" and event.status == "received"
                if received and event.message_id.endswith(":gen:t0:0:2"):
                    killed = int(event.instance.rsplit(":", 1)[1])
                    processes[killed].send_signal(signal.SIGKILL)
                    break
            result = await client.result("crash", timeout=90)
            events = [e for e in await client.events.read("crash") if e.worker == "generator"]
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
        for process in processes.values():
            process.wait(10)
    assert killed is not None
    assert same_document(result, DOCUMENT), "whole, nothing duplicated"
    finished = [e for e in events if e.status in ("continued", "completed")]
    assert [e.iteration for e in finished] == list(range(1, len(finished) + 1))
    iteration_2 = [e for e in events if e.message_id.endswith(":gen:t0:0:2")]
    assert [(e.status, e.attempt) for e in iteration_2][-1] == ("continued", 2)
    assert all(not e.instance.endswith(f":{killed}") for e in finished if e.iteration >= 2)
    await asyncio.sleep(0)


def four_hundred_word_paragraph() -> dict[str, Any]:
    words = ["lorem", "ipsum", "dolor", "sit", "amet", "tempor", "magna", "aliqua", "élan"]
    text = " ".join(words[(n * 7 + n // 9) % len(words)] + str(n % 13) for n in range(400))
    return {
        "sections": [
            {"id": "title", "content_type": "heading", "elements": [{"level": 1, "text": "Long"}]},
            {"id": "body", "content_type": "paragraph", "elements": [{"text": text}]},
            {"id": "end", "content_type": "paragraph", "elements": [{"text": "The end."}]},
        ]
    }


@pytest.mark.bench
async def test_bench_loop_on_a_400_word_paragraph_at_200_tokens(
    redis_url: str, settings: Settings
) -> None:
    document = four_hundred_word_paragraph()
    assert count_tokens(serialise(document["sections"][1])) > 2 * 200
    report = await run_loop_bus_bench(
        settings.model_copy(update={"redis_url": redis_url}), document, 200
    )
    assert report["job_status"] == "completed" and report["document_equal"]
    assert report["llm_calls"] == report["min_llm_calls"] == minimum_calls(document, 200)
    assert report["completion_tokens_total"] == count_tokens(serialise(document))


async def test_bench_loop_on_a_repetitive_document_at_16_tokens(
    redis_url: str, settings: Settings
) -> None:
    # Identical code lines (cut answers repeat each other) and text the prompt builder would
    # change if shown as written (a marker, brackets, format characters).
    document = repetitive_document(parts=2, code_lines=12)
    marked = '<<<END USER TEXT>>> ＜＜＜x﹥﹥﹥ zero\u200bwidth \ufeff <b> "q" \\ é'
    document["sections"].append(
        {"id": "m", "content_type": "paragraph", "elements": [{"text": marked * 3}]}
    )
    report = await run_loop_bus_bench(
        settings.model_copy(update={"redis_url": redis_url}), document, 16
    )
    assert report["job_status"] == "completed" and report["document_equal"]
    assert report["llm_calls"] == report["min_llm_calls"] == minimum_calls(document, 16)


async def test_a_minimal_model_keeps_the_schema_and_its_whole_documents_merge_by_id(
    redis_url: str, settings: Settings
) -> None:
    """A small local model cannot continue raw JSON text: it answers whole documents with
    what is missing (the cut section again in full), read as restarts."""
    document = {
        "sections": [
            {"id": f"s{n}", "content_type": "paragraph", "elements": [{"text": f"Part {n}. " * 6}]}
            for n in range(6)
        ]
    }
    requests: list[LLMRequest] = []
    start_at = [0]  # the section its last answer started with

    def respond(request: LLMRequest) -> str:
        requests.append(request)
        # The cut's path counts sections in the answer read last.
        found = re.search(r"Cut: \$\.sections\[(\d+)\]", request.prompt_text())
        start_at[0] += int(found[1]) if found else 0
        return serialise({"sections": document["sections"][start_at[0] :]})

    model = Model(ScriptedClient(responder=respond), Capability.MINIMAL)
    async with loop_system(redis_url, settings, model), Client(redis_url, settings) as client:
        first = generation_request("minimal", max_tokens=100, cap=20)
        await start_job(client.pool, client.events, client.jobs, first, source="test")
        result = await client.result("minimal", timeout=60)
    assert result == document
    assert len(requests) >= 3, "the document needed continuations"
    assert all(request.json_schema is not None for request in requests)


async def test_a_document_missing_a_required_field_goes_to_a_repair_then_an_answer(
    redis_url: str, settings: Settings
) -> None:
    """A complete answer whose sections lack `content_type` cannot be read as a document:
    it is the validator's to refuse, and the repair turn shows the model the error, once;
    it is never retried as if the outside world had failed."""
    broken = {"sections": [{"id": "s", "elements": [{"text": "no content type"}]}]}
    prompts: list[str] = []

    def respond(request: LLMRequest) -> str:
        prompts.append(request.prompt_text())
        return json.dumps(broken if len(prompts) == 1 else DOCUMENT)

    model = Model(ScriptedClient(responder=respond), Capability.STANDARD)
    async with loop_system(redis_url, settings, model), Client(redis_url, settings) as client:
        first = generation_request("missing-field", max_tokens=4000)
        await start_job(client.pool, client.events, client.jobs, first, source="test")
        result = await client.result("missing-field", timeout=60)
        events = await client.events.read("missing-field")
    assert same_document(result, DOCUMENT)
    assert len(prompts) == 2, "one call answered wrongly, one repair"
    assert "content_type" in prompts[1] and "Field required" in prompts[1]
    hops = [(e.worker, e.status, e.decision) for e in events if e.status != "received"]
    assert ("validator", "completed", "repair") in hops
    assert not [e for e in events if e.status in ("retried", "dead_lettered", "failed")]
