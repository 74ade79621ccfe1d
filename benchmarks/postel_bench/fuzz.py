"""`postel bench fuzz`: hostile bytes at every HTTP route of the web server.

Every route of the application (infra/web/app.py's ROUTERS, /metrics and /static) gets
`bodies` requests over real HTTP, each carrying one hostile value: a lone surrogate, NaN,
Infinity, a number out of range (1e999) or of 5,000 digits, invalid UTF-8 inside a string,
nesting far past the limit, a huge string, a value of the wrong type, control characters,
cut-off JSON, or an id of the wrong shape. The value goes into the JSON body (a field, a
nested field or the whole body), a form field, a query parameter, a path parameter or a
header, in turn (invalid UTF-8 in a path or query also unencoded, on the socket itself); the
families take turns too, so even a small run meets each of them.

Counted per route: the answers by status class, answers of 500 or more, resets (the
connection closed without an answer) and timeouts; and over the run, the tracebacks the
server logged. A hostile request must get a 4xx (a value that happens to be valid, a 2xx or
3xx): the counts of 500s, resets and tracebacks are the figures, and they must be 0.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_from_bytes, unquote_to_bytes, urlsplit

import click
import httpx
import structlog
from fastapi.routing import APIRoute
from postel.infra.runtime.settings import Settings
from postel.infra.store.redis_server import configured_or_scratch
from postel.infra.web.app import ROUTERS
from postel.infra.web.server import WebServer
from postel.messages.limits import MAX_PAYLOAD_BYTES
from pydantic import BaseModel

log = structlog.get_logger(__name__)

FAMILIES: dict[str, list[bytes]] = {
    "surrogate": [b'"\\ud800"', b'"a\\udfffb"', b'"\\udc00\\ud800"'],
    "nan": [b"NaN", b"-NaN"],
    "infinity": [b"Infinity", b"-Infinity"],
    "huge_number": [b"1e999", b"-1e999", b"1e-999", b"123456789e123456789"],
    "huge_int": [b"9" * 5000, b"-" + b"1" * 4301],
    "bad_utf8": [b'"\xff\xfe"', b'"a\xc3"', b'"\xed\xa0\x80"', b'"\xf4\x90\x80\x80"'],
    "deep": [b"[" * 100 + b"]" * 100, b'{"a":' * 80 + b"1" + b"}" * 80, b"[" * 20_000],
    "huge_string": [b"huge"],  # sized in `_huge`
    "wrong_type": [b"null", b"true", b"0", b"-1", b"1.5", b"[]", b"{}", b'""', b'[{"a": []}]'],
    "control": [b'"\\u0000"', b'"a\\u0000b\\u001b[31m"', b'"\\u202e\\u2066"'],
    "truncated": [b'"abc', b"[1, 2", b'{"a": ', b"tru", b"\x00\x01"],
    "bad_id": [b'"a:b"', b'"a:b:gen:0"', b'"' + b"x" * 101 + b'"', b'"../../etc"', b'"{p1}1-1:x"'],
}
"""Hostile values as JSON text, by family."""

PARAMETER_VALUES: dict[str, list[bytes]] = {
    "surrogate": [b"\xed\xa0\x80", b"a\xed\xbf\xbfb"],
    "nan": [b"NaN", b"nan"],
    "infinity": [b"Infinity", b"-inf"],
    "huge_number": [b"1e999", b"99999999999999999999999-0"],
    "huge_int": [b"9" * 5000],
    "bad_utf8": [b"\xff\xfe", b"a\xc3", b"\xf4\x90\x80\x80"],
    "deep": [b"[" * 2000],
    "huge_string": [b"x" * 6000],
    "wrong_type": [b"", b"-1", b"1.5", b"[]", b"true"],
    "control": [b"\x00", b"a\r\nb", b"\x1b[31m"],
    "truncated": [b"1-", b"-1", b"{p1}", b"%"],
    "bad_id": [b"a:b", b"a:b:gen:0", b"x" * 101, b"../x", b"{p1}1-1:x", b"1-1:x"],
}
"""Hostile values of a query, path or form parameter, as bytes (sent percent-encoded)."""

HEADER_VALUES: list[bytes] = [b"a:b", b"\xff\xfe", b"9" * 5000, b"NaN", b"1-", b"\x01"]
VALID_PATH: dict[str, str] = {"job_id": "job-1", "entry_id": "1-0", "name": "g", "path": "app.js"}
"""A valid value of each path parameter, for a request whose hostile value is elsewhere."""
VALID_FIELDS: dict[str, bytes] = {"prompt": b'"hello"', "job_ids": b'["job-1"]'}
NESTED_SLOTS: list[tuple[str, str]] = [
    ("options", "max_tokens"),
    ("options", "deadline_s"),
    ("arguments", "x"),
    ("ambient", "locale"),
    ("code_site", "function_name"),
]
FORM_FIELDS = ("job", "back", "next", "token", "worker", "error")
"""The dashboard's form fields (templates/)."""
_UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Target:
    """One route and method, and where a request to it can carry a value."""

    method: str
    path: str
    path_params: tuple[str, ...] = ()
    query: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    body: str = "none"
    """`json` (a body model), `raw` (read by the route itself: a form, a graph) or `none`."""
    fields: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def streams(self) -> bool:
        return self.path.endswith("/stream")


