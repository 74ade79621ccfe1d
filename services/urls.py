"""URLs as postel shows them, and joined as the endpoint expects.

An endpoint URL may carry secrets: a password in its userinfo (`http://user:secret@host/v1`,
`redis://:secret@host`) or a key in its query (`...?api-key=secret`, some gateways' way).
Everything postel prints or stores (errors, events, results, dead letters, logs, pages, CLI
output) shows a URL through `shown_url`, which keeps scheme, host, port and path only.

The userinfo is everything before the URL's LAST `@`, whatever it holds: a password written
unencoded (`redis://user:pa/ss@host`, `redis://:p@ss:w/rd%x@host`) reads to a URL parser as
part of the host or the path, and would be shown as such. A URL holding an `@` anywhere
after its scheme is therefore shown from after that `@` (a path with an `@` in it shows less
than it could, never a secret), and a userinfo holding `/ ? # @` is refused where a URL is
read (`userinfo_spills`): it cannot mean what was meant.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import unquote, urlsplit, urlunsplit

MIN_SECRET = 4

MODEL_URL_USERINFO = (
    "a model URL carries no user info (user:password@): the endpoint's key goes in "
    "POSTEL_LLM_API_KEY (a stage's own in POSTEL_<STAGE>__LLM_API_KEY), sent as a Bearer token"
)
"""Why a model URL with user info is refused (docs/SECURITY.md, "Model endpoint URLs")."""


class UrlParts(NamedTuple):
    """A URL cut where postel cuts it: `scheme://` (empty without one), the userinfo (all
    before the last `@`; empty without an `@`) and the rest (host, port, path, query)."""

    scheme: str
    userinfo: str
    rest: str


def url_parts(url: str) -> UrlParts:
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    userinfo, at, location = rest.rpartition("@")
    return UrlParts(scheme, userinfo, location) if at else UrlParts(scheme, "", rest)


def has_userinfo(url: str) -> bool:
    """Does `url` hold an `@` after its scheme, i.e. a user name or password?"""
    _, sep, rest = url.partition("://")
    return "@" in (rest if sep else url)


def userinfo_spills(url: str) -> bool:
    """Does the userinfo hold a character that ends it for a URL parser (`/ ? # @`), so that
    it must be percent-encoded to mean what it says?"""
    return any(c in url_parts(url).userinfo for c in "/?#@")


def check_model_url(url: str | None) -> str | None:
    """`url` when it is a model endpoint postel can call; ValueError (saying nothing of the
    URL) when it holds user info: httpx would send it as Basic auth in place of the key."""
    if url is not None and has_userinfo(url):
        raise ValueError(MODEL_URL_USERINFO)
    return url


def shown_url(url: str) -> str:
    """`url` without userinfo, query or fragment: safe to print, log or store."""
    scheme, _, location = url_parts(url)
    for end in "?#":
        location = location.partition(end)[0]
    try:
        urlsplit(f"{scheme or 'x'}://{location}")
    except ValueError:
        # unparseable (a bad IPv6 literal): show nothing of it rather than a secret
        return "<unparseable URL>"
    # written out, not urlunsplit: that drops the `//` of an empty host (unix:///path)
    return f"{scheme}://{location}" if scheme else location


def join_url(base: str, path: str) -> str:
    """`path` appended to `base`'s path, `base`'s query kept after it:
    `http://h/v1?api-key=X` + `/chat/completions` is `http://h/v1/chat/completions?api-key=X`."""
    parts = urlsplit(base)
    joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, joined, parts.query, parts.fragment))


def url_secrets(url: str) -> list[str]:
    """The parts of `url` that `shown_url` leaves out because they may be secret, to scrub
    from text a server sends back: the userinfo with its password, and the query's
    values, each as written and decoded, of MIN_SECRET characters or more (a shorter value
    is no secret, and replacing it would garble the text), longest first (so a scrub
    replaces a secret before any part of it)."""
    userinfo = url_parts(url).userinfo
    password = userinfo.partition(":")[2]
    found = [userinfo, password] if password else []
    query = url_parts(url).rest.partition("#")[0].partition("?")[2]
    for pair in query.split("&"):
        found.append(pair.partition("=")[2])
    decoded = [unquote(value) for value in found]
    return sorted({f for f in [*found, *decoded] if len(f) >= MIN_SECRET}, key=len, reverse=True)
