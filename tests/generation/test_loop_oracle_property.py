"""Property: with the oracle as the model, the loop reassembles any document exactly.

Precondition (documented in `loop`): every unit fits in one response. A heading or
paragraph is a unit as a whole; a table row, list item or code line is one. So max_tokens
is drawn from at least twice the largest section wrapper with its largest unit (the cut may
fall right after the wrapper of the section before). Strings carry a running number so no
two continuation responses are byte-identical (identical ones read as a repeating model)."""

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from postel.messages.document import SectionsDocument
from postel.services.generation.loop import LoopState, continuation_prompt, step
from postel.services.generation.oracle import Oracle, serialise
from postel.services.generation.units import UNIT_KEY, code_lines
from postel.services.llm.tokens import count_tokens

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
KINDS = ["heading", "paragraph", "bullet_list", "numbered_list", "table", "code_block"]
CELL = st.one_of(
    TEXT,
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    counter = itertools.count()

    def text() -> str:
        return f"{next(counter)}{draw(TEXT)}"

    sections = []
    for index in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(KINDS))
        elements: list[dict[str, Any]] = []
        for _ in range(draw(st.integers(0, 3))):
            if kind == "heading":
                elements.append({"level": draw(st.integers(1, 6)), "text": text()})
            elif kind == "paragraph":
                elements.append({"text": text()})
            elif kind in ("bullet_list", "numbered_list"):
                elements.append({"items": [text() for _ in range(draw(st.integers(0, 5)))]})
            elif kind == "table":
                width = draw(st.integers(1, 3))
                rows = [
                    [text(), *(draw(CELL) for _ in range(width - 1))]
                    for _ in range(draw(st.integers(0, 5)))
                ]
                elements.append({"headers": [text() for _ in range(width)], "rows": rows})
            else:
                lines = [text() for _ in range(draw(st.integers(0, 5)))]
                code = "\n".join(lines) + draw(st.sampled_from(["", "\n"]))
                elements.append({"language": draw(TEXT), "code": code})
        section: dict[str, Any] = {"content_type": kind, "elements": elements}
        if draw(st.booleans()) or index == 0:
            section = {"id": f"s{index}", **section}
        sections.append(section)
    return {"sections": sections}


def _units(element: dict[str, Any], content_type: str) -> list[dict[str, Any]]:
    key = UNIT_KEY.get(content_type)
    value = element.get(key) if key else None
    if key is None or value is None:
        return [element]
    units = code_lines(value) if isinstance(value, str) else value
    return [{**element, key: unit if isinstance(value, str) else [unit]} for unit in units] or [
        element
    ]


def minimum_max_tokens(document: dict[str, Any]) -> int:
    widest = 0
    for section in document["sections"]:
        for element in section["elements"] or [{}]:
            for unit in _units(element, section["content_type"]):
                wrapper = serialise({"sections": [{**section, "elements": [unit]}]})
                widest = max(widest, count_tokens(wrapper))
    return 2 * widest + 8


def run(document: dict[str, Any], max_tokens: int) -> LoopState:
    oracle = Oracle(document, max_tokens)
    state, prompt = LoopState(), "first call"
    while True:
        reply = oracle.answer(prompt)
        result = step(state, reply.text, reply.finish_reason, max_iterations=1000)
        state = result.state
        if result.decision != "continue":
            assert result.decision == "complete", state.history[-1]
            return state
        text = continuation_prompt(state)
        prompt = f"{text.instructions}\n\n{text.user_text}"


@settings(max_examples=80, deadline=None)
@given(document=documents(), extra=st.integers(0, 400))
def test_oracle_loop_reassembles_the_document(document: dict[str, Any], extra: int) -> None:
    state = run(document, minimum_max_tokens(document) + extra)
    assert state.document() == SectionsDocument.model_validate(document)


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
    state = run(document, 120)
    assert state.iteration > 20
    assert state.document() == SectionsDocument.model_validate(document)
