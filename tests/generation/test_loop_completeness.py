from postel.services.generation.completeness import find_json_start, is_complete, strict_parse

DOC = '{"sections": [{"id": "a", "content_type": "paragraph", "elements": [{"text": "x"}]}]}'


def test_parsed_and_stopped_is_complete() -> None:
    assert is_complete(DOC, "stop")
    assert is_complete(DOC, None)


def test_finish_reason_length_is_never_complete_even_when_it_parses() -> None:
    assert strict_parse(DOC) is not None
    assert not is_complete(DOC, "length")


def test_a_closing_brace_at_the_end_proves_nothing() -> None:
    # Ends with "}" and "]}" by chance, yet cut: only parsing can tell.
    cut = '{"sections": [{"id": "a", "content_type": "code_block", "elements": [{"code": "x = {}'
    assert cut.endswith("}")
    assert not is_complete(cut, "stop")
    nested = '{"sections": [{"id": "a", "content_type": "table", "elements": [{"rows": [[1]]}]}'
    assert nested.endswith("]}")
    assert not is_complete(nested, "stop")


def test_fences_and_prose_are_stripped() -> None:
    wrapped = f"Here is the document:\n```json\n{DOC}\n```\nAnything else?"
    assert is_complete(wrapped, "stop")
    assert find_json_start(wrapped) == wrapped.index('{"sections"')


def test_no_json_is_not_complete() -> None:
    assert not is_complete("I cannot help with that.", "stop")
    assert not is_complete("", "stop")
