import re

from postel.services.generation.continuation import (
    CUT_CLOSE,
    CUT_OPEN,
    build_continuation_context,
    read_cut_off_element,
    read_resume_point,
    render_continuation,
)
from postel.services.generation.cutoff import analyse_response
from postel.services.generation.merge import merge_response
from postel.services.llm.tokens import count_tokens

RAW = (
    '{"sections": [{"id": "h", "content_type": "heading", '
    '"elements": [{"level": 2, "text": "Prices"}]}, '
    '{"id": "t", "content_type": "table", "elements": [{"headers": ["x"], "rows": [["a"]]}, '
    '{"headers": ["item", "price"], "rows": [["tea", 3.5], ["cake", 29.9'
)


def _text(extra_sections: int = 0):
    filler = [
        {"id": f"f{i}", "content_type": "paragraph", "elements": [{"text": "long " * 50}]}
        for i in range(extra_sections)
    ]
    sections, pending = merge_response(filler, None, analyse_response(RAW))
    return render_continuation(build_continuation_context(sections, pending))


def test_context_shows_summary_resume_point_element_before_and_raw_cut_off() -> None:
    text = _text()
    assert '- heading "h": 2 "Prices"' in text.user_text
    assert '- table "t" with 1 rows' in text.user_text
    resume = read_resume_point(text.user_text)
    assert resume is not None
    assert (resume.mode, resume.section, resume.element, resume.units) == ("continue", 2, 2, 1)
    assert (
        read_cut_off_element(text.user_text)
        == '{"headers": ["item", "price"], "rows": [["tea", 3.5], ["cake", 29.9'
    )
    assert '{"headers": ["x"], "rows": [["a"]]}' in text.user_text
    assert CUT_OPEN in text.user_text and CUT_CLOSE in text.user_text


def test_size_does_not_depend_on_document_length_apart_from_the_summary() -> None:
    small, large = _text(0), _text(500)
    assert small.instructions == large.instructions
    small_rest = small.user_text.split("\n\n", 1)[1]
    large_rest = large.user_text.split("\n\n", 1)[1]
    assert small_rest == re.sub(r"(?i)section 502", lambda m: m[0][:-3] + "2", large_rest)
    assert large.user_text.count("\n- ") <= 201


def test_element_before_is_clipped() -> None:
    big = {"id": "p", "content_type": "paragraph", "elements": [{"text": "w " * 5000}]}
    context = build_continuation_context([big], None)
    assert context.element_before is None  # nothing pending: start the next section
    sections, pending = merge_response(
        [],
        None,
        analyse_response(
            '{"sections": ['
            + '{"id": "p", "content_type": "paragraph", "elements": [{"text": "'
            + "w " * 5000
            + '"}, {"text": "c'
        ),
    )
    text = render_continuation(build_continuation_context(sections, pending)).user_text
    assert count_tokens(text) < 600 and "…(clipped)" in text


def test_start_of_a_new_section() -> None:
    sections, pending = merge_response(
        [], None, analyse_response(RAW[: RAW.index('{"id": "t"') - 2] + ", ")
    )
    text = render_continuation(build_continuation_context(sections, pending)).user_text
    resume = read_resume_point(text)
    assert resume is not None and (resume.mode, resume.section) == ("start", 2)
    assert read_cut_off_element(text) is None
