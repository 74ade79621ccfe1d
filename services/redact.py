"""Secrets out of text that came from outside: what an endpoint sends back may echo the
credential it was sent (an error quoting the request's headers, an answer repeating them).

`Redactor(secrets)` replaces, in any text:
- each secret as written (longest first, so a secret goes before any part of it);
- each secret's base64 forms, standard and URL-safe, at the three alignments it can take
  inside a longer encoded text (`Basic dXNlcjpwdw==` holds `user:pw` at one of them);
- the value of any `Authorization` (or `Proxy-Authorization`) header written as
  `name: value` or `"name": "value"`, whatever credential it holds.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable

MASK = "**********"
MIN_ENCODED = 6  # a shorter base64 run could be anyone's text

_AUTHORIZATION = re.compile(
    r"""(?ix)
    (\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?)   # the header's name and separator
    ((?:[a-z][\w.-]*[ \t]+)?[^\s"',;}\]]+)             # [scheme] credential
    """
)


def encoded_forms(secret: str) -> set[str]:
    """The base64 text every encoding of a text holding `secret` contains: for each of the
    three offsets the secret can start at, the characters made of its bits alone."""
    raw = secret.encode()
    forms: set[str] = set()
    for offset in range(3):
        first = -(-8 * offset // 6)  # the first character with no bit before the secret
        last = 8 * (offset + len(raw)) // 6  # past the last with no bit after it
        padded = bytes(offset) + raw
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            form = encode(padded).decode()[first:last]
            if len(form) >= MIN_ENCODED:
                forms.add(form)
    return forms


class Redactor:
    """Replaces `secrets` (and their base64 forms) and any Authorization value with MASK."""

    def __init__(self, secrets: Iterable[str]) -> None:
        written = {s for s in secrets if s}
        every = written | {form for s in written for form in encoded_forms(s)}
        self._secrets = sorted(every, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return _AUTHORIZATION.sub(lambda found: found.group(1) + MASK, text)
