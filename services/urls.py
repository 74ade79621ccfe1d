"""URLs as postel shows them, and joined as the endpoint expects.

An endpoint URL may carry secrets: a password in its userinfo (`http://user:secret@host/v1`,
`redis://:secret@host`) or a key in its query (`...?api-key=secret`, some gateways' way).
Everything postel prints or stores (errors, events, results, dead letters, logs, pages, CLI
output) shows a URL through `shown_url`, which keeps scheme, host, port and path only.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit

MIN_SECRET = 4


def shown_url(url: str) -> str:
    """`url` without userinfo, query or fragment: safe to print, log or store."""
    try:
        parts = urlsplit(url)
    except ValueError:
        # unparseable (a bad IPv6 literal): show nothing of it rather than a secret
        return "<unparseable URL>"
    host = parts.netloc.rpartition("@")[2]
    if not parts.scheme:
        return urlunsplit(("", host, parts.path, "", ""))
    # written out, not urlunsplit: that drops the `//` of an empty host (unix:///path)
    return f"{parts.scheme}://{host}{parts.path}"


def join_url(base: str, path: str) -> str:
    """`path` appended to `base`'s path, `base`'s query kept after it:
    `http://h/v1?api-key=X` + `/chat/completions` is `http://h/v1/chat/completions?api-key=X`."""
    parts = urlsplit(base)
    joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, joined, parts.query, parts.fragment))


def url_secrets(url: str) -> list[str]:
    """The parts of `url` that `shown_url` leaves out because they may be secret, to scrub
    from text a server sends back: the userinfo's password and the query's values of
    MIN_SECRET characters or more (a shorter value is no secret, and replacing it would garble
    the text), longest first (so a scrub replaces a secret before any part of it)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    found = [password or ""]
    for pair in parts.query.split("&"):
        value = pair.partition("=")[2]
        found.extend({value, unquote(value)})
    return sorted({f for f in found if len(f) >= MIN_SECRET}, key=len, reverse=True)
