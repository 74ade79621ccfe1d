"""One exception tree: everything postel raises on purpose is a PostelError, and every GASL
failure is a GaslError whose status is one of the contract's failed statuses."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil

import click
import httpx
import pytest
from click.testing import CliRunner
from fastapi import FastAPI
from fastapi.testclient import TestClient
from postel.infra.cli import main as cli_main
from postel.infra.cli import support as cli_support
from postel.infra.client.client import JobFailedError
from postel.infra.runtime.actor import HopTimeout
from postel.infra.runtime.cancel import JobAlreadyFinished
from postel.infra.runtime.redrive import RedriveRefused
from postel.infra.runtime.requeue import RequeueRefused
from postel.infra.runtime.settings import Settings
from postel.infra.runtime.submit import JobConflict, ReservedJobId
from postel.infra.store.jobs import JobNotFound
from postel.infra.web import errors as web_errors
from postel.infra.web.server import WebServer
from postel.messages import errors
from postel.messages.errors import (
    BRANCHES,
    OUTCOMES,
    Conflict,
    GraphNotFound,
    InvalidInput,
    LimitExceeded,
    NotFound,
    PostelError,
    outcome_of,
)
from postel.messages.gasl import FAILED_STATUSES
from postel.services.gasl import errors as gasl_errors
from postel.services.gasl.engines.caps import Caps
from postel.services.gasl.errors import GaslError
from postel.services.ipv.profiles import UnknownProfile, get_profile
from postel.services.llm.errors import LLMTimeout

import postel

LAYERS = ("postel.messages", "postel.services", "postel.workers", "postel.infra")


def _exception_classes() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for layer in LAYERS:
        package = importlib.import_module(layer)
        for info in pkgutil.walk_packages(package.__path__, f"{layer}."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseException)
                    and value.__module__ == info.name
                    and not name.startswith("_")  # control flow that never leaves its module
                ):
                    found.append(value)
    return found


def test_every_public_exception_is_a_postel_error() -> None:
    classes = _exception_classes()
    assert len(classes) > 25
    outside = [
        f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, PostelError)
    ]
    assert outside == []


def test_gasl_errors_share_one_base_and_carry_a_failed_status() -> None:
    kinds = [
        value
        for value in vars(gasl_errors).values()
        if inspect.isclass(value)
        and issubclass(value, Exception)
        and value.__module__ == gasl_errors.__name__
    ]
    assert {k.__name__ for k in kinds} >= {
        "GaslError",
        "GaslSyntaxError",
        "PlanSyntaxError",
        "BindingError",
        "StateError",
        "StepFailure",
        "BudgetSpent",
    }
    assert all(issubclass(k, GaslError) for k in kinds)
    assert gasl_errors.BindingError("x").status == "binding_failure"
    assert gasl_errors.StepFailure("x", "schema_mismatch").status == "schema_mismatch"
    assert gasl_errors.BudgetSpent("PLAN_BUDGET", 1.0).status in FAILED_STATUSES


def test_public_errors_are_importable_from_postel() -> None:
    for name in ("PostelError", "GaslError", "LLMError", "CoercionError", "JobFailedError"):
        assert issubclass(getattr(postel, name), PostelError)
    assert {getattr(postel, branch.__name__) for branch in BRANCHES} == set(BRANCHES)


def test_cli_maps_any_postel_error_to_the_input_exit_code() -> None:
    class Odd(PostelError):
        pass

    @click.command()
    def boom() -> None:
        async def go() -> None:
            raise Odd("the thing named here was wrong")

        cli_support.run_async(go)()

    result = CliRunner().invoke(boom, [])
    assert result.exit_code == cli_support.EXIT_INPUT
    assert "the thing named here was wrong" in result.output


def test_every_public_error_is_under_exactly_one_branch() -> None:
    classes = [c for c in _exception_classes() if c not in BRANCHES and c is not PostelError]
    placed = {
        f"{c.__module__}.{c.__qualname__}": [b.__name__ for b in BRANCHES if issubclass(c, b)]
        for c in classes
    }
    assert {name: under for name, under in placed.items() if len(under) != 1} == {}


def test_the_table_covers_every_branch_and_only_branches() -> None:
    branches = {
        value
        for value in vars(errors).values()
        if inspect.isclass(value) and PostelError in value.__bases__
    }
    assert branches == set(OUTCOMES) == set(BRANCHES)
    assert len({(o.exit_code, o.http_status) for o in OUTCOMES.values()}) == len(OUTCOMES)


def _exit_code(exc: Exception) -> int:
    @click.command()
    def boom() -> None:
        async def go() -> None:
            raise exc

        cli_support.run_async(go)()

    return CliRunner().invoke(boom, []).exit_code


def _http_status(exc: Exception) -> int:
    app = FastAPI()
    web_errors.install(app)

    @app.get("/boom")
    async def boom() -> None:
        raise exc

    return TestClient(app).get("/boom").status_code


@pytest.mark.parametrize(
    "exc",
    [
        JobNotFound("no such job 'x'"),
        GraphNotFound("g", []),
        JobConflict("job x was submitted with a different request"),
        JobAlreadyFinished("x", "succeeded", ""),
        RedriveRefused("1-1", "still cannot be decoded"),
        RequeueRefused("only a failed job is requeued"),
        JobFailedError("x", "invalid_request", "bad"),
        LimitExceeded("the nesting limit", 64, "saw 65"),
        UnknownProfile("unknown IPV profile 'fast'"),
        ReservedJobId("reserved"),
        HopTimeout("too slow"),
        LLMTimeout("model too slow"),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_the_cli_and_the_api_map_an_error_from_the_one_table(exc: Exception) -> None:
    expected = outcome_of(exc)
    assert expected is not None
    assert (_exit_code(exc), _http_status(exc)) == expected


def test_a_plain_user_input_error_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="unknown IPV profile 'fast'"):
        get_profile("fast")
    with pytest.raises(InvalidInput, match="unknown cap 'bogus'"):
        Caps().with_value("bogus", 1)
    with pytest.raises(InvalidInput, match="positive integer"):
        Caps().with_value("max_results", 0)


def test_unknown_job_and_conflict_end_to_end_in_the_cli_and_the_api(
    redis_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POSTEL_REDIS_URL", redis_url)
    monkeypatch.setenv("POSTEL_STATE_DIR", str(settings.state_dir))
    runner = CliRunner()
    missing = runner.invoke(cli_main.main, ["status", "no-such-job"])
    assert missing.exit_code == 4 and "no such job 'no-such-job'" in missing.output
    first = runner.invoke(cli_main.main, ["submit", "x", "--job-id", "mine"])
    assert first.exit_code == 0, first.output
    taken = runner.invoke(cli_main.main, ["submit", "y", "--job-id", "mine"])
    assert taken.exit_code == 2 and "different request" in taken.output

    async def over_http() -> tuple[int, int]:
        async with (
            WebServer(settings, redis_url, "127.0.0.1", 0) as web,
            httpx.AsyncClient(base_url=web.url, timeout=30) as api,
        ):
            gone = await api.get("/api/jobs/no-such-job")
            clash = await api.post("/api/jobs", params={"job_id": "mine"}, json={"prompt": "z"})
            assert "different request" in clash.json()["detail"]
            return gone.status_code, clash.status_code

    assert (
        asyncio.run(over_http())
        == (
            OUTCOMES[NotFound].http_status,
            OUTCOMES[Conflict].http_status,
        )
        == (404, 409)
    )
    assert OUTCOMES[NotFound].exit_code == 4 and OUTCOMES[Conflict].exit_code == 2
