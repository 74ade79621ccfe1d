"""The continuation context and its text for the next generator call.

The context is the summary of what was delivered, the resume point, where the text stops,
the last complete element before the cut, and the end of the JSON text exactly as written
(the cut-off part as-is, never completed or repaired). It is rendered into two plain strings
the generator places into the prompt builder's parts: `instructions` (a constant: the
answer format and the continuation contract of `merge`) and `user_text` (the context).
Apart from the capped summary the text has a fixed bound: the element before is clipped,
and the end of the text is at most `stream.TAIL_CHARS` characters. The resume point is one
line in a fixed format, so a program (the oracle model) can read it as well as an LLM.

The text travels inside a delimited data block, whose builder swaps runs of angle brackets
and drops invisible format characters (`prompts.delimit`): the end of the text would reach
the model changed wherever the document holds them. It is shown through `shown_json`
instead, which writes those characters as their JSON escapes: the same JSON text, which the
builder leaves as it is."""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from typing import Any

from postel.services.generation.merge import describe_cut, open_section
from postel.services.generation.stream import JsonStream
from postel.services.generation.summary import summary_lines
from postel.services.llm.tokens import truncate_to_tokens
from postel.services.prompts.templates import CONTINUATION_OUTPUT_FORMAT, CONTINUATION_RULES
from pydantic import BaseModel

ELEMENT_BEFORE_MAX_TOKENS = 200
# Two angle brackets, not three: the prompt builder neutralises runs of three inside data
# blocks, and this text travels inside one.
BEFORE_OPEN, BEFORE_CLOSE = "<<ELEMENT_BEFORE", "ELEMENT_BEFORE>>"
CUT_OPEN, CUT_CLOSE = "<<CUT_OFF", "CUT_OFF>>"

_RESUME = re.compile(r"^Resume point: character (?P<offset>\d+) of the JSON text$", re.MULTILINE)


_ASCII_ESCAPED = str.maketrans({"<": "\\u003c", ">": "\\u003e"})


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


@lru_cache(maxsize=4096)  # bounded: a document may hold every code point
def _shown_char(char: str) -> str:
    hidden = unicodedata.category(char) == "Cf"
    bracket = unicodedata.normalize("NFKC", char) in ("<", ">")
    return _escape(char) if hidden or bracket else char


def shown_json(text: str) -> str:
    """JSON text with each angle bracket (in any compatibility form) and each invisible
    format character written as its `\\u` escape. In JSON text these occur only inside
    strings and never as part of an escape, so the result is the same JSON; and since each
    character is written on its own, the end of a text shows as the end of the whole text
    shown."""
    if text.isascii():
        return text.translate(_ASCII_ESCAPED)
    return "".join(map(_shown_char, text))


def read_resume_offset(text: str) -> int | None:
    """How many characters of the JSON text were delivered, from a continuation text."""
    found = _RESUME.search(text)
    return int(found["offset"]) if found else None


def read_text_so_far(text: str) -> str | None:
    """The end of the JSON text shown in a continuation text, as `shown_json` writes it.
    JSON holds no raw newline inside its strings and no marker outside them, so a marker
    alone on its own line cannot come from the document itself."""
    start = text.rfind(CUT_OPEN + "\n")
    end = text.rfind("\n" + CUT_CLOSE)
    return text[start + len(CUT_OPEN) + 1 : end] if 0 <= start < end else None


class ContinuationContext(BaseModel):
    delivered_summary: list[str]
    offset: int  # characters of JSON text delivered
    where: str  # `merge.describe_cut`
    section_number: int | None = None  # 1-based; None when the cut is outside a section
    section_id: str | None = None
    content_type: str | None = None
    element_before: dict[str, Any] | None = None
    text_so_far: str  # the end of the JSON text, up to the cut, as written


class ContinuationText(BaseModel):
    instructions: str
    user_text: str


def build_continuation_context(
    sections: list[dict[str, Any]], stream: JsonStream
) -> ContinuationContext:
    """`sections`: the document as delivered, the open section last when there is one."""
    context = ContinuationContext(
        delivered_summary=summary_lines(sections),
        offset=stream.offset,
        where=describe_cut(stream),
        text_so_far=stream.tail,
    )
    section = open_section(stream)
    if section is None or not sections:
        return context
    # After a restart the open section may continue a delivered one with its id.
    number = len(sections)
    for index in range(len(sections) - 1, -1, -1):
        same = (sections[index].get("id"), sections[index].get("content_type"))
        if section.get("id") and same == (section.get("id"), section.get("content_type")):
            number = index + 1
            break
    elements = sections[number - 1].get("elements") or []
    context.section_number = number
    context.section_id = section.get("id")
    context.content_type = section.get("content_type")
    context.element_before = elements[-1] if elements else None
    return context


def _clipped_json(element: dict[str, Any]) -> str:
    text, was_cut = truncate_to_tokens(
        json.dumps(element, ensure_ascii=False), ELEMENT_BEFORE_MAX_TOKENS
    )
    return shown_json(text) + " …(clipped)" if was_cut else shown_json(text)


def render_continuation(context: ContinuationContext) -> ContinuationText:
    parts = [
        "Already delivered (one line per section with an id):",
        "\n".join(context.delivered_summary) or "- nothing with an id yet",
        "",
        f"Resume point: character {context.offset} of the JSON text",
        f"Cut: {context.where}.",
    ]
    if context.section_number is not None:
        name = json.dumps(context.section_id, ensure_ascii=False)
        parts.append(
            f"The cut is in section {context.section_number} (id {name}, {context.content_type})."
        )
    if context.element_before is not None:
        parts += [
            "Last complete element before the cut:",
            BEFORE_OPEN,
            _clipped_json(context.element_before),
            BEFORE_CLOSE,
        ]
    parts += [
        f"The JSON text so far ends like this, exactly as written (its last "
        f"{len(context.text_so_far)} characters; angle brackets and invisible format "
        "characters are shown as their \\u escapes, the same JSON):",
        CUT_OPEN,
        shown_json(context.text_so_far),
        CUT_CLOSE,
        "Continue the JSON text with the character right after the last one shown, and go "
        "on until the document is complete.",
    ]
    return ContinuationText(
        instructions=f"{CONTINUATION_OUTPUT_FORMAT}\n\n{CONTINUATION_RULES}",
        user_text="\n".join(parts),
    )
