from postel.services.generation.summary import MAX_LINE_CHARS, summary_lines


def test_lines_per_content_type() -> None:
    sections = [
        {"id": "h", "content_type": "heading", "elements": [{"level": 1, "text": "Intro"}]},
        {"id": "p", "content_type": "paragraph", "elements": [{"text": "a"}, {"text": "b"}]},
        {"id": "b", "content_type": "bullet_list", "elements": [{"items": ["x", "y", "z"]}]},
        {"id": "n", "content_type": "numbered_list", "elements": [{"items": ["x"]}]},
        {"id": "t", "content_type": "table", "elements": [{"headers": ["a"], "rows": [[1], [2]]}]},
        {"id": "c", "content_type": "code_block", "elements": [{"code": "a\nb\nc"}]},
    ]
    assert summary_lines(sections) == [
        '- heading "h": 1 "Intro"',
        '- paragraph "p" with 2 texts',
        '- bullet_list "b" with 3 items',
        '- numbered_list "n" with 1 items',
        '- table "t" with 2 rows',
        '- code_block "c" with 3 code lines',
    ]


def test_sections_without_id_are_left_out() -> None:
    sections = [
        {"content_type": "paragraph", "elements": [{"text": "a"}]},
        {"id": None, "content_type": "paragraph", "elements": [{"text": "a"}]},
        {"id": "", "content_type": "paragraph", "elements": [{"text": "a"}]},
        {"id": "kept", "content_type": "paragraph", "elements": [{"text": "a"}]},
    ]
    assert summary_lines(sections) == ['- paragraph "kept" with 1 texts']
    assert all("unknown" not in line for line in summary_lines(sections))


def test_past_200_lines_the_first_and_last_100_are_kept() -> None:
    sections = [
        {"id": f"s{i}", "content_type": "paragraph", "elements": [{"text": "t"}]}
        for i in range(250)
    ]
    lines = summary_lines(sections)
    assert len(lines) == 201
    assert lines[0] == '- paragraph "s0" with 1 texts'
    assert lines[99] == '- paragraph "s99" with 1 texts'
    assert lines[100] == "- … 50 more sections left out …"
    assert lines[101] == '- paragraph "s150" with 1 texts'
    assert lines[-1] == '- paragraph "s249" with 1 texts'
    assert len(summary_lines(sections[:200])) == 200


def test_lines_are_capped_and_model_text_is_escaped() -> None:
    long = {"id": "h", "content_type": "heading", "elements": [{"level": 2, "text": 'x"\n' * 200}]}
    (line,) = summary_lines([long])
    assert len(line) == MAX_LINE_CHARS and "\n" not in line
