"""Coercion fuzzer: hostile values for every desired type, and random JSON Schemas.

    python3 -m pytest tests/fuzz/test_fuzz_coerce.py -q -s                           # CI size
    POSTEL_FUZZ_EXAMPLES=5000 python3 -m pytest tests/fuzz/test_fuzz_coerce.py -q -s  # full

Also the slowest shapes known (long runs of digits, separators, markdown marks, quotes,
brackets, words) at the size of the largest message (MAX_PAYLOAD_BYTES) at full size.

Values: the known adversarial answers (magnitudes, ranges, bounds, dates, vague yes/no,
non-finite and absurdly large numbers, deep JSON), each tried for every type first, then
random text, numerals in every spelling, JSON (NaN, Infinity, huge ints, deep nesting),
wrapped in markdown, quotes and fences, and long repetitions. The property: coerce returns
a value of exactly the type (every number finite, the whole value JSON-serialisable) or
raises CoercionError / UnsupportedSchemaError, nothing else, within a CPU-time bound.
Each type prints a line of counts.
"""

from __future__ import annotations

import gc
import json
import math
import time
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from postel.messages.limits import MAX_JSON_REPAIR_CHARS, MAX_NUMERAL_DIGITS, MAX_PAYLOAD_BYTES
from postel.messages.types import TypeSpec
from postel.services.validation import CoercionError, UnsupportedSchemaError, coerce
from pydantic import ValidationError
from structlog.testing import capture_logs
from support.fuzz import FUZZ_EXAMPLES, fuzz_settings

# A value must be read or refused within this much CPU time: inputs here are up to ~60,000
# characters, and the worst measured case is far below it (docs/API.md's Limits bound it).
CPU_LIMIT_S = 1.0
# A whole message (MAX_PAYLOAD_BYTES) of the slowest shapes; measured worst about 0.5 s.
LONG_CPU_LIMIT_S = 3.0
# The full size runs for minutes: past pytest's default limit of 300 s.
pytestmark = pytest.mark.timeout(max(300, FUZZ_EXAMPLES * 0.3))

ADVERSARIAL = [
    "5k", "$5M", "1.2B", "5 percent", "5%", "1,00,000", "1_000", "0x1F", "0xZZ", "12.5.2024",
    "<5", "at least 5", "Items (5)", "one or two", "call 555 123", "3rd", "5-10", "1e999",
    "-1e999", "1e-400", "1e1000000", "1e" + "9" * 50, "9" * 5000, "NaN", "Infinity", "-inf",
    "No idea", "No problem", "0.5", "Negative for COVID-19", "false positive", "-1", "Right?",
    "on hold", "1,000", "none", "N/A", "**Paris**", "__init__", "`x`", '"a" and "b"',
    '{"a": NaN}', '{"a": 1e999}', "[1e999, 2]", '{"a": ' + "9" * 5000 + "}", "[" * 5000,
    "[" * 200 + "]" * 200, '{"a": ' * 3000 + "1" + "}" * 3000, "{'a': [1,2," * 2000,
    '{"value": "1e5000"}', "(5.00)", "$1,299.99", "1.299,99 €", "twenty-first", "1/2",
    "12:30", "v1.2.3", "555-123-4567", "between 5 and 10", "5+", "2*3*4", "0b102", "1__0",
    "₹1,00,00,000.50", "- a\n- b\n- 1,000", "```json\n[1, 2,]\n```", "\x00", "\ufeff5",
    "５", "٣", "Ⅻ", "1e", "e5", ".", "-", "", " ", "\n\n", "*" * 1000, "`" * 3000,
    '"\\' * 3000, "“‘«" * 2000 + "x" + "»’”" * 2000, "0" * 1001, "0." + "0" * 999 + "1",
]  # fmt: skip

CURRENCIES = ["", "$", "€", "£", "₹", "USD ", "EUR "]
SUFFIXES = ["", "k", "K", "M", "B", "bn", "m", "%", " percent", " million", " lakh", "st"]
WRAPPERS = ["{}", "**{}**", "*{}*", "_{}_", "`{}`", '"{}"', "```\n{}\n```", "({})", "~{}"]
PIECES = ["1", "1 ", "1,", "123 ", "one ", "*a", "`", '"\\', "[", "{a", "5%", "yes ", "- a\n"]
LONG_PIECES = [
    *PIECES, "*", "**a", '"', "```", "(5 ", "5-", "<", "at least ", "lorem ipsum ", "{", "1:",
    "1/", "1e", "0x", "$", "1\u00a0", "\n", "a;", "a, ", "“‘«", "'", "+", "first ", "twenty-",
    "_a", "- the answer is $5 and nothing else\n",
]  # fmt: skip
# JSON slop the repairing parser is slowest on, repeated up to the largest size it repairs.
REPAIR_PIECES = ["k: v, ", "{7n:s}", "'k': 'v', ", "{a b ", "(5 ", "[1, "]


