"""No test bounds wall-clock time from above: on a busy machine any such bound fails for
reasons that are not the code's. Tests count tries, calls, polls or waits asked for, order
recorded timestamps, or bound CPU time (time.process_time, time.thread_time) instead;
lower bounds on waits ("it waited at least the Retry-After") are fine.

What is refused: an assert comparing a wall-clock reading (time.perf_counter, monotonic,
time.time, an event loop's time, utc_now, datetime.now), or a name, list or attribute
filled from one, as the smaller side of `<`, `<=` (or the larger of `>`, `>=`) against
something that is not a reading too; and a recorded duration (`duration_ms`, `wait_ms`,
`latency_ms`, `elapsed`) bounded the same way. Two readings compared with each other are
an ordering, which is allowed. Nor may a wait for an outcome (`until(..., timeout=N)`,
`wait_for`, `asyncio.timeout`) be bounded at or below a sleep its module makes: that bound
races the sleep (raced_waits)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
WALL_CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time_ns"}
WALL_DATES = {"utc_now", "now", "utcnow"}
RECORDED_DURATIONS = {"duration_ms", "wait_ms", "latency_ms", "elapsed"}


def _reads_wall_clock(node: ast.AST) -> bool:
    """`time.perf_counter()`, `perf_counter()`, `time.time()`, `loop.time()`, `utc_now()`,
    `datetime.now()`, ..."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in WALL_CLOCKS | WALL_DATES
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in WALL_CLOCKS | WALL_DATES:
        return True
    owner = ast.unparse(func.value)
    return func.attr == "time" and (owner == "time" or "loop" in owner)


def _name_of(node: ast.AST) -> str | None:
    """`x` for a name, `.x` for an attribute (`self.x` and `other.x` alike)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f".{node.attr}"
    return None


def _assigned(target: ast.AST, value: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs of an assignment, `a, b = x, y` taken apart."""
    if (
        isinstance(target, ast.Tuple)
        and isinstance(value, ast.Tuple)
        and len(target.elts) == len(value.elts)
    ):
        return list(zip(target.elts, value.elts, strict=True))
    return [(target, value)]


def _timed_names(scope: ast.AST, timed_attributes: frozenset[str] = frozenset()) -> set[str]:
    """Names in `scope` assigned (or appended) a wall-clock reading, or a value made from
    one; see _name_of. Attributes are followed across the module (`timed_attributes`)."""
    timed: set[str] = set(timed_attributes)
    while True:
        before = len(timed)
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and node.value:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                pairs = [pair for t in targets for pair in _assigned(t, node.value)]
                for target, value in pairs:
                    if _is_timed(value, timed):
                        names = (_name_of(n) for n in ast.walk(target))
                        timed.update(name for name in names if name)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("append", "add")
                and any(_is_timed(argument, timed) for argument in node.args)
            ):
                name = _name_of(node.func.value)
                if name:
                    timed.add(name)
        if len(timed) == before:
            return timed


def _is_timed(node: ast.AST, timed: set[str]) -> bool:
    return any(_reads_wall_clock(part) or _name_of(part) in timed for part in ast.walk(node))


def _is_recorded_duration(node: ast.AST) -> bool:
    return any(
        (isinstance(part, ast.Attribute) and part.attr in RECORDED_DURATIONS)
        or (isinstance(part, ast.Name) and part.id in RECORDED_DURATIONS)
        for part in ast.walk(node)
    )


