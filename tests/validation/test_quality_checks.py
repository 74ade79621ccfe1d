"""Quality checks after coercion, and the type descriptions used in prompts."""

from __future__ import annotations

from typing import Any

import pytest
from postel.messages.intent import Intent, QualityRequirements
from postel.messages.types import TypeSpec
from postel.services.validation import check_quality, describe_type, says_nothing


def _intent(criteria: list[str] | None = None, completeness: float = 0.8) -> Intent:
    return Intent(
        detected_language="en",
        normalized_request="r",
        intent="i",
        primary_goal="g",
        success_criteria=criteria or [],
        quality_requirements=QualityRequirements(completeness_threshold=completeness),
    )


def _doc(*sections: dict[str, Any]) -> dict[str, Any]:
    return {"sections": list(sections)}


BULLETS = {"id": "b", "content_type": "bullet_list", "elements": [{"items": ["x", "y"]}]}
PARAGRAPH = {"id": "p", "content_type": "paragraph", "elements": [{"text": "one two three"}]}


@pytest.mark.parametrize(
    ("value", "spelling", "problem"),
    [
        ("  ", "str", "the answer is empty"),
        ([], "list[str]", "the list is empty"),
        ({}, "dict", "the object is empty"),
        (_doc(), "document", "the document has no sections"),
        (
            _doc({"id": "intro", "content_type": "paragraph", "elements": []}),
            "document",
            "the document has sections but no text in any of them",
        ),
    ],
)
def test_an_answer_with_nothing_in_it_says_nothing_whatever_the_intent(
    value: Any, spelling: str, problem: str
) -> None:
    """Emptiness of the whole answer is not a quality judgement: no completeness threshold
    or profile relaxes it (the validator refuses it before quality is judged)."""
    spec = TypeSpec.parse(spelling)
    assert says_nothing(value, spec) == problem
    assert check_quality(value, spec, _intent(completeness=0.0)) == []


def test_an_empty_section_beside_text_fails_when_completeness_is_required() -> None:
    spec = TypeSpec(kind="document")
    value = _doc(PARAGRAPH, {"id": "intro", "content_type": "paragraph", "elements": []})
    problem = "section intro (paragraph) has no content"
    assert says_nothing(value, spec) is None
    assert check_quality(value, spec) == [problem]
    assert check_quality(value, spec, _intent()) == [problem]
    assert check_quality(value, spec, _intent(completeness=0.0)) == []
    assert check_quality(value, spec, _intent(completeness=0.0), strict=True) == [problem]


@pytest.mark.parametrize(
    ("value", "spelling", "criterion", "ok"),
    [
        (["a", "b", "c"], "list[str]", "Return at least 3 items", True),
        (["a", "b"], "list[str]", "Return at least three names", False),
        (["a", "b"], "list[str]", "no more than 2 entries", True),
        ([1, 2, 3], "list[int]", "exactly 2 numbers", False),
        ("one two three four", "str", "at most 3 words", False),
        ("short", "str", "no more than 10 characters", True),
        ("short", "str", "at least 2 items", True),  # items do not apply to text
        (_doc(BULLETS, PARAGRAPH), "document", "at least 2 sections", True),
        (_doc(BULLETS), "document", "at least 3 bullet points", False),
        (_doc(BULLETS, PARAGRAPH), "document", "at most 4 words", False),
        (1.5, "float", "at least 2 items", True),  # a number has no items
        (["a"], "list[str]", "the names are accurate", True),  # not machine-checkable
    ],
)
def test_counting_success_criteria(value: Any, spelling: str, criterion: str, ok: bool) -> None:
    problems = check_quality(value, TypeSpec.parse(spelling), _intent([criterion]))
    assert (problems == []) is ok
    if not ok:
        assert problems[0].startswith(f"success criterion {criterion!r} not met: found ")


def test_problem_names_the_counts() -> None:
    problems = check_quality(["a"], TypeSpec.parse("list[str]"), _intent(["at least 2 items"]))
    assert problems == [
        "success criterion 'at least 2 items' not met: found 1 items, at least 2 required"
    ]


@pytest.mark.parametrize(
    ("spec", "description"),
    [
        (TypeSpec.parse("float"), "a single number (float)"),
        (TypeSpec.parse("int"), "a single whole number (int)"),
        (TypeSpec.parse("bool"), "yes or no (bool: true or false)"),
        (TypeSpec.parse("list[str]"), "a JSON array of strings (list[str])"),
        (TypeSpec.parse("list[list[int]]"), "a JSON array of lists (list[list[int]])"),
        (
            TypeSpec.model_validate({"type": "object", "properties": {"a": {"type": "number"}}}),
            'a JSON value matching the JSON Schema {"type":"object","properties":'
            '{"a":{"type":"number"}}}',
        ),
    ],
)
def test_describe_type(spec: TypeSpec, description: str) -> None:
    assert describe_type(spec) == description


def test_every_kind_has_a_description() -> None:
    for spelling in ("str", "dict", "document", "list[float]", "list[bool]", "list[document]"):
        assert describe_type(TypeSpec.parse(spelling))


def test_a_document_of_empty_elements_says_nothing() -> None:
    """Two code blocks with a language and no code (what `postel demo` once accepted) and a
    heading with a level but no text fill a document's shape without a word."""
    hollow = _doc(
        {"id": "s", "content_type": "code_block", "elements": [{"code": ""}]},
        {"id": "c", "content_type": "code_block", "elements": [{"language": "python", "code": ""}]},
        {"id": "h", "content_type": "heading", "elements": [{"level": 2, "text": " "}]},
    )
    assert says_nothing(hollow, TypeSpec(kind="document")) == (
        "the document has sections but no text in any of them"
    )
    full = _doc({"id": "s", "content_type": "paragraph", "elements": [{"text": "Hi"}]})
    assert says_nothing(full, TypeSpec(kind="document")) is None
    assert check_quality(full, TypeSpec(kind="document")) == []
