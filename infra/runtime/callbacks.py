"""Signed completion callbacks: a job whose request names `options.callback_url` has its
outcome POSTed there once it ends, signed per the Standard Webhooks spec, at least once.

- **Due.** The script that finishes a job (the commit's `CALLBACK_IF_ASKED`,
  infra/store/commit.py; the cancel script, infra/runtime/cancel.py) puts the job in its
  lane's callbacks set (`Keyspace.callbacks`, scored by when the next attempt is due) and
  pushes a token on the lane's wake-up list, in the same step as the job's end.
- **Sending.** A sender per lane (`CallbackSender`, in the processes that run ingress) sleeps
  in BLPOP on that list, or until the earliest retry is due, then claims the due jobs in one
  script (each claim moves its job `CLAIM_S` ahead, so a sender that dies mid-attempt leaves
  it to another) and POSTs each job's outcome: `{"type": "job.completed"|"job.failed",
  "timestamp", "data": {job_id, status, failure, error, result, tokens}}` with the headers
  `webhook-id` (`msg_<job id>`, the same on every attempt: a receiver deduplicates by it),
  `webhook-timestamp` and `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of
  `id.timestamp.body` under POSTEL_CALLBACK_SECRET, `whsec_...`).
- **Retries.** A 2xx answer settles it (`callback_sent`). Any other answer, or none within
  POSTEL_CALLBACK_TIMEOUT_S, is a `callback_failed` event and a retry after `backoff_s`
  (0.5 s doubling, at most 5 min) until POSTEL_CALLBACK_GIVE_UP_S has passed since the first
  attempt; then the callback is a dead letter (source `callback`,
  `callback_dead_lettered`), which `postel dead redrive` makes due again. Every attempt is an
  event on the job.
- **Destinations.** Only http(s); a host that is or resolves to a loopback, private,
  link-local, multicast, reserved or unspecified address is refused (a dead letter at once)
  unless POSTEL_CALLBACK_ALLOW names the host or a network holding the address (SSRF).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import ipaddress
import json
import socket
import time
from urllib.parse import urlsplit

import httpx
import structlog
from postel.infra.runtime.actor import Runtime
from postel.infra.store.connect import REDIS_UNAVAILABLE, block_timeout_s
from postel.infra.store.deadletter import CALLBACK_SOURCE, dead_letter
from postel.infra.store.events import Event
from postel.infra.store.jobs import JobNotFound, JobRecord
from postel.infra.store.outage import RideOut
from postel.infra.store.scripts import LuaScript
from postel.messages import utc_now
from postel.messages.errors import Refused

log = structlog.get_logger(__name__)

CLAIM_S = 60.0
"""An attempt in progress holds its job this long; a sender that dies mid-attempt leaves it
to be tried again then."""
CLAIM_COUNT = 32
SENDERS_AT_ONCE = 32
IDLE_WAIT_S = 1.0
MOST_BACKOFF_S = 300.0


def backoff_s(attempt: int) -> float:
    """The wait before attempt `attempt + 1`: 0.5 s doubling, at most 5 minutes."""
    return min(0.5 * 2 ** (attempt - 1), MOST_BACKOFF_S)


def webhook_id(job_id: str) -> str:
    """The `webhook-id` of a job's callback: the same on every attempt."""
    return f"msg_{job_id}"


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """Standard Webhooks' `webhook-signature`: `v1,` and the base64 HMAC-SHA256 of
    `id.timestamp.body` under the secret's key (`whsec_` and base64)."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


class Refusal(Refused):
    """A destination postel will not call (or cannot sign for)."""


def _allowed(
    host: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address, allow: list[str]
) -> bool:
    for entry in allow:
        if entry == host:
            return True
        try:
            if address in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


async def check_destination(url: str, allow: list[str]) -> None:
    """Refuse (Refusal) a URL that is not http(s), or whose host is or resolves to an address
    inside the network (loopback, private, link-local...) not allow-listed."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refusal(f"{url!r} is not an http(s) URL with a host")
    host = parts.hostname
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise Refusal(f"{host!r} does not resolve: {exc}") from exc
    for *_, sockaddr in found:
        address = ipaddress.ip_address(sockaddr[0])
        inside = (
            address.is_loopback
            or address.is_private
            or address.is_link_local
            or address.is_multicast
            or address.is_reserved
            or address.is_unspecified
        )
        if inside and not _allowed(host, address, allow):
            raise Refusal(
                f"{host} is {address}, inside the network; allow it with POSTEL_CALLBACK_ALLOW"
            )