@st.composite
def numerals(draw: st.DrawFn) -> str:
    digits = draw(st.from_regex(r"\d{1,25}", fullmatch=True))
    separator = draw(st.sampled_from(["", ",", ".", " ", "'", "_", "\u00a0", "-", "/", ":"]))
    more = draw(st.from_regex(r"\d{0,6}", fullmatch=True))
    body = f"{digits}{separator}{more}" if more else digits
    exponent = draw(st.sampled_from(["", "e3", "e-3", "e308", "e309", "e999", "E-999", "e1001"]))
    sign = draw(st.sampled_from(["", "-", "+", "−"]))
    currency = draw(st.sampled_from(CURRENCIES))
    return f"{sign}{currency}{body}{exponent}{draw(st.sampled_from(SUFFIXES))}"


HUGE = 10**MAX_NUMERAL_DIGITS
json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=HUGE // 10**3, max_value=HUGE * 10**5)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=30,
)
texts = st.one_of(
    st.sampled_from(ADVERSARIAL),
    st.text(max_size=200),
    numerals(),
    st.lists(numerals(), min_size=1, max_size=4).map(" ".join),
    st.lists(numerals(), min_size=1, max_size=6).map(", ".join),
    json_values.map(lambda v: json.dumps(v, allow_nan=True)),
    st.builds(lambda p, n: p * n, st.sampled_from(PIECES), st.integers(1, 20_000)),
    st.builds(lambda n: "[" * n + "]" * n, st.integers(1, 3000)),
    st.builds(lambda w, t: w.format(t), st.sampled_from(WRAPPERS), st.sampled_from(ADVERSARIAL)),
    st.builds(lambda a, b: f"{a} {b}", st.sampled_from(ADVERSARIAL), st.text(max_size=30)),
)
hostile_leaves = texts | json_leaves
# Objects shaped like SCHEMA below, with hostile values in its fields.
schema_shaped = st.fixed_dictionaries(
    {"n": hostile_leaves},
    optional={"x": hostile_leaves, "ok": hostile_leaves, "tags": st.lists(hostile_leaves)},
)
hostile_values = st.one_of(
    texts,
    json_values,
    schema_shaped,
    schema_shaped.map(lambda v: json.dumps(v, allow_nan=True)),
)

SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 0},
        "x": {"type": ["number", "null"]},
        "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    },
    "required": ["n"],
}
SPECS = [
    "float",
    "int",
    "bool",
    "str",
    "list[int]",
    "list[float]",
    "list[str]",
    "list[bool]",
    "dict",
    "document",
    SCHEMA,
]


def _assert_of_type(value: Any, spec: TypeSpec) -> None:
    if spec.kind == "float":
        assert type(value) is float and math.isfinite(value)
    elif spec.kind == "int":
        assert type(value) is int
    elif spec.kind == "bool":
        assert type(value) is bool
    elif spec.kind == "str":
        assert type(value) is str
    elif spec.kind == "list":
        assert type(value) is list and spec.items is not None
        for item in value:
            _assert_of_type(item, spec.items)
    elif spec.kind in ("dict", "document"):
        assert type(value) is dict
    elif spec.json_schema == SCHEMA:
        assert type(value) is dict and type(value["n"]) is int and value["n"] >= 0


