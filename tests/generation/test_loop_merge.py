"""The merge contract: answers join as one JSON text, continued inside the cut string."""

import json
from typing import Any

import pytest
from postel.services.generation.loop import LoopState, StepResult, step
from postel.services.generation.merge import deliver, is_restart


def run(pieces: list[str], cap: int = 50) -> list[StepResult]:
    state, results = LoopState(), []
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        result = step(state, piece, "stop" if last else "length", max_iterations=cap)
        state, results = result.state, [*results, result]
    return results


def split(text: str, *marks: str) -> list[str]:
    """`text` cut right after each of `marks` (each searched after the previous cut)."""
    pieces, start = [], 0
    for mark in marks:
        cut = text.index(mark, start) + len(mark)
        pieces.append(text[start:cut])
        start = cut
    return [*pieces, text[start:]]


DOCUMENTS: dict[str, dict[str, Any]] = {
    "paragraph": {
        "sections": [
            {"id": "p", "content_type": "paragraph", "elements": [{"text": "Hello wide world"}]}
        ]
    },
    "heading": {
        "sections": [
            {
                "id": "h",
                "content_type": "heading",
                "elements": [{"level": 2, "text": "Big wide title"}],
            }
        ]
    },
    "list item": {
        "sections": [
            {"id": "l", "content_type": "bullet_list", "elements": [{"items": ["one", "two wide"]}]}
        ]
    },
    "table cell": {
        "sections": [
            {
                "id": "t",
                "content_type": "table",
                "elements": [{"headers": ["a", "b"], "rows": [["x", "wide cell"], ["y", 2]]}],
            }
        ]
    },
    "code line": {
        "sections": [
            {
                "id": "c",
                "content_type": "code_block",
                "elements": [{"language": "py", "code": 'print("wide")\nx = 1\n'}],
            }
        ]
    },
}


@pytest.mark.parametrize("kind", list(DOCUMENTS))
def test_a_cut_string_goes_on_in_the_next_answer(kind: str) -> None:
    document = DOCUMENTS[kind]
    text = json.dumps(document)
    results = run(split(text, "wi", "d"))  # cut twice inside the same string
    assert [r.decision for r in results] == ["continue", "continue", "complete"]
    assert results[-1].state.delivered_sections() == document["sections"]
    # Progress is counted in characters: every character of the JSON text once.
    compact = json.dumps(document, separators=(",", ":"))
    assert sum(r.metrics.new_characters for r in results) == len(compact)
    assert all(r.metrics.new_characters > 0 for r in results)


def test_a_cut_string_is_carried_never_delivered() -> None:
    text = json.dumps(
        {
            "sections": [
                {"id": "h", "content_type": "heading", "elements": [{"level": 1, "text": "T"}]},
                {
                    "id": "p",
                    "content_type": "paragraph",
                    "elements": [{"text": "a"}, {"text": "bc"}],
                },
            ]
        }
    )
    (first,) = run([text[: text.index('"bc') + 2]], cap=1)
    assert first.decision == "iteration_cap"
    assert first.state.delivered_sections() == [
        {"id": "h", "content_type": "heading", "elements": [{"level": 1, "text": "T"}]},
        {"id": "p", "content_type": "paragraph", "elements": [{"text": "a"}]},
    ]
    assert first.state.sections == [first.state.delivered_sections()[0]], "closed ones only"
    assert first.state.stream.leaf is not None and first.state.stream.leaf.text == "b"


def test_the_first_answer_may_lead_with_prose_and_a_continuation_with_a_fence() -> None:
    text = json.dumps(DOCUMENTS["paragraph"])
    head, rest = split(text, "Hel")
    results = run(["Here it is:\n```json\n" + head, "```json\n" + rest + "\n```"])
    assert results[-1].decision == "complete"
    assert results[-1].state.delivered_sections() == DOCUMENTS["paragraph"]["sections"]


def test_a_syntax_error_keeps_what_came_before_and_the_next_answer_goes_on_from_there() -> None:
    head = '{"sections": [{"id": "p", "content_type": "paragraph", "elements": [{"text": "ab'
    results = run([head, 'c"} oops', ', {"text": "d"}]}]}'])
    assert results[1].metrics.read_error is not None
    assert results[1].decision == "continue"
    assert results[-1].decision == "complete"
    assert results[-1].state.delivered_sections()[0]["elements"] == [{"text": "abc"}, {"text": "d"}]


RESTART_CUT = (
    '{"sections": [{"id": "p", "content_type": "paragraph", "elements": [{"text": "one"}, '
    '{"text": "tw'
)


def test_an_answer_that_restarts_the_document_merges_by_id() -> None:
    cut = RESTART_CUT
    # The old way: the whole section again, the cut element completed, then more.
    again = (
        '{"sections": [{"id": "p", "content_type": "paragraph", "elements": '
        '[{"text": "one"}, {"text": "two"}]}, {"id": "q", "content_type": "paragraph", '
        '"elements": [{"text": "new"}]}]}'
    )
    results = run([cut, again])
    assert results[-1].metrics.restarted and results[-1].decision == "complete"
    assert results[-1].state.delivered_sections() == [
        {"id": "p", "content_type": "paragraph", "elements": [{"text": "one"}, {"text": "two"}]},
        {"id": "q", "content_type": "paragraph", "elements": [{"text": "new"}]},
    ]


def test_a_restart_that_adds_no_element_is_no_progress() -> None:
    cut = RESTART_CUT
    same_cut = "```json\n" + cut.replace('"tw', '"t')
    results = run([cut, same_cut])
    assert results[1].metrics.restarted
    assert (results[1].decision, results[1].metrics.reason) == ("loop_detected", "no_progress")


def test_restart_detection() -> None:
    assert is_restart('  ```json\n{"sections": [')
    assert is_restart('{ "sections" :[')
    assert not is_restart('tions": [')
    assert not is_restart('"}, {"sections": 1}')


def test_deliver_by_id_changes_no_input() -> None:
    delivered = [{"id": "a", "content_type": "paragraph", "elements": [{"text": "1"}]}]
    incoming = [
        {"id": "a", "content_type": "paragraph", "elements": [{"text": "1"}, {"text": "2"}]},
        {"id": "a", "content_type": "table", "elements": []},
        {"content_type": "paragraph", "elements": [{"text": "1"}]},
    ]
    before = json.dumps([delivered, incoming])
    merged = deliver(delivered, incoming, by_id=True)
    assert merged == [
        {"id": "a", "content_type": "paragraph", "elements": [{"text": "1"}, {"text": "2"}]},
        {"id": "a", "content_type": "table", "elements": []},
        {"content_type": "paragraph", "elements": [{"text": "1"}]},
    ]
    assert json.dumps([delivered, incoming]) == before
    assert deliver(delivered, incoming, by_id=False) == [*delivered, *incoming]
