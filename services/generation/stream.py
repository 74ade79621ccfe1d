"""A JSON reader that stops anywhere and goes on later with the next piece of the text.

The generator's document arrives in pieces: a model stopped for length is asked to go on,
and its next answer is the continuation of the same JSON text (`merge` states the contract).
`JsonStream` holds where the text stopped: the stack of open objects and arrays with their
closed members and items already decoded, and the value being written at the cut (a
string's characters so far, a member name or a number or literal as raw text). `feed` reads
the next piece from there. Only the new piece is read, never what came before, so a piece
costs the same however long the document grows.

Strings join exactly across pieces: the decoded characters are kept, and the raw end of a
piece that does not make a whole character yet (a cut escape such as `\\u00` or `\\`, or
the first half of a surrogate pair `\\ud83d`) is kept raw until the next piece completes it.
Decoding is the standard JSON decoder's; the reader only finds where values start and end.

Reading is strict JSON. At the first character that cannot continue the text `feed` stops:
everything before it stands, and the next piece is read from there."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

TAIL_CHARS = 600  # how much of the text read so far is kept to be shown to the model

Expect = Literal["value", "value_or_end", "key", "key_or_end", "colon", "comma_or_end"]

_WHITESPACE = re.compile(r"[ \t\r\n]*")
# Whole units of a string body: plain characters or complete escapes.
_STRING_UNITS = re.compile(r'(?:[^"\\\x00-\x1f]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*')
_CUT_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?")
_HIGH_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}")
_SCALAR_CHARS = re.compile(r"[-+.0-9a-zA-Z]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_START = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:(?<=[0-9])[eE][+-]?[0-9]*)?)?")
_LITERALS: dict[str, bool | None] = {"true": True, "false": False, "null": None}
_SCALAR_FIRST = "-0123456789tfn"


# Frame and Leaf are plain dataclasses (pydantic validates and serialises them as fields of
# JsonStream): the reader sets their attributes once per value, where a model's checked
# assignment would cost more than the reading.
@dataclass(slots=True)
class Frame:
    """An open object or array."""

    kind: Literal["object", "array"]
    start: int  # offset of its opening bracket in the whole text
    expect: Expect
    key: str | None = None  # its member name, when it is the value of an object member
    items: list[Any] = field(default_factory=list)  # array: closed items still held
    dropped: int = 0  # array: closed items taken out by the reader's user (`take_items`)
    members: dict[str, Any] = field(default_factory=dict)  # object: closed members
    member: str | None = None  # object: the member whose value comes next

    @property
    def next_index(self) -> int:
        """The index the array's next item has."""
        return self.dropped + len(self.items)


@dataclass(slots=True)
class Leaf:
    """The string, member name, number or literal being written at the cut."""

    kind: Literal["string", "key", "scalar"]
    start: int  # offset of its first character (the quote of a string)
    text: str = ""  # string: its characters decoded so far
    raw: str = ""  # not decoded yet: a string's cut escape, a member name or scalar so far


class JsonStream(BaseModel):
    offset: int = 0  # characters read so far, over all pieces
    started: bool = False
    frames: list[Frame] = Field(default_factory=list)
    leaf: Leaf | None = None
    done: bool = False  # the root value closed; nothing after it is read
    value: Any = None  # the root value, once done
    tail: str = ""  # the last TAIL_CHARS characters read

    def take_items(self, frame: Frame) -> list[Any]:
        """Take the closed items out of an open array of this stream (they were delivered),
        keeping its item numbering."""
        taken, frame.items = frame.items, []
        frame.dropped += len(taken)
        return taken


@dataclass(frozen=True, slots=True)
class FeedResult:
    accepted: int  # characters of the piece read
    progress: int  # of those, the ones that are not whitespace between values
    error: str | None = None  # why reading stopped before the end of the piece


def feed(stream: JsonStream, text: str) -> FeedResult:
    """Read `text` as the continuation of `stream` (changed in place)."""
    return _Reader(stream, text).run()


def _ends_in_high_surrogate(units: str) -> bool:
    """Whether `units` (whole string units) ends with the escape of a high surrogate, whose
    low half may still come: it is decoded only with it, or a pair would split in two."""
    start = len(units) - 6
    if start < 0 or not _HIGH_SURROGATE_ESCAPE.fullmatch(units, start):
        return False
    before = units[:start]
    return (len(before) - len(before.rstrip("\\"))) % 2 == 0


def _decode(body: str) -> str:
    decoded: str = json.loads(f'"{body}"')
    return decoded


def _scalar_start(token: str) -> bool:
    return bool(_NUMBER_START.fullmatch(token)) or any(
        literal.startswith(token) for literal in _LITERALS
    )


