"""What follows a card chain's run without a model call (services.planner.card_chains): rows
complete the task, an empty chain gives way to the next, every chain empty settles on none, a
failure or a plan of the model's own goes back to the model."""

from __future__ import annotations

from postel.messages.gasl import ExecutionRecord, GaslPlan
from postel.messages.pipeline import RoundNote
from postel.services.linking.aids import build_aids
from postel.services.linking.names import link
from postel.services.planner.card_chains import after_chain, first_chain
from postel.services.planner.schema_grammar import SchemaChoice, schema_choice

AIDS = build_aids(
    [
        ("Sunken Voice (1987)", {"entity_type": "FILM"}),
        ("Sunken Voice (2010)", {"entity_type": "FILM"}),
        ("Ada Lindsen", {"entity_type": "PERSON"}),
    ],
    [("Sunken Voice (2010)", "Ada Lindsen", ["directed_by"])],
    directed=True,
)


def focus(question: str = "Who directed Sunken Voice?") -> SchemaChoice:
    return schema_choice(AIDS.card, question, link(question, AIDS.names))


def ran(chain: tuple[str, ...], count: int, status: str = "success") -> tuple[GaslPlan, list]:
    plan = GaslPlan(plan_id="t0-r0", commands=list(chain))
    record = ExecutionRecord(command=chain[-1], status=status, count=count, variable="step1")  # type: ignore[arg-type]
    return plan, [record]


def test_only_a_single_chain_runs_unasked() -> None:
    tied = focus()
    assert len(tied.chains) == 2 and first_chain(tied, 0) is None
    one = focus("Who directed Ada Lindsen?")  # a person: no tie, one chain
    decided = first_chain(one, 0)
    assert decided is not None and decided.plan is not None
    assert tuple(decided.plan.commands) == one.chains[0]


def test_rows_complete_the_task_with_the_chains_answer() -> None:
    chosen = focus()
    plan, records = ran(chosen.chains[0], 1)
    decided = after_chain(chosen, plan, records, [], 0, 1)
    assert decided is not None
    assert (decided.decision, decided.answer, decided.settled) == ("complete", "${step1}", False)


def test_an_empty_chain_gives_way_to_the_next_then_settles_on_none() -> None:
    chosen = focus()
    first, second = chosen.chains
    plan, records = ran(first, 0, "empty")
    history = [RoundNote(round=0, plan=plan)]
    decided = after_chain(chosen, plan, records, history, 0, 1)
    assert decided is not None and decided.plan is not None
    assert (decided.decision, tuple(decided.plan.commands)) == ("continue", second)
    plan, records = ran(second, 0, "empty")
    history.append(RoundNote(round=1, plan=plan))
    decided = after_chain(chosen, plan, records, history, 0, 2)
    assert decided is not None
    assert (decided.decision, decided.answer, decided.settled) == ("complete", "${step1}", True)


def test_a_failure_or_the_models_own_plan_goes_back_to_the_model() -> None:
    chosen = focus()
    plan, records = ran(chosen.chains[0], 0, "error")
    assert after_chain(chosen, plan, records, [], 0, 1) is None
    own, records = ran(("NEIGHBORS 'Ada Lindsen' AS step1",), 3)
    assert after_chain(chosen, own, records, [], 0, 1) is None
