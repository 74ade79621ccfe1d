"""Signed completion callbacks (infra/runtime/callbacks.py): a finished job's outcome is
POSTed once acknowledged, signed per Standard Webhooks (verified here with the
`standardwebhooks` package, not postel's signing code), retried under the same webhook-id,
dead-lettered when given up on and redriven; destinations inside the network are refused
unless allow-listed; every attempt is an event on the job."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import AsyncIterator, Callable

import pytest
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.redrive import redrive
from postel.infra.runtime.settings import Settings
from postel.infra.store.deadletter import list_dead
from postel.messages import JobOptions
from pydantic import SecretStr, ValidationError
from standardwebhooks.webhooks import Webhook

from postel.testing.receiver import CallbackReceiver
from postel.testing.relay import RELAY_WORKERS

SECRET = "whsec_" + base64.b64encode(os.urandom(24)).decode()


@pytest.fixture
async def system(redis_url: str, settings: Settings) -> AsyncIterator[Client]:
    settings.callback_secret = SecretStr(SECRET)
    settings.callback_allow = ["127.0.0.1"]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=RELAY_WORKERS),
        Client(redis_url, settings) as client,
    ):
        yield client


async def until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(30):
        while not predicate():
            await asyncio.sleep(0.02)


async def statuses(client: Client, job_id: str) -> list[str]:
    return [e.status for e in await client.events.read(job_id) if e.worker == "callback"]


async def test_a_finished_jobs_outcome_is_posted_signed_and_retried_under_one_id(
    system: Client,
) -> None:
    with CallbackReceiver(fail_first=2) as receiver:
        job_id = await system.submit("call me", options=JobOptions(callback_url=receiver.url))
        assert await system.result(job_id, timeout=20) == "call me"
        await until(lambda: bool(receiver.delivered()))
        await until(lambda: len(receiver.received) == 3)
        events = await statuses(system, job_id)
        while events[-1:] != ["callback_sent"]:
            await asyncio.sleep(0.02)
            events = await statuses(system, job_id)
    assert events == ["callback_failed", "callback_failed", "callback_sent"]
    ids = {r.headers["webhook-id"] for r in receiver.received}
    assert ids == {f"msg_{job_id}"}, "one id on every attempt: deduplicable"
    hook = Webhook(SECRET)
    for request in receiver.received:
        payload = hook.verify(request.body, request.headers)
        assert payload["type"] == "job.completed"
        assert payload["data"]["job_id"] == job_id and payload["data"]["result"] == "call me"
    record = await system.status(job_id)
    assert (record.callback_status, record.callback_attempts) == ("delivered", 3)


async def test_a_signature_under_another_secret_does_not_verify(system: Client) -> None:
    with CallbackReceiver() as receiver:
        job_id = await system.submit("x", options=JobOptions(callback_url=receiver.url))
        await until(lambda: bool(receiver.delivered()))
    other = Webhook("whsec_" + base64.b64encode(os.urandom(24)).decode())
    request = receiver.delivered()[0]
    with pytest.raises(Exception, match="signature"):
        other.verify(request.body, request.headers)
    assert json.loads(request.body)["data"]["job_id"] == job_id


async def test_a_cancelled_job_calls_back_its_failure(system: Client, settings: Settings) -> None:
    with CallbackReceiver() as receiver:
        options = JobOptions(callback_url=receiver.url, delay_s=3600)
        job_id = await system.submit("never runs", options=options)
        await system.cancel(job_id, "no longer needed")
        await until(lambda: bool(receiver.delivered()))
    payload = Webhook(SECRET).verify(receiver.received[0].body, receiver.received[0].headers)
    assert payload["type"] == "job.failed"
    assert payload["data"]["failure"] == "cancelled"


async def test_a_callback_given_up_on_is_a_dead_letter_that_redrives(
    redis_url: str, settings: Settings
) -> None:
    settings.callback_secret = SecretStr(SECRET)
    settings.callback_allow = ["127.0.0.1"]
    settings.callback_give_up_s = 0.2
    with CallbackReceiver(fail_first=2) as receiver:
        async with (
            LocalSystem(settings, redis_url=redis_url, specs=RELAY_WORKERS),
            Client(redis_url, settings) as client,
        ):
            job_id = await client.submit("x", options=JobOptions(callback_url=receiver.url))
            await client.result(job_id, timeout=20)
            while "callback_dead_lettered" not in await statuses(client, job_id):
                await asyncio.sleep(0.05)
            letters = await list_dead(client.pool, client.keyspace)
            letter = next(item for item in letters.items if item.source == "callback")
            assert letter.redrive_blocker is None
            await redrive(client.pool, client.events, letter.id, by="test")
            await until(lambda: bool(receiver.delivered()))
            # the record says so once the answer is back from the receiver, a moment later
            async with asyncio.timeout(30):
                while (await client.status(job_id)).callback_status != "delivered":
                    await asyncio.sleep(0.02)
    assert {r.headers["webhook-id"] for r in receiver.received} == {f"msg_{job_id}"}


async def test_a_destination_inside_the_network_is_refused_unless_allowed(
    redis_url: str, settings: Settings
) -> None:
    settings.callback_secret = SecretStr(SECRET)
    with CallbackReceiver() as receiver:
        async with (
            LocalSystem(settings, redis_url=redis_url, specs=RELAY_WORKERS),
            Client(redis_url, settings) as client,
        ):
            job_id = await client.submit("x", options=JobOptions(callback_url=receiver.url))
            await client.result(job_id, timeout=20)
            while "callback_dead_lettered" not in await statuses(client, job_id):
                await asyncio.sleep(0.05)
            events = await client.events.read(job_id)
    assert receiver.received == [], "nothing was sent to loopback"
    assert "inside the network" in events[-1].error


@pytest.mark.parametrize("url", ["ftp://example.com/x", "file:///etc/passwd", "http://"])
def test_only_http_urls_are_taken(url: str) -> None:
    with pytest.raises(ValidationError, match="callback_url"):
        JobOptions(callback_url=url)
