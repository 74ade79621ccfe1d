"""GASL fuzzers: hostile command text for the parser, random plans for the executor.

    python3 -m pytest tests/fuzz/test_fuzz_gasl.py -q -s                          # CI size
    POSTEL_FUZZ_EXAMPLES=10000 python3 -m pytest tests/fuzz/test_fuzz_gasl.py -q -s   # full

- Strings: random text, keyword soup, mutated valid commands and deep nesting. The parser
  must raise only GaslSyntaxError, its documented error.
- Plans: random (mostly well-formed) plans, caps raised to absurd values included, run
  against the bundled graph (3,261 nodes) with a small time budget and a model whose
  answers are random, slow or failing. Every run ends with documented statuses only, no
  exception escapes, the result serialises, and the run ends within its budget.
Each prints a line of counts.
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
from collections import Counter
from functools import cache
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from postel.messages.gasl import STATUSES
from postel.services.gasl.budget import COMMAND_BUDGET, PLAN_BUDGET, TimeBudget
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.errors import GaslSyntaxError
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.gasl.parser import USAGE, parse
from support.fuzz import FUZZ_EXAMPLES, fuzz_settings

BUDGET = TimeBudget(plan_s=0.25, command_s=0.05)
# A run must stop computing within its budget: its thread's CPU time may pass the budget
# only by the last deadline check, the records and the state's persisting. A run that
# waits (a model step the budget failed to cut) spends no CPU: the model counts the slow
# answers it finished, and there must be none. Wall time, which also counts whatever else
# the (shared, 2-core) machine runs, is only reported.
CPU_SLACK_S = 0.25
# The full size runs for minutes: past pytest's default limit of 300 s.
pytestmark = pytest.mark.timeout(max(300, FUZZ_EXAMPLES * 0.15))

VALID = [
    'FIND nodes WHERE entity_type = "PERSON" LIMIT 50 AS people',
    'FIND edges WHERE weight >= 8 AND keywords CONTAINS "author" AS strong',
    'FIND paths FROM ${people} TO (entity_type = "ORGANIZATION") MAX_LENGTH 2 LIMIT 100 AS l',
    'FIND paths FROM "BRIANA MORELAND" TO "ROBIN LEE" WHERE entity_type = "PERSON" AS chain',
    'PROCESS people USING "Pair people; keep source_ids" AS pairs',
    "UPDATE analysis.authors WITH people REPLACE",
    'ANALYZE analysis.authors USING "Which institutions dominate?" AS verdict',
    "DECLARE analysis.authors AS LIST WITH_DESCRIPTION 'Unique authors found.'",
    "REQUIRE EXISTS people",
    "ASSERT LEN ${people} > 0 AND LEN ${people} < 1000",
    'ON EMPTY people THEN FIND nodes WHERE entity_type = "PERSON" AS people',
    "TRY COUNT ghost AS n CATCH ANY SET adapter.caps.max_path_length=2 FINALLY COUNT n AS k END",
    'CANCEL PLAN "p-1"',
    "SELECT people FIELDS id, clusters AS slim",
    "AGGREGATE people BY source_ids WITH COLLECT OF id AS by_chunk",
    "RANK per_type BY value DESC LIMIT 5 AS top_types",
    'NEIGHBORS ${people} VIA "co-author" DEPTH 2 LIMIT 50 AS circle',
    "FIND nodes WHERE a = 1 OR NOT (b IN [1, 'x', NULL] AND c != TRUE) AS q",
]
WORDS = [
    *USAGE,
    "nodes",
    "edges",
    "paths",
    "AS",
    "WHERE",
    "LIMIT",
    "FROM",
    "TO",
    "MAX_LENGTH",
    "USING",
    "WITH",
    "EXISTS",
    "THEN",
    "CATCH",
    "ANY",
    "FINALLY",
    "END",
    "PLAN",
    "FIELDS",
    "BY",
    "OF",
    "VIA",
    "DEPTH",
    "AND",
    "OR",
    "NOT",
    "IN",
    "LEN",
    "CONTAINS",
    "EMPTY",
    "LIST",
    "DICT",
    "COUNTER",
    "MERGE",
    "REPLACE",
    "adapter.caps.max_results",
    "=",
    "==",
    "!=",
    "<>",
    ">=",
    "(",
    ")",
    "[",
    "]",
    ",",
    ".",
    ";",
    "\n",
    "#",
    "${x}",
    "${ x.y }",
    "${",
    '"',
    "'",
    '"a\\"b"',
    "'\\x'",
    "-1",
    "1e999",
    "9" * 5000,
    "0.5",
    "\x00",
    "\u200b",
    "＜＜＜",
    "ＦＩＮＤ",
]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        match draw(st.sampled_from(["delete", "insert", "repeat", "case"])):
            case "delete":
                text = text[:at] + text[at + draw(st.integers(1, 8)) :]
            case "insert":
                text = text[:at] + draw(st.sampled_from(WORDS) | st.text(max_size=5)) + text[at:]
            case "repeat":
                text = text[:at] + text[at:] * draw(st.integers(2, 4))
            case "case":
                text = text.swapcase()
    return text


@st.composite
def nested(draw: st.DrawFn) -> str:
    # Python's recursion limit is 1000; a few go well past it.
    depth = draw(st.integers(1, 1200) | st.just(3000))
    shape = draw(st.sampled_from(["parens", "not", "on", "try", "len", "list"]))
    balanced = draw(st.booleans())
    close = depth if balanced else draw(st.integers(0, depth))
    match shape:
        case "parens":
            return f"FIND nodes WHERE {'(' * depth}a = 1{')' * close} AS x"
        case "not":
            return f"FIND nodes WHERE {'NOT ' * depth}a = 1 AS x"
        case "on":
            return "ON EMPTY x THEN " * depth + "COUNT x AS y"
        case "try":
            return "TRY " * depth + "COUNT x AS y" + " CATCH ANY COUNT x AS z END" * close
        case "len":
            return f"ASSERT {'LEN ' * depth}${{x}} > 1"
    return f"FIND nodes WHERE a IN [{', '.join(['1'] * depth)}{']' if balanced else ''} AS x"


KEYWORD_SOUP = st.lists(
    st.sampled_from(WORDS) | st.from_regex(r"[A-Za-z_]\w{0,8}", fullmatch=True)
).map(" ".join)
# Deep nesting is slow to parse (up to a second at 3,000 levels), so it is one draw in six.
GASL_TEXT = st.one_of(
    st.text(max_size=300), KEYWORD_SOUP, KEYWORD_SOUP, mutated(), mutated(), nested()
)


def test_fuzz_gasl_strings() -> None:
    counts: Counter[str] = Counter()

    @fuzz_settings
    @given(GASL_TEXT)
    def one(source: str) -> None:
        counts["tried"] += 1
        try:
            parse(source)
        except GaslSyntaxError as exc:
            assert str(exc)  # a message a model can read
            counts["refused"] += 1
        else:
            counts["parsed"] += 1

    one()
    print(
        f"\nGASL strings: tried {counts['tried']}, parsed {counts['parsed']}, "
        f"refused {counts['refused']} (GaslSyntaxError), other exceptions 0 "
        f"[POSTEL_FUZZ_EXAMPLES={FUZZ_EXAMPLES}]"
    )
    assert counts["tried"] >= min(FUZZ_EXAMPLES, 100)


@cache
def graph() -> NetworkXAdapter:
    parse("COUNT x AS y")  # builds the parser once, outside any timed run
    return NetworkXAdapter.from_graphml(DEMO_GRAPH)


@cache
def node_ids() -> list[str]:
    ids = list(graph().graph.nodes)
    return ids[:40] + ids[-10:]


NAMES = st.sampled_from(["people", "p", "x", "all", "links", "n", "ghost"])
KEYS = st.sampled_from(["found", "found.authors", "counts", "missing", "found.x.y"])
FIELDS = st.sampled_from(
    ["id", "entity_type", "description", "source_ids", "weight", "keywords", "nope", "a.b", "value"]
)
LITERALS = st.one_of(
    st.integers(-3, 10**6).map(str),
    st.sampled_from(['"PERSON"', '"ORGANIZATION"', '"DATASET"', '"CDC"', "TRUE", "NULL", "8.0"]),
    st.text(alphabet="ab<>\"\\'\u200b ", max_size=6).map(json.dumps),
)
CAPS = st.sampled_from(
    ["max_results", "max_path_length", "max_paths", "max_expansions", "max_depth", "bogus"]
)
CAP_VALUES = st.one_of(
    st.integers(-1, 12),
    st.sampled_from(["1000000000000", "10000", "2000000", "1e9", '"x"', "TRUE"]),
)


def conditions() -> st.SearchStrategy[str]:
    comparison = st.one_of(
        st.builds(
            "{} {} {}".format, FIELDS, st.sampled_from(["=", "!=", ">", ">=", "<", "<="]), LITERALS
        ),
        st.builds("{} IN [{}, {}]".format, FIELDS, LITERALS, LITERALS),
        st.builds("{} NOT IN ${{{}}}".format, FIELDS, NAMES),
        st.builds(
            '{} {} "{}"'.format,
            FIELDS,
            st.sampled_from(["CONTAINS", "STARTS_WITH", "ENDS_WITH"]),
            st.sampled_from(["a", "CDC", "", "ROBIN"]),
        ),
        st.builds("LEN {} >= {}".format, FIELDS, st.integers(0, 3)),
    )
    return st.recursive(
        comparison,
        lambda inner: st.one_of(
            st.builds("({} AND {})".format, inner, inner),
            st.builds("({} OR {})".format, inner, inner),
            st.builds("NOT {}".format, inner),
        ),
        max_leaves=4,
    )


def endpoints() -> st.SearchStrategy[str]:
    return st.one_of(
        NAMES.map("${{{}}}".format),
        st.builds(json.dumps, st.sampled_from(node_ids()) | st.just("NOBODY")),
        conditions().map("({})".format),
    )


def optional(prefix: str, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    return st.one_of(st.just(""), strategy.map(lambda v: f" {prefix} {v}"))


def simple_commands() -> st.SearchStrategy[str]:
    small = st.integers(0, 5000)
    return st.one_of(
        st.builds(
            "FIND {}{}{} AS {}".format,
            st.sampled_from(["nodes", "edges"]),
            optional("WHERE", conditions()),
            optional("LIMIT", small),
            NAMES,
        ),
        st.builds(
            "FIND paths FROM {} TO {}{}{}{} AS {}".format,
            endpoints(),
            endpoints(),
            optional("WHERE", conditions()),
            optional("MAX_LENGTH", st.integers(0, 9)),
            optional("LIMIT", small),
            NAMES,
        ),
        st.builds(
            "NEIGHBORS {}{}{}{} AS {}".format,
            endpoints(),
            optional("VIA", st.sampled_from(['"author"', '"co"', '""'])),
            optional("DEPTH", st.integers(0, 9)),
            optional("LIMIT", small),
            NAMES,
        ),
        st.builds("SELECT {} FIELDS {}, {} AS {}".format, NAMES, FIELDS, FIELDS, NAMES),
        st.builds("SELECT {} WHERE {} AS {}".format, NAMES, conditions(), NAMES),
        st.builds("COUNT {} AS {}".format, NAMES, NAMES),
        st.builds(
            "AGGREGATE {}{} WITH {} AS {}".format,
            NAMES,
            optional("BY", FIELDS),
            st.one_of(
                st.just("COUNT"),
                st.builds(
                    "{} OF {}".format,
                    st.sampled_from(["SUM", "AVG", "MIN", "MAX", "COLLECT"]),
                    FIELDS,
                ),
            ),
            NAMES,
        ),
        st.builds(
            "RANK {} BY {}{}{} AS {}".format,
            NAMES,
            FIELDS,
            optional("", st.sampled_from(["ASC", "DESC"])),
            optional("LIMIT", small),
            NAMES,
        ),
        st.builds("DECLARE {} AS {}".format, KEYS, st.sampled_from(["LIST", "DICT", "COUNTER"])),
        st.builds(
            "UPDATE {} WITH {}{}".format,
            KEYS,
            NAMES,
            optional("", st.sampled_from(["MERGE", "REPLACE"])),
        ),
        st.builds("SET adapter.caps.{}={}".format, CAPS, CAP_VALUES),
        st.builds("REQUIRE EXISTS {}".format, NAMES),
        st.builds("ASSERT LEN ${{{}}} {} {}".format, NAMES, st.sampled_from([">", "<"]), small),
        st.builds(
            'PROCESS {} USING "{}" AS {}'.format, NAMES, st.sampled_from(["pair", ""]), NAMES
        ),
        st.builds('ANALYZE {} USING "why?" AS {}'.format, KEYS, NAMES),
        st.builds('CANCEL PLAN "{}"'.format, st.sampled_from(["plan", "other"])),
    )


def commands() -> st.SearchStrategy[str]:
    simple = simple_commands()
    block = st.lists(simple, min_size=1, max_size=3).map("; ".join)
    return st.one_of(
        simple,
        simple,
        simple,
        st.builds(
            "ON {} {} THEN {}".format,
            st.sampled_from(["EMPTY", "ERROR", "PARTIAL", "SCHEMA_MISMATCH"]),
            NAMES,
            simple,
        ),
        st.builds("TRY {} CATCH ANY {}{} END".format, block, block, optional("FINALLY", block)),
        mutated(),
    )


# What the fake model does for one PROCESS or ANALYZE call.
ANSWERS = st.one_of(
    st.builds(
        lambda items: {"items": items},
        st.lists(st.dictionaries(st.text(max_size=4), st.integers()), max_size=3),
    ),
    st.just({"answer": "a", "rationale": "r", "evidence": ["x"]}),
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3),
    st.sampled_from(["raise", "slow"]),
)


class FuzzModel:
    """Answers PROCESS and ANALYZE with the drawn answers in turn: JSON, a failure, or no
    answer before the budget ends."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.calls = 0
        self.slow_answers_finished = 0

    async def complete_json(
        self, step: str, parts: dict[str, str], schema: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        answer = self.answers[self.calls % len(self.answers)]
        self.calls += 1
        if answer == "raise":
            raise ConnectionError("the endpoint went away")
        if answer == "slow":
            await asyncio.sleep(10)
            self.slow_answers_finished += 1
        return answer, {"model": "fuzz"}


# Plans often start by binding a few variables, so later commands have something to work on.
SETUP = st.lists(
    st.sampled_from(
        [
            'FIND nodes WHERE entity_type = "PERSON" LIMIT 40 AS people',
            "FIND nodes AS all",
            "FIND edges WHERE weight >= 8 AS links",
            "DECLARE found AS DICT",
            "DECLARE found.authors AS LIST",
            "DECLARE counts AS COUNTER",
            "SET adapter.caps.max_expansions=1000000000",
            "SET adapter.caps.max_path_length=1000000",
        ]
    ),
    max_size=4,
)
PLANS = st.fixed_dictionaries(
    {
        "plan_id": st.sampled_from(["plan", "other", ""]),
        "why": st.text(max_size=20),
        "commands": st.builds(
            lambda setup, rest: setup + rest, SETUP, st.lists(commands(), max_size=8)
        ),
        "config": st.fixed_dictionaries(
            {"stop_on_error": st.booleans(), "continue_on_empty": st.booleans()}
        ),
    }
)


# Always tried, whatever the size: every cap raised then all paths from all nodes (stopped by
# the command budget, then the plan budget), and a model that does not answer in time.
RUNAWAY_PATHS = 'FIND paths FROM ${all} TO (entity_type = "NOBODY") WHERE NOT id CONTAINS "z" AS p'
RUNAWAY = {
    "plan_id": "runaway",
    "commands": [
        "SET adapter.caps.max_path_length=1000000",
        "SET adapter.caps.max_expansions=1000000000000",
        "FIND nodes AS all",
        *[RUNAWAY_PATHS] * 6,
        "COUNT p AS n",
    ],
}
SLOW_MODEL = {
    "plan_id": "slow",
    "commands": ["FIND nodes LIMIT 3 AS x", 'PROCESS x USING "y" AS z'],
}


class GcTime:
    """CPU seconds spent in garbage collection: hypothesis's own objects pile up over a long
    run, and a full collection (seconds, in this process) is no part of a plan's work."""

    def __init__(self) -> None:
        self.total = 0.0
        self.longest = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
            return
        took = time.thread_time() - self._started
        self.total += took
        self.longest = max(self.longest, took)


def test_fuzz_gasl_plans() -> None:
    counts: Counter[str] = Counter()
    stops: Counter[str] = Counter()
    slowest = {"wall": 0.0, "cpu": 0.0}
    collecting = GcTime()
    gc.callbacks.append(collecting)

    @fuzz_settings
    @given(PLANS, st.lists(ANSWERS, min_size=1, max_size=3))
    @example(RUNAWAY, ["raise"])
    @example(SLOW_MODEL, ["slow"])
    def one(plan: dict[str, Any], answers: list[Any]) -> None:
        model = FuzzModel(answers)
        executor = GaslExecutor(graph(), model=model, budget=BUDGET)
        started, started_cpu, gc_before = time.perf_counter(), time.thread_time(), collecting.total
        result = asyncio.run(executor.execute_plan(plan))
        in_gc = collecting.total - gc_before
        wall = time.perf_counter() - started - in_gc
        cpu = time.thread_time() - started_cpu - in_gc
        result.model_dump_json()
        json.dumps(executor.state.document())
        counts["tried"] += 1
        for record in result.records:
            assert record.status in STATUSES, record
            counts[record.status] += 1
            stops.update(cap for cap in record.caps_hit if cap in (PLAN_BUDGET, COMMAND_BUDGET))
        slowest["wall"], slowest["cpu"] = max(slowest["wall"], wall), max(slowest["cpu"], cpu)
        counts["over budget (wall)"] += wall > BUDGET.plan_s
        assert cpu <= BUDGET.plan_s + CPU_SLACK_S, f"{cpu:.2f} s CPU on a {BUDGET.plan_s} s budget"
        assert model.slow_answers_finished == 0, "the budget let a model step run to its end"

    try:
        one()
    finally:
        gc.callbacks.remove(collecting)
    statuses = ", ".join(f"{status} {counts[status]}" for status in STATUSES)
    print(
        f"\nGASL plans: tried {counts['tried']}, records by status: {statuses}; budget "
        f"stops: {COMMAND_BUDGET} {stops[COMMAND_BUDGET]}, {PLAN_BUDGET} {stops[PLAN_BUDGET]}; "
        f"other exceptions 0; slowest run {slowest['cpu'] * 1000:.0f} ms CPU, "
        f"{slowest['wall'] * 1000:.0f} ms wall ({counts['over budget (wall)']} runs over "
        f"{BUDGET.plan_s * 1000:.0f} ms wall, the budget; garbage collection excluded, longest "
        f"pause {collecting.longest * 1000:.0f} ms) [POSTEL_FUZZ_EXAMPLES={FUZZ_EXAMPLES}]"
    )
    assert counts["tried"] >= min(FUZZ_EXAMPLES, 100)
