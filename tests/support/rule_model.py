"""A deterministic model for multi-process tests: its answer depends only on the prompt, so
any process may serve any job's call (a cassette's order could not be shared)."""

from __future__ import annotations

import json
import re

from postel.services.llm import LLMRequest

from postel.testing.stage_model import StageModel, intent_of, one_task

COUNT_RESULT = re.compile(r"\[success\] COUNT people AS n -> (\d+)")

INTENT = intent_of(
    "How many people are in the graph?",
    "numbers",
    intent="Count the people.",
    primaryGoal="the number of people",
)
TASKS = one_task("Count the PERSON nodes", "graph_analysis")
COUNT_PLAN = {
    "decision": "continue",
    "hypothesis": "People are PERSON nodes.",
    "next_actions": [
        {
            "action": "continue",
            "confidence": 0.9,
            "plan": {
                "why": "count them",
                "commands": [
                    'FIND nodes WHERE entity_type = "PERSON" AS people',
                    "COUNT people AS n",
                ],
            },
        }
    ],
}


def rounds(request: LLMRequest) -> str:
    counted = COUNT_RESULT.search(request.prompt_text())
    if counted:
        return f"COMPLETE: {counted.group(1)}"
    return json.dumps(COUNT_PLAN)


respond = StageModel(INTENT, TASKS, rounds)
