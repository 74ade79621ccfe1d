"""The fake OpenAI-compatible endpoint (postel/testing/fake_model.py): each fault, seen through
postel's real OpenAIClient over real HTTP, and its control API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator

import httpx
import pytest
from postel.infra.store.redis_server import port_is_open
from postel.services.llm import (
    ChatMessage,
    LLMRateLimited,
    LLMRequest,
    LLMServerError,
    LLMTimeout,
    OpenAIClient,
    OpenAIConfig,
    RetryPolicy,
)
from postel.services.llm.budget import call_budget
from postel.services.llm.errors import LLMBadResponse, LLMConnectionError, LLMError
from postel.services.llm.gate import Permit

from postel.testing.fake_model import (
    FakeModel,
    FakeModelError,
    FaultPlan,
    marker,
    parse_mix,
)

ANSWER = '{"value": 42, "note": "the answer to everything asked here"}'


def respond(request: LLMRequest) -> str:
    return ANSWER


@pytest.fixture
def fake() -> Iterator[FakeModel]:
    with FakeModel(respond) as server:
        yield server


def client(fake: FakeModel, attempts: int = 2, timeout: float = 2.0) -> OpenAIClient:
    retry = RetryPolicy(max_attempts=attempts, backoff_initial=0.01, backoff_max=0.02)
    return OpenAIClient(
        OpenAIConfig(base_url=fake.base_url, model="m", timeout=timeout, retry=retry)
    )


def ask(text: str = "what is six times seven?", max_tokens: int = 200) -> LLMRequest:
    return LLMRequest(messages=[ChatMessage(role="user", content=text)], max_tokens=max_tokens)


async def test_ok_answers_from_the_responder_with_usage(fake: FakeModel) -> None:
    llm = client(fake)
    response = await llm.complete(ask())
    await llm.aclose()
    assert (response.text, response.finish_reason) == (ANSWER, "stop")
    assert not response.usage.estimated and response.usage.completion_tokens > 0
    assert fake.stats().by_fault == {"ok": 1}


async def test_ok_cuts_at_max_tokens_like_a_real_model(fake: FakeModel) -> None:
    llm = client(fake)
    response = await llm.complete(ask(max_tokens=4))
    await llm.aclose()
    assert response.finish_reason == "length"
    assert ANSWER.startswith(response.text) and response.text != ANSWER
    assert fake.stats().truncated == 1


async def test_hang_is_a_timeout_and_the_abandoned_request_is_released(fake: FakeModel) -> None:
    fake.set_faults(mode="hang")
    llm = client(fake, attempts=2, timeout=0.3)
    # each attempt ended at the client's 0.3 s timeout: the hang never answers
    with pytest.raises(LLMTimeout, match=r"after 2 attempt.*no answer within 0\.3s"):
        await llm.complete(ask())
    await llm.aclose()
    assert fake.stats().by_fault == {"hang": 2}
    for _ in range(40):  # the client hung up: the server notices within its poll interval
        if fake.stats().in_flight == 0:
            break
        await asyncio.sleep(0.05)
    assert fake.stats().in_flight == 0


async def test_a_hang_with_a_limit_closes_without_an_answer(fake: FakeModel) -> None:
    fake.set_faults(mode="hang", hang_s=0.2)
    llm = client(fake, attempts=1, timeout=3)
    # the server closed the connection (its 0.2 s limit): not the client's 3 s timeout
    with pytest.raises(LLMConnectionError, match="after 1 attempt"):
        await llm.complete(ask())
    await llm.aclose()
    assert fake.stats().by_fault == {"hang": 1}


async def test_429_carries_retry_after_which_the_client_honours(fake: FakeModel) -> None:
    fake.set_faults(mode="429", retry_after="0.4")
    llm = client(fake, attempts=2)
    started = time.perf_counter()
    with pytest.raises(LLMRateLimited, match="HTTP 429: rate limited"):
        await llm.complete(ask())
    waited = time.perf_counter() - started
    await llm.aclose()
    assert waited >= 0.4  # the header's value, not the 10 ms backoff
    assert fake.stats().by_fault == {"429": 2}


async def test_retry_after_is_waited_whole_within_the_hop_budget(fake: FakeModel) -> None:
    """The endpoint refuses for about 1.5 s and asks for Retry-After 2. A client capping the wait
    (`retry_after_max` 0.5 stands in for the default 30 s against a 60 s header) would call it 3
    times and fail; honouring the header within the hop's 5 s budget takes 2 calls."""
    fake.set_faults(mode="429", retry_after="2")
    retry = RetryPolicy(max_attempts=3, backoff_initial=0.01, retry_after_max=0.5)
    llm = OpenAIClient(OpenAIConfig(base_url=fake.base_url, model="m", timeout=2.0, retry=retry))

    async def recover() -> None:
        while fake.stats().total < 1:
            await asyncio.sleep(0.01)
        await asyncio.sleep(1.5)
        fake.set_faults(mode="ok")

    recovering = asyncio.create_task(recover())
    with call_budget(5.0):
        response = await llm.complete(ask())
    await recovering
    await llm.aclose()
    assert response.text == ANSWER
    assert fake.stats().by_fault == {"429": 1, "ok": 1}


