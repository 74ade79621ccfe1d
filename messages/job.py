"""The job request: what a caller (Python, CLI, or a raw Redis write) asks postel to do."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from postel.messages.limits import (
    MAX_ARGUMENTS_BYTES,
    MAX_DEADLINE_S,
    MAX_PROMPT_CHARS,
    MAX_VALUE_DEPTH,
    check_json_text,
)
from postel.messages.types import TypeSpec
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ProfileName = Literal["default", "production", "creative", "strict"]

Priority = Literal["interactive", "normal", "batch"]
"""A job's class: every stage takes higher classes first (interactive, then normal, then
batch), and a waiting message gains on higher classes with time (docs/JOB_CONTROL.md)."""
PRIORITIES: tuple[Priority, ...] = ("interactive", "normal", "batch")
DEFAULT_PRIORITY: Priority = "normal"

TENANT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""A tenant's name: a safe Redis key part (no `:`, no quote), at most 64 characters."""
DEFAULT_TENANT = "default"
"""The tenant of a job that names none and whose way in gives none (infra/runtime)."""
MAX_DELAY_S = 30 * 24 * 3600
"""The furthest ahead a job may be deferred: 30 days, well inside the job record's life
only if POSTEL_JOB_TTL_S is raised to match (a deferred job's record lives its TTL from
submission)."""


class CodeSiteContext(BaseModel):
    """Where in the caller's code the request was made (its code-site context).

    The Python client fills this by reading its caller's source; other languages send it
    themselves or leave it out."""

    model_config = ConfigDict(extra="forbid")

    function_name: str | None = None
    variable_name: str | None = None
    annotation: str | None = None
    file: str | None = None
    line: int | None = Field(default=None, ge=1)
    comments: list[str] = Field(default_factory=list)
    surrounding_code: list[str] = Field(default_factory=list)


class AmbientContext(BaseModel):
    """Who is asking and under which settings (the ambient context)."""

    model_config = ConfigDict(extra="forbid")

    user: str | None = None
    session: str | None = None
    locale: str | None = None
    profile: ProfileName = "default"
    domains: list[str] = Field(default_factory=list)
    task: str | None = None


class JobOptions(BaseModel):
    """Per-job caps and overrides. Unset caps fall back to the profile's values."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_iterations: int | None = Field(default=None, ge=1, le=1000)
    max_rounds: int | None = Field(default=None, ge=1, le=100)
    max_repairs: int | None = Field(default=None, ge=0, le=10)
    deadline_s: float | None = Field(default=None, gt=0, le=MAX_DEADLINE_S, allow_inf_nan=False)
    allow_empty: bool = Field(
        default=False,
        description='an empty list, text or object is a valid answer ("none found"); '
        "otherwise it passes only when the evidence is empty too. A document needs text.",
    )
    priority: Priority | None = Field(
        default=None,
        description="interactive, normal or batch; unset: the producer's default, else normal",
    )
    tenant: str | None = Field(
        default=None,
        pattern=TENANT_PATTERN,
        description="whose job this is: stages serve tenants in turn within a class; unset: "
        "the way in's default (the API's, the ingress producer's), else `default`",
    )
    not_before: datetime | None = Field(
        default=None, description="accept the job now, start it at this time (with a zone)"
    )
    delay_s: float | None = Field(
        default=None, gt=0, le=MAX_DELAY_S, allow_inf_nan=False, description="start it this late"
    )
    callback_url: str | None = Field(
        default=None,
        max_length=2000,
        description="POST the job's result or failure here once it ends, signed (Standard "
        "Webhooks); http(s) only, and a private address only if allow-listed",
    )

    @field_validator("callback_url")
    @classmethod
    def _web_address(cls, value: str | None) -> str | None:
        if value is None:
            return value
        scheme, _, rest = value.partition("://")
        host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
        if scheme.lower() not in ("http", "https") or not host:
            raise ValueError("callback_url must be an http:// or https:// URL with a host")
        return value

    @field_validator("not_before")
    @classmethod
    def _zoned(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("not_before needs a time zone (2030-01-01T09:00:00Z)")
        return value

    @model_validator(mode="after")
    def _one_deferral(self) -> JobOptions:
        if self.not_before is not None and self.delay_s is not None:
            raise ValueError("give not_before or delay_s, not both")
        return self


class JobRequest(BaseModel):
    """A job as submitted. `arguments` are the call's keyword arguments (`text=invoice`)."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)
    desired_type: TypeSpec = Field(default_factory=lambda: TypeSpec(kind="str"))
    arguments: dict[str, Any] = Field(default_factory=dict)
    graph: str | None = None
    code_site: CodeSiteContext | None = None
    ambient: AmbientContext = Field(default_factory=AmbientContext)
    options: JobOptions = Field(default_factory=JobOptions)

    @field_validator("arguments")
    @classmethod
    def _bounded_arguments(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            text = json.dumps(arguments, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"arguments must be plain JSON: {exc}") from None
        check_json_text(
            text, what="arguments", max_bytes=MAX_ARGUMENTS_BYTES, max_depth=MAX_VALUE_DEPTH
        )
        return arguments
