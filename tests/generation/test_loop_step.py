import json
import math
import random

import pytest
from postel.services.generation.loop import LoopState, continuation_prompt, step
from postel.services.llm.tokens import count_tokens

from postel.testing.oracle import Oracle, serialise

CUT = (
    '{"sections": [{"id": "p", "content_type": "paragraph", "elements": [{"text": "a"}, {"text": "b'
)
DONE = 'ee"}]}]}'


def test_cut_then_complete() -> None:
    first = step(LoopState(), CUT, "length", max_iterations=5)
    assert first.decision == "continue" and first.metrics.reason == "cut_off"
    second = step(first.state, DONE, "stop", max_iterations=5)
    assert second.decision == "complete"
    assert second.state.sections[0]["elements"] == [{"text": "a"}, {"text": "bee"}]
    assert second.metrics.elements_delivered == 2 and second.metrics.new_elements == 1


def test_the_same_iteration_applied_twice_adds_nothing() -> None:
    first = step(LoopState(), CUT, "length", max_iterations=5)
    again = step(first.state, CUT, "length", max_iterations=5, iteration=1)
    assert again.replayed and again.state == first.state and again.decision == "continue"
    second = step(first.state, DONE, "stop", max_iterations=5, iteration=2)
    replay = step(second.state, DONE, "stop", max_iterations=5, iteration=2)
    assert replay.replayed and replay.state.sections == second.state.sections
    assert replay.metrics == second.metrics
    with pytest.raises(ValueError):
        step(first.state, DONE, "stop", max_iterations=5, iteration=3)
    with pytest.raises(ValueError):
        step(second.state, DONE, "stop", max_iterations=5)


def test_state_round_trips_through_json() -> None:
    state = step(LoopState(), CUT, "length", max_iterations=5).state
    restored = LoopState.model_validate_json(state.model_dump_json())
    assert restored == state
    assert continuation_prompt(restored) == continuation_prompt(state)
    json.loads(state.model_dump_json())


def test_a_model_that_never_closes_its_json_is_stopped() -> None:
    never = (
        '{"sections": [{"id": "p", "content_type": "paragraph", "elements": [{"text": "again and'
    )
    state = LoopState()
    decisions = []
    for _ in range(10):
        result = step(state, never, "stop", max_iterations=10)
        state, decisions = result.state, [*decisions, result.decision]
        if result.decision != "continue":
            break
    assert decisions == ["continue", "loop_detected"]
    assert state.history[-1].reason == "repeated_output"


def test_a_model_that_never_closes_but_keeps_adding_hits_the_cap() -> None:
    state = LoopState()
    for index in range(1, 10):
        raw = f" more {index}" if index > 1 else CUT
        result = step(state, raw, "length", max_iterations=4)
        state = result.state
        if result.decision != "continue":
            break
    assert result.decision == "iteration_cap" and result.metrics.iteration == 4
    # Failed with what was delivered attached: the cut element is never part of it.
    assert state.document().sections[0].elements == [{"text": "a"}]
    assert state.stream.leaf is not None and state.stream.leaf.text == "b more 2 more 3 more 4"


def test_a_model_that_restarts_with_new_elements_each_time_hits_the_cap() -> None:
    state = LoopState()
    for index in range(1, 10):
        raw = '{"sections": [{"id": "p", "content_type": "paragraph", "elements": ['
        raw += f'{{"text": "part {index}"}}, {{"text": "cut'
        result = step(state, raw, "length", max_iterations=4)
        state = result.state
        if result.decision != "continue":
            break
    assert result.decision == "iteration_cap" and result.metrics.iteration == 4
    assert state.document().sections[0].elements == [{"text": f"part {i}"} for i in range(1, 5)]


def test_a_model_that_repeats_itself_is_stopped() -> None:
    repeated = '{"sections": [{"id": "x", "content_type": "paragraph", "elements": [{"text": "hi'
    result = step(LoopState(), repeated, "length", max_iterations=10)
    result = step(result.state, "```json\n" + repeated, "length", max_iterations=10)
    assert result.decision == "loop_detected"
    assert result.metrics.reason == "no_progress"  # a restart that adds no element
    result = step(LoopState(), repeated, "length", max_iterations=10)
    result = step(result.state, repeated + "\n", "length", max_iterations=10)
    assert result.metrics.reason == "no_progress"


