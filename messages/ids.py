"""Ids, written and read here only: every message of a job is `<job_id>:<key>`
(`message_id`), with the key named here by what the message is; a redriven dead letter is
`<id>:redrive<n>` (`redrive`). The parsers beside the writers
(`job_of`, `key_of`, `gasl_round_of`, `redrive_of`) read what they write, and nothing else
splits an id.

What comes from outside is read by one parser each, which raises InvalidId (InvalidInput)
naming what it expected: a job id (`parse_job_id`, JOB_ID_PATTERN), a dead letter's id
(`parse_dead_letter_id`: a stream entry id, after its lane's tag on a cluster), a position
in a stream (`parse_stream_id`) and the jobs list's cursor (`parse_jobs_cursor`, written by
`jobs_cursor`). The HTTP API and the dashboard take each through these, so a bad one is a
422 everywhere.

A hop that runs twice derives the same ids, so its second run is recognised and dropped:
a key must be a function of the job's position only (task, round, repair, iteration),
never of time or chance. Task positions are indexes in the task plan; task ids are the
plan's own names for its tasks.
"""

from __future__ import annotations

import re

from postel.messages.errors import InvalidInput

JOB_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
"""Every job id: a safe Redis key part (no `:`, so no job's id names another key)."""
_JOB_ID = re.compile(JOB_ID_PATTERN)
STREAM_ID_PATTERN = r"^\d{1,20}(-\d{1,20})?$"
"""A position in a Redis stream: `<ms>-<seq>`, or `<ms>` for its first entry."""
_STREAM_ID = re.compile(STREAM_ID_PATTERN)
DEAD_LETTER_ID_PATTERN = r"^(\{p\d{1,5}\})?\d{1,20}-\d{1,20}$"
"""A dead letter's id: its stream entry id, after its lane's tag on a cluster (`{p3}`,
infra/store/keys.py)."""
_DEAD_LETTER_ID = re.compile(DEAD_LETTER_ID_PATTERN)
_JOBS_CURSOR = re.compile(r"^(?P<score>\d{1,17}):(?P<job>[^:]*)$")


class InvalidId(InvalidInput):
    """An id, cursor or stream position from outside that is not of its shape."""


def _shown(value: str) -> str:
    return repr(value[:40] + ("…" if len(value) > 40 else ""))


def is_job_id(value: str) -> bool:
    return _JOB_ID.match(value) is not None


def parse_job_id(value: str) -> str:
    if not is_job_id(value):
        raise InvalidId(
            "a job id is 1-100 characters of letters, digits, '.', '_' or '-', starting with "
            f"a letter or digit; got {_shown(value)}"
        )
    return value


def parse_dead_letter_id(value: str) -> str:
    if not _DEAD_LETTER_ID.match(value):
        shown = _shown(value)
        raise InvalidId(f"a dead letter's id is a stream entry id (`<ms>-<seq>`); got {shown}")
    return value


def parse_stream_id(value: str) -> str:
    if not _STREAM_ID.match(value):
        raise InvalidId(f"not a stream id (`<ms>-<seq>`): got {_shown(value)}")
    return value


def jobs_cursor(score: float, job_id: str) -> str:
    """The jobs list's cursor: after the job `job_id`, whose index score is `score`."""
    return f"{score:.0f}:{job_id}"


def parse_jobs_cursor(value: str) -> tuple[float, str]:
    """(score, job id) of a cursor `jobs_cursor` wrote."""
    found = _JOBS_CURSOR.match(value)
    if found is None or not is_job_id(found["job"]):
        shown = _shown(value)
        raise InvalidId(f"a jobs cursor is `<score>:<job id>`, as a page's `next`; got {shown}")
    return float(found["score"]), found["job"]


SUBMITTED = "submitted"
"""A job's first message, written by its submission."""
CANCELLED = "cancelled"
"""The failure a cancel writes."""
INTENT = "intent"
TASK_PLAN = "plan"
COMPLETED = "completed"
FAILED = "failed"


def message_id(job_id: str, key: str) -> str:
    """A derived message's id: the job's id, a colon, the key (a job id holds no colon)."""
    return f"{job_id}:{key}"


def job_of(message_id: str) -> str:
    """The job a message id belongs to: the id up to its first colon."""
    return message_id.split(":", 1)[0]


def key_of(message_id: str) -> str:
    """The key of a message id, after its job's id; an id without a colon (none that
    postel writes) is all key."""
    job_id, colon, key = message_id.partition(":")
    return key if colon else job_id


def task_start(index: int) -> str:
    """The planner starting the plan's task `index` (after the first)."""
    return f"task:{index}"


def gasl_round(task_index: int, round_: int) -> str:
    """A GASL plan for one round of a graph task."""
    return f"gasl:{task_index}:{round_}"


def gasl_round_done(task_index: int, round_: int) -> str:
    """That round's execution records, back to the planner."""
    return f"gasl-done:{task_index}:{round_}"


_GASL_ROUND = re.compile(r"^(?:gasl|gasl-done):(?P<task>\d+):(?P<round>\d+)$")


def gasl_round_of(message_id: str) -> tuple[int, int] | None:
    """The (task index, round) a GASL round's plan (`gasl_round`) or records
    (`gasl_round_done`) name; None for any other message."""
    found = _GASL_ROUND.match(key_of(message_id))
    return (int(found["task"]), int(found["round"])) if found else None


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


def redrive(message_id: str, n: int) -> str:
    """The id of redrive `n` (from 1) of the dead message `message_id`: its own id is spent
    (postel's done marker and arq's keys still hold it), so the new one extends it."""
    return f"{message_id}:redrive{n}"


_REDRIVE = re.compile(r"^(?P<base>.*):redrive(?P<n>\d+)$")


def redrive_of(message_id: str) -> tuple[str, int]:
    """The id a redriven message was made from and which redrive it is (`redrive`); the id
    itself and 0 for a message never redriven."""
    found = _REDRIVE.match(message_id)
    return (found["base"], int(found["n"])) if found else (message_id, 0)
