"""The job page's view of HDT rounds: a pivot's starting state and the rounds it gave up,
and what a model wrote under a command read from another spelling."""

from __future__ import annotations

from postel.infra.store.stores import GaslRound
from postel.infra.web.job_story import _rounds
from postel.messages.gasl import ExecutionRecord, GaslPlan


def stored(round_: int, base: int | None = None, **detail: str) -> GaslRound:
    record = ExecutionRecord(command="COUNT p AS n", status="success", count=1, detail=detail)
    plan = GaslPlan(plan_id=f"t0-r{round_}", commands=["COUNT p AS n"])
    return GaslRound(task_index=0, round=round_, plan=plan, records=[record], base_round=base)


def test_a_pivot_shows_where_it_started_and_the_rounds_it_gave_up() -> None:
    views = _rounds([], [stored(3, base=0), stored(0), stored(1), stored(2, base=1)])
    by_round = {v.round: v for v in views}
    assert [v.round for v in views] == [0, 1, 2, 3]
    assert [by_round[r].abandoned for r in range(4)] == [False, True, True, False]
    assert by_round[3].starts_from == 0
    assert by_round[2].starts_from is None, "the round before is the usual start"


def test_a_command_keeps_what_was_written() -> None:
    [view] = _rounds([], [stored(0, written="COUNT p group by x AS n")])
    assert view.commands[0].written == "COUNT p group by x AS n"
