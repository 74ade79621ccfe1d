"""Property: the loop finishes documents whose answers look alike, with the minimum calls.

Documents like the one `postel bench loop` ships
(`postel_bench.data.documents.repetitive_document`): code blocks of near-identical and
identical lines with escaped backslashes and quotes inside strings, tables of numbers whose
rows repeat, lists and paragraphs that say the same thing again, headings with non-ASCII,
quotes, angle brackets (runs of three too, which the prompt builder would swap) and
invisible format characters (which it would drop). Cut at any max_tokens from 16 to 200,
consecutive answers are often byte for byte the same: progress is still progress. Each
continuation prompt goes through the prompt builder as the generator's does, so the oracle
sees what a model would.

Asserted: the loop completes in ceil(T / max_tokens) calls (T the tokens of the oracle's
serialisation), the answers joined are that serialisation, and the document comes back
equal."""

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postel.services.generation.loop import LoopState, continuation_prompt, step
from postel.services.llm.tokens import count_tokens
from postel.services.prompts import TEMPLATES, Capability, build_prompt

from postel.testing.oracle import Oracle, serialise

LINES = [
    "    return x * {n} + \"{{}}\".format('\\\\n')",
    '    print("a\\tb {n}", "<tag>", \'\\\\\')',
    '    s = "é ✓ 中文 αβγ {n}"',
    "    # <<<END USER TEXT>>> {n}\u200b",
    "    y = x[{n}] / 2",
]
TITLES = ['café é αβγ 中文 ✓ "quoted" & <tags>', "<<<CUT_OFF>>> \ufeff{n}", "Kapitel {n} — ß"]
KINDS = ["heading", "paragraph", "bullet_list", "numbered_list", "table", "code_block"]


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], int, bool]:
    """A document, max_tokens, and whether to serialise it as ASCII."""
    # Few distinct numbers: lines are identical or differ in one character.
    number = st.integers(0, 2)

    def line() -> str:
        return draw(st.sampled_from(LINES)).format(n=draw(number))

    def title() -> str:
        return draw(st.sampled_from(TITLES)).format(n=draw(number))

    def repeated(make: Any, most: int) -> list[str]:
        return [make()] * draw(st.integers(1, most))

    # The heart of the case: a code block of one or two lines over and over, long enough
    # for cut answers to repeat each other and pairs of them to come round again.
    pattern = [line() for _ in range(draw(st.integers(1, 2)))]
    code = "\n".join(pattern * draw(st.integers(10, 40)))
    sections = [
        {
            "id": "code",
            "content_type": "code_block",
            "elements": [{"language": "python", "code": f"def f(x):\n{code}\n"}],
        }
    ]
    for index in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(KINDS))
        element: dict[str, Any]
        if kind == "heading":
            element = {"level": draw(st.integers(1, 3)), "text": title()}
        elif kind == "paragraph":
            element = {"text": " ".join(repeated(title, 4))}
        elif kind in ("bullet_list", "numbered_list"):
            element = {"items": repeated(title, 4) + repeated(line, 3)}
        elif kind == "table":
            row = [str(draw(number)), f"{draw(number) * 1.5:.2f}", title()]
            element = {"headers": ["n", "x", "t"], "rows": [row] * draw(st.integers(1, 8))}
        else:
            lines = [line() for _ in range(draw(st.integers(1, 3)))] * draw(st.integers(1, 5))
            element = {"language": "python", "code": "def f(x):\n" + "\n".join(lines) + "\n"}
        sections.insert(
            draw(st.integers(0, len(sections))),
            {"id": f"s{index}", "content_type": kind, "elements": [element]},
        )
    max_tokens = draw(st.integers(16, 64) | st.integers(16, 200))
    return {"sections": sections}, max_tokens, draw(st.booleans())


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
        messages = build_prompt(
            TEMPLATES.get("continue_document"), Capability.STANDARD, user_text=text.user_text
        )
        prompt = "\n".join(message.content for message in messages)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_documents_whose_answers_repeat_each_other_finish_with_the_minimum_calls(
    case: tuple[dict[str, Any], int, bool],
) -> None:
    document, max_tokens, ascii_only = case
    oracle = Oracle(document, max_tokens, ascii_only)
    state, answers = run(oracle)
    assert "".join(answers) == oracle.text, "nothing lost, nothing sent twice"
    assert serialise({"sections": state.delivered_sections()}) == serialise(document)
    assert state.iteration == math.ceil(count_tokens(oracle.text) / max_tokens)