class _Reader:
    """Reads one piece; works on its own copies of the stream's scalars and writes them
    back at the end (assignments to a pydantic model are checked, and slow)."""

    def __init__(self, stream: JsonStream, text: str) -> None:
        self.stream = stream
        self.text = text
        self.pos = 0
        self.blank = 0
        self.error: str | None = None
        self.offset = stream.offset
        self.frames = stream.frames
        self.leaf = stream.leaf
        self.started = stream.started
        self.done = stream.done
        self.value = stream.value

    def run(self) -> FeedResult:
        size = len(self.text)
        while self.pos < size and not self.done and self.error is None:
            if self.leaf is None:
                self._token()
            elif self.leaf.kind == "scalar":
                self._scalar()
            else:
                self._string()
        accepted = self.pos
        stream = self.stream
        stream.offset = self.offset + accepted
        stream.leaf = self.leaf
        stream.started = self.started
        stream.done = self.done
        stream.value = self.value
        stream.tail = (stream.tail + self.text[:accepted])[-TAIL_CHARS:]
        return FeedResult(accepted=accepted, progress=accepted - self.blank, error=self.error)

    # -- between values ------------------------------------------------------------------

    def _token(self) -> None:
        skipped = _WHITESPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
        self.blank += skipped - self.pos
        self.pos = skipped
        if self.pos == len(self.text):
            return
        char = self.text[self.pos]
        frames = self.frames
        top = frames[-1] if frames else None
        expect: Expect = top.expect if top is not None else "value"
        if expect in ("value", "value_or_end"):
            if char == "]" and expect == "value_or_end":
                self._close()
            elif char in "{[":
                self._open(char)
            elif char == '"':
                self._begin("string")
            elif char in _SCALAR_FIRST:
                self._begin("scalar")
            else:
                self._fail(f"expected a value, found {char!r}")
        elif expect in ("key", "key_or_end"):
            if char == '"':
                self._begin("key")
            elif char == "}" and expect == "key_or_end":
                self._close()
            else:
                self._fail(f"expected a member name, found {char!r}")
        elif expect == "colon":
            if char != ":":
                self._fail(f"expected ':', found {char!r}")
                return
            assert top is not None
            top.expect = "value"
            self.pos += 1
        else:
            assert top is not None
            closing = "]" if top.kind == "array" else "}"
            if char == ",":
                top.expect = "value" if top.kind == "array" else "key"
                self.pos += 1
            elif char == closing:
                self._close()
            else:
                self._fail(f"expected ',' or {closing!r}, found {char!r}")

    def _open(self, char: str) -> None:
        frames = self.frames
        parent = frames[-1] if frames else None
        is_object = char == "{"
        frames.append(
            Frame(
                kind="object" if is_object else "array",
                key=parent.member if parent is not None and parent.kind == "object" else None,
                start=self.offset + self.pos,
                expect="key_or_end" if is_object else "value_or_end",
            )
        )
        self.started = True
        self.pos += 1

    def _close(self) -> None:
        frame = self.frames.pop()
        self.pos += 1
        self._attach(frame.members if frame.kind == "object" else frame.items)

    def _attach(self, value: Any) -> None:
        frames = self.frames
        if not frames:
            self.done = True
            self.value = value
            return
        top = frames[-1]
        if top.kind == "array":
            top.items.append(value)
        else:
            assert top.member is not None
            top.members[top.member] = value
            top.member = None
        top.expect = "comma_or_end"

    def _begin(self, kind: Literal["string", "key", "scalar"]) -> None:
        self.leaf = Leaf(kind=kind, start=self.offset + self.pos)
        self.started = True
        if kind != "scalar":
            self.pos += 1  # the opening quote

    def _fail(self, why: str) -> None:
        self.error = f"{why} at character {self.offset + self.pos}"

    def _source(self, held: str) -> tuple[str, int, int]:
        """The text to scan for the leaf, its start, and how to map its offsets back to the
        piece (`piece offset = source offset + shift`). What the leaf held from the last
        piece is scanned again with the new text, so a cut escape completes."""
        if not held:
            return self.text, self.pos, 0
        return held + self.text[self.pos :], 0, self.pos - len(held)

    # -- strings and member names --------------------------------------------------------

    def _string(self) -> None:
        leaf = self.leaf
        assert leaf is not None
        source, start, shift = self._source(leaf.raw)
        end = _STRING_UNITS.match(source, start).end()  # type: ignore[union-attr]
        if end < len(source) and source[end] == '"':
            self._end_string(source[start:end])
            self.pos = end + 1 + shift
            return
        if end == len(source) or _CUT_ESCAPE.fullmatch(source, end):
            self._keep(source[start:], end - start)
            self.pos = len(self.text)
            return
        if end + shift >= self.pos:
            self._keep(source[start:end], end - start)
            self.pos = end + shift
        self._fail("invalid escape or control character in a string")

    def _end_string(self, body: str) -> None:
        leaf = self.leaf
        assert leaf is not None
        self.leaf = None
        if leaf.kind == "key":
            top = self.frames[-1]
            top.member = _decode(body)
            top.expect = "colon"
        else:
            self._attach(leaf.text + _decode(body))

    def _keep(self, body: str, units_end: int) -> None:
        """The piece stops inside the string: decode what makes whole characters."""
        leaf = self.leaf
        assert leaf is not None
        if leaf.kind == "key":
            leaf.raw = body  # short: decoded whole when it closes
            return
        if _ends_in_high_surrogate(body[:units_end]):
            units_end -= 6
        leaf.text += _decode(body[:units_end])
        leaf.raw = body[units_end:]

    # -- numbers and literals ------------------------------------------------------------

    def _scalar(self) -> None:
        leaf = self.leaf
        assert leaf is not None
        source, start, shift = self._source(leaf.raw)
        end = _SCALAR_CHARS.match(source, start).end()  # type: ignore[union-attr]
        token = source[start:end]
        if end == len(source) and _scalar_start(token):
            leaf.raw = token  # the piece ends in it: it is whole only once a delimiter follows
            self.pos = len(self.text)
            return
        if end < len(source) and (token in _LITERALS or _NUMBER.fullmatch(token)):
            self.leaf = None
            self.pos = end + shift
            self._attach(_LITERALS[token] if token in _LITERALS else json.loads(token))
            return
        good = len(token)
        while good > 0 and not _scalar_start(token[:good]):
            good -= 1
        if start + good + shift >= self.pos:
            leaf.raw = token[:good]
            self.pos = start + good + shift
        self._fail(f"not a JSON number or literal: {token[: good + 1]!r}")
