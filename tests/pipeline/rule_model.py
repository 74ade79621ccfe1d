"""A deterministic model for multi-process tests: its answer depends only on the prompt, so
any process may serve any job's call (a cassette's order could not be shared)."""

from __future__ import annotations

import json
import re

from postel.services.llm import LLMRequest

COUNT_RESULT = re.compile(r"\[success\] COUNT people AS n -> (\d+)")

INTENT = {
    "detectedLanguage": "en",
    "normalizedRequest": "How many people are in the graph?",
    "intent": "Count the people.",
    "primaryGoal": "the number of people",
    "dataType": "numbers",
}
TASKS = {"tasks": [{"id": "t1", "objective": "Count the PERSON nodes", "kind": "graph_analysis"}]}
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


def respond(request: LLMRequest) -> str:
    system = request.messages[0].content
    prompt = request.prompt_text()
    if system.startswith("You analyse requests"):
        return json.dumps(INTENT)
    if system.startswith("You plan work"):
        return json.dumps(TASKS)
    counted = COUNT_RESULT.search(prompt)
    if counted:
        return f"COMPLETE: {counted.group(1)}"
    return json.dumps(COUNT_PLAN)