async def test_retry_after_past_the_hop_budget_fails_at_once(fake: FakeModel) -> None:
    fake.set_faults(mode="429", retry_after="2")
    llm = client(fake, attempts=3)
    with call_budget(1.0), pytest.raises(LLMRateLimited, match="after the hop's time budget"):
        await llm.complete(ask())
    await llm.aclose()
    assert fake.stats().by_fault == {"429": 1}


async def test_500_is_a_server_error_after_every_attempt(fake: FakeModel) -> None:
    fake.set_faults(mode="500")
    llm = client(fake, attempts=3)
    with pytest.raises(LLMServerError, match=r"after 3 attempt.*HTTP 500"):
        await llm.complete(ask())
    await llm.aclose()
    assert fake.stats().by_fault == {"500": 3}


@pytest.mark.parametrize("fault", ["garbage", "wrong_shape"])
async def test_unusable_bodies_are_bad_responses(fake: FakeModel, fault: str) -> None:
    fake.set_faults(mode=fault)
    llm = client(fake)
    with pytest.raises(LLMBadResponse, match="without a chat completion"):
        await llm.complete(ask())
    await llm.aclose()


async def test_endless_cutoff_is_always_length_with_cut_json(fake: FakeModel) -> None:
    fake.set_faults(mode="endless_cutoff")
    llm = client(fake)
    for _ in range(3):
        response = await llm.complete(ask(max_tokens=10_000))
        assert response.finish_reason == "length"
        assert ANSWER.startswith(response.text) and len(response.text) < len(ANSWER)
        with pytest.raises(json.JSONDecodeError):
            json.loads(response.text)
    await llm.aclose()


async def test_a_marker_in_the_request_picks_its_fault(fake: FakeModel) -> None:
    llm = client(fake, attempts=1)
    with pytest.raises(LLMServerError):
        await llm.complete(ask(f"job 7 {marker('500')}: what is six times seven?"))
    assert (await llm.complete(ask("job 8: what is six times seven?"))).text == ANSWER
    fake.set_faults(markers=False)
    assert (await llm.complete(ask(f"job 7 {marker('500')}"))).text == ANSWER
    await llm.aclose()
    assert fake.stats().by_fault == {"500": 1, "ok": 2}


def draws_of(plan: FaultPlan, n: int) -> list[str]:
    with FakeModel(respond, plan) as fake:
        return [fake.choose("x")[0] for _ in range(n)]


def test_the_mix_is_reproducible_from_its_seed_and_near_its_fractions() -> None:
    mix = {"500": 0.2, "garbage": 0.1}
    first = draws_of(FaultPlan(mix=mix, seed=7), 2000)
    again = draws_of(FaultPlan(mix=mix, seed=7), 2000)
    other = draws_of(FaultPlan(mix=mix, seed=8), 2000)
    assert first == again
    assert first != other
    assert 0.17 < first.count("500") / 2000 < 0.23
    assert 0.08 < first.count("garbage") / 2000 < 0.12
    assert 0.67 < first.count("ok") / 2000 < 0.73


async def test_a_mix_over_http_counts_per_fault_and_per_minute(fake: FakeModel) -> None:
    fake.set_faults(mix={"500": 0.5}, seed=3)
    llm = client(fake, attempts=1)
    outcomes = []
    for _ in range(20):
        try:
            await llm.complete(ask())
            outcomes.append("ok")
        except LLMServerError:
            outcomes.append("500")
    await llm.aclose()
    expected = draws_of(FaultPlan(mix={"500": 0.5}, seed=3), 20)
    assert outcomes == expected
    stats = fake.stats()
    assert stats.total == 20 and stats.per_minute == [20]
    assert stats.by_fault == {name: outcomes.count(name) for name in set(outcomes)}