def _scopes(tree: ast.Module) -> list[ast.AST]:
    """The module's outermost functions (a test, a helper, a method) and, apart, the rest of
    the module: a name is followed within one of them."""
    functions = [
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    inner = {id(node) for f in functions for node in ast.walk(f) if node is not f}
    outermost = [f for f in functions if id(f) not in inner]
    rest = [statement for statement in tree.body if statement not in outermost]
    return [*outermost, ast.Module(body=rest, type_ignores=[])]


def upper_bounds(source: str) -> list[str]:
    """Each assert of `source` bounding wall-clock time from above, as `line: text`."""
    tree = ast.parse(source)
    attributes = frozenset(name for name in _timed_names(tree) if name.startswith("."))
    found = []
    for scope in _scopes(tree):
        found.extend(_upper_bounds_in(scope, attributes))
    return sorted(set(found), key=lambda line: int(line.split(":")[0]))


def _upper_bounds_in(scope: ast.AST, timed_attributes: frozenset[str]) -> list[str]:
    timed = _timed_names(scope, timed_attributes)
    found = []
    for node in ast.walk(scope):
        if not isinstance(node, ast.Assert):
            continue
        for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
            sides = [compare.left, *compare.comparators]
            for (left, right), op in zip(itertools.pairwise(sides), compare.ops, strict=True):
                if isinstance(op, ast.Lt | ast.LtE):
                    smaller, larger = left, right
                elif isinstance(op, ast.Gt | ast.GtE):
                    smaller, larger = right, left
                else:
                    continue
                measured = _is_timed(smaller, timed) or _is_recorded_duration(smaller)
                if measured and not _is_timed(larger, timed):
                    found.append(f"{node.lineno}: {ast.unparse(node.test)}")
    return found


def _seconds(node: ast.AST | None) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    return None


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


WAITS = {"until", "wait_for", "timeout"}
"""Calls that wait for an outcome: a test's `until` helper, asyncio.wait_for, asyncio.timeout."""


def _wait_bound(node: ast.Call) -> float | None:
    """The seconds a wait for an outcome is given: `until(..., timeout=N)`, `wait_for(aw,
    N)`, `asyncio.timeout(N)`."""
    name = _called(node)
    if name not in WAITS:
        return None
    for keyword in node.keywords:
        if keyword.arg == "timeout":
            return _seconds(keyword.value)
    if name == "timeout" and node.args:
        return _seconds(node.args[0])
    if name == "wait_for" and len(node.args) > 1:
        return _seconds(node.args[1])
    return None


def raced_waits(source: str) -> list[str]:
    """Each wait for an outcome bounded at or below a sleep made in the same test (`until(...,
    timeout=2)` against a handler it defines that sleeps 3 s): the wait's bound is then the
    assertion, and which ends first is the machine's speed. A wait's bound is a hang guard
    only, far past anything the test holds; an order is shown by holding on an event."""
    found = []
    for scope in _scopes(ast.parse(source)):
        calls = [node for node in ast.walk(scope) if isinstance(node, ast.Call)]
        sleeps = [_seconds(next(iter(n.args), None)) for n in calls if _called(n) == "sleep"]
        longest = max((s for s in sleeps if s is not None), default=0.0)
        found.extend(
            f"{node.lineno}: {ast.unparse(node)}"
            for node in calls
            if (bound := _wait_bound(node)) is not None and bound <= longest
        )
    return found


def test_no_test_bounds_wall_clock_time_from_above() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text("utf-8")
        found.extend(
            f"{path.relative_to(TESTS)}:{line}"
            for line in [*upper_bounds(text), *raced_waits(text)]
        )
    assert found == [], "wall-clock upper bounds (count or use CPU time):\n" + "\n".join(found)


def test_the_check_finds_the_usual_forms() -> None:
    refused = [
        "import time\nt0 = time.perf_counter()\nassert time.perf_counter() - t0 < 1\n",
        "started = time.monotonic()\nelapsed = time.monotonic() - started\nassert elapsed < 3.0",
        "t = perf_counter()\nwork()\ntook = perf_counter() - t\nassert 1.8 < took < 3.0\n",
        "runs = []\nruns.append(time.time())\nassert runs[1] - runs[0] <= 3.5\n",
        "s = loop.time()\nassert 5 > loop.time() - s, 'too slow'\n",
        "assert event.duration_ms < 500\n",
        "assert received.wait_ms / 1000 <= budget\n",
    ]
    for source in refused:
        assert upper_bounds(source), source
    allowed = [
        "t0 = time.perf_counter()\nwaited = time.perf_counter() - t0\nassert waited >= 0.3\n",
        "t0 = time.monotonic()\nend = time.monotonic()\nassert t0 + 8.1 <= end\n",
        "cpu = time.thread_time()\nassert time.thread_time() - cpu < 0.5\n",
        "t0 = time.process_time()\nassert time.process_time() - t0 < 1.0\n",
        "assert event.duration_ms >= 500\n",
        "assert len(calls) < 3\n",
    ]
    for source in allowed:
        assert upper_bounds(source) == [], source


def test_a_wait_bounded_below_a_sleep_is_a_wall_clock_bound() -> None:
    held = "async def test():\n    async def hold():\n        await asyncio.sleep(3)\n"
    for wait in (
        "await until(lambda: len(running) == 2, timeout=2)",
        "await asyncio.wait_for(done.wait(), 3)",
        "async with asyncio.timeout(1.5):\n        await done.wait()",
    ):
        assert raced_waits(f"{held}    {wait}\n"), wait
    guard = f"{held}    await until(lambda: len(running) == 2, timeout=30)\n"
    assert raced_waits(guard) == [], "a hang guard past every sleep is no bound"
    assert raced_waits("async def t():\n    await until(lambda: a, timeout=2)\n") == []
