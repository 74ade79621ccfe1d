"""Where a Redis URL leads: one Redis, or the primary a set of Sentinels names.

Every process connects through here: workers, ingress, the client, the web server, the CLI.

- `redis://[user:password@]host:port/db` (also `rediss://`, `unix:///path?db=N`): one
  server. The user and password are percent-decoded (`redis://:p%40ss@host` is `p@ss`).
  `rediss://` verifies the server's certificate and that it names the host, against the
  system's CAs or `?ssl_ca_certs=FILE`; `&ssl_certfile=FILE&ssl_keyfile=FILE` present a client
  certificate. Other query parameters are refused, so a misspelt one never goes unnoticed;
- `redis+sentinel://[user:password@]host1:26379,host2:26379/<master name>[/db]`: ask the
  Sentinels which server is the primary of `<master name>`, and ask again on every new
  connection. When the primary fails and the Sentinels promote a replica, connections to
  the old primary fail (or it answers READONLY once demoted, which redis-py turns into a
  connection error); postel's processes ride that out like any outage (infra/store/outage.py) and
  their new connections reach the new primary, with no action by anyone. The password, if
  any, is the data servers' (Sentinels without auth).
- `redis+cluster://[user:password@]host:port[,host:port...][?lanes=N]` (TLS:
  `rediss+cluster://`, with the rediss:// parameters): a Redis Cluster, found from any of the
  nodes named. postel's keys are cut into N lanes (16 by default; infra/store/keys.py), each
  in one hash slot; commands go to the shard holding their key (redis-py's cluster client),
  and each worker's arq queue of a lane talks to that lane's primary (`lane_settings`), asked
  of the cluster again after a failover. N must be the same for every process of a
  deployment.
"""

from __future__ import annotations

import dataclasses
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, cast
from urllib.parse import parse_qs, unquote, urlparse, urlsplit

