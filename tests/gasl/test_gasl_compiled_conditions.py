"""A WHERE compiled once for a scan means exactly what the interpreter says, for any record:
strings, lists (any element), numbers, booleans, None and missing attributes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from postel.services.gasl import ast
from postel.services.gasl.adapters import _Table
from postel.services.gasl.budget import Deadline
from postel.services.gasl.conditions import evaluate

NAMES = ("name", "tags", "score")
texts = st.sampled_from(["Ada", "ada lovelace", "BOB", "Straße", "strasse", "", "lab"])
values = st.one_of(
    texts,
    st.lists(st.one_of(texts, st.integers(0, 3), st.lists(texts, max_size=2)), max_size=3),
    st.integers(0, 3),
    st.booleans(),
    st.none(),
)
records = st.lists(
    st.dictionaries(st.sampled_from(NAMES), values, max_size=3), min_size=1, max_size=12
)
fields = st.sampled_from(NAMES).map(lambda n: ast.Field((n,)))
leaves = st.one_of(
    st.builds(
        lambda f, v: ast.Compare(f, "=", ast.Value(v)),
        fields,
        st.one_of(texts, st.integers(0, 3), st.booleans(), st.none()),
    ),
    st.builds(lambda f, v: ast.Compare(ast.Value(v), "=", f), fields, texts),
    st.builds(
        lambda f, op, t: ast.TextMatch(f, op, ast.Value(t)),
        fields,
        st.sampled_from(["CONTAINS", "STARTS_WITH", "ENDS_WITH"]),
        st.sampled_from(["a", "ADA", "ss", "", "lab", "ß"]),
    ),
    st.builds(lambda f, v: ast.Compare(f, ">", ast.Value(v)), fields, st.integers(0, 3)),
    st.builds(
        lambda f, v, negated: ast.In(f, ast.Value(v), negated),
        fields,
        st.lists(st.one_of(texts, st.integers(0, 3)), max_size=3),
        st.booleans(),
    ),
)
conditions = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: ast.And(tuple(xs))),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: ast.Or(tuple(xs))),
        inner.map(ast.Not),
    ),
    max_leaves=5,
)


@settings(max_examples=400, deadline=None)
@given(records, conditions)
def test_a_compiled_condition_agrees_with_the_interpreter(
    rows: list[dict], condition: ast.Condition
) -> None:
    table = _Table(rows, use_indexes=False)
    test = table.matcher(condition)
    assert [o for o in range(len(rows)) if test(o)] == [
        o for o, row in enumerate(rows) if evaluate(condition, row)
    ]
    scanned = table.select(condition, None, 10_000, Deadline.never())
    assert scanned.ordinals == [o for o in range(len(rows)) if test(o)]
    indexed = _Table(rows, use_indexes=True).select(condition, None, 10_000, Deadline.never())
    assert indexed.ordinals == scanned.ordinals
