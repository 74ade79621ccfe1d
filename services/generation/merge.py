"""The merge contract: how the generator's answers join into one sections document.

The first answer starts the JSON document `{"sections": [...]}`. When it is cut off, every
next answer is the continuation of the same JSON text, starting with the character after
the last one read, wherever that is: in the middle of a string it continues that very
string (a heading or paragraph text, a list item, a table cell, code) without repeating
it or reopening its quote; then it closes what is open and writes the remaining elements
and sections, up to the document's final `]}`. The answers are read as one text
(`stream.JsonStream`), so the parts join exactly, also across escapes and characters
outside the BMP: no character is lost or doubled, and no element has to fit in one answer.

Delivered: a section when it closes, and in the open section each element when it closes.
The open element is carried in the stream (its closed rows, items or cells, the characters
of its cut string) until it closes; a failed job's partial document holds the delivered
sections and elements, never a cut element.

Liberal reading:
  - the first answer's leading prose or markdown fence is skipped, as is a fence line at
    the start of a continuation (JSON text cannot start so); text after the document's end
    is ignored;
  - reading stops at the first character that cannot continue the JSON: what came before
    stands, and the next answer continues from there;
  - an answer that starts a new `{"sections":` document instead of continuing is a
    restart: the cut element is abandoned (the delivered elements of its section stay),
    and the answer is read as a new document whose sections merge by id into the delivered
    ones: in a section with the id and content_type of a delivered one, the leading
    elements equal to the delivered ones are dropped and the rest appended. (A table cell
    that is an object with a "sections" member, written right at a cut, reads as a
    restart too: the one known misreading.)"""

from __future__ import annotations

import re
from typing import Any

from postel.services.generation.stream import Frame, JsonStream

# Models wrap JSON in markdown fences or lead with prose; the document starts at its root key.
_SECTIONS_ROOT = re.compile(r'\{\s*"sections"\s*:')
_ANY_ROOT = re.compile(r"[{\[]")
_FENCE_LINE = re.compile(r"\s*```[\w-]*[ \t]*\r?\n")
_RESTART = re.compile(r'\s*(?:```[\w-]*[ \t]*\r?\n\s*)?\{\s*"sections"\s*:')


def find_json_start(raw: str) -> int | None:
    """Offset of the first answer's JSON document, skipping fences and leading prose."""
    found = _SECTIONS_ROOT.search(raw) or _ANY_ROOT.search(raw)
    return found.start() if found else None


def continuation_text(raw: str) -> str:
    """A continuation answer without a leading fence line: a fence then a raw newline cannot
    continue JSON anywhere (not even inside a string), so it is never content."""
    fence = _FENCE_LINE.match(raw)
    return raw[fence.end() :] if fence else raw


def is_restart(raw: str) -> bool:
    return _RESTART.match(raw) is not None


def _sections_frame(stream: JsonStream) -> int | None:
    """Index in `stream.frames` of the open array of sections (a bare list of sections is
    read as the sections document)."""
    frames = stream.frames
    if frames and frames[0].kind == "array":
        return 0
    if len(frames) > 1 and frames[1].key == "sections" and frames[1].kind == "array":
        return 1
    return None


def take_closed_sections(stream: JsonStream) -> list[dict[str, Any]]:
    """The sections that closed since the last call, taken out of the stream."""
    index = _sections_frame(stream)
    taken: list[Any] = []
    if index is not None:
        taken = stream.take_items(stream.frames[index])
    elif stream.frames and stream.frames[0].kind == "object":
        taken = _take_list(stream.frames[0].members)
    elif stream.done:
        if isinstance(stream.value, list):
            taken, stream.value = stream.value, []
        elif isinstance(stream.value, dict):
            taken = _take_list(stream.value)
    return [section for section in taken if isinstance(section, dict)]


def _take_list(root: dict[str, Any]) -> list[Any]:
    sections = root.get("sections")
    if not isinstance(sections, list):
        return []
    root["sections"] = []
    return sections


def _open_frames(stream: JsonStream) -> tuple[Frame, Frame | None] | None:
    """The open section's frame and, while it is open, its elements array."""
    index = _sections_frame(stream)
    frames = stream.frames
    if index is None or len(frames) <= index + 1 or frames[index + 1].kind != "object":
        return None
    elements = frames[index + 2] if len(frames) > index + 2 else None
    if elements is not None and (elements.key != "elements" or elements.kind != "array"):
        elements = None
    return frames[index + 1], elements


def open_section(stream: JsonStream) -> dict[str, Any] | None:
    """The open section as delivered so far: its header and closed elements; None until
    its content_type is read."""
    found = _open_frames(stream)
    if found is None or "content_type" not in found[0].members:
        return None
    section, elements_frame = found
    view = {key: value for key, value in section.members.items() if key != "elements"}
    closed = section.members.get("elements")
    elements = elements_frame.items if elements_frame is not None else closed
    view["elements"] = (
        [e for e in elements if isinstance(e, dict)] if isinstance(elements, list) else []
    )
    return view


def deliver(
    sections: list[dict[str, Any]], incoming: list[dict[str, Any]], by_id: bool
) -> list[dict[str, Any]]:
    """`sections` with `incoming` after them; `by_id` (after a restart): a section with the
    id and content_type of a delivered one continues it, without the leading elements
    equal to those delivered. The inputs are not changed."""
    if not by_id:
        return [*sections, *incoming]
    merged = list(sections)
    where = {
        (section.get("id"), section.get("content_type")): index
        for index, section in enumerate(merged)
        if section.get("id")
    }
    for section in incoming:
        index = where.get((section.get("id"), section.get("content_type")))
        if index is None:
            if section.get("id"):
                where[(section.get("id"), section.get("content_type"))] = len(merged)
            merged.append(section)
            continue
        delivered = list(merged[index].get("elements") or [])
        new = list(section.get("elements") or [])
        same = 0
        while same < min(len(delivered), len(new)) and delivered[same] == new[same]:
            same += 1
        merged[index] = {**merged[index], "elements": [*delivered, *new[same:]]}
    return merged


def describe_cut(stream: JsonStream) -> str:
    """Where the text stops, as a JSON path and what is being written there."""
    path = "$"
    frames = stream.frames
    for depth, frame in enumerate(frames):
        if depth > 0:
            parent = frames[depth - 1]
            path += f".{frame.key}" if parent.kind == "object" else f"[{parent.next_index}]"
    leaf = stream.leaf
    top = frames[-1] if frames else None
    if top is not None and (leaf is None or leaf.kind != "key"):
        if top.kind == "array":
            path += f"[{top.next_index}]"
        elif top.member is not None:
            path += f".{top.member}"
    if leaf is None:
        what = (
            "between members"
            if top is not None and top.kind == "object" and top.member is None
            else "before that value"
        )
    elif leaf.kind == "string":
        what = "in the middle of a string: continue that very string"
    elif leaf.kind == "key":
        what = "in the middle of a member name"
    else:
        what = "in the middle of a number or literal"
    return f"{path}, {what}"
