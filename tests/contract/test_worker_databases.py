"""Each pytest-xdist worker flushes a system Redis database of its own (tests/conftest.py)."""

from __future__ import annotations

import pytest
from support.xdist_databases import worker_database_url


def test_without_xdist_the_url_is_used_as_given() -> None:
    assert worker_database_url("redis://127.0.0.1:6379/15", None) == "redis://127.0.0.1:6379/15"


def test_each_worker_takes_the_next_lower_database() -> None:
    urls = [worker_database_url("redis://:pw@host:6379/15", f"gw{n}") for n in range(3)]
    assert urls == [
        "redis://:pw@host:6379/15",
        "redis://:pw@host:6379/14",
        "redis://:pw@host:6379/13",
    ]


def test_a_worker_with_no_database_left_is_refused_naming_the_url() -> None:
    with pytest.raises(pytest.UsageError, match=r"redis://host/2: xdist worker gw3"):
        worker_database_url("redis://host/2", "gw3")