def body_of(record: JobRecord) -> bytes:
    """The callback's body for a finished job."""
    data = {
        "job_id": record.job_id,
        "status": record.status,
        "failure": record.failure,
        "error": record.error,
        "result": record.result,
        "llm_calls": record.llm_calls,
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
    }
    event = {"type": f"job.{record.status}", "timestamp": utc_now().isoformat(), "data": data}
    return json.dumps(event, separators=(",", ":")).encode()


# KEYS: the lane's callbacks set. ARGV: how many to claim, how long a claim holds (ms).
# Returns the due jobs claimed, then the score of the earliest one not yet due ('' if none).
_CLAIM = LuaScript(
    """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, ARGV[1])
for _, job_id in ipairs(due) do
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), job_id)
end
local next_due = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {due, next_due[2] or ''}
"""
)


# KEYS: the lane's callbacks set, its wake-up list. ARGV: the job, when its retry is due (ms).
# The retry is due then, and the sender wakes to wait for it rather than for what its last
# claim saw (the attempt's own claim, CLAIM_S away).
_RETRY = LuaScript(
    """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  redis.call('LPUSH', KEYS[2], '1')
  redis.call('LTRIM', KEYS[2], 0, 0)
end
return 1
"""
)


class CallbackSender:
    """Delivers the callbacks of one lane (module docstring)."""

    def __init__(self, runtime: Runtime, lane: str, client: httpx.AsyncClient | None = None):
        self.runtime = runtime
        self.lane = lane
        self.keyspace = runtime.keyspace
        self.settings = runtime.settings
        self.client = client or httpx.AsyncClient(follow_redirects=False)
        self._sending = asyncio.Semaphore(SENDERS_AT_ONCE)
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Send until cancelled, riding out Redis outages."""
        reconnect = RideOut(f"callbacks {self.lane or 'sender'}", self.settings.redis_give_up_s)
        wait_s = 0.0
        try:
            while True:
                try:
                    wait_s = await self.run_once(wait_s)
                    reconnect.succeeded()
                except REDIS_UNAVAILABLE as exc:
                    wait_s = 0.0
                    await reconnect.failed(exc)
                except Exception:
                    # whatever one round holds must not stop the process's workers with it
                    log.exception("the callback sender's round failed; it goes on")
                    wait_s = IDLE_WAIT_S
        finally:
            for task in self._tasks:
                task.cancel()
            await self.client.aclose()

    async def run_once(self, wait_s: float) -> float:
        """Wait up to `wait_s` for a wake-up, claim what is due and start sending it; how
        long the next wait may be."""
        if wait_s > 0:
            await self.runtime.redis.blpop(
                [self.keyspace.callbacks_wake(self.lane)], block_timeout_s(wait_s)
            )
        due, next_due = await _CLAIM(
            self.runtime.redis,
            [self.keyspace.callbacks(self.lane)],
            [CLAIM_COUNT, int(CLAIM_S * 1000)],
        )
        for raw in due:
            job_id = raw.decode() if isinstance(raw, bytes) else str(raw)
            task = asyncio.create_task(self._send_bounded(job_id))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if len(due) == CLAIM_COUNT:
            return 0.0
        if next_due:
            return max(0.001, min(IDLE_WAIT_S, float(next_due) / 1000 - time.time()))
        return IDLE_WAIT_S

    async def _send_bounded(self, job_id: str) -> None:
        async with self._sending:
            try:
                await self.send(job_id)
            except REDIS_UNAVAILABLE as exc:  # the claim lapses and another attempt follows
                log.warning("lost redis while sending a callback", job_id=job_id, error=str(exc))
            except Exception:  # its claim lapses too: the callback is tried again then
                log.exception("a callback attempt failed", job_id=job_id)

    async def send(self, job_id: str) -> None:
        """One attempt at job `job_id`'s callback, and what follows from its answer."""
        redis = self.runtime.redis
        key = self.keyspace.job(job_id)
        try:
            record = await self.runtime.jobs.get(job_id)
        except JobNotFound:
            await redis.zrem(self.keyspace.callbacks(self.lane), job_id)
            return
        if record.callback_url is None or record.callback_status is not None:
            await redis.zrem(self.keyspace.callbacks(self.lane), job_id)
            return
        attempt = int(await redis.hincrby(key, "callback_attempts", 1))
        now_ms = int(time.time() * 1000)
        await redis.hsetnx(key, "callback_first_ms", now_ms)
        first_ms = int(await redis.hget(key, "callback_first_ms") or now_ms)
        secret = self.settings.callback_secret
        error: str | None = None
        try:
            if secret is None:
                raise Refusal("no POSTEL_CALLBACK_SECRET is set: callbacks cannot be signed")
            await check_destination(record.callback_url, self.settings.callback_allow)
        except Refusal as refused:
            await self._dead(record, attempt, str(refused))
            return
        body = body_of(record)
        timestamp = int(time.time())
        message_id = webhook_id(job_id)
        headers = {
            "content-type": "application/json",
            "webhook-id": message_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature(secret.get_secret_value(), message_id, timestamp, body),
        }
        started = time.perf_counter()
        try:
            answer = await self.client.post(
                record.callback_url,
                content=body,
                headers=headers,
                timeout=self.settings.callback_timeout_s,
            )
            if 200 <= answer.status_code < 300:
                await self._settled(record, attempt, "delivered", "callback_sent", started)
                return
            error = f"HTTP {answer.status_code}"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"
        await self._record(record, "callback_failed", attempt, error, started)
        if now_ms - first_ms >= self.settings.callback_give_up_s * 1000:
            await self._dead(record, attempt, f"gave up after {attempt} attempts: {error}")
            return
        due_ms = int(time.time() * 1000 + backoff_s(attempt) * 1000)
        await _RETRY(
            redis,
            [self.keyspace.callbacks(self.lane), self.keyspace.callbacks_wake(self.lane)],
            [job_id, due_ms],
        )

    async def _settled(
        self,
        record: JobRecord,
        attempt: int,
        status: str,
        event: str,
        started: float,
        error: str = "",
    ) -> None:
        redis = self.runtime.redis
        await redis.hset(self.keyspace.job(record.job_id), "callback_status", status)
        await redis.zrem(self.keyspace.callbacks(self.lane), record.job_id)
        await self._record(record, event, attempt, error, started)

    async def _dead(self, record: JobRecord, attempt: int, error: str) -> None:
        log.warning("a callback is dead-lettered", job_id=record.job_id, error=error)
        await dead_letter(
            self.runtime.redis,
            self.keyspace,
            source=CALLBACK_SOURCE,
            error=error,
            payload={"job_id": record.job_id, "callback_url": record.callback_url},
            job_id=record.job_id,
            attempt=attempt,
        )
        await self._settled(record, attempt, "dead_lettered", "callback_dead_lettered", 0.0, error)

    async def _record(
        self, record: JobRecord, status: str, attempt: int, error: str, started: float
    ) -> None:
        took_ms = (time.perf_counter() - started) * 1000 if started else 0.0
        event = Event.model_validate(
            {
                "job_id": record.job_id,
                "message_id": webhook_id(record.job_id),
                "type": "callback",
                "worker": CALLBACK_SOURCE,
                "stage": "done",
                "status": status,
                "attempt": attempt,
                "duration_ms": took_ms,
                "error": error,
            }
        )
        await self.runtime.events.record(event)
