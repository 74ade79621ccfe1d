"""GASL's one exception: a command that cannot do what it says.

Every GASL failure is a GaslError, and each carries the status the command's execution record
gets (one of the contract's failed statuses), so the executor turns any of them into a record
the same way. The subclasses say where it went wrong: the text (syntax), a `${...}` reference
(binding), a cap (SET), a value in the data, the state (declare/update), a model step, or a
time budget. Only these become command records: any other exception out of a command is a
bug in postel and propagates."""

from __future__ import annotations

from postel.messages.errors import InvalidInput
from postel.messages.gasl import FailedStatus


class GaslError(InvalidInput):
    """A GASL command that cannot run as written; `status` is how its record reports it."""

    def __init__(self, message: str, status: FailedStatus = "error") -> None:
        super().__init__(message)
        self.status: FailedStatus = status


class GaslSyntaxError(GaslError, ValueError):
    """A command that does not parse: where, what was expected, what was found, a hint."""

    def __init__(self, line: int, column: int, expected: list[str], got: str, hint: str) -> None:
        self.line = line
        self.column = column
        self.expected = expected
        self.got = got
        self.hint = hint
        wanted = f"expected one of {', '.join(expected)}" if expected else "unexpected input"
        super().__init__(f"line {line}, column {column}: {wanted}; got {got}. Hint: {hint}")


class PlanSyntaxError(GaslError):
    """A plan command that does not parse, with the command's text and position."""

    def __init__(self, index: int, command: str, error: GaslSyntaxError) -> None:
        super().__init__(f"command {index + 1}: {error}")
        self.index = index
        self.command = command
        self.error = error


class BindingError(GaslError, LookupError):
    """A `${var}` or variable name that names no context variable (or no such field)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "binding_failure")


class StateError(GaslError):
    """A DECLARE or UPDATE the persistent state refuses."""


class UnknownCap(GaslError):
    """A cap name that Caps does not have (`SET adapter.caps.<name>`, a replayed plan)."""


class InvalidCap(GaslError):
    """A cap value that is not a positive integer."""


class UnusableValue(GaslError):
    """A value in the data that the command cannot use as it is (a record without an id as
    a group key); the message names the field and shows the value."""


class StepFailure(GaslError):
    """A PROCESS or ANALYZE whose model call failed or answered off its schema."""


class BudgetSpent(GaslError):
    """A deadline passed; `cap` names the budget (PLAN_BUDGET or COMMAND_BUDGET)."""

    def __init__(self, cap: str, seconds: float) -> None:
        super().__init__(f"the {cap} of {seconds:g} s is spent")
        self.cap = cap
        self.seconds = seconds
