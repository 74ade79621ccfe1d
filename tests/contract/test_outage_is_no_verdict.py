"""An outage is never a verdict: redis-py raises CLUSTERDOWN, TRYAGAIN, MOVED, ASK, READONLY
and BUSY as subclasses of ResponseError, the class of a real error reply. So every `except`
that catches ResponseError in postel's code first lets REDIS_UNAVAILABLE
(infra/store/connect.py) through, in an earlier handler of the same `try`: a failover is
ridden out there, never read as "the outcome cannot be stored" or "no such entry"."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from postel.infra.store.connect import REDIS_UNAVAILABLE, OutageReplies, ServerBusyError
from redis.exceptions import (
    AskError,
    BusyLoadingError,
    ClusterDownError,
    MasterDownError,
    MovedError,
    ReadOnlyError,
    ResponseError,
    TryAgainError,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["messages", "services", "workers", "infra", "postel"]


def _names(node: ast.expr | None) -> set[str]:
    """The class names an `except` clause catches (`redis.ResponseError` is ResponseError)."""
    if node is None:
        return set()
    if isinstance(node, ast.Tuple):
        return set().union(*(_names(element) for element in node.elts))
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Name):
        return {node.id}
    return set()


def _unguarded(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Try):
            continue
        guarded = False
        for handler in node.handlers:
            caught = _names(handler.type)
            guarded = guarded or "REDIS_UNAVAILABLE" in caught
            if "ResponseError" in caught and not guarded:
                found.append(f"{path.relative_to(ROOT)}:{handler.lineno}")
    return found


def test_every_handler_of_a_response_error_lets_an_outage_through_first() -> None:
    sources = [path for package in PACKAGES for path in (ROOT / package).rglob("*.py")]
    assert len(sources) > 100
    unguarded = [where for path in sources for where in _unguarded(path)]
    assert not unguarded, (
        "catches ResponseError without an earlier `except REDIS_UNAVAILABLE` in the same try: "
        + ", ".join(unguarded)
    )


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("CLUSTERDOWN The cluster is down", ClusterDownError),
        ("MASTERDOWN Link with MASTER is down", MasterDownError),
        ("TRYAGAIN Multiple keys request during rehashing of slot", TryAgainError),
        ("MOVED 3999 127.0.0.1:6381", MovedError),
        ("ASK 3999 127.0.0.1:6381", AskError),
        ("LOADING Redis is loading the dataset in memory", BusyLoadingError),
        ("READONLY You can't write against a read only replica.", ReadOnlyError),
        ("BUSY Redis is busy running a script.", ServerBusyError),
    ],
)
def test_each_reply_that_means_not_now_is_read_as_an_outage(
    reply: str, kind: type[Exception]
) -> None:
    error = OutageReplies.parse_error(reply)
    assert type(error) is kind
    assert isinstance(error, REDIS_UNAVAILABLE)


@pytest.mark.parametrize(
    "reply",
    [
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        "WRONGTYPE Operation against a key holding the wrong kind of value",
        "ERR Error running script: user_script:1: too many results to unpack",
    ],
)
def test_a_reply_about_the_command_itself_is_a_real_error(reply: str) -> None:
    error = OutageReplies.parse_error(reply)
    assert isinstance(error, ResponseError)
    assert not isinstance(error, REDIS_UNAVAILABLE)
