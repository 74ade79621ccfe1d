"""The envelope every message carries, and how one message derives the next."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, Self, TypeVar

from postel.messages import ids
from postel.messages.job import DEFAULT_PRIORITY, DEFAULT_TENANT, TENANT_PATTERN, Priority
from pydantic import BaseModel, ConfigDict, Field, field_validator

SCHEMA_VERSION = 1

M = TypeVar("M", bound="Envelope")


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_job_id() -> str:
    return uuid.uuid4().hex


class Envelope(BaseModel):
    """Fields common to every message.

    `priority` and `tenant` are the job's class and tenant, carried by every message of
    the job (`derive`): each queue takes by them (infra/store/turns.py).
    `message_id` is the idempotency key: derived messages get `<job_id>:<key>` where the key
    names the step (`intent`, `gasl:0:2`, `gen:0:3`), so a handler that runs twice produces
    the same ids and the runtime drops the duplicate. `destination` is the worker whose queue
    takes the message; None means terminal (recorded, not enqueued)."""

    model_config = ConfigDict(extra="forbid")

    destination: ClassVar[str | None] = None

    type: str
    job_id: str
    priority: Priority = DEFAULT_PRIORITY
    tenant: str = Field(default=DEFAULT_TENANT, pattern=TENANT_PATTERN)
    message_id: str = Field(min_length=1, max_length=300)
    causation_id: str | None = None
    hop: int = Field(default=0, ge=0)
    attempt: int = Field(default=1, ge=1)
    created_at: datetime = Field(default_factory=utc_now)
    deadline: datetime | None = None
    traceparent: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$",
        description="W3C trace context of the span that sent the message, when traced",
    )
    schema_version: Literal[1] = SCHEMA_VERSION

    @field_validator("job_id")
    @classmethod
    def _job_id_is_a_safe_key(cls, value: str) -> str:
        return ids.parse_job_id(value)

    def derive(self, cls: type[M], key: str, **payload: Any) -> M:
        """The next message of this job, caused by this one."""
        return cls(
            job_id=self.job_id,
            message_id=ids.message_id(self.job_id, key),
            causation_id=self.message_id,
            hop=self.hop + 1,
            deadline=self.deadline,
            priority=self.priority,
            tenant=self.tenant,
            **payload,
        )

    def with_attempt(self, attempt: int) -> Self:
        return self.model_copy(update={"attempt": attempt})
