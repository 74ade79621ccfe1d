"""Property: with the oracle as the model, the loop reassembles any document exactly and with
the minimum number of calls, however small max_tokens is and however long an element.

Minimum: ceil(T / max_tokens), T the tokens of the oracle's serialisation of the document
(the one answer a model without a token limit would give). A loop reaches it only when
every answer but the last is cut at max_tokens and every continuation goes on from the
exact character of the cut: nothing is sent twice and nothing is asked for again. The test
also checks the answers themselves: joined, they are the serialised document.

Documents: paragraphs, headings, list items, table cells and code lines each longer than
max_tokens, with JSON escapes (\\n, \\", \\\\, control characters) and characters outside
ASCII (CJK, emoji, emoji sequences); serialised as they are or, drawn at random, with every
non-ASCII character as a \\uXXXX escape (emoji as surrogate pairs), so cuts fall inside
escapes and between the halves of a pair.

Every string carries a running number every few characters, so the strings differ and a
failure points at one place; documents whose answers repeat each other are drawn by
test_loop_repetitive_property."""

import itertools
import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from postel.services.generation.loop import LoopState, continuation_prompt, step
from postel.services.llm.tokens import count_tokens

from postel.testing.oracle import Oracle, serialise

SPECIAL = ['"', "\\", "\n", "\t", "/", "\x01", "\x1f", "\x7f", "é", "ß", "中", "文"]
SPECIAL += ["😀", "👍🏽", "🇩🇪", "\u2028", "\ufeff", " ", " "]
PIECE = st.sampled_from(SPECIAL) | st.characters(blacklist_categories=("Cs",))
CELL = st.one_of(
    st.integers(-(10**15), 10**15),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
KINDS = ["heading", "paragraph", "bullet_list", "numbered_list", "table", "code_block"]


def tokens(text: str) -> int:
    return count_tokens(json.dumps(text, ensure_ascii=False))


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], int, bool, list[str]]:
    """A document, max_tokens, whether to serialise as ASCII, and its long strings."""
    max_tokens = draw(st.integers(16, 48))
    counter = itertools.count()
    long_strings: list[str] = []

    def short() -> str:
        return f"~{next(counter)}" + "".join(draw(st.lists(PIECE, max_size=2)))

    def long() -> str:
        goal, parts, size = draw(st.integers(max_tokens + 1, 2 * max_tokens)), [], 0
        while size <= goal:
            parts.append(short())
            size = tokens("".join(parts)) if len(parts) % 8 == 0 else size + 1
        text = "".join(parts)
        long_strings.append(text)
        return text

    sections = []
    for index in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(KINDS))
        elements: list[dict[str, Any]] = []
        for _ in range(draw(st.integers(1, 2))):
            units = range(draw(st.integers(1, 2)))
            if kind == "heading":
                elements.append({"level": draw(st.integers(1, 6)), "text": long()})
            elif kind == "paragraph":
                elements.append({"text": long()})
            elif kind in ("bullet_list", "numbered_list"):
                elements.append({"items": [long() for _ in units]})
            elif kind == "table":
                width = draw(st.integers(1, 3))
                rows = [[long(), *(draw(CELL) for _ in range(width - 1))] for _ in units]
                elements.append({"headers": [short() for _ in range(width)], "rows": rows})
            else:
                code = "\n".join(long() for _ in units) + draw(st.sampled_from(["", "\n"]))
                elements.append({"language": short(), "code": code})
        section: dict[str, Any] = {"content_type": kind, "elements": elements}
        if draw(st.booleans()) or index == 0:
            section = {"id": f"s{index}", **section}
        sections.append(section)
    return {"sections": sections}, max_tokens, draw(st.booleans()), long_strings


def run(oracle: Oracle) -> tuple[LoopState, list[str]]:
    state, prompt, answers = LoopState(), "first call", []
    while True:
        reply = oracle.answer(prompt)
        answers.append(reply.text)
        result = step(state, reply.text, reply.finish_reason, max_iterations=10_000)
        state = result.state
        if result.decision != "continue":
            assert result.decision == "complete", state.history[-1]
            return state, answers
        text = continuation_prompt(state)
        prompt = f"{text.instructions}\n\n{text.user_text}"


@settings(max_examples=60, deadline=None)
@given(case=cases())
def test_oracle_loop_reassembles_long_elements_exactly_with_the_minimum_calls(
    case: tuple[dict[str, Any], int, bool, list[str]],
) -> None:
    document, max_tokens, ascii_only, long_strings = case
    assert all(tokens(text) > max_tokens for text in long_strings), "the case is as described"
    oracle = Oracle(document, max_tokens, ascii_only)
    state, answers = run(oracle)
    assert serialise({"sections": state.delivered_sections()}) == serialise(document)
    assert "".join(answers) == oracle.text, "nothing lost, nothing sent twice"
    assert state.iteration == math.ceil(count_tokens(oracle.text) / max_tokens)


def test_many_iterations_for_a_long_document() -> None:
    document = {
        "sections": [
            {
                "id": "t",
                "content_type": "table",
                "elements": [
                    {"headers": ["n", "p"], "rows": [[f"r{i}", 29.99 * i] for i in range(200)]}
                ],
            },
            {
                "id": "c",
                "content_type": "code_block",
                "elements": [
                    {"language": "py", "code": "".join(f"x{i} = {i}\n" for i in range(200))}
                ],
            },
        ]
    }
    oracle = Oracle(document, 16, ascii_only=True)
    state, _answers = run(oracle)
    assert state.iteration == math.ceil(count_tokens(oracle.text) / 16) > 100
    assert state.delivered_sections() == document["sections"]