async def test_control_api_switches_faults_and_reports_stats(fake: FakeModel) -> None:
    root = fake.base_url.removesuffix("/v1")
    llm = client(fake, attempts=1)
    async with httpx.AsyncClient(base_url=root) as http:
        plan = (await http.post("/_faults", json={"mode": "500"})).json()
        assert plan["mode"] == "500" and plan["markers"] is True
        with pytest.raises(LLMServerError):
            await llm.complete(ask())
        await http.post("/_faults", json={"mode": "ok"})
        assert (await llm.complete(ask())).text == ANSWER
        stats = (await http.get("/_stats")).json()
        assert (stats["total"], stats["by_fault"]) == (2, {"500": 1, "ok": 1})
        assert (await http.get("/_faults")).json()["mode"] == "ok"
        bad = await http.post("/_faults", json={"mode": "explode"})
        assert bad.status_code == 400 and "mode" in bad.json()["error"]["message"]
        too_much = await http.post("/_faults", json={"mix": {"500": 0.7, "hang": 0.6}})
        assert too_much.status_code == 400 and "sum to at most 1" in too_much.text
        assert (await http.post("/_stats/reset")).json()["total"] == 0
    await llm.aclose()
    assert fake.plan.mode == "ok"


async def test_stop_releases_a_hanging_request_and_closes_the_port() -> None:
    fake = FakeModel(respond, FaultPlan(mode="hang")).start()
    llm = client(fake, attempts=1, timeout=10)
    call = asyncio.create_task(llm.complete(ask()))
    while fake.stats().in_flight == 0:
        await asyncio.sleep(0.02)
    await asyncio.to_thread(fake.stop)
    # the stopped server hung up: a connection error, not the client's 10 s timeout
    with pytest.raises(LLMConnectionError, match="after 1 attempt"):
        await call
    assert not port_is_open(fake.port)
    await llm.aclose()


def test_parse_mix_reads_a_spec_and_names_what_is_wrong() -> None:
    assert parse_mix("500=0.2, hang=0.1,") == {"500": 0.2, "hang": 0.1}
    assert parse_mix("") == {}
    for spec, problem in [
        ("boom=0.1", "unknown fault 'boom'"),
        ("500", "not NAME=FRACTION"),
        ("500=lots", "'lots' is not a number"),
        ("500=1.5", "not between 0 and 1"),
        ("500=0.6,hang=0.6", "add up to more than 1"),
    ]:
        with pytest.raises(FakeModelError, match=problem):
            parse_mix(spec)


async def test_a_failing_responder_is_a_500_that_says_so() -> None:
    def broken(request: LLMRequest) -> str:
        raise RuntimeError("no rule for this prompt")

    with FakeModel(broken) as fake:
        llm = client(fake, attempts=1)
        with pytest.raises(LLMServerError, match="no rule for this prompt"):
            await llm.complete(ask())
        await llm.aclose()


class CountingGate:
    """A route budget that counts its permits (services/llm/gate.py)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.released: list[int] = []

    async def acquire(self, estimated_tokens: int) -> Permit:
        self.out.append(f"p{len(self.out)}")
        return Permit(self.out[-1], estimated_tokens, 0.0)

    async def release(self, permit: Permit, used_tokens: int) -> None:
        self.out.remove(permit.holder)
        self.released.append(used_tokens)

    async def pause(self, seconds: float) -> None:
        return None


@pytest.mark.parametrize("fault", ["ok", "garbage", "500", "hang"])
async def test_every_attempt_gives_its_budget_permit_back(fake: FakeModel, fault: str) -> None:
    fake.set_faults(mode=fault)
    gate = CountingGate()
    retry = RetryPolicy(max_attempts=2, backoff_initial=0.01, backoff_max=0.02)
    llm = OpenAIClient(
        OpenAIConfig(base_url=fake.base_url, model="m", timeout=0.5, retry=retry), gate
    )
    with contextlib.suppress(LLMError):
        await llm.complete(ask())
    await llm.aclose()
    assert gate.out == [], "no permit is kept"
    assert gate.released[-1] > 0 if fault == "ok" else gate.released[-1] == 0
