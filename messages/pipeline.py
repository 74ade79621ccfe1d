"""Every message of the pipeline, one discriminated union by `type`.

Routes (the worker whose queue takes each type):

  job.submitted         -> intent
  intent.analyzed       -> planner
  task.planned          -> planner     (one per task of the plan)
  gasl.plan_requested   -> gasl        (one per HDT round)
  gasl.plan_executed    -> planner
  generation.requested  -> generator
  generation.continued  -> generator   (the AI loop: re-enqueued until the JSON parses)
  generation.completed  -> validator
  validation.requested  -> validator   (a graph task's answer that needs no generation)
  validation.failed     -> generator   (a bounded repair request)
  job.completed         -> terminal
  job.failed            -> terminal
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, get_args

from postel.messages.envelope import Envelope
from postel.messages.gasl import ExecutionRecord, GaslPlan
from postel.messages.job import JobRequest
from postel.messages.task import JobProgress
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

FailureStatus = Literal[
    "invalid_request",
    "intent_failed",
    "plan_failed",
    "llm_error",
    "loop_detected",
    "iteration_cap",
    "validation_failed",
    "deadline_exceeded",
    "hop_timeout",
    "out_of_tries",
    "internal_error",
    "cancelled",
]


class CarriesJob(Envelope):
    """A message that carries the job's request and where the job stands in its plan: every
    message between the intent and the validator except a continuation or a repair, whose
    context the generator keeps (services.generation.stage)."""

    request: JobRequest
    progress: JobProgress


class RoundNote(BaseModel):
    """One HDT round, as the planner remembers it for the next hypothesis."""

    model_config = ConfigDict(extra="forbid")

    round: int = Field(ge=0)
    hypothesis: str = ""
    plan: GaslPlan | None = None
    outcome: str = ""
    decision: str = Field(
        default="", description="how the round came about: continue, refine, pivot ('' first)"
    )
    abandoned: bool = Field(
        default=False, description="its hypothesis was given up by a pivot, its state dropped"
    )


class CarriesRound(CarriesJob):
    """A message of one HDT round: its number, its plan and the rounds before it."""

    round: int = Field(ge=0)
    plan: GaslPlan
    history: list[RoundNote] = Field(default_factory=list)
    state_from: int | None = Field(
        default=None,
        ge=-1,
        description="the round whose resulting GASL state this plan starts from (-1: an empty "
        "state; unset: the round before, as continue and refine do; a pivot goes back)",
    )

    @property
    def base_round(self) -> int:
        """The round whose state this round starts from; -1 for an empty state."""
        return self.round - 1 if self.state_from is None else self.state_from


class JobSubmitted(Envelope):
    destination: ClassVar[str | None] = "intent"
    type: Literal["job.submitted"] = "job.submitted"
    request: JobRequest


class IntentAnalyzed(CarriesJob):
    destination: ClassVar[str | None] = "planner"
    type: Literal["intent.analyzed"] = "intent.analyzed"


class TaskPlanned(CarriesJob):
    destination: ClassVar[str | None] = "planner"
    type: Literal["task.planned"] = "task.planned"


class GaslPlanRequested(CarriesRound):
    destination: ClassVar[str | None] = "gasl"
    type: Literal["gasl.plan_requested"] = "gasl.plan_requested"


class GaslPlanExecuted(CarriesRound):
    destination: ClassVar[str | None] = "planner"
    type: Literal["gasl.plan_executed"] = "gasl.plan_executed"
    records: list[ExecutionRecord] = Field(default_factory=list)
    state_summary: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class GenerationRequested(CarriesJob):
    """Write the answer of one task. `evidence` is what the planner found; the generator
    keeps this message as the loop's anchor for continuations and repairs."""

    destination: ClassVar[str | None] = "generator"
    type: Literal["generation.requested"] = "generation.requested"
    task_id: str
    instructions: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    incomplete_evidence: bool = False


class GenerationContinued(Envelope):
    """The AI loop's next iteration; the accumulated document lives in Redis."""

    destination: ClassVar[str | None] = "generator"
    type: Literal["generation.continued"] = "generation.continued"
    task_id: str
    iteration: int = Field(ge=1)
    repair: int = Field(default=0, ge=0)


class GenerationCompleted(CarriesJob):
    destination: ClassVar[str | None] = "validator"
    type: Literal["generation.completed"] = "generation.completed"
    task_id: str
    output: Any
    iterations: int = Field(default=1, ge=1)
    repair: int = Field(default=0, ge=0)


class ValidationRequested(CarriesJob):
    destination: ClassVar[str | None] = "validator"
    type: Literal["validation.requested"] = "validation.requested"
    task_id: str
    output: Any


class ValidationFailed(Envelope):
    """A repair request: the generator tries again with the validation error."""

    destination: ClassVar[str | None] = "generator"
    type: Literal["validation.failed"] = "validation.failed"
    task_id: str
    error: str
    output: Any = None
    repair: int = Field(ge=1)


class JobCompleted(Envelope):
    type: Literal["job.completed"] = "job.completed"
    result: Any
    task_results: dict[str, Any] = Field(default_factory=dict)


class JobFailed(Envelope):
    type: Literal["job.failed"] = "job.failed"
    status: FailureStatus
    error: str
    partial: Any = None


Message = Annotated[
    JobSubmitted
    | IntentAnalyzed
    | TaskPlanned
    | GaslPlanRequested
    | GaslPlanExecuted
    | GenerationRequested
    | GenerationContinued
    | GenerationCompleted
    | ValidationRequested
    | ValidationFailed
    | JobCompleted
    | JobFailed,
    Field(discriminator="type"),
]

MESSAGE_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)

MESSAGE_TYPES: dict[str, type[Envelope]] = {
    cls.model_fields["type"].default: cls for cls in get_args(get_args(Message)[0])
}

TERMINAL_TYPES: frozenset[str] = frozenset(
    name for name, cls in MESSAGE_TYPES.items() if cls.destination is None
)
"""The types that end a job (`job.completed`, `job.failed`): no queue takes them."""


def decode_message(raw: str | bytes | dict[str, Any]) -> Envelope:
    """Validate a wire payload into its message class; raises pydantic.ValidationError."""
    if isinstance(raw, dict):
        return MESSAGE_ADAPTER.validate_python(raw)
    return MESSAGE_ADAPTER.validate_json(raw)
