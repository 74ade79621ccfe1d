"""The keys of derived message ids: every message after a job's first is `<job_id>:<key>`,
with the key named here by what the message is.

A hop that runs twice derives the same ids, so its second run is recognised and dropped:
a key must be a function of the job's position only (task, round, repair, iteration),
never of time or chance. Task positions are indexes in the task plan; task ids are the
plan's own names for its tasks.
"""

from __future__ import annotations

INTENT = "intent"
TASK_PLAN = "plan"
COMPLETED = "completed"
FAILED = "failed"


def task_start(index: int) -> str:
    """The planner starting the plan's task `index` (after the first)."""
    return f"task:{index}"


def gasl_round(task_index: int, round_: int) -> str:
    """A GASL plan for one round of a graph task."""
    return f"gasl:{task_index}:{round_}"


def gasl_round_done(task_index: int, round_: int) -> str:
    """That round's execution records, back to the planner."""
    return f"gasl-done:{task_index}:{round_}"


def generation(task_index: int) -> str:
    """The generator asked to write a task's output."""
    return f"gen:{task_index}"


def generation_rewrite(task_id: str) -> str:
    """The generator asked to restate a graph answer the validator could not read."""
    return f"gen:{task_id}:rewrite"


def generation_continued(task_id: str, repair: int, iteration: int) -> str:
    """The AI loop's next iteration of one (task, repair)."""
    return f"gen:{task_id}:{repair}:{iteration}"


def generation_done(task_id: str, repair: int) -> str:
    """The generator's finished output of one (task, repair), to the validator."""
    return f"gen:{task_id}:{repair}:done"


def validation(task_index: int) -> str:
    """A graph task's answer, straight to the validator."""
    return f"validate:{task_index}"


def repair(task_id: str, attempt: int) -> str:
    """The validator sending output back to the generator, with the reason."""
    return f"repair:{task_id}:{attempt}"
