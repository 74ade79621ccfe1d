"""The task plan (the ordered tasks the planner runs for a job) and what each finished task
hands to the next."""

from __future__ import annotations

from typing import Any, Literal

from postel.messages.intent import Intent, TaskIntentOverride
from pydantic import BaseModel, ConfigDict, Field

TaskKind = Literal["graph_analysis", "generation"]


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    objective: str = Field(min_length=1)
    kind: TaskKind
    override: TaskIntentOverride = Field(default_factory=TaskIntentOverride)


class TaskPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    overview: str = ""
    tasks: list[Task] = Field(min_length=1)


class TaskOutcome(BaseModel):
    """A finished task's answer; `incomplete` marks evidence cut short by the round cap."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    answer: Any = None
    reference: str | None = Field(
        default=None,
        description="the state value the answer is, whole, when the planner completed by "
        "reference (`${ans}`, `${ans.id}`); None when the model wrote the answer itself",
    )
    incomplete: bool = False
    evidence: dict[str, Any] = Field(default_factory=dict)
    provenance: list[str] = Field(default_factory=list)


class JobProgress(BaseModel):
    """What planner-side messages carry between stages: the intent, the plan and where the
    job stands in it."""

    model_config = ConfigDict(extra="forbid")

    intent: Intent
    plan: TaskPlan | None = None
    task_index: int = Field(default=0, ge=0)
    outcomes: list[TaskOutcome] = Field(default_factory=list)

    @property
    def task(self) -> Task | None:
        if self.plan is None or self.task_index >= len(self.plan.tasks):
            return None
        return self.plan.tasks[self.task_index]

    def task_intent(self) -> Intent:
        """The job's intent with the current task's overrides applied."""
        task = self.task
        return task.override.apply(self.intent) if task else self.intent
