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
  read whole, and a JSON body nested deeper than MAX_JSON_DEPTH (422) before it is parsed.
"""

from __future__ import annotations

import hmac
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from postel.messages.errors import LimitExceeded
from postel.messages.limits import MAX_PAYLOAD_BYTES, check_json_text
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "postel_token"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_OPEN_PATHS = frozenset({"/login"})
_MACHINE_PREFIXES = ("/api/", "/metrics", "/static/")


def host_name(value: str) -> str:
    """`127.0.0.1:8040` -> `127.0.0.1`, `[::1]:8040` -> `::1`."""
    return urlsplit(f"//{value}").hostname or ""


def safe_next(target: str | None) -> str:
    """A redirect target on this server only (no `//other.site`)."""
    if target and target.startswith("/") and not target.startswith("//"):
        return target
    return "/"


class Guard:
    def __init__(self, app: ASGIApp, *, token: str | None, loopback_only: bool) -> None:
        self.app = app
        self.token = token
        self.loopback_only = loopback_only

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
        if scope["method"] == "GET" and self.accepts(query.get("token")):
            rest = urlencode({k: v for k, v in query.items() if k != "token"})
            response = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), 303)
            self.set_cookie(response)
            return response
        if self.accepts(_bearer(headers)) or self.accepts(_cookie(headers)):
            return None
        if scope["path"].startswith(_MACHINE_PREFIXES):
            return JSONResponse(
                {"detail": "missing or wrong token: send Authorization: Bearer <token>"},
                401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        target = scope["path"] + (f"?{scope['query_string'].decode()}" if query else "")
        return RedirectResponse("/login?" + urlencode({"next": target}), 303)

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
        if "json" in headers.get("content-type", ""):
            try:
                check_json_text(body, what="request body")
            except LimitExceeded as exc:
                return JSONResponse(
                    {"detail": [{"loc": ["body"], "msg": str(exc), "type": "limit_exceeded"}]},
                    422,
                )
        return body


def _too_large(size: int) -> Response:
    return JSONResponse(
        {"detail": f"request body size limit is {MAX_PAYLOAD_BYTES} bytes; got {size} or more"},
        413,
    )


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
