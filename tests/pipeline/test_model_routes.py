"""Model routes: a worker kind's POSTEL_<WORKER>__LLM_* settings send its calls to its own
model; the others keep the global POSTEL_LLM_* one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import route_key
from postel.infra.runtime.settings import Settings
from postel.messages import JobOptions
from postel.services.llm import LLMRequest
from pydantic import SecretStr

from postel.testing.fake_model import FakeModel
from postel.testing.stage_model import StageModel, answering, intent_of, one_task

answer = StageModel(intent_of("the total", "numbers"), one_task("total"), answering("$165.50"))


async def test_intent_calls_reach_the_intent_route_and_the_rest_the_global_model(
    redis_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: dict[str, list[str]] = {"small": [], "strong": []}
    models: dict[str, set[str | None]] = {"small": set(), "strong": set()}

    def recording(name: str) -> Callable[[LLMRequest], str]:
        def respond(request: LLMRequest) -> str:
            asked[name].append(request.messages[0].content.split("\n")[0])
            models[name].add(request.model)
            return answer(request)

        return respond

    with FakeModel(recording("small")) as small, FakeModel(recording("strong")) as strong:
        monkeypatch.setenv("POSTEL_LLM_BASE_URL", strong.base_url)
        monkeypatch.setenv("POSTEL_LLM_MODEL", "strong-model")
        monkeypatch.setenv("POSTEL_INTENT__LLM_BASE_URL", small.base_url)
        monkeypatch.setenv("POSTEL_INTENT__LLM_MODEL", "small-model")
        routed = Settings(state_dir=settings.state_dir, log_level="WARNING")
        assert routed.route("intent").llm_model == "small-model"
        assert routed.route("planner").llm_model == "strong-model"
        async with (
            LocalSystem(routed, redis_url=redis_url),
            Client(redis_url, routed) as client,
        ):
            job_id = await client.submit("get the total price", type="float")
            assert await client.result(job_id, timeout=60) == 165.5
            routed_models = {name: set(seen) for name, seen in models.items()}
            # a job's own model (options.model) goes to each stage's endpoint
            job_id = await client.submit(
                "get the total price", type="float", options=JobOptions(model="job-model")
            )
            assert await client.result(job_id, timeout=60) == 165.5
    assert asked["small"] and all(s.startswith("You analyse requests") for s in asked["small"])
    assert asked["strong"] and not any(s.startswith("You analyse") for s in asked["strong"])
    assert small.stats().total == len(asked["small"])
    assert routed_models == {"small": {"small-model"}, "strong": {"strong-model"}}
    assert models["small"] - routed_models["small"] == {"job-model"}
    assert models["strong"] - routed_models["strong"] == {"job-model"}


def test_routes_share_a_client_only_when_every_setting_and_the_key_agree() -> None:
    base = Settings(llm_base_url="http://127.0.0.1:9/v1", llm_model="m")
    one = base.model_copy(update={"llm_api_key": SecretStr("key-one")})
    two = base.model_copy(update={"llm_api_key": SecretStr("key-two")})
    assert route_key(one) != route_key(two), "a client carries its key: never shared"
    assert route_key(one) == route_key(one.model_copy())
    assert route_key(base) != route_key(base.model_copy(update={"llm_rpm": 60}))
    assert "key-one" not in route_key(one)
