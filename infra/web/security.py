"""The web server's guard, one ASGI middleware in front of every request:

- **loopback by default**: without POSTEL_WEB_TOKEN the server binds loopback only and
  answers only requests addressed to a loopback name (Host 127.0.0.1, localhost, [::1]), so
  a web page elsewhere cannot reach it through DNS rebinding;
- **a token otherwise**: with POSTEL_WEB_TOKEN set (required to bind any other address),
  every request must carry it: `Authorization: Bearer <token>`, or the cookie the login
  form sets (HttpOnly, SameSite=Strict); `?token=<token>` on a page sets that cookie and
  redirects to the page without it. Machine clients (the API, /metrics, /static) get 401
  with `WWW-Authenticate: Bearer` without it; only pages, which people open in a browser,
  redirect to /login;
- **no cross-site writes**: a POST, PUT, PATCH or DELETE whose Origin is another site is
  refused (403), so no page elsewhere can cancel a job through a visitor's browser;
- **bounded bodies**: a request body over MAX_PAYLOAD_BYTES is refused (413) before it is
  read whole, and a JSON body nested deeper than MAX_JSON_DEPTH (422) before it is parsed;
- **strict JSON**: a JSON body that is not UTF-8, or holds NaN, Infinity, a number beyond a
  float's range or a lone surrogate, is refused (422, `strict_json`) before a route sees it:
  such a value would validate and then fail wherever it is written (a job record, an answer);
- **no guessing**: the token is read once (`web_token`): set, it has MIN_TOKEN_CHARS
  characters at least, or nothing starts (an empty one never turns the check off); a client
  address that offers LOGIN_TRIES wrong tokens within LOGIN_WINDOW_S (the login form,
  `?token=`, a bearer or a cookie) gets 429 with Retry-After until the oldest try leaves the
  window, whatever it offers meanwhile.
"""

from __future__ import annotations

import hmac
import json
import math
import re
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from postel.infra.runtime.settings import Settings
from postel.messages.errors import LimitExceeded, Misconfigured
from postel.messages.limits import MAX_PAYLOAD_BYTES, check_json_text
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "postel_token"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_OPEN_PATHS = frozenset({"/login"})
_MACHINE_PREFIXES = ("/api/", "/metrics", "/static/")
TOKEN_SETTING = "POSTEL_WEB_TOKEN"
MIN_TOKEN_CHARS = 16
LOGIN_TRIES = 10
"""Wrong tokens one client address may offer within LOGIN_WINDOW_S."""
LOGIN_WINDOW_S = 60.0
_ADDRESSES_KEPT = 10_000
"""Client addresses whose wrong tries are remembered; past it the longest quiet is forgotten."""


class WebError(Misconfigured, RuntimeError):
    """The web server cannot start (a port in use, an open address without a token, a token
    too short)."""


def web_token(settings: Settings) -> str | None:
    """The token every request must carry, or None when POSTEL_WEB_TOKEN is unset: the one
    reading of the setting. A set token shorter than MIN_TOKEN_CHARS (an empty one too) is
    WebError, so no spelling of the setting turns the check off."""
    if settings.web_token is None:
        return None
    token = settings.web_token.get_secret_value()
    if len(token) < MIN_TOKEN_CHARS:
        raise WebError(
            f"{TOKEN_SETTING} is set but {'empty' if not token else f'{len(token)} characters'}:"
            f" a token needs {MIN_TOKEN_CHARS} characters at least (`openssl rand -hex 16` makes"
            f" one); unset {TOKEN_SETTING} to serve on loopback only"
        )
    return token


