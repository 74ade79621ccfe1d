"""Where each value starts and whether it was closed, in JSON that may be cut off.

pydantic_core's partial parser gives the values of a cut response but neither their offsets
nor which of them were closed; the cut-off analysis needs both (the cut-off element is shown
as the raw text from its opening brace, and a cut number must never count as delivered). This
module only locates structure; values always come from the real parsers."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Literal

SpanKind = Literal["object", "array", "string", "scalar"]

_STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*', re.DOTALL)
_SCALAR_END = re.compile(r"[\s,\]}:]")
_WHITESPACE = " \t\r\n"


@dataclass(slots=True)
class Span:
    kind: SpanKind
    start: int
    end: int | None = None  # offset just past the value; None when the text stopped first
    children: list[Span] = field(default_factory=list)
    keys: list[str | None] = field(default_factory=list)  # member names, parallel to children

    @property
    def closed(self) -> bool:
        return self.end is not None

    @property
    def closed_children(self) -> int:
        """How many children were closed; they always form a prefix of `children`."""
        return sum(1 for child in self.children if child.closed)

    def member(self, key: str) -> Span | None:
        for name, child in zip(self.keys, self.children, strict=True):
            if name == key:
                return child
        return None


def _string_end(text: str, quote: int) -> int | None:
    body_end = _STRING_BODY.match(text, quote + 1).end()  # type: ignore[union-attr]
    return body_end + 1 if body_end < len(text) and text[body_end] == '"' else None


def _key_name(raw: str) -> str:
    try:
        return str(json.loads(raw))
    except ValueError:  # a malformed escape: the raw name is still the best guess
        return raw[1:-1]


def scan(text: str, start: int) -> Span | None:
    """The span tree of the JSON value starting at `start`, as far as `text` goes.

    Lenient on purpose: stray characters are skipped, because the caller only needs offsets
    and the values are parsed by pydantic_core / json afterwards."""
    root: Span | None = None
    stack: list[Span] = []
    pending_key: list[str | None] = []  # per open object: the member name awaiting its value
    expect_key: list[bool] = []  # per open object: whether the next string is a member name
    index = start
    size = len(text)

    def attach(span: Span) -> None:
        nonlocal root
        if not stack:
            root = span
            return
        parent = stack[-1]
        parent.children.append(span)
        parent.keys.append(pending_key[-1] if parent.kind == "object" else None)

    while index < size:
        char = text[index]
        if char in _WHITESPACE or char == ":":
            index += 1
            continue
        top = stack[-1] if stack else None
        if char in "}]":
            if top is None:
                break
            top.end = index + 1
            stack.pop()
            if top.kind == "object":
                pending_key.pop()
                expect_key.pop()
            if not stack:
                return root
            index += 1
            continue
        if char == ",":
            if top is not None and top.kind == "object":
                expect_key[-1] = True
            index += 1
            continue
        if top is not None and top.kind == "object" and expect_key[-1]:
            if char != '"':
                index += 1
                continue
            end = _string_end(text, index)
            if end is None:
                return root
            pending_key[-1] = _key_name(text[index:end])
            expect_key[-1] = False
            index = end
            continue
        if char in "{[":
            span = Span("object" if char == "{" else "array", index)
            attach(span)
            stack.append(span)
            if char == "{":
                pending_key.append(None)
                expect_key.append(True)
            index += 1
            continue
        if char == '"':
            string_end = _string_end(text, index)
            attach(Span("string", index, string_end))
            if string_end is None or not stack:
                return root
            index = string_end
            continue
        # A number or literal is only known whole once a delimiter follows it.
        found = _SCALAR_END.search(text, index)
        scalar_end = found.start() if found else None
        attach(Span("scalar", index, scalar_end))
        if scalar_end is None or not stack:
            return root
        index = scalar_end
    return root
