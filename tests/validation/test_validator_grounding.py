"""Grounding (services.validation.grounding): a written answer that names none of the rows
the graph analysis found is refused with a repair turn; one that names them passes."""

from __future__ import annotations

from typing import Any

from postel.messages import (
    GenerationCompleted,
    Intent,
    JobCompleted,
    JobProgress,
    JobRequest,
    TaskOutcome,
    ValidationFailed,
)
from postel.services.validation.grounding import found_names, ungrounded
from postel.services.validator import validate

AUTHORS = TaskOutcome(
    task_id="analyse",
    answer=[{"id": "ROBIN LEE", "entity_type": "PERSON"}, {"id": "ADA LIN"}],
    reference="${authors}",
    evidence={"last_results": []},
)


def completed(output: Any, outcomes: list[TaskOutcome]) -> GenerationCompleted:
    intent = Intent(detected_language="en", normalized_request="x", intent="x", primary_goal="x")
    return GenerationCompleted(
        job_id="j",
        message_id="j:gen:done",
        request=JobRequest(prompt="Who wrote the reports?", desired_type="str", graph="g"),
        progress=JobProgress(intent=intent, outcomes=outcomes),
        task_id="write",
        output=output,
    )


def test_an_answer_naming_none_of_the_rows_found_is_refused_with_a_repair() -> None:
    [refused] = validate(completed("en_US.json", [AUTHORS]))
    assert isinstance(refused, ValidationFailed) and refused.repair == 1
    assert "not grounded" in refused.error and '"ROBIN LEE"' in refused.error


def test_an_answer_naming_a_row_passes() -> None:
    [done] = validate(completed("The reports were written by Robin Lee and Ada Lin.", [AUTHORS]))
    assert isinstance(done, JobCompleted)


def test_names_come_from_the_analysis_answer() -> None:
    assert found_names([AUTHORS]) == ["ROBIN LEE", "ADA LIN"]
    counted = TaskOutcome(task_id="analyse", answer=371, evidence={"last_results": []})
    assert found_names([counted]) == ["371"]
    listed = TaskOutcome(task_id="analyse", answer=["BEA", "CY"], evidence={"n": 2})
    assert found_names([listed]) == ["BEA", "CY"]
    # prose, nothing found, or a task that wrote rather than searched: nothing to ground in
    prose = TaskOutcome(task_id="analyse", answer="two people", evidence={"n": 2})
    assert found_names([prose, TaskOutcome(task_id="w", answer=["x"])]) == []
    assert ungrounded("anything", []) is None
