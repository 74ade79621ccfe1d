"""The resumable JSON reader: a text cut anywhere, in any number of pieces, reads back to the
value the standard decoder gives for the whole text."""

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from postel.services.generation.stream import TAIL_CHARS, JsonStream, feed

VALUE = {
    "sections": [
        {
            "id": 'q"uote',
            "content_type": "table",
            "elements": [
                {
                    "headers": ["a\\b", "中文"],
                    "rows": [
                        ["é ß 😀 👍🏽 \n\t\u0001\u2028/", -12.5e-3, True, None, 0, 10**20],
                        [[], {}, [1, {"k": "v"}], "", 1.5, False],
                    ],
                }
            ],
        }
    ]
}


def read(pieces: list[str]) -> JsonStream:
    stream = JsonStream()
    for piece in pieces:
        result = feed(stream, piece)
        assert result.error is None and result.accepted == len(piece), (piece, result)
        # The state between pieces survives its own serialisation (it is kept in Redis).
        stream = JsonStream.model_validate_json(stream.model_dump_json())
    return stream


@pytest.mark.parametrize("ascii_only", [False, True])
@pytest.mark.parametrize("indent", [None, 1])
def test_two_pieces_cut_at_every_character(ascii_only: bool, indent: int | None) -> None:
    text = json.dumps(VALUE, ensure_ascii=ascii_only, indent=indent)
    for cut in range(len(text) + 1):
        stream = read([text[:cut], text[cut:]])
        assert stream.done and stream.value == VALUE, cut
        assert stream.offset == len(text)


def test_a_surrogate_pair_cut_between_its_halves_joins_into_one_character() -> None:
    text = json.dumps({"t": "a😀b"}, ensure_ascii=True)  # "a\ud83d\ude00b"
    cut = text.index("\\ude00")
    first = JsonStream()
    feed(first, text[:cut])
    assert first.leaf is not None and first.leaf.text == "a"
    assert first.leaf.raw == "\\ud83d", "the high half waits for its low half"
    feed(first, text[cut:])
    assert first.value == {"t": "a😀b"} and len(first.value["t"]) == 3


@pytest.mark.parametrize(
    ("head", "held"),
    [("\\", "\\"), ("\\u", "\\u"), ("\\u00", "\\u00"), ("\\u00e", "\\u00e"), ("\\n", "")],
)
def test_a_cut_escape_is_held_raw_until_it_completes(head: str, held: str) -> None:
    text = '{"t": "x' + head
    stream = JsonStream()
    assert feed(stream, text).accepted == len(text)
    assert stream.leaf is not None and stream.leaf.raw == held
    assert stream.leaf.text == ("x\n" if head == "\\n" else "x")


@settings(max_examples=150, deadline=None)
@given(
    value=st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(st.characters(blacklist_categories=("Cs",))),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=4), children, max_size=4)
        ),
        max_leaves=12,
    ),
    ascii_only=st.booleans(),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
)
def test_any_value_in_any_pieces(value: Any, ascii_only: bool, cuts: list[int]) -> None:
    text = json.dumps([value], ensure_ascii=ascii_only)
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    stream = read(pieces)
    assert stream.done and stream.value == json.loads(text)


def test_reading_stops_at_the_first_character_that_cannot_continue() -> None:
    stream = JsonStream()
    result = feed(stream, '{"a": [1, 2, "x\\q"]}')
    assert result.error is not None and "invalid escape" in result.error
    assert result.accepted == len('{"a": [1, 2, "x')
    assert stream.leaf is not None and stream.leaf.text == "x"
    assert stream.frames[-1].items == [1, 2]
    # The next piece goes on from the last good character.
    assert feed(stream, '"]}').error is None and stream.value == {"a": [1, 2, "x"]}


@pytest.mark.parametrize(
    ("text", "accepted", "why"),
    [
        ('{"a": tru', 9, None),
        ('{"a": trux', 9, "not a JSON number or literal"),
        ('{"a": 01', 7, "not a JSON number or literal"),
        ('{"a": 1.}', 8, "not a JSON number or literal"),
        ('{"a" 1}', 5, "expected ':'"),
        ('{"a": 1,}', 8, "expected a member name"),
        ("[1 2]", 3, "expected ','"),
        ('["a\nb"]', 3, "control character"),
        ("[NaN]", 1, "expected a value"),
    ],
)
def test_strict_json(text: str, accepted: int, why: str | None) -> None:
    result = feed(JsonStream(), text)
    assert result.accepted == accepted
    assert (result.error is None) if why is None else (why in str(result.error))


def test_a_number_is_whole_only_once_a_delimiter_follows() -> None:
    stream = JsonStream()
    feed(stream, "[29")
    assert stream.frames[-1].items == [] and stream.leaf is not None
    feed(stream, ".99")
    assert stream.frames[-1].items == []
    feed(stream, "]")
    assert stream.value == [29.99]


def test_nothing_after_the_root_is_read_and_whitespace_is_no_progress() -> None:
    stream = JsonStream()
    first = feed(stream, '  {"a": 1}\n```\nmore')
    assert stream.done and first.accepted == len('  {"a": 1}')
    assert first.progress == len('{"a":1}')
    assert feed(stream, '{"b": 2}').accepted == 0 and stream.value == {"a": 1}


def test_offsets_and_the_tail_cover_all_pieces() -> None:
    text = json.dumps({"t": "x" * 2000})
    stream = read([text[:700], text[700:1500], text[1500:1800]])
    assert stream.offset == 1800
    assert stream.tail == text[1800 - TAIL_CHARS : 1800]
    assert stream.frames[0].start == 0 and stream.leaf is not None and stream.leaf.start == 6
