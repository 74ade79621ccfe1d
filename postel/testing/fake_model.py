"""A fake OpenAI-compatible endpoint on loopback with faults switchable at run time.

The fault drills (`postel bench chaos`) and the tests point workers at it with
POSTEL_LLM_BASE_URL. `POST /v1/chat/completions` answers from a pluggable responder (a
function of the request, like the `scripted` provider's) unless a fault applies:

| fault | what the endpoint does |
|---|---|
| `ok` | HTTP 200, the responder's text, cut to the request's max_tokens (then `length`) |
| `hang` | never answers: holds the connection until `hang_s` passes or the server stops |
| `429` | HTTP 429 with the plan's `Retry-After` header |
| `500` | HTTP 500 |
| `garbage` | HTTP 200 with a body that is not JSON |
| `wrong_shape` | HTTP 200 with JSON that has no `choices` |
| `endless_cutoff` | HTTP 200, finish_reason `length` and the first half of the responder's text |
| `slow_stream` | HTTP 200, the `ok` answer's body sent piece by piece over `stream_s` |

A client that hangs up on a `slow_stream` answer is counted (`hung_up`, and when: `hung_up_at`).

Which fault a request meets, first match wins:
1. a marker `[fault=NAME]` anywhere in the request's messages (when the plan's `markers` is
   on): a job whose prompt carries it meets that fault on every call its prompt reaches;
2. the plan's `mix`: probabilities per fault drawn from a generator seeded with `seed`, so a
   run's sequence of faults is reproducible (which request draws which depends on arrival
   order);
3. the plan's `mode` (default `ok`).

Control: `POST /_faults` with a JSON object updates the plan (fields left out keep their
value) and returns it; `GET /_faults` returns it; `GET /_stats` returns the request counts
(total, per fault, per minute since start, in flight); `POST /_stats/reset` zeroes them.
From Python: `FakeModel.set_faults(...)`, `.plan`, `.stats()`.

    with FakeModel(responder) as fake:
        fake.set_faults(mix={"500": 0.2, "hang": 0.1}, seed=7)
        ...  # POSTEL_LLM_BASE_URL=fake.base_url
"""

from __future__ import annotations

import json
import random
import re
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, get_args

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from postel.messages.errors import PostelError
from postel.services.llm import LLMRequest
from postel.services.llm.tokens import count_tokens, truncate_to_tokens

log = structlog.get_logger(__name__)

Fault = Literal[
    "ok", "hang", "429", "500", "garbage", "wrong_shape", "endless_cutoff", "slow_stream"
]
FAULTS: tuple[Fault, ...] = get_args(Fault)

FakeResponder = Callable[[LLMRequest], str]
"""The answer to a request: the content of the completion (before any max_tokens cut)."""

MARKER = re.compile(r"\[fault=([a-z0-9_]+)\]")

COMPLETIONS_PATH = "/v1/chat/completions"

_HANG_POLL_S = 0.05
_STREAM_PIECE_S = 0.05


def marker(fault: Fault) -> str:
    """The text that makes every request containing it meet `fault`."""
    return f"[fault={fault}]"


class FaultPlan(BaseModel):
    """Which fault each request meets; see the module docstring for the order of rules."""

    model_config = ConfigDict(extra="forbid")

    mode: Fault = "ok"
    mix: dict[Fault, float] = Field(
        default_factory=dict, description="probability per fault; the rest falls to `mode`"
    )
    seed: int = 0
    retry_after: str = Field(default="1", description="the Retry-After header of a 429")
    hang_s: float | None = Field(
        default=None, gt=0, description="how long a hang holds the connection; None: until stop"
    )
    markers: bool = Field(default=True, description="honour [fault=NAME] in the request text")
    stream_s: float = Field(
        default=30.0, gt=0, description="how long a slow_stream answer takes to send whole"
    )

    @model_validator(mode="after")
    def _mix_is_a_distribution(self) -> FaultPlan:
        if any(p < 0 for p in self.mix.values()) or sum(self.mix.values()) > 1 + 1e-9:
            raise ValueError(f"mix probabilities must be >= 0 and sum to at most 1: {self.mix}")
        return self


class FakeStats(BaseModel):
    total: int = 0
    by_fault: dict[str, int] = Field(default_factory=dict)
    per_minute: list[int] = Field(
        default_factory=list, description="requests in each minute since the server started"
    )
    in_flight: int = 0
    truncated: int = Field(default=0, description="`ok` answers cut at max_tokens")
    responder_errors: int = Field(default=0, description="answered 500: the responder raised")
    control: int = Field(default=0, description="requests to the control API")
    streamed: int = Field(default=0, description="slow_stream answers sent whole")
    hung_up: int = Field(default=0, description="slow_stream answers the client hung up on")
    hung_up_at: list[float] = Field(
        default_factory=list, description="when (time.time()) each hang-up was seen"
    )


