"""The writer's evidence within its token budget: lists shortened, never silently, and an
answer by reference kept whole when it fits."""

from __future__ import annotations

import json
import re

from postel.services.generation.evidence import fit_evidence
from postel.services.llm.tokens import count_tokens

ROWS = [
    {
        "id": f"PERSON NUMBER {i}",
        "entity_type": "PERSON",
        "description": ["a long description of what this person did in the reports"] * 4,
        "source_ids": [f"chunk-{j}" for j in range(5)],
    }
    for i in range(40)
]


def evidence(answer: object) -> dict[str, object]:
    return {
        "tasks": [
            {
                "task_id": "t1",
                "objective": "List the people",
                "answer": answer,
                "reference": "${ans}",
                "findings": {"last_results": [{"command": "FIND", "rows": ROWS[:20]}]},
                "sources": [f"chunk-{j}" for j in range(100)],
            }
        ]
    }


def test_evidence_that_fits_is_given_whole() -> None:
    names = [row["id"] for row in ROWS]
    small = {"tasks": [{"task_id": "t1", "answer": names, "reference": "${ans.id}"}]}
    assert json.loads(fit_evidence(small, 1200)) == small


def test_what_is_left_out_to_fit_is_said_exactly() -> None:
    text = fit_evidence(evidence(ROWS), 1200)
    assert count_tokens(text) <= 1200
    body, note = text.split("\nLEFT OUT TO FIT", 1)
    kept = json.loads(body)["tasks"][0]
    # the findings and the rows' own lists go first; the answer's rows last
    assert "- tasks[0].findings.last_results: 1 of 1 items of the list left out" in note
    said = re.search(r"- tasks\[0\]\.answer: (\d+) of 40 items of the list left out", note)
    assert said and len(kept["answer"]) == 40 - int(said.group(1)) > 20
    rows = len(kept["answer"])  # the lists inside the rows that stay, all emptied
    assert (
        f"- tasks[0].answer[*].description: {4 * rows} of {4 * rows} items of {rows} lists" in note
    )
    assert all(row["description"] == [] for row in kept["answer"])
    assert [row["id"] for row in kept["answer"]] == [row["id"] for row in ROWS][
        : len(kept["answer"])
    ]
    assert kept["reference"] == "${ans}" and kept["task_id"] == "t1"


def test_the_budget_holds_however_large_the_answer() -> None:
    many = [dict(row, id=f"P{i}") for i, row in enumerate(ROWS * 50)]
    text = fit_evidence(evidence(many), 600)
    assert count_tokens(text) <= 600
    assert "of 2000 items of the list left out" in text
