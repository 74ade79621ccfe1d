"""The one way to ask a model for JSON: a liberal read, a strict check, one repair turn that
rebuilds the prompt with the previous answer and its problem as data; used by intent, the
task plan, the HDT round and GASL's PROCESS and ANALYZE."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from postel.services.gasl.errors import StepFailure
from postel.services.gasl.llm_steps import Limits, run_process
from postel.services.gasl.model import LLMGaslModel
from postel.services.llm import ChatMessage, LLMRequest, ScriptedClient
from postel.services.llm.ask import JsonQuestion, ask_json, reads_as
from postel.services.prompts import Capability
from pydantic import BaseModel


class Pair(BaseModel):
    a: int
    b: str


def answering(*texts: str) -> tuple[ScriptedClient, list[LLMRequest]]:
    seen: list[LLMRequest] = []
    answers = iter(texts)

    def respond(request: LLMRequest) -> str:
        seen.append(request)
        return next(answers)

    return ScriptedClient(responder=respond), seen


def prompt(extra: Mapping[str, str]) -> list[ChatMessage]:
    parts = "".join(f"\n{title}: {text}" for title, text in extra.items())
    return [ChatMessage(role="user", content="give a and b" + parts)]


def question(**changes: object) -> JsonQuestion[Pair]:
    fields: dict[str, object] = {
        "prompt": prompt,
        "read": reads_as(Pair),
        "max_tokens": 50,
        "temperature": 0.0,
    }
    return JsonQuestion(**{**fields, **changes})  # type: ignore[arg-type]


async def test_a_liberal_answer_is_read_without_a_repair() -> None:
    llm, seen = answering("Sure! ```json\n{'a': 1, 'b': 'x',}\n```")
    answer = await ask_json(llm, question())
    assert answer.value == Pair(a=1, b="x") and not answer.repaired and len(seen) == 1


async def test_one_repair_shows_the_previous_answer_and_the_problem_as_parts() -> None:
    llm, seen = answering('{"a": "one"}', '{"a": 1, "b": "x"}')
    answer = await ask_json(llm, question())
    assert answer.value == Pair(a=1, b="x") and answer.repaired
    repair = seen[1].messages[0].content
    assert 'PREVIOUS ANSWER: {"a": "one"}' in repair
    assert "PROBLEM: Your previous answer could not be used: a:" in repair and "b:" in repair
    assert "PREVIOUS ANSWER" not in seen[0].messages[0].content


async def test_two_unusable_answers_give_no_value_and_both_problems() -> None:
    llm, seen = answering("no json here", "[1, 2]")
    answer = await ask_json(llm, question())
    assert answer.value is None and len(answer.problems) == 2 and len(seen) == 2
    assert answer.error == answer.problems[-1] and "not one JSON object" in answer.error


async def test_no_repair_when_asked_once() -> None:
    llm, seen = answering("nothing")
    answer = await ask_json(llm, question(), repairs=0)
    assert answer.value is None and len(seen) == 1


async def test_gasl_process_is_repaired_once_then_fails_schema_mismatch() -> None:
    data = [{"id": "A", "source_ids": ["c1"]}]
    llm, seen = answering('{"itemz": []}', '{"items": [{"name": "A", "source_ids": ["c1"]}]}')
    items, _ = await run_process(LLMGaslModel(llm, Capability.STANDARD), data, "name", Limits())
    assert [i["name"] for i in items] == ["A"] and len(seen) == 2
    assert "PREVIOUS ANSWER" in seen[1].messages[-1].content

    llm, seen = answering('{"itemz": []}', "still not it")
    with pytest.raises(StepFailure) as failed:
        await run_process(LLMGaslModel(llm, Capability.STANDARD), data, "name", Limits())
    assert failed.value.status == "schema_mismatch" and "after one repair" in str(failed.value)
