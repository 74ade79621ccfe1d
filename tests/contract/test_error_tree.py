"""One exception tree: everything postel raises on purpose is a PostelError, and every GASL
failure is a GaslError whose status is one of the contract's failed statuses."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import click
from click.testing import CliRunner
from postel.infra.cli import support as cli_support
from postel.messages.errors import PostelError
from postel.messages.gasl import FAILED_STATUSES
from postel.services.gasl import errors as gasl_errors
from postel.services.gasl.errors import GaslError

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
        if inspect.isclass(value) and issubclass(value, Exception) and value is not PostelError
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
