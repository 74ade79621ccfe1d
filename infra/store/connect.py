"""Where a Redis URL leads: one Redis, or the primary a set of Sentinels names.

Every process connects through here: workers, ingress, the client, the web server, the CLI.

- `redis://[user:password@]host:port/db` (also `rediss://`, `unix://`): one server;
- `redis+sentinel://[user:password@]host1:26379,host2:26379/<master name>[/db]`: ask the
  Sentinels which server is the primary of `<master name>`, and ask again on every new
  connection. When the primary fails and the Sentinels promote a replica, connections to
  the old primary fail (or it answers READONLY once demoted, which redis-py turns into a
  connection error); postel's processes ride that out like any outage (infra/runtime/outage.py) and
  their new connections reach the new primary, with no action by anyone. The password, if
  any, is the data servers' (Sentinels without auth).
"""

from __future__ import annotations

from urllib.parse import unquote, urlparse

from arq.connections import RedisSettings
from postel.messages.errors import PostelError
from postel.services.urls import shown_url
from redis.asyncio import Redis
from redis.asyncio.sentinel import Sentinel

SENTINEL_SCHEME = "redis+sentinel"
DEFAULT_SENTINEL_PORT = 26379


class RedisURLError(PostelError, ValueError):
    """A Redis URL postel cannot use (named in the message)."""


def _sentinel_parts(url: str) -> tuple[list[tuple[str, int]], str, int, str | None, str | None]:
    """(sentinel addresses, master name, db, username, password) of a redis+sentinel URL."""
    rest = url.split("://", 1)[1]
    credentials, _, location = rest.rpartition("@")
    username = password = None
    if credentials:
        user, _, secret = credentials.partition(":")
        username, password = (unquote(user) or None), (unquote(secret) or None)
    hosts, _, path = location.partition("/")
    name, _, db = path.partition("/")
    if not hosts or not name:
        raise RedisURLError(
            f"a Sentinel URL is {SENTINEL_SCHEME}://host:port[,host:port...]/<master name>[/db],"
            f" not {shown_url(url)}"
        )
    addresses = []
    for host in hosts.split(","):
        parsed = urlparse(f"//{host}")
        if not parsed.hostname:
            raise RedisURLError(f"no host in {host!r} of {shown_url(url)}")
        addresses.append((parsed.hostname, parsed.port or DEFAULT_SENTINEL_PORT))
    if db and not db.isdigit():
        raise RedisURLError(f"the database of {shown_url(url)} must be a number, not {db!r}")
    return addresses, name, int(db or 0), username, password


def is_sentinel(url: str) -> bool:
    return url.startswith(f"{SENTINEL_SCHEME}://")


def arq_settings(url: str) -> RedisSettings:
    """arq's connection settings for `url`."""
    if not is_sentinel(url):
        return RedisSettings.from_dsn(url)
    addresses, name, db, username, password = _sentinel_parts(url)
    return RedisSettings(
        host=addresses,  # type: ignore[arg-type]
        sentinel=True,
        sentinel_master=name,
        database=db,
        username=username,
        password=password,
    )


def redis_client(url: str) -> Redis:
    """A plain asyncio client for `url` (no arq job helpers)."""
    if not is_sentinel(url):
        return Redis.from_url(url)
    addresses, name, db, username, password = _sentinel_parts(url)
    sentinel = Sentinel(addresses, db=db, username=username, password=password)
    return sentinel.master_for(name)
