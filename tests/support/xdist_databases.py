"""Which database of the system Redis each pytest-xdist worker flushes (tests/conftest.py).
A module of its own, not conftest.py: tests/web has a conftest too, so `conftest` names
either."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import pytest


def worker_database_url(url: str, xdist_worker: str | None) -> str:
    """`url` with the database of this pytest-xdist worker: the URL's own for gw0 (or no
    xdist), one lower for each worker after it (db 15 -> 15, 14, 13, ...)."""
    if not xdist_worker:
        return url
    index = int(xdist_worker.removeprefix("gw"))
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    if index > base:
        raise pytest.UsageError(
            f"POSTEL_TEST_REDIS_URL={url}: xdist worker {xdist_worker} needs database"
            f" {base} - {index}; use a database number of at least {index}, or fewer workers"
        )
    return urlunsplit(parts._replace(path=f"/{base - index}"))