class Tally:
    """Counts per type, and the slowest value. An unforeseen error that coerce's last-resort
    guard turned into a CoercionError is counted (from its log line) as an other exception."""

    def __init__(self, cpu_limit_s: float = CPU_LIMIT_S) -> None:
        self.counts: Counter[str] = Counter()
        self.slowest = (0.0, "")
        self.cpu_limit_s = cpu_limit_s

    def run(self, raw: Any, spec: TypeSpec) -> None:
        self.counts["tried"] += 1
        refused = False
        # the cyclic collector's pauses over hypothesis's own data are not coercion's cost
        gc.disable()
        try:
            with capture_logs() as logs:
                started = time.process_time()
                try:
                    value = coerce(raw, spec)
                except (CoercionError, UnsupportedSchemaError):
                    refused = True
                except Exception:
                    self.counts["other exceptions"] += 1
                    raise
                finally:
                    spent = time.process_time() - started
        finally:
            gc.enable()
        if refused:
            self.counts["refused"] += 1
        else:
            self.counts["coerced"] += 1
            _assert_of_type(value, spec)
            json.dumps(value, allow_nan=False)  # finite everywhere, and serialisable
        if spent > self.slowest[0]:
            self.slowest = (spent, repr(raw)[:40])
        unforeseen = [e for e in logs if e["event"] == "coercion_error_unforeseen"]
        self.counts["other exceptions"] += len(unforeseen)
        assert not unforeseen, f"{unforeseen[0]['error']} for {repr(raw)[:80]}"
        assert spent < self.cpu_limit_s, f"{spent:.2f} s CPU for {repr(raw)[:80]}"

    def line(self, name: str) -> str:
        counts = self.counts
        return (
            f"fuzz coerce {name}: {counts['tried']} values tried, {counts['coerced']} coerced, "
            f"{counts['refused']} refused, {counts['other exceptions']} other exceptions; "
            f"slowest {self.slowest[0] * 1000:.1f} ms CPU ({self.slowest[1]})"
        )


@pytest.mark.parametrize("spelling", SPECS, ids=lambda s: s if isinstance(s, str) else "schema")
def test_hostile_values_are_coerced_or_refused(spelling: str | dict[str, Any]) -> None:
    spec = TypeSpec.model_validate(spelling)
    tally = Tally()
    for raw in ADVERSARIAL:
        tally.run(raw, spec)

    @fuzz_settings
    @given(hostile_values)
    def run(raw: Any) -> None:
        tally.run(raw, spec)

    run()
    print(tally.line(spec.spelling() if spec.kind != "json_schema" else "json_schema"))
    assert tally.counts["other exceptions"] == 0


schema_values = st.one_of(
    json_leaves,
    st.lists(json_leaves, max_size=3),
    st.sampled_from(["object", "array", "string", "number", "integer", "boolean", "null"]),
)
random_schemas = st.recursive(
    st.dictionaries(
        st.sampled_from(
            ["type", "properties", "required", "additionalProperties", "items", "enum",
             "const", "minimum", "maximum", "exclusiveMinimum", "minItems", "maxLength",
             "title", "anyOf", "pattern"]
        ),
        schema_values,
        min_size=1,
        max_size=4,
    ),
    lambda inner: st.dictionaries(
        st.sampled_from(["type", "properties", "items", "additionalProperties", "required"]),
        inner | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        min_size=1,
        max_size=3,
    ),
    max_leaves=10,
)  # fmt: skip


def test_random_schemas_are_used_or_refused() -> None:
    tally = Tally()
    not_type_specs = 0

    @fuzz_settings
    @given(random_schemas, hostile_values)
    def run(schema: dict[str, Any], raw: Any) -> None:
        nonlocal not_type_specs
        try:
            spec = TypeSpec.model_validate({"kind": "json_schema", "schema": schema})
        except ValidationError:
            not_type_specs += 1  # refused where requests are read, before any coercion
            return
        tally.run(raw, spec)

    run()
    print(tally.line("random JSON Schemas") + f"; {not_type_specs} not TypeSpecs")
    assert tally.counts["other exceptions"] == 0


@pytest.mark.parametrize("spelling", SPECS, ids=lambda s: s if isinstance(s, str) else "schema")
def test_long_hostile_shapes_stay_fast(spelling: str | dict[str, Any]) -> None:
    """Each slow shape found so far, as long as the largest message (CI: 50,000 characters)."""
    spec = TypeSpec.model_validate(spelling)
    size = MAX_PAYLOAD_BYTES if FUZZ_EXAMPLES >= 1000 else 50_000
    tally = Tally(cpu_limit_s=LONG_CPU_LIMIT_S)
    for piece in LONG_PIECES:
        tally.run((piece * (size // len(piece) + 1))[:size], spec)
    for piece in REPAIR_PIECES:
        tally.run("{" + (piece * MAX_JSON_REPAIR_CHARS)[: MAX_JSON_REPAIR_CHARS - 2] + "}", spec)
    print(tally.line(f"{spec.spelling()}, {size:,}-character shapes and repairable slop"))
