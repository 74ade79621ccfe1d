"""A deterministic model that walks the five real workers through the whole story of the
demo question, so the dashboard has every part of a job to show: a task plan, an HDT round
whose GASL plan does not parse (refine), a round that finds the co-authors (complete), a
first document that fails validation (repair), and a repaired document long enough to be
written across continuations (the AI loop). Its answer depends only on the prompt."""

from __future__ import annotations

import json
from typing import Any

from postel.services.generation.continuation import read_resume_offset
from postel.services.llm import LLMRequest

from postel.testing.oracle import Oracle, serialise
from postel.testing.stage_model import StageModel

QUESTION = "Which authors in these reports collaborate most, and on what topics?"
MAX_TOKENS = 400

INTENT = {
    "detectedLanguage": "en",
    "normalizedRequest": QUESTION,
    "intent": "Find the co-authors who appear together most often and their topics.",
    "primaryGoal": "a short report on the strongest collaborations",
    "dataType": "analysis",
    "expectedFormats": ["report"],
    "successCriteria": ["The report has at least 3 sections"],
}
TASKS = {
    "overview": "Find co-authors in the graph, then write the report.",
    "tasks": [
        {
            "id": "t1",
            "objective": "Find the people who share report sections",
            "kind": "graph_analysis",
        }
    ],
}
TYPO_PLAN = {
    "evaluation": "nothing has run yet",
    "decision": "continue",
    "hypothesis": "Authors are PERSON nodes; co-authors share a source chunk.",
    "next_actions": [
        {
            "action": "continue",
            "confidence": 0.8,
            "plan": {
                "why": "list the people first",
                "commands": ['FIND nodes WERE entity_type = "PERSON" AS people'],
            },
        }
    ],
}
COAUTHOR_PLAN = {
    "evaluation": "The FIND did not parse: WERE is not a keyword.",
    "decision": "refine",
    "hypothesis": "People who share a source chunk wrote the same report section.",
    "next_actions": [
        {
            "action": "refine",
            "confidence": 0.9,
            "plan": {
                "why": "group people by the report sections they appear in",
                "commands": [
                    "DECLARE coauthors AS DICT",
                    "DECLARE coauthors.shared_chunks AS DICT",
                    'FIND nodes WHERE entity_type = "PERSON" AS people',
                    "AGGREGATE people BY source_ids WITH COLLECT OF id AS by_chunk",
                    "SELECT by_chunk WHERE LEN value >= 2 AS shared",
                    "UPDATE coauthors.shared_chunks WITH shared REPLACE",
                ],
            },
        }
    ],
}
COMPLETE = (
    "COMPLETE: 17 report sections are shared by two or more people; BRIAN A. KING appears "
    "with the most co-authors (CATHERINE B. LANSDOWNE, GLENN DAMON, MARY DOTT and others)."
)

FIRST_DRAFT = {
    "sections": [
        {"id": "h1", "content_type": "heading", "elements": [{"level": 1, "text": "Co-authors"}]},
        {
            "id": "p1",
            "content_type": "paragraph",
            "elements": [{"text": "BRIAN A. KING writes with many colleagues."}],
        },
    ]
}
PAIRS = [
    ["BRIAN A. KING", "CATHERINE B. LANSDOWNE", "tobacco product use"],
    ["BRIAN A. KING", "GLENN DAMON", "smoking cessation"],
    ["BRIAN A. KING", "MARY DOTT", "e-cigarette sales"],
    ["BRIAN A. KING", "PAUL Z. SIEGEL", "state tobacco control"],
    ["BRIAN A. KING", "SOUMYA DUNWORTH", "youth tobacco surveys"],
    ["BRIAN A. KING", "SRILA SEN", "cigarette smoking trends"],
]
REPORT: dict[str, Any] = {
    "sections": [
        {
            "id": "title",
            "content_type": "heading",
            "elements": [{"level": 1, "text": "Who writes together in the MMWR reports"}],
        },
        {
            "id": "method",
            "content_type": "paragraph",
            "elements": [
                {
                    "text": "The analysis grouped the graph's 371 people by the report "
                    "sections they appear in: 17 sections name two or more people, and "
                    "each such pair is a collaboration [chunk sources in the evidence]."
                }
            ],
        },
        {
            "id": "pairs",
            "content_type": "table",
            "elements": [
                {
                    "headers": ["author", "co-author", "topic"],
                    "rows": PAIRS,
                }
            ],
        },
        {
            "id": "findings",
            "content_type": "bullet_list",
            "elements": [
                {
                    "items": [
                        "BRIAN A. KING is the hub: every frequent pair includes him.",
                        "The shared sections are about tobacco use and its control.",
                        "Most other people appear in a single report section alone.",
                    ]
                }
            ],
        },
        {
            "id": "caveat",
            "content_type": "paragraph",
            "elements": [
                {
                    "text": "Sharing a section is evidence of collaboration, not proof of "
                    "co-authorship of a whole report; the counts come from the graph, the "
                    "topics from the sections' text."
                }
            ],
        },
    ]
}
ORACLE = Oracle(REPORT, MAX_TOKENS)


def story(request: LLMRequest) -> str:
    prompt = request.prompt_text()
    if "(first round)" in prompt:
        return json.dumps(TYPO_PLAN)
    # the history line of the co-author round, once it has run: the evidence is in
    if "outcome: DECLARE success" in prompt:
        return COMPLETE
    if "got 'WERE'" in prompt:
        return json.dumps(COAUTHOR_PLAN)
    if "<<<BEGIN VALIDATION ERROR>>>" in prompt or read_resume_offset(prompt) is not None:
        return ORACLE.full_text(prompt)
    return serialise(FIRST_DRAFT)


respond = StageModel(INTENT, TASKS, story)