class FakeModelError(PostelError, ValueError):
    pass


def parse_mix(spec: str) -> dict[Fault, float]:
    """`"500=0.2,hang=0.1"` -> {"500": 0.2, "hang": 0.1}; a clear error naming what is wrong."""
    mix: dict[Fault, float] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep:
            raise FakeModelError(f"fault mix entry {part!r} is not NAME=FRACTION")
        if name not in FAULTS:
            raise FakeModelError(f"unknown fault {name!r} in {spec!r}; known: {', '.join(FAULTS)}")
        try:
            fraction = float(value)
        except ValueError:
            raise FakeModelError(f"fault {name!r}: {value!r} is not a number") from None
        if not 0 <= fraction <= 1:
            raise FakeModelError(f"fault {name!r}: {fraction} is not between 0 and 1")
        mix[name] = fraction  # type: ignore[index]
    if sum(mix.values()) > 1 + 1e-9:
        raise FakeModelError(f"the fractions of {spec!r} add up to more than 1")
    return mix


class FakeModel:
    """A ThreadingHTTPServer on 127.0.0.1 (a free port unless one is given)."""

    def __init__(
        self, responder: FakeResponder, plan: FaultPlan | None = None, port: int = 0
    ) -> None:
        self._responder = responder
        self._lock = threading.Lock()
        self._plan = plan or FaultPlan()
        self._rng = random.Random(self._plan.seed)
        self._stats = FakeStats()
        self._started = time.monotonic()
        self._stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", port), _handler(self))
        self._thread: threading.Thread | None = None
        self.last_query = ""
        """The query string of the latest completion request (a gateway's `?api-key=`)."""

    @property
    def port(self) -> int:
        port: int = self._httpd.server_address[1]
        return port

    @property
    def base_url(self) -> str:
        """The `/v1` root for POSTEL_LLM_BASE_URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def plan(self) -> FaultPlan:
        with self._lock:
            return self._plan

    def set_faults(self, plan: FaultPlan | None = None, **changes: Any) -> FaultPlan:
        """Replace the plan, or change some of its fields; a new seed restarts the draws."""
        with self._lock:
            merged = {**self._plan.model_dump(), **changes} if plan is None else plan.model_dump()
            new = FaultPlan.model_validate(merged)
            if plan is not None or "seed" in changes:
                self._rng = random.Random(new.seed)
            self._plan = new
            return new

    def stats(self) -> FakeStats:
        with self._lock:
            return self._stats.model_copy(deep=True)

    def reset_stats(self) -> None:
        with self._lock:
            self._stats = FakeStats()
            self._started = time.monotonic()

    def start(self) -> FakeModel:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-model:{self.port}",
            daemon=True,
        )
        self._thread.start()
        log.info("fake model listening", base_url=self.base_url)
        return self

    def stop(self) -> None:
        """Releases hanging requests, stops serving and closes the socket."""
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def choose(self, request_text: str) -> tuple[Fault, FaultPlan]:
        """The fault for one request, counted in the stats."""
        with self._lock:
            plan = self._plan
            fault: Fault | None = None
            if plan.markers:
                found = MARKER.search(request_text)
                if found and found.group(1) in FAULTS:
                    fault = found.group(1)  # type: ignore[assignment]
            if fault is None and plan.mix:
                draw = self._rng.random()
                for name, probability in plan.mix.items():
                    if draw < probability:
                        fault = name
                        break
                    draw -= probability
            fault = fault or plan.mode
            self._count(fault)
            return fault, plan

    def _count(self, fault: Fault) -> None:
        stats = self._stats
        stats.total += 1
        stats.by_fault[fault] = stats.by_fault.get(fault, 0) + 1
        minute = int((time.monotonic() - self._started) // 60)
        stats.per_minute.extend([0] * (minute + 1 - len(stats.per_minute)))
        stats.per_minute[minute] += 1

    def _adjust(self, **counters: int) -> None:
        with self._lock:
            for name, delta in counters.items():
                setattr(self._stats, name, getattr(self._stats, name) + delta)

    def answer(self, request: LLMRequest, fault: Fault) -> tuple[str, str]:
        """The content and finish_reason of an `ok` or `endless_cutoff` completion."""
        text = self._responder(request)
        if not isinstance(text, str):
            raise TypeError(f"the responder returned {type(text).__name__}, not str")
        if fault == "endless_cutoff":
            return text[: max(1, len(text) // 2)], "length"
        cut_text, cut = truncate_to_tokens(text, request.max_tokens)
        if cut:
            self._adjust(truncated=1)
            return cut_text, "length"
        return text, "stop"

    def hang(self, plan: FaultPlan, connection: socket.socket) -> None:
        """Hold the request unanswered; give up when the client hangs up, so abandoned
        hangs do not pile up threads."""
        self._adjust(in_flight=1)
        until = None if plan.hang_s is None else time.monotonic() + plan.hang_s
        try:
            while not self._stopping.wait(_HANG_POLL_S):
                if until is not None and time.monotonic() >= until:
                    return
                if _peer_closed(connection):
                    return
        finally:
            self._adjust(in_flight=-1)

    def stream(self, plan: FaultPlan, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        """Send `body` in small pieces over `plan.stream_s`, seeing a hang-up within a
        piece's interval (counted, with its time)."""
        pieces = max(1, min(len(body), int(plan.stream_s / _STREAM_PIECE_S)))
        size = -(-len(body) // pieces)
        self._adjust(in_flight=1)
        try:
            for start in range(0, len(body), size):
                if self._stopping.wait(_STREAM_PIECE_S) or _peer_closed(handler.connection):
                    raise ConnectionResetError("the client hung up")
                handler.wfile.write(body[start : start + size])
                handler.wfile.flush()
            self._adjust(streamed=1)
        except OSError:
            with self._lock:
                self._stats.hung_up += 1
                self._stats.hung_up_at.append(time.time())
            handler.close_connection = True
        finally:
            self._adjust(in_flight=-1)


def _peer_closed(connection: socket.socket) -> bool:
    readable, _, _ = select.select([connection], [], [], 0)
    if not readable:
        return False
    try:
        return connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a killed worker, a timed-out call) is routine here."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            return
        log.error("fake model request failed", client=client_address, exc_info=True)


