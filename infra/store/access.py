"""What a Redis user needs to run postel, and the check each process makes at start.

`ACL_RULE` is the minimal ACL (docs/SECURITY.md quotes it): the commands postel
sends (its own and arq's, scripts' calls included), on the keys `postel:*` and `arq:*`, no
Pub/Sub channels. `check_access` runs each of those commands once when a process connects,
on a probe key that holds a string, with arguments the server refuses after its permission
check (a wrong type) or that change nothing else; a NOPERM answer to any of them is a
RedisRefused naming every missing command, so a user short of a permission is told at start,
not by a traceback in the middle of a job.

On a Redis Cluster the user also needs what redis-py's cluster client asks each node for when
it connects (`CLUSTER_COMMANDS`: the slot map, and the command table it reads key positions
from); without them the client reports "Cluster mode is not enabled on this node", so
`check_cluster_access` asks a seed for them first and names what is missing.
"""

from __future__ import annotations

import contextlib
import re
import uuid

from postel.infra.store.connect import REDIS_UNAVAILABLE, RedisRefused
from postel.infra.store.keys import PREFIX
from redis.asyncio import Redis
from redis.exceptions import NoPermissionError, ResponseError

KEY_PATTERNS = (f"{PREFIX}:*", "arq:*")
PROBE_TAG = "{probe}"
"""The probe keys share one hash slot: on a cluster they are checked on the shard holding it."""

# a script's calls are checked against the user's ACL too: the probe script asks the time
_PROBE_SCRIPT = "return redis.call('TIME')"

# command -> the probe's arguments; K is the probe key (holding a string), N a key that does
# not exist, A a key under arq:* that does not exist
_PROBES: dict[str, tuple[str, ...]] = {
    "ping": (),
    "time": (),
    "get": ("K",),
    "set": ("K", "probe", "PX", "60000"),
    "mget": ("K",),
    "incr": ("K",),
    "psetex": ("K", "60000", "probe"),
    "setex": ("K", "60", "probe"),
    "exists": ("K", "A"),
    "del": ("N",),
    "expire": ("K", "60"),
    "pexpire": ("K", "60000"),
    "pttl": ("K",),
    "hset": ("K", "f", "v"),
    "hget": ("K", "f"),
    "hmget": ("K", "f"),
    "hgetall": ("K",),
    "hdel": ("K", "f"),
    "hexists": ("K", "f"),
    "hincrby": ("K", "f", "1"),
    "hincrbyfloat": ("K", "f", "1"),
    "hvals": ("K",),
    "lpush": ("K", "v"),
    "rpush": ("K", "v"),
    "llen": ("K",),
    "lrange": ("K", "0", "0"),
    "ltrim": ("K", "0", "0"),
    "blpop": ("K", "1"),
    "sadd": ("K", "m"),
    "srem": ("K", "m"),
    "smembers": ("K",),
    "sismember": ("K", "m"),
    "scard": ("K",),
    "zadd": ("K", "1", "m"),
    "zrem": ("K", "m"),
    "zcard": ("K",),
    "zscore": ("K", "m"),
    "zincrby": ("K", "1", "m"),
    "zrank": ("K", "m"),
    "zrevrank": ("K", "m"),
    "zrange": ("K", "0", "0"),
    "zrevrange": ("K", "0", "0"),
    "zrangebyscore": ("K", "-inf", "+inf"),
    "zrevrangebyscore": ("K", "+inf", "-inf"),
    "zremrangebyscore": ("K", "-inf", "+inf"),
    "xadd": ("K", "*", "f", "v"),
    "xdel": ("K", "0-1"),
    "xlen": ("K",),
    "xtrim": ("K", "MAXLEN", "0"),
    "xrange": ("K", "-", "+"),
    "xrevrange": ("K", "+", "-"),
    "xread": ("COUNT", "1", "STREAMS", "K", "0-0"),
    "xgroup": ("CREATE", "K", "g", "$"),
    "xreadgroup": ("GROUP", "g", "c", "COUNT", "1", "STREAMS", "K", ">"),
    "xack": ("K", "g", "0-1"),
    "xpending": ("K", "g"),
    "xautoclaim": ("K", "g", "c", "0", "0-0"),
}

# sent apart from the table: SCRIPT LOAD and EVALSHA of the probe script, MULTI/EXEC around
# an EXISTS
COMMANDS: tuple[str, ...] = (*_PROBES, "script|load", "evalsha", "multi", "exec")

