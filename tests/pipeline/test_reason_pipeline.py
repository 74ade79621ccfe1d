"""A typed reason() job from request to validated value, on the embedded runtime with all
five real workers and a scripted model replaying cassettes."""

from __future__ import annotations

from pathlib import Path

import pytest
from postel.infra.client.client import Client, JobFailedError
from postel.infra.client.reason import areason
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.settings import Settings
from postel.services.llm import ScriptedClient
from postel.services.prompts import Capability
from support.spy import Spy

CASSETTES = Path(__file__).parent / "cassettes"

INVOICE = """ACME Tools — Invoice 2026-118
2 x hammer ........ $40.00
1 x saw ........... $85.50
Shipping .......... $40.00
TOTAL DUE: $165.50"""


def scripted(name: str) -> Model:
    return Model(ScriptedClient.from_cassette(CASSETTES / name), Capability.STANDARD)


async def test_reason_reads_the_annotation_and_returns_a_validated_float(
    redis_url: str, settings: Settings
) -> None:
    spy = Spy("invoice_total.json")
    model = Model(spy, Capability.STANDARD)  # type: ignore[arg-type]
    async with LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: model}):
        connected = settings.model_copy(update={"redis_url": redis_url})
        # the total the customer owes
        price: float = await areason("get the total price", settings=connected, text=INVOICE)
        assert price == 165.5
        async with Client(redis_url, settings) as client:
            newest = await client.pool.xrevrange("postel:results", count=1)
            job_id = newest[0][1][b"job_id"].decode()
            record = await client.status(job_id)
            events = await client.events.read(job_id)
    assert record.request is not None
    assert record.request.desired_type.kind == "float", "from the annotation `price: float`"
    code_site = record.request.code_site
    assert code_site is not None and code_site.variable_name == "price"
    assert any("the total the customer owes" in c for c in code_site.comments)
    assert record.request.arguments["text"] == INVOICE
    workers = [e.worker for e in events if e.status == "completed"]
    assert workers == ["intent", "planner", "planner", "generator", "validator", "validator"]
    assert sum(e.llm_calls for e in events) == 3
    answering = spy.prompts_with("You answer with the requested value only")
    assert "TOTAL DUE: $165.50" in answering[0], "the invoice reaches the model that answers"
    assert all(e.prompt_tokens > 0 for e in events if e.llm_calls)


async def test_a_malformed_intent_and_an_unusable_value_are_repaired(
    redis_url: str, settings: Settings
) -> None:
    model = scripted("invoice_total_with_repairs.json")
    async with (
        LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: model}),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit("get the total price", type="float", text=INVOICE)
        assert await client.result(job_id, timeout=30) == 165.5
        events = await client.events.read(job_id)
    intent = next(e for e in events if e.worker == "intent" and e.status == "completed")
    assert intent.llm_calls == 2, "one repair turn for the malformed intent"
    generator = [
        (e.type, e.repair) for e in events if e.worker == "generator" and e.status == "completed"
    ]
    assert generator == [("generation.requested", 0), ("validation.failed", 1)]
    verdicts = [
        (e.decision, e.repair)
        for e in events
        if e.type == "generation.completed" and e.status == "completed"
    ]
    assert verdicts == [("repair", 0), ("accepted", 1)]
    repair = next(e for e in events if e.decision == "repair")
    assert "expected float" in repair.rationale


async def test_a_value_that_never_validates_fails_with_the_reason(
    redis_url: str, settings: Settings, tmp_path: Path
) -> None:
    cassette = (
        (CASSETTES / "invoice_total.json")
        .read_text()
        .replace("The total is $165.50.", "It is unknown.")
    )
    (tmp_path / "never.json").write_text(
        cassette[:-2]
        + ",\n"
        + ",\n".join(
            '{"match": "VALIDATION ERROR", "scope": "any", "response": "still unknown"}'
            for _ in range(2)
        )
        + "\n]"
    )
    model = Model(ScriptedClient.from_cassette(tmp_path / "never.json"), Capability.STANDARD)
    async with (
        LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: model}),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit("get the total price", type="float", text=INVOICE)
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=30)
    assert failure.value.status == "validation_failed"
    assert "expected float" in failure.value.error and "after 2 repair(s)" in failure.value.error
    assert failure.value.partial == "still unknown"
    async with Client(redis_url, settings) as client:
        verdicts = [e.decision for e in await client.events.read(job_id) if e.worker == "validator"]
    assert [v for v in verdicts if v] == ["repair", "repair", "rejected"]
