from postel.services.generation.cutoff import analyse_response

HEAD = (
    '{"sections": [{"id": "intro", "content_type": "heading", '
    '"elements": [{"level": 1, "text": "T"}]}, '
)


def test_mid_string_cut_keeps_the_fragment_as_is() -> None:
    raw = (
        HEAD + '{"id": "p", "content_type": "paragraph", "elements": [{"text": "one"}, {"text": "tw'
    )
    analysis = analyse_response(raw)
    assert analysis.open_section and analysis.cut is not None
    assert analysis.cut.fragment == '{"text": "tw'
    assert raw.endswith(analysis.cut.fragment)
    assert analysis.cut.element_before == {"text": "one"}
    assert analysis.sections[-1]["elements"] == [{"text": "one"}]


def test_mid_number_cut_is_never_stored_as_a_value() -> None:
    raw = HEAD + (
        '{"id": "t", "content_type": "table", "elements": [{"headers": ["item", "price"], '
        '"rows": [["tea", 3.5], ["cake", 2'
    )  # 29.99 cut to 2
    analysis = analyse_response(raw)
    assert analysis.cut is not None
    assert analysis.cut.fragment is not None and analysis.cut.fragment.endswith('["cake", 2')
    assert analysis.cut.closed_units == [["tea", 3.5]]  # the row holding the cut 2 is not kept
    assert analysis.sections[-1]["elements"] == []
    assert "2" not in str(analysis.sections[-1]) and 2 not in analysis.cut.closed_units[0]


def test_mid_number_cut_of_a_plain_value() -> None:
    raw = '{"sections": [{"id": "h", "content_type": "heading", "elements": [{"level": 1'
    analysis = analyse_response(raw)
    assert analysis.cut is not None and analysis.cut.fragment == '{"level": 1'
    assert analysis.sections == [{"id": "h", "content_type": "heading", "elements": []}]


def test_cut_in_the_first_element_has_no_element_before() -> None:
    raw = (
        '```json\n{"sections": [{"id": "p", "content_type": "paragraph", "elements": [{"text": "Hal'
    )
    analysis = analyse_response(raw)
    assert analysis.cut is not None
    assert analysis.cut.element_index == 0
    assert analysis.cut.element_before is None
    assert analysis.cut.fragment == '{"text": "Hal'


def test_nested_structures_and_escapes() -> None:
    raw = (
        '{"sections": [{"id": "t", "content_type": "table", "elements": ['
        '{"headers": ["a"], "rows": [[{"k": [1, {"z": "}]\\"x"}]}], ["b"]]}, '
        '{"headers": ["q"], "rows": [["x\\u00e9"], [{"deep": [[1, 2], [3'
    )
    analysis = analyse_response(raw)
    assert analysis.cut is not None
    first = analysis.sections[0]["elements"][0]
    assert first["rows"][0][0] == {"k": [1, {"z": '}]"x'}]}
    assert analysis.cut.closed_units == [["xé"]]
    assert analysis.cut.fragment is not None and analysis.cut.fragment.startswith(
        '{"headers": ["q"]'
    )


def test_exactly_one_incomplete_section() -> None:
    sections = ",".join(
        f'{{"id": "s{i}", "content_type": "paragraph", "elements": [{{"text": "t{i}"}}]}}'
        for i in range(5)
    )
    raw = (
        '{"sections": ['
        + sections
        + ', {"id": "s5", "content_type": "paragraph", "elements": [{"text": "t'
    )
    analysis = analyse_response(raw)
    assert len(analysis.sections) == 6
    assert analysis.open_section  # only the last one is open
    assert [s["elements"] for s in analysis.sections[:5]] == [[{"text": f"t{i}"}] for i in range(5)]
    assert analysis.sections[5]["elements"] == []


def test_cut_in_a_section_header_restarts_that_section() -> None:
    raw = HEAD + '{"id": "p", "content_ty'
    analysis = analyse_response(raw)
    assert analysis.restart_section and not analysis.open_section
    assert [s["id"] for s in analysis.sections] == ["intro"]


def test_cut_between_elements_has_no_fragment() -> None:
    raw = HEAD + '{"id": "p", "content_type": "paragraph", "elements": [{"text": "a"}, '
    analysis = analyse_response(raw)
    assert analysis.cut is not None and analysis.cut.fragment is None
    assert analysis.cut.element_before == {"text": "a"}


def test_cut_code_keeps_only_whole_lines() -> None:
    raw = (
        '{"sections": [{"id": "c", "content_type": "code_block", "elements": '
        '[{"language": "py", "code": "a = 1\\nb = 2\\nc = \\u00'
    )
    analysis = analyse_response(raw)
    assert analysis.cut is not None and analysis.cut.closed_units == ["a = 1\n", "b = 2\n"]


def test_a_complete_response_has_no_cut() -> None:
    analysis = analyse_response(HEAD[:-2] + "]}")
    assert analysis.json_closed and not analysis.open_section and analysis.cut is None
