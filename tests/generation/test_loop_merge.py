from typing import Any

from postel.services.generation.cutoff import analyse_response
from postel.services.generation.merge import PendingCut, merge_response


def _apply(raws: list[str]) -> tuple[list[dict[str, Any]], PendingCut | None]:
    sections: list[dict[str, Any]] = []
    pending: PendingCut | None = None
    for raw in raws:
        sections, pending = merge_response(sections, pending, analyse_response(raw))
    return sections, pending


P_HEAD = '{"sections": [{"id": "p", "content_type": "paragraph", "elements": ['


def _doc(sections: str) -> str:
    return '{"sections": [' + sections + "]}"


def test_table_rows_continue_in_the_same_element() -> None:
    sections, pending = _apply(
        [
            '{"sections": [{"id": "t", "content_type": "table", "elements": [{"headers": ["a"], '
            '"rows": [["1"], ["2"], ["3',
            '{"sections": [{"id": "t", "content_type": "table", "elements": [{"headers": ["a"], '
            '"rows": [["3"], ["4',
            _doc(
                '{"id": "t", "content_type": "table", '
                '"elements": [{"headers": ["a"], "rows": [["4"]]}]}'
            ),
        ]
    )
    assert pending is None
    assert sections == [
        {
            "id": "t",
            "content_type": "table",
            "elements": [{"headers": ["a"], "rows": [["1"], ["2"], ["3"], ["4"]]}],
        }
    ]


def test_code_lines_and_list_items_are_appended() -> None:
    sections, _ = _apply(
        [
            '{"sections": [{"id": "c", "content_type": "code_block", "elements": '
            '[{"language": "py", "code": "a\\nb\\nc',
            _doc(
                '{"id": "c", "content_type": "code_block", '
                '"elements": [{"language": "py", "code": "c\\n"}]},'
                '{"id": "l", "content_type": "bullet_list", "elements": [{"items": ["x", "y'
            )[:-2],
            _doc('{"id": "l", "content_type": "bullet_list", "elements": [{"items": ["y"]}]}'),
        ]
    )
    assert sections[0]["elements"] == [{"language": "py", "code": "a\nb\nc\n"}]
    assert sections[1]["elements"] == [{"items": ["x", "y"]}]


def test_completed_paragraph_replaces_its_fragment_and_seam_repeat_is_dropped() -> None:
    first = P_HEAD + '{"text": "one"}, {"text": "tw'
    # The model repeats the element before the cut, then completes the cut one.
    second = _doc(
        '{"id": "p", "content_type": "paragraph", "elements": [{"text": "one"}, {"text": "two"}]}'
    )
    sections, pending = _apply([first, second])
    assert pending is None
    assert sections[0]["elements"] == [{"text": "one"}, {"text": "two"}]


def test_an_equal_element_that_completes_the_fragment_is_kept() -> None:
    first = P_HEAD + '{"text": "one"}, {"text": "on'
    second = _doc('{"id": "p", "content_type": "paragraph", "elements": [{"text": "one"}]}')
    sections, _ = _apply([first, second])
    assert sections[0]["elements"] == [{"text": "one"}, {"text": "one"}]


def test_a_response_that_does_not_continue_is_appended() -> None:
    first = '{"sections": [{"id": "p", "content_type": "paragraph", "elements": [{"text": "on'
    second = _doc('{"id": "q", "content_type": "paragraph", "elements": [{"text": "new"}]}')
    sections, pending = _apply([first, second])
    assert [s["id"] for s in sections] == ["p", "q"] and pending is None
    assert sections[0]["elements"] == []  # the fragment was never stored


def test_inputs_are_not_changed() -> None:
    sections, pending = _apply([P_HEAD + '{"text": "a"}, {"text": "b'])
    before = [dict(s) for s in sections]
    merge_response(
        sections,
        pending,
        analyse_response(
            _doc('{"id": "p", "content_type": "paragraph", "elements": [{"text": "b"}]}')
        ),
    )
    assert sections == before