def test_an_answer_the_model_ended_itself_sent_again_is_repeated_output() -> None:
    first = step(LoopState(), CUT, "length", max_iterations=10)
    again = step(first.state, " more", "stop", max_iterations=10)
    assert again.decision == "continue"  # ended early with the JSON open: one more chance
    result = step(again.state, " more \n", "stop", max_iterations=10)
    assert (result.decision, result.metrics.reason) == ("loop_detected", "repeated_output")
    assert result.metrics.new_characters == 0
    assert result.state.stream.leaf is not None and result.state.stream.leaf.text == "b more"


def test_the_same_answer_again_that_closes_the_document_completes() -> None:
    # Ended early twice with the same text, but the second closes what is open: no loop.
    nested = '{"sections": [{"id": "p", "content_type": "paragraph", "elements": [{"text": "a"}'
    first = step(LoopState(), nested, "length", max_iterations=10)
    second = step(first.state, "]}", "stop", max_iterations=10)
    assert second.decision == "continue"
    third = step(second.state, "]}", "stop", max_iterations=10)
    assert third.decision == "complete"
    assert third.state.document().sections[0].elements == [{"text": "a"}]


def test_cut_answers_that_repeat_each_other_are_progress() -> None:
    # A code block of identical lines: cut answers can be byte for byte the same, alone or
    # in cycles; each moves the resume point, so the loop goes on (to the cap here, since
    # the code never closes).
    state = LoopState()
    decisions = []
    answers = [CUT, "x\\n", "x\\n", " one", " two", " one", " two", "x\\n"]
    for raw in answers:
        result = step(state, raw, "length", max_iterations=len(answers))
        state, decisions = result.state, [*decisions, result.decision]
    assert decisions == ["continue"] * (len(answers) - 1) + ["iteration_cap"]
    assert state.history[-1].reason == "cap_reached"
    assert state.stream.leaf is not None
    assert state.stream.leaf.text == "b" + "x\n" * 2 + " one two one two" + "x\n"


@pytest.mark.parametrize("answer", ["Sorry, I can't.", "", "   \n  "])
def test_an_answer_without_a_character_of_json_is_no_progress(answer: str) -> None:
    result = step(LoopState(), answer, "stop", max_iterations=3)
    assert result.decision == "loop_detected" and result.metrics.reason == "no_progress"
    first = step(LoopState(), CUT + '"}', "length", max_iterations=3)
    result = step(first.state, answer + " ", "length", max_iterations=3)
    assert result.decision == "loop_detected" and result.metrics.reason == "no_progress"
    assert result.state.stream.frames == first.state.stream.frames


def test_a_syntax_error_at_the_first_character_is_no_progress() -> None:
    first = step(LoopState(), CUT + 'c"}', "length", max_iterations=3)
    result = step(first.state, "garbage", "length", max_iterations=3)
    assert (result.decision, result.metrics.reason) == ("loop_detected", "no_progress")
    assert result.metrics.read_error is not None and "expected ','" in result.metrics.read_error


def test_an_element_larger_than_max_tokens_is_written_over_as_many_calls_as_it_needs() -> None:
    words = random.Random(4).choices(["alpha", "beta", "gamma", "delta", "ε", "中文"], k=400)
    target = {
        "sections": [
            {"id": "top", "content_type": "heading", "elements": [{"level": 1, "text": "T"}]},
            {"id": "big", "content_type": "paragraph", "elements": [{"text": " ".join(words)}]},
            {"id": "after", "content_type": "paragraph", "elements": [{"text": "x"}]},
        ]
    }
    oracle = Oracle(target, max_tokens=100)
    state, prompt = LoopState(), "first call"
    for _ in range(50):
        reply = oracle.answer(prompt)
        result = step(state, reply.text, reply.finish_reason, max_iterations=50)
        state = result.state
        if result.decision != "continue":
            break
        text = continuation_prompt(state)
        prompt = text.instructions + "\n" + text.user_text
    assert result.decision == "complete"
    assert state.delivered_sections() == target["sections"]
    assert result.metrics.iteration == math.ceil(count_tokens(serialise(target)) / 100)


def test_metrics_per_iteration() -> None:
    result = step(LoopState(), CUT, "length", max_iterations=5)
    metrics = result.metrics
    assert (metrics.iteration, metrics.finish_reason, metrics.sections_delivered) == (
        1,
        "length",
        1,
    )
    assert metrics.elements_delivered == 1 and metrics.parse_ms >= 0 and not metrics.json_complete
    assert metrics.new_characters == len(CUT.replace(", ", ",").replace(": ", ":"))