def targets() -> list[Target]:
    """Every route of the web application, each of its methods a target."""
    found = [
        Target("GET", "/metrics"),
        Target("GET", "/static/{path}", path_params=("path",)),
    ]
    for router in ROUTERS:
        for route in router.routes:
            assert isinstance(route, APIRoute)
            dependant = route.dependant
            fields: tuple[str, ...] = ()
            body = "none"
            if route.body_field is not None:
                body = "json"
                model = route.body_field.field_info.annotation
                if isinstance(model, type) and issubclass(model, BaseModel):
                    fields = tuple(model.model_fields)
            for method in sorted(route.methods):
                found.append(
                    Target(
                        method,
                        route.path,
                        path_params=tuple(p.alias for p in dependant.path_params),
                        query=tuple(p.alias for p in dependant.query_params),
                        headers=tuple(p.alias.replace("_", "-") for p in dependant.header_params),
                        body=body if body == "json" or method not in _UNSAFE else "raw",
                        fields=fields,
                    )
                )
    return found


@dataclass
class Hostile:
    """One request: method, path with its query, headers and body. A `raw` one is written to
    the socket as it is, its path's bytes not percent-encoded (invalid UTF-8 in the request
    line itself)."""

    family: str
    url: str
    headers: dict[str, bytes] = field(default_factory=dict)
    body: bytes | None = None
    raw: bytes | None = None


def _huge(rng: random.Random) -> bytes:
    size = rng.choice([20_000, 200_000, MAX_PAYLOAD_BYTES + 1])
    return b'"' + b"a" * size + b'"'


def _value(family: str, rng: random.Random) -> bytes:
    if family == "huge_string":
        return _huge(rng)
    return rng.choice(FAMILIES[family])


def _json_body(target: Target, family: str, rng: random.Random) -> bytes:
    value = _value(family, rng)
    where = rng.randrange(4)
    if where == 0:
        return value
    members = {name: VALID_FIELDS[name] for name in target.fields if name in VALID_FIELDS}
    if where == 1 and target.fields:
        members[rng.choice(target.fields)] = value
    elif where == 2 and "options" in target.fields:
        outer, inner = rng.choice(NESTED_SLOTS)
        members[outer] = b'{"' + inner.encode() + b'": ' + value + b"}"
    elif "job_ids" in target.fields:
        members["job_ids"] = b"[" + value + b"]"
    else:
        members[rng.choice(["x", "\u00e9", "job_ids", "prompt"])] = value
    return b"{" + b", ".join(b'"' + k.encode() + b'": ' + v for k, v in members.items()) + b"}"


