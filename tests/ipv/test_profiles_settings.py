"""Profiles as data, and job options overriding them."""

from __future__ import annotations

import pytest
from postel.messages.job import AmbientContext, JobOptions, JobRequest
from postel.services.ipv import PROFILES, Profile, effective_settings, get_profile
from pydantic import ValidationError


def test_the_four_profiles_exist_and_differ() -> None:
    assert set(PROFILES) == {"default", "production", "creative", "strict"}
    creative, strict = get_profile("creative"), get_profile("strict")
    assert creative.temperature > get_profile("default").temperature > strict.temperature
    assert strict.temperature == 0.0
    assert get_profile("production").max_repairs > get_profile("default").max_repairs
    assert not creative.quality_blocks
    assert strict.quality_blocks and get_profile("default").quality_blocks


def test_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown IPV profile 'fast'; known profiles: default"):
        get_profile("fast")


def test_profiles_are_immutable_and_checked() -> None:
    with pytest.raises(ValidationError):
        get_profile("default").temperature = 1.0  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Profile(
            name="default",
            temperature=3.0,
            max_repairs=1,
            strictness="normal",
            max_iterations=1,
            max_rounds=1,
            max_tokens=1,
        )


def test_effective_settings_without_options_is_the_profile() -> None:
    request = JobRequest(prompt="p", ambient=AmbientContext(profile="production"))
    assert effective_settings(request) == get_profile("production")


def test_job_options_override_only_what_they_set() -> None:
    request = JobRequest(
        prompt="p",
        ambient=AmbientContext(profile="strict"),
        options=JobOptions(max_tokens=512, max_repairs=0, model="m", deadline_s=5),
    )
    settings = effective_settings(request)
    strict = get_profile("strict")
    assert (settings.max_tokens, settings.max_repairs) == (512, 0)
    assert settings.max_iterations == strict.max_iterations
    assert settings.max_rounds == strict.max_rounds
    assert settings.temperature == strict.temperature
    assert strict.max_tokens == 2048  # the shared profile itself is untouched