from arq.connections import RedisSettings
from postel.infra.store.keys import CLUSTER_LANES, Keyspace
from postel.messages.errors import Denied, Misconfigured, Unavailable
from postel.services.urls import shown_url, userinfo_spills
from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, ClusterParser, NodesManager, RedisCluster
from redis.asyncio.sentinel import Sentinel
from redis.cluster import PRIMARY
from redis.exceptions import (
    AskError,
    AuthenticationError,
    AuthenticationWrongNumberOfArgsError,
    ClusterError,
    NoPermissionError,
    ReadOnlyError,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError


class ServerBusyError(Unavailable, ResponseError):
    """BUSY: the server runs a script or module command past its time limit and answers
    nothing else until that ends."""


class OutageReplies(ClusterParser):
    """redis-py's reply reader, with every reply that means "not now" read as its own class
    on every connection: a cluster's (CLUSTERDOWN, MASTERDOWN, TRYAGAIN, MOVED, ASK) and
    BUSY, which redis-py reads as a plain ResponseError, the class of a real error."""

    EXCEPTION_CLASSES: ClassVar[dict[str, Any]] = {
        **ClusterParser.EXCEPTION_CLASSES,
        "BUSY": ServerBusyError,
    }


# What redis-py raises while Redis is not answering as it should right now; each passes
# without anyone acting on the request, so every process rides it out (infra/store/
# outage.py) and none is ever a verdict on what was sent. Any other error is a real error.
# - the server cannot be reached or stops answering: refused, reset, closed, timed out,
#   LOADING its data after a restart (BusyLoadingError is a connection error);
# - a cluster failing over: CLUSTERDOWN and MASTERDOWN (ClusterError, with the client's own
#   "TTL exhausted" after too many redirections), TRYAGAIN, a slot with no primary yet;
# - the node asked no longer holds the slot: MOVED and ASK (AskError);
# - a replica answering for a demoted primary (a failover behind one host name): READONLY;
# - BUSY: a long script running (ServerBusyError, read so by OutageReplies).
REDIS_UNAVAILABLE: tuple[type[Exception], ...] = (
    RedisConnectionError,
    RedisTimeoutError,
    ClusterError,
    TryAgainError,
    AskError,
    SlotNotCoveredError,
    ReadOnlyError,
    ServerBusyError,
)


SENTINEL_SCHEME = "redis+sentinel"
DEFAULT_SENTINEL_PORT = 26379
SERVER_SCHEMES = ("redis", "rediss", "unix")
CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
"""A cluster URL's scheme, and the scheme of each of its nodes."""
TLS_FILES = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile")
DEFAULT_PORT = 6379


class RedisURLError(Misconfigured, ValueError):
    """A Redis URL postel cannot use (named in the message)."""


class RedisRefused(Denied):
    """Redis was reached but refuses this configuration: a wrong user or password, a
    permission the user lacks, or a TLS failure. Retrying cannot help, so it is fatal, never
    ridden out as an outage."""


@dataclass(frozen=True)
class Server:
    """One Redis server's connection settings, read from a redis://, rediss:// or unix:// URL."""

    host: str
    port: int
    unix_socket_path: str | None
    db: int
    username: str | None
    password: str | None
    tls: bool
    ssl_ca_certs: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None

    def tls_options(self) -> dict[str, Any]:
        """redis-py's TLS keywords: the certificate and the host name always checked."""
        if not self.tls:
            return {}
        return {
            "ssl": True,
            "ssl_cert_reqs": "required",
            "ssl_check_hostname": True,
            "ssl_ca_certs": self.ssl_ca_certs,
            "ssl_certfile": self.ssl_certfile,
            "ssl_keyfile": self.ssl_keyfile,
        }

    def arq_settings(self) -> RedisSettings:
        """arq's connection settings for this server."""
        return RedisSettings(
            host=self.host,
            port=self.port,
            unix_socket_path=self.unix_socket_path,
            database=self.db,
            username=self.username,
            password=self.password,
            **self.tls_options(),
        )

    def client(self) -> Redis:
        """A plain asyncio client of this server."""
        client = Redis(
            host=self.host,
            port=self.port,
            unix_socket_path=self.unix_socket_path,
            db=self.db,
            username=self.username,
            password=self.password,
            **self.tls_options(),
        )
        client.connection_pool.connection_kwargs["parser_class"] = OutageReplies
        return client


def _readable(url: str) -> None:
    """RedisURLError when a character of the user info would be read as the host's or the
    path's (services/urls.py): the password would be wrong, and shown wherever the host is."""
    if userinfo_spills(url):
        raise RedisURLError(
            f"the user name or password of {shown_url(url)} holds / ? # or @ unencoded: "
            "percent-encode each (urllib.parse.quote(password, safe=''))"
        )


def server_of(url: str) -> Server:
    """The server `url` names; RedisURLError naming what is wrong otherwise."""
    _readable(url)
    parts = urlsplit(url)
    if parts.scheme not in SERVER_SCHEMES:
        raise RedisURLError(
            f"a Redis URL starts with redis://, rediss://, unix://, {SENTINEL_SCHEME}:// or"
            f" redis+cluster://, not {shown_url(url)}"
        )
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - {"db", *TLS_FILES})
    if unknown:
        raise RedisURLError(
            f"unknown parameter {', '.join(unknown)} in {shown_url(url)}: a Redis URL takes "
            f"db, {', '.join(TLS_FILES)}"
        )
    options = {name: values[-1] for name, values in query.items()}
    files = {name: options[name] for name in TLS_FILES if name in options}
    if files and parts.scheme != "rediss":
        raise RedisURLError(f"{', '.join(files)} need a rediss:// URL, not {shown_url(url)}")
    for name, file in files.items():
        if not Path(file).is_file():
            raise RedisURLError(f"{name}={file} of {shown_url(url)}: no such file")
    unix = parts.scheme == "unix"
    db = options.get("db") or ("" if unix else parts.path.lstrip("/")) or "0"
    if not db.isdigit():
        raise RedisURLError(f"the database of {shown_url(url)} must be a number, not {db!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise RedisURLError(f"{shown_url(url)}: {exc}") from None
    return Server(
        host=parts.hostname or "localhost",
        port=port or DEFAULT_PORT,
        unix_socket_path=parts.path if unix else None,
        db=int(db),
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        tls=parts.scheme == "rediss",
        **files,
    )


def _sentinel_parts(url: str) -> tuple[list[tuple[str, int]], str, int, str | None, str | None]:
    """(sentinel addresses, master name, db, username, password) of a redis+sentinel URL."""
    _readable(url)
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


def is_cluster(url: str) -> bool:
    return urlsplit(url).scheme in CLUSTER_SCHEMES


class _SeededNodes(NodesManager):
    """redis-py's map of a cluster's nodes, falling back on the URL's nodes: redis-py forgets
    each node it fails to reach, and a failover on a busy machine can make it forget them all,
    after which every command would fail for good ("Redis Cluster cannot be connected")."""

    seeds: list[tuple[str, int]]

    async def initialize(self) -> None:
        for host, port in self.seeds:
            node = ClusterNode(host, port, PRIMARY, **self.connection_kwargs)
            self.startup_nodes.setdefault(node.name, node)
        await super().initialize()

    @property  # type: ignore[override]
    def default_node(self) -> ClusterNode | None:
        """The node for commands without a key. redis-py forgets it while one task refreshes
        the map (after a CLUSTERDOWN, say); a pipeline another task finishes meanwhile asks
        for it and would fail (AttributeError on None): any known primary serves."""
        chosen: ClusterNode | None = self.__dict__.get("_default_node")
        if chosen is None:
            chosen = next(iter(self.get_nodes_by_server_type(PRIMARY)), None)
        return chosen

    @default_node.setter
    def default_node(self, node: ClusterNode | None) -> None:
        self.__dict__["_default_node"] = node


class _SeededCluster(RedisCluster):
    def __init__(self, seeds: list[tuple[str, int]], **options: Any) -> None:
        super().__init__(startup_nodes=[ClusterNode(host, port) for host, port in seeds], **options)
        made = self.nodes_manager
        made.connection_kwargs["parser_class"] = OutageReplies
        self.nodes_manager = _SeededNodes(
            [ClusterNode(host, port, **made.connection_kwargs) for host, port in seeds],
            made.require_full_coverage,
            made.connection_kwargs,
            address_remap=made.address_remap,
            event_dispatcher=self._event_dispatcher,
        )
        self.nodes_manager.seeds = seeds


@dataclass(frozen=True)
class Cluster:
    """A Redis Cluster URL: the nodes to ask first (credentials and TLS alike) and the lanes."""

    seeds: list[Server]
    lanes: int

    def client(self) -> RedisCluster:
        """redis-py's cluster client: each command to the shard holding its key."""
        first = self.seeds[0]
        return _SeededCluster(
            [(seed.host, seed.port) for seed in self.seeds],
            username=first.username,
            password=first.password,
            **first.tls_options(),
        )


def cluster_of(url: str) -> Cluster:
    """The cluster a redis+cluster:// URL names; RedisURLError naming what is wrong otherwise."""
    _readable(url)
    parts = urlsplit(url)
    node_scheme = CLUSTER_SCHEMES.get(parts.scheme)
    if node_scheme is None:
        raise RedisURLError(f"a cluster URL starts with redis+cluster://, not {shown_url(url)}")
    credentials, _, hosts = parts.netloc.rpartition("@")
    if not hosts or parts.path not in ("", "/", "/0"):
        raise RedisURLError(
            "a cluster URL is redis+cluster://[user:password@]host:port[,host:port...]"
            f"[?lanes=N] (a cluster has one database), not {shown_url(url)}"
        )
    query = parse_qs(parts.query, keep_blank_values=True)
    lanes_given = query.pop("lanes", [str(CLUSTER_LANES)])[-1]
    if not lanes_given.isdigit() or int(lanes_given) < 2:
        raise RedisURLError(f"lanes={lanes_given} of {shown_url(url)}: a whole number, at least 2")
    rest = "&".join(f"{name}={values[-1]}" for name, values in query.items())
    login = f"{credentials}@" if credentials else ""
    seeds = [
        server_of(f"{node_scheme}://{login}{host}{'?' + rest if rest else ''}")
        for host in hosts.split(",")
    ]
    return Cluster(seeds=seeds, lanes=int(lanes_given))


async def primary_of(url: str, key: str) -> Server:
    """The primary of cluster `url` that holds `key` now, asked of the cluster."""
    cluster = cluster_of(url)
    client = cluster.client()
    try:
        await client.initialize()
        node = client.get_node_from_key(key)
    finally:
        await client.aclose()
    return dataclasses.replace(cluster.seeds[0], host=node.host, port=node.port)


async def lane_settings(url: str, lane: str) -> RedisSettings:
    """arq's settings for the primary that holds `lane` now: a worker's queue of that lane
    connects there (again, after a failover)."""
    return (await primary_of(url, lane)).arq_settings()


async def with_outage_errors(redis: Redis) -> Redis:
    """`redis`, a plain client already connected (an arq pool), made to read replies with
    OutageReplies: a cluster node's MOVED, CLUSTERDOWN and TRYAGAIN, and any server's BUSY,
    are raised as errors REDIS_UNAVAILABLE holds, not as plain ResponseErrors, so a failover
    or a long script is ridden out like an outage."""
    pool = redis.connection_pool
    pool.connection_kwargs["parser_class"] = OutageReplies
    await pool.disconnect()  # the connections already made reconnect with the new parser
    for connection in pool._available_connections:
        connection.set_parser(OutageReplies)
    return redis


async def primary_client(url: str, key: str) -> Redis:
    """A plain client of the primary of cluster `url` that holds `key` (transactions and
    scripts without keys run there)."""
    return (await primary_of(url, key)).client()


def arq_settings(url: str) -> RedisSettings:
    """arq's connection settings for `url` (on a cluster, each lane's: `lane_settings`)."""
    if is_cluster(url):
        raise RedisURLError(f"{shown_url(url)} is a cluster: arq connects per lane")
    if not is_sentinel(url):
        return server_of(url).arq_settings()
    addresses, name, db, username, password = _sentinel_parts(url)
    return RedisSettings(
        host=addresses,  # type: ignore[arg-type]
        sentinel=True,
        sentinel_master=name,
        database=db,
        username=username,
        password=password,
    )


SHORTEST_BLOCK_S = 0.01
"""The shortest timeout a blocking command (BLPOP) is given. Redis 6.2 reads a timeout as a
long double and truncates its milliseconds, so 0.001 reads as 0.99... ms, that is 0, which
means wait forever: a wait meant to end in a millisecond would end only when woken."""


def block_timeout_s(wait_s: float) -> float:
    """`wait_s` as a blocking command's timeout that no Redis reads as 0 (forever)."""
    return max(wait_s, SHORTEST_BLOCK_S)


def keyspace_of(url: str) -> Keyspace:
    """The names postel's keys have at `url`: a cluster's lanes, or one Redis's one lane."""
    return Keyspace(cluster_of(url).lanes) if is_cluster(url) else Keyspace()


def redis_client(url: str) -> Redis:
    """A plain asyncio client for `url` (no arq job helpers). On a cluster, redis-py's
    cluster client, which answers every command postel sends a Redis, each at the shard of
    its keys (named by `keyspace_of(url)`)."""
    if is_cluster(url):
        return cast(Redis, cluster_of(url).client())
    if not is_sentinel(url):
        return server_of(url).client()
    addresses, name, db, username, password = _sentinel_parts(url)
    sentinel = Sentinel(addresses, db=db, username=username, password=password)
    client = sentinel.master_for(name)
    client.connection_pool.connection_kwargs["parser_class"] = OutageReplies
    return client


def refusal(exc: BaseException, url: str | None = None) -> RedisRefused | None:
    """`exc` as the configuration error it is (a wrong password, a permission the Redis user
    lacks, a TLS failure), or None for anything else (an outage among them)."""
    where = f" by {shown_url(url)}" if url else ""
    if isinstance(exc, RedisRefused):
        return exc
    said = str(exc).rstrip(".")
    if isinstance(exc, AuthenticationError | AuthenticationWrongNumberOfArgsError):
        return RedisRefused(
            f"Redis refused the credentials{where}: {said}. Check the user and password in "
            "POSTEL_REDIS_URL (percent-encode @ : / % in them)"
        )
    if isinstance(exc, NoPermissionError):
        return RedisRefused(
            f"the Redis user lacks a permission postel needs{where}: {said}. Give it the ACL "
            "docs/SECURITY.md lists"
        )
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLError | ssl.CertificateError):
            said = str(cause).rstrip(".")
            return RedisRefused(
                f"TLS with Redis failed{where}: {said}. Check the server's certificate names "
                "the host of POSTEL_REDIS_URL and is signed by a CA the system or "
                "?ssl_ca_certs= trusts"
            )
        cause = cause.__cause__ or cause.__context__
    return None