def _form_body(family: str, rng: random.Random) -> bytes:
    value = rng.choice(PARAMETER_VALUES[family])
    pairs = [(rng.choice(FORM_FIELDS), value) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.2:
        return value  # not a form at all
    return b"&".join(name.encode() + b"=" + quote_from_bytes(v).encode() for name, v in pairs)


def hostile_requests(target: Target, count: int, seed: int = 0) -> Iterator[Hostile]:
    """`count` hostile requests to `target`; the same ones for the same seed."""
    rng = random.Random(seed * 1_000_003 + zlib.crc32(target.name.encode()))
    families = list(FAMILIES)
    for n in range(count):
        family = families[n % len(families)]
        path_values = {
            name: quote_from_bytes(VALID_PATH[name].encode()) for name in target.path_params
        }
        query: list[tuple[str, bytes]] = []
        headers: dict[str, bytes] = {}
        body: bytes | None = None
        places = ["query"] * bool(target.query) + ["path"] * bool(target.path_params)
        places += ["header"] * bool(target.headers) + ["body"] * 2 * (target.body != "none")
        place = rng.choice(places or ["query"])
        raw = family == "bad_utf8" and place in ("path", "query") and n % 2 == 1
        if place == "path":
            name = rng.choice(target.path_params)
            path_values[name] = quote_from_bytes(rng.choice(PARAMETER_VALUES[family]), safe=b"")
        elif place == "header":
            headers[rng.choice(target.headers)] = rng.choice(HEADER_VALUES)
        elif place == "body" and target.body == "json":
            body = _json_body(target, family, rng)
            headers["content-type"] = b"application/json"
        elif place == "body":
            body = _form_body(family, rng)
            headers["content-type"] = b"application/x-www-form-urlencoded"
        else:
            name = rng.choice([*target.query, "x"])
            query.append((name, rng.choice(PARAMETER_VALUES[family])))
        if target.body == "json" and body is None:
            body = b'{"prompt": "hello", "job_ids": ["job-1"]}'
            headers["content-type"] = b"application/json"
        path = target.path.format(**{k: v or "%20" for k, v in path_values.items()})
        if query:
            path += "?" + "&".join(f"{k}={quote_from_bytes(v, safe=b'')}" for k, v in query)
        hostile = Hostile(family, path, headers, body)
        if raw:  # the same request with the path's percent-escapes written as their bytes
            hostile.raw = unquote_to_bytes(path)
        yield hostile


class _Tracebacks(logging.Handler):
    """Counts log records that carry an exception (uvicorn's "Exception in ASGI application"
    is one)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0
        self.first: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            self.count += 1
            if self.first is None:
                self.first = f"{record.getMessage()} ({record.exc_info and record.exc_info[1]!r})"


@dataclass
class RouteCounts:
    sent: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    server_errors: int = 0
    resets: int = 0
    timeouts: int = 0
    examples: list[str] = field(default_factory=list)

    def failed(self, what: str, hostile: Hostile) -> None:
        if len(self.examples) < 3:
            body = (hostile.body or b"")[:120]
            self.examples.append(f"{what}: {hostile.family} {hostile.url[:160]} {body!r}")


async def _answer_raw(base_url: str, target: Target, hostile: Hostile) -> int:
    """The status of `hostile` written to the socket as it is (TransportError: no answer)."""
    where = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(where.hostname, where.port)
    try:
        body = hostile.body or b""
        head = [f"{target.method} ".encode() + (hostile.raw or b"/") + b" HTTP/1.1"]
        head += [f"Host: {where.netloc}".encode(), b"Connection: close"]
        head += [name.encode() + b": " + value for name, value in hostile.headers.items()]
        head += [f"Content-Length: {len(body)}".encode()]
        writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), _TIMEOUT_S)
    except (ConnectionError, OSError) as exc:
        raise httpx.ReadError(str(exc)) from exc
    finally:
        writer.close()
    if not line.startswith(b"HTTP/1.1 "):
        raise httpx.RemoteProtocolError(f"no answer: {line[:60]!r}")
    return int(line.split()[1])


async def _send(
    client: httpx.AsyncClient, target: Target, hostile: Hostile, counts: RouteCounts
) -> None:
    counts.sent += 1
    if hostile.raw is not None:
        try:
            status = await _answer_raw(str(client.base_url), target, hostile)
        except (httpx.TransportError, TimeoutError) as exc:
            counts.resets += 1
            counts.failed(f"reset ({type(exc).__name__})", hostile)
            return
        counts.statuses[f"{status // 100}xx"] += 1
        if status >= 500:
            counts.server_errors += 1
            counts.failed(str(status), hostile)
        return
    try:
        async with client.stream(
            target.method, hostile.url, headers=hostile.headers, content=hostile.body
        ) as answer:
            if not target.streams or answer.status_code != 200:
                await answer.aread()
    except httpx.TimeoutException:
        counts.timeouts += 1
        counts.failed("timeout", hostile)
        return
    except httpx.TransportError as exc:
        counts.resets += 1
        counts.failed(f"reset ({type(exc).__name__})", hostile)
        return
    counts.statuses[f"{answer.status_code // 100}xx"] += 1
    if answer.status_code >= 500:
        counts.server_errors += 1
        counts.failed(str(answer.status_code), hostile)


async def fuzz_server(
    base_url: str, bodies: int, seed: int = 0, connections: int = 8
) -> dict[str, Any]:
    """Send `bodies` hostile requests to every route of the web server at `base_url`; the
    counts per route and in all."""
    tracebacks = _Tracebacks()
    root = logging.getLogger()
    root.addHandler(tracebacks)
    results: dict[str, RouteCounts] = {}
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    gate = asyncio.Semaphore(connections)
    try:
        async with httpx.AsyncClient(
            base_url=base_url, timeout=_TIMEOUT_S, limits=limits
        ) as client:

            async def one(target: Target, hostile: Hostile, counts: RouteCounts) -> None:
                async with gate:
                    await _send(client, target, hostile, counts)

            routes = targets()
            for done, target in enumerate(routes, start=1):
                counts = results.setdefault(target.name, RouteCounts())
                await asyncio.gather(
                    *[one(target, h, counts) for h in hostile_requests(target, bodies, seed)]
                )
                # a full run takes the best part of an hour: one line per route as it ends
                log.info(
                    "route fuzzed",
                    route=target.name,
                    routes_done=f"{done}/{len(routes)}",
                    sent=counts.sent,
                    server_errors=counts.server_errors,
                    resets=counts.resets,
                    tracebacks=tracebacks.count,
                )
    finally:
        root.removeHandler(tracebacks)
    routes = {
        name: {
            "sent": c.sent,
            **dict(sorted(c.statuses.items())),
            "500s": c.server_errors,
            "resets": c.resets,
            "timeouts": c.timeouts,
            "examples": c.examples,
        }
        for name, c in results.items()
    }
    return {
        "bodies_per_route": bodies,
        "routes": routes,
        "sent": sum(c.sent for c in results.values()),
        "500s": sum(c.server_errors for c in results.values()),
        "resets": sum(c.resets for c in results.values()),
        "timeouts": sum(c.timeouts for c in results.values()),
        "tracebacks": tracebacks.count,
        "first_traceback": tracebacks.first,
    }


async def run_fuzz_bench(settings: Settings, bodies: int, seed: int) -> dict[str, Any]:
    """The web server over a scratch Redis (the fuzz writes jobs and graphs), fuzzed."""
    async with configured_or_scratch(None) as url, WebServer(settings, url, "127.0.0.1", 0) as web:
        return await fuzz_server(web.url.rstrip("/"), bodies, seed)


def format_fuzz_bench(figures: dict[str, Any]) -> str:
    lines = [
        f"{'route':<44} {'sent':>7} {'2xx':>6} {'3xx':>6} {'4xx':>6} {'500s':>5} {'resets':>6}"
    ]
    for name, counts in figures["routes"].items():
        lines.append(
            f"{name:<44} {counts['sent']:>7} {counts.get('2xx', 0):>6} {counts.get('3xx', 0):>6}"
            f" {counts.get('4xx', 0):>6} {counts['500s']:>5} {counts['resets']:>6}"
        )
        lines.extend(f"    {example}" for example in counts["examples"])
    lines.append(
        f"{figures['sent']:,} hostile requests, {figures['bodies_per_route']:,} per route: "
        f"{figures['500s']} x 500, {figures['resets']} resets, {figures['timeouts']} timeouts, "
        f"{figures['tracebacks']} tracebacks"
    )
    if figures["first_traceback"]:
        lines.append(f"first traceback: {figures['first_traceback']}")
    return "\n".join(lines)


@click.command("fuzz")
@click.option(
    "--bodies",
    type=click.IntRange(1, 1_000_000),
    default=10_000,
    show_default=True,
    help="Hostile requests per route.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="The same seed, the same requests."
)
@click.option("--json", "as_json", is_flag=True)
def bench_fuzz(bodies: int, seed: int, as_json: bool) -> None:
    """Hostile bytes at every route of the web server (on a scratch Redis): the answers
    per route, and the counts that must be 0: 500s, resets, timeouts and tracebacks. Exit 1 if any
    is not."""
    from postel.infra.cli.support import run_async, settings

    figures = run_async(run_fuzz_bench)(settings(), bodies, seed)
    click.echo(json.dumps(figures, indent=2) if as_json else format_fuzz_bench(figures))
    if figures["500s"] or figures["resets"] or figures["timeouts"] or figures["tracebacks"]:
        raise SystemExit(1)
