"""A scripted model of the whole pipeline, for tests and demos: the intent analysis and the
task plan come from data, every other call (an HDT round, a document, a value) from a
function of the request.

Which stage asks is read from the call's system message, the one its prompt template
registers (services/prompts/templates.py), so a script never matches prompt wording. Its
answer depends only on the request: any process may serve any job's call, and a FakeModel
endpoint can serve it as its responder."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from postel.services.llm import LLMRequest
from postel.services.prompts.templates import INTENT_ANALYSIS, TASK_PLAN

Responder = Callable[[LLMRequest], str]


def intent_of(request: str, data_type: str = "text", **fields: Any) -> dict[str, Any]:
    """An intent analysis answer for `request`: the fields a test does not name say the
    same thing as the request."""
    return {
        "detectedLanguage": "en",
        "normalizedRequest": request,
        "intent": request,
        "primaryGoal": request,
        "dataType": data_type,
        **fields,
    }


def one_task(objective: str, kind: str = "generation", task_id: str = "t1") -> dict[str, Any]:
    """A task plan answer of one task."""
    return {"tasks": [{"id": task_id, "objective": objective, "kind": kind}]}


@dataclass(frozen=True)
class StageModel:
    intent: dict[str, Any]
    tasks: dict[str, Any]
    rest: Responder

    def __call__(self, request: LLMRequest) -> str:
        system = request.messages[0].content
        if system == INTENT_ANALYSIS.system:
            return json.dumps(self.intent)
        if system == TASK_PLAN.system:
            return json.dumps(self.tasks)
        return self.rest(request)


def answering(text: str) -> Responder:
    """Every call past the plan gets `text`."""
    return lambda request: text