def _completion(request: LLMRequest, text: str, finish_reason: str) -> dict[str, Any]:
    prompt_tokens = count_tokens(request.prompt_text())
    completion_tokens = count_tokens(text)
    return {
        "id": f"fake-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model or "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _handler(fake: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints do

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            payload = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _body(self) -> Any:
            length = int(self.headers.get("content-length") or 0)
            return json.loads(self.rfile.read(length) or b"{}")

        def do_GET(self) -> None:
            fake._adjust(control=1)
            if self.path == "/_stats":
                self._reply(200, fake.stats().model_dump())
            elif self.path == "/_faults":
                self._reply(200, fake.plan.model_dump())
            else:
                self._reply(404, {"error": {"message": f"no such path {self.path}"}})

        def do_POST(self) -> None:
            path, _, query = self.path.partition("?")
            if path == COMPLETIONS_PATH:
                with fake._lock:
                    fake.last_query = query
                self._complete()
                return
            fake._adjust(control=1)
            try:
                if self.path == "/_faults":
                    changes = self._body()
                    if not isinstance(changes, dict):
                        raise FakeModelError("POST /_faults takes a JSON object")
                    self._reply(200, fake.set_faults(**changes).model_dump())
                elif self.path == "/_stats/reset":
                    fake.reset_stats()
                    self._reply(200, fake.stats().model_dump())
                else:
                    self._reply(404, {"error": {"message": f"no such path {self.path}"}})
            except (ValueError, ValidationError) as exc:  # JSONDecodeError too
                self._reply(400, {"error": {"message": f"bad fault plan: {exc}"}})

        def _complete(self) -> None:
            try:
                body = self._body()
                request = LLMRequest.model_validate(
                    {k: body[k] for k in ("messages", "max_tokens", "model") if k in body}
                )
            except (ValueError, ValidationError, TypeError) as exc:
                self._reply(400, {"error": {"message": f"not a chat completion request: {exc}"}})
                return
            fault, plan = fake.choose(request.prompt_text())
            if fault == "hang":
                fake.hang(plan, self.connection)
                self.close_connection = True
                return
            if fault == "429":
                error = {"error": {"message": "rate limited (fake)", "type": "rate_limit"}}
                self._reply(429, error, {"Retry-After": plan.retry_after})
            elif fault == "500":
                self._reply(500, {"error": {"message": "internal error (fake)"}})
            elif fault == "garbage":
                self._reply(200, b"<html>502 Bad Gateway</html> not json {")
            elif fault == "wrong_shape":
                self._reply(200, {"id": "fake", "object": "chat.completion", "data": []})
            else:
                try:
                    text, finish_reason = fake.answer(request, fault)
                except Exception as exc:  # a responder's bug must show, not kill the thread
                    log.exception("fake model responder failed")
                    fake._adjust(responder_errors=1)
                    self._reply(500, {"error": {"message": f"responder failed: {exc!r}"}})
                    return
                completion = _completion(request, text, finish_reason)
                if fault != "slow_stream":
                    self._reply(200, completion)
                    return
                body = json.dumps(completion).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.flush()
                fake.stream(plan, self, body)

    return Handler
