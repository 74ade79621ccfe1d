"""The GASL contract: the plan object a planner sends, and what the executor hands back.

A plan is a list of GASL command strings plus two flags. Each executed command yields one
ExecutionRecord; the state summary is the compact view of the persistent state that goes
into the next planning prompt.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

# A command that ran reports success, empty (it found nothing) or partial (a cap or a cut
# excerpt left some out); one that could not run reports how it failed.
FailedStatus = Literal["binding_failure", "schema_mismatch", "error"]
ExecutionStatus = Literal["success", "empty", "partial", FailedStatus]
STATUSES: tuple[ExecutionStatus, ...] = get_args(ExecutionStatus)
FAILED_STATUSES: frozenset[FailedStatus] = frozenset(get_args(FailedStatus))


class PlanConfig(BaseModel):
    """How the executor reacts to a failed or empty step."""

    model_config = ConfigDict(extra="forbid")

    stop_on_error: bool = True
    continue_on_empty: bool = False


class GaslPlan(BaseModel):
    """One plan proposed by the planner: commands run in order against one graph."""

    model_config = ConfigDict(extra="forbid")

    plan_id: str = Field(min_length=1)
    why: str = ""
    commands: list[str] = Field(min_length=1)
    config: PlanConfig = Field(default_factory=PlanConfig)


class ExecutionRecord(BaseModel):
    """What one command did: its status, how much it found, and where that came from."""

    command: str
    why: str = ""
    status: ExecutionStatus
    count: int = 0
    caps_hit: list[str] = Field(default_factory=list)
    duration_ms: float = 0.0
    provenance: list[str] = Field(
        default_factory=list, description="source ids (chunks) of the matched items"
    )
    error: str | None = None
    rows: list[Any] = Field(default_factory=list, description="first result rows, bounded")
    variable: str | None = None
    detail: dict[str, Any] = Field(
        default_factory=dict,
        description="command-specific extras: skipped guards, caught errors, LLM metadata",
    )


class StateKeySummary(BaseModel):
    """One declared state key, shortened for a prompt."""

    key: str
    type: Literal["LIST", "DICT", "COUNTER"]
    description: str | None = None
    size: int = 0
    sample: list[Any] = Field(default_factory=list)


class StateSummary(BaseModel):
    """The persistent state in a few lines: version, content hash and per-key samples."""

    version: int
    hash: str
    keys: list[StateKeySummary] = Field(default_factory=list)


class GaslRunResult(BaseModel):
    """The answer to one plan: its records, the state after it, and whether it stopped early."""

    plan_id: str
    records: list[ExecutionRecord]
    state: StateSummary
    variables: dict[str, Any] = Field(
        default_factory=dict, description="context variables: size and a short sample each"
    )
    stopped: bool = False
    cancelled: bool = False
