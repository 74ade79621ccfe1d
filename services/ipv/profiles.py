"""IPV profiles: named settings that tune all three phases, with per-job overrides.

strictness says how quality problems (services.validation.check_quality) count:
  lenient  problems are reported with the result but do not fail it;
  normal   problems trigger a repair request; the job fails when repairs run out;
  strict   as normal, and emptiness is checked even when the intent does not ask for
           completeness (`check_quality(..., strict=True)`).
Type coercion failures always trigger a repair, whatever the strictness.
"""

from __future__ import annotations

from typing import Literal

from postel.messages.errors import InvalidInput
from postel.messages.job import JobRequest, ProfileName
from pydantic import BaseModel, ConfigDict, Field

Strictness = Literal["lenient", "normal", "strict"]


class Profile(BaseModel):
    """Settings for one job: sampling, repair budget, loop caps."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: ProfileName
    temperature: float = Field(ge=0.0, le=2.0)
    max_repairs: int = Field(ge=0, le=10, description="repair requests the validator may send")
    strictness: Strictness
    max_iterations: int = Field(ge=1, le=1000, description="generator continuations (AI loop)")
    max_rounds: int = Field(ge=1, le=100, description="planner <-> gasl rounds (HDT loop)")
    max_tokens: int = Field(ge=1, description="completion tokens per LLM call")

    @property
    def quality_blocks(self) -> bool:
        """Whether quality problems stop a result (everything but lenient)."""
        return self.strictness != "lenient"


PROFILES: dict[str, Profile] = {
    profile.name: profile
    for profile in (
        Profile(
            name="default",
            temperature=0.3,
            max_repairs=2,
            strictness="normal",
            max_iterations=8,
            max_rounds=5,
            max_tokens=2048,
        ),
        # reliability first: near-deterministic sampling and more chances to repair
        Profile(
            name="production",
            temperature=0.1,
            max_repairs=3,
            strictness="normal",
            max_iterations=10,
            max_rounds=6,
            max_tokens=4096,
        ),
        # freer sampling and longer output; quality problems are reported, not fatal
        Profile(
            name="creative",
            temperature=0.9,
            max_repairs=1,
            strictness="lenient",
            max_iterations=12,
            max_rounds=5,
            max_tokens=4096,
        ),
        # deterministic sampling, tight loops, every problem counts
        Profile(
            name="strict",
            temperature=0.0,
            max_repairs=3,
            strictness="strict",
            max_iterations=6,
            max_rounds=4,
            max_tokens=2048,
        ),
    )
}


class UnknownProfile(InvalidInput):
    """A request names a profile that is not in PROFILES."""


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(PROFILES)
        raise UnknownProfile(f"unknown IPV profile {name!r}; known profiles: {known}") from None


def effective_settings(request: JobRequest) -> Profile:
    """The request's profile with the caps set in its options taking precedence."""
    profile = get_profile(request.ambient.profile)
    overrides = request.options.model_dump(
        include={"max_tokens", "max_iterations", "max_rounds", "max_repairs"}, exclude_none=True
    )
    return profile.model_copy(update=overrides)