class Throttle:
    """Wrong tokens per client address: past LOGIN_TRIES within LOGIN_WINDOW_S, the address
    waits (`wait_s`) until its oldest wrong try leaves the window."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._tries: OrderedDict[str, deque[float]] = OrderedDict()

    def wait_s(self, address: str) -> float:
        tries = self._tries.get(address)
        if tries is None:
            return 0.0
        now = self.clock()
        while tries and tries[0] <= now - LOGIN_WINDOW_S:
            tries.popleft()
        if not tries:
            del self._tries[address]
            return 0.0
        return tries[0] + LOGIN_WINDOW_S - now if len(tries) >= LOGIN_TRIES else 0.0

    def failed(self, address: str) -> None:
        tries = self._tries.setdefault(address, deque(maxlen=LOGIN_TRIES))
        tries.append(self.clock())
        self._tries.move_to_end(address)
        if len(self._tries) > _ADDRESSES_KEPT:
            self._tries.popitem(last=False)


def too_many_tries(wait_s: float) -> Response:
    retry = max(math.ceil(wait_s), 1)
    return JSONResponse(
        {"detail": f"too many wrong tokens from this address; try again in {retry} s"},
        429,
        headers={"Retry-After": str(retry)},
    )


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return client[0] if client else ""


def host_name(value: str) -> str:
    """`127.0.0.1:8040` -> `127.0.0.1`, `[::1]:8040` -> `::1`."""
    return urlsplit(f"//{value}").hostname or ""


def safe_next(target: str | None) -> str:
    """A redirect target on this server only (no `//other.site`)."""
    if target and target.startswith("/") and not target.startswith("//"):
        return target
    return "/"


class Guard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        loopback_only: bool,
        throttle: Throttle | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.loopback_only = loopback_only
        self.throttle = throttle or Throttle()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if scope["method"] in _UNSAFE:
            body = await self._bounded_body(headers, receive)
            if isinstance(body, Response):
                await body(scope, receive, send)
                return
            await self.app(scope, _replay(body, receive), send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: Headers) -> Response | None:
        host = headers.get("host", "")
        if self.loopback_only and host_name(host) not in LOOPBACK_NAMES:
            return JSONResponse(
                {"detail": f"this server answers on loopback only, not for host {host!r}"}, 403
            )
        origin = headers.get("origin")
        if scope["method"] in _UNSAFE and origin and urlsplit(origin).netloc != host:
            return JSONResponse({"detail": f"cross-site request from {origin} refused"}, 403)
        if self.token is None or scope["path"] in _OPEN_PATHS:
            return None
        query = dict(parse_qsl(scope.get("query_string", b"").decode(errors="replace")))
        offered = {
            "query": query.get("token") if scope["method"] == "GET" else None,
            "bearer": _bearer(headers),
            "cookie": _cookie(headers),
        }
        address = client_address(scope)
        if any(offered.values()) and (wait_s := self.throttle.wait_s(address)) > 0:
            return too_many_tries(wait_s)
        if self._right(offered["query"], address):
            rest = urlencode({k: v for k, v in query.items() if k != "token"})
            response = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), 303)
            self.set_cookie(response)
            return response
        if self._right(offered["bearer"], address) or self._right(offered["cookie"], address):
            return None
        refused: Response
        if scope["path"].startswith(_MACHINE_PREFIXES):
            refused = JSONResponse(
                {"detail": "missing or wrong token: send Authorization: Bearer <token>"},
                401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        else:
            target = scope["path"] + (f"?{scope['query_string'].decode()}" if query else "")
            refused = RedirectResponse("/login?" + urlencode({"next": target}), 303)
        if offered["cookie"]:  # a stale cookie would count as a wrong try on every request
            refused.delete_cookie(COOKIE, path="/")
        return refused

    def _right(self, offered: str | None, address: str) -> bool:
        """Whether `offered` is the token; a wrong one (not an absent one) counts against
        the address."""
        if not offered:
            return False
        if self.accepts(offered):
            return True
        self.throttle.failed(address)
        return False

    def login(self, scope: Scope, offered: str | None) -> Response | bool:
        """The login form's check: True for the token; 429 while the client's address is
        throttled; False otherwise (a wrong token counting against the address)."""
        address = client_address(scope)
        if (wait_s := self.throttle.wait_s(address)) > 0:
            return too_many_tries(wait_s)
        return self._right(offered, address)

    def accepts(self, offered: str | None) -> bool:
        if self.token is None or not offered:
            return False
        return hmac.compare_digest(offered.encode(), self.token.encode())

    def set_cookie(self, response: Response) -> None:
        assert self.token is not None
        response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/")

    @staticmethod
    async def _bounded_body(headers: Headers, receive: Receive) -> bytes | Response:
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_PAYLOAD_BYTES:
            return _too_large(int(declared))
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_PAYLOAD_BYTES:
                return _too_large(size)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        kind = headers.get("content-type")
        if body and (kind is None or "json" in kind):
            try:
                check_json_text(body, what="request body")
            except LimitExceeded as exc:
                return _refused_body(str(exc), "limit_exceeded")
            refusal = strict_json_refusal(body, declared=kind is not None)
            if refusal is not None:
                return _refused_body(refusal, "strict_json")
        return body


class _NotStrict(ValueError):
    pass


def _no_constant(name: str) -> None:
    raise _NotStrict(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _NotStrict(f"{text[:40]} is beyond a float's range")
    return number


_ESCAPE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


def _lone_surrogate(body: bytes) -> str | None:
    """The first `\\uXXXX` escape of a surrogate that is not half of a pair (escapes are
    read in order, so an escaped backslash is never taken for one)."""
    high: re.Match[bytes] | None = None
    for escape in _ESCAPE.finditer(body):
        unit = escape.group(1)
        code = int(unit, 16) if unit else None
        if high is not None:
            if code is not None and 0xDC00 <= code <= 0xDFFF and escape.start() == high.end():
                high = None
                continue
            break
        if code is not None and 0xD800 <= code <= 0xDBFF:
            high = escape
        elif code is not None and 0xDC00 <= code <= 0xDFFF:
            return escape.group().decode()
    return high.group().decode() if high is not None else None


def strict_json_refusal(body: bytes, *, declared: bool) -> str | None:
    """Why `body` is not JSON a route may take (see the module's note); None when it is.
    A body not declared JSON is judged only if it parses as JSON: the route reads it
    otherwise (a graph, gzip data)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the body is not UTF-8 (byte {exc.start})" if declared else None
    try:
        json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except _NotStrict as exc:
        return str(exc)
    except (ValueError, RecursionError):
        return None  # not JSON: the route's own answer
    lone = _lone_surrogate(body)
    if lone is not None:
        return f"{lone} is a lone surrogate: no character (a pair of escapes makes one)"
    return None


def _too_large(size: int) -> Response:
    return JSONResponse(
        {"detail": f"request body size limit is {MAX_PAYLOAD_BYTES} bytes; got {size} or more"},
        413,
    )


def _refused_body(message: str, kind: str) -> Response:
    return JSONResponse({"detail": [{"loc": ["body"], "msg": message, "type": kind}]}, 422)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body already read, then whatever the client sends next (its disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def _bearer(headers: Headers) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def _cookie(headers: Headers) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:  # a malformed Cookie header carries no token
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None