ACL_RULE = " ".join(
    [
        "resetkeys",
        *(f"~{pattern}" for pattern in KEY_PATTERNS),
        "resetchannels",
        "-@all",
        *(f"+{command}" for command in COMMANDS),
    ]
)
"""The ACL rules a postel user needs (after `on >PASSWORD`)."""

CLUSTER_COMMANDS: tuple[str, ...] = ("cluster|slots", "command")
CLUSTER_ACL_RULE = " ".join([ACL_RULE, *(f"+{command}" for command in CLUSTER_COMMANDS)])
"""The ACL rules a postel user needs on a Redis Cluster (on every node)."""

# what the cluster client sends, each refused after its permission check or harmless
_CLUSTER_PROBES: tuple[tuple[str, ...], ...] = (
    ("CLUSTER", "SLOTS"),
    ("COMMAND", "COUNT"),
    ("COMMAND", "GETKEYS", "GET", "probe"),
)

_REFUSED_COMMAND = re.compile(r"'([a-z|]+)' command")


def _refused(answer: object) -> str | None:
    """What a NOPERM answer refused: a command, or access to a key."""
    if not isinstance(answer, NoPermissionError):
        return None
    named = _REFUSED_COMMAND.search(str(answer).lower())
    return f"+{named.group(1)}" if named else " ".join(f"~{p}" for p in KEY_PATTERNS)


async def check_access(redis: Redis, *, cluster: bool = False) -> None:
    """Run every command postel needs once; RedisRefused naming those the user may not run
    (and the whole rule it needs, a cluster's if `cluster`)."""
    probe = f"{PREFIX}:{PROBE_TAG}:{uuid.uuid4().hex}"
    names = {"K": probe, "N": f"{probe}:none", "A": f"arq:{PROBE_TAG}:none"}
    async with redis.pipeline(transaction=False) as pipe:
        for command, arguments in _PROBES.items():
            pipe.execute_command(command.upper(), *(names.get(a, a) for a in arguments))
        pipe.execute_command("SCRIPT", "LOAD", _PROBE_SCRIPT)
        answers = list(await pipe.execute(raise_on_error=False))
    loaded = answers[-1]
    if isinstance(loaded, str | bytes):
        sha = loaded if isinstance(loaded, str) else loaded.decode()
        try:
            await redis.evalsha(sha, 0)  # type: ignore[misc]
        except NoPermissionError as exc:
            answers.append(exc)
        except REDIS_UNAVAILABLE:
            raise
        except ResponseError as exc:
            # before Redis 7 a call a script may not make is a plain error; the probe
            # script makes one call, TIME
            if "can't run this command" not in str(exc):
                raise
            answers.append(NoPermissionError("no permissions to run the 'time' command"))
    try:
        async with redis.pipeline(transaction=True) as pipe:
            pipe.exists(probe)
            await pipe.execute()
    except NoPermissionError as exc:
        answers.append(exc)
    with contextlib.suppress(NoPermissionError):
        await redis.delete(probe)
    missing = [found for found in map(_refused, answers) if found is not None]
    _refuse(missing, CLUSTER_ACL_RULE if cluster else ACL_RULE)


async def check_cluster_access(seed: Redis) -> None:
    """Ask cluster node `seed` what redis-py's cluster client will; RedisRefused naming what
    the user may not run."""
    # raw replies: redis-py would read a COMMAND subcommand's reply as the command table
    connection = await seed.connection_pool.get_connection()
    answers: list[object] = []
    try:
        for probe in _CLUSTER_PROBES:
            await connection.send_command(*probe)
            try:
                answers.append(await connection.read_response())
            except REDIS_UNAVAILABLE:
                raise
            except ResponseError as exc:
                answers.append(exc)
    finally:
        await seed.connection_pool.release(connection)
    # the client asks for the whole command table: `+command` is what it needs
    refused = [
        "+command" if name.startswith("+command|") else name
        for name in map(_refused, answers)
        if name is not None
    ]
    _refuse(refused, CLUSTER_ACL_RULE)


def _refuse(missing: list[str], rule: str) -> None:
    """RedisRefused naming the `missing` permissions and the whole `rule`, if any is."""
    if missing:
        raise RedisRefused(
            f"the Redis user lacks permissions postel needs: {' '.join(dict.fromkeys(missing))}"
            f" (NOPERM). Give it the ACL docs/SECURITY.md lists: {rule}"
        )
