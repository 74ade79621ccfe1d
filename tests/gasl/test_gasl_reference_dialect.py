"""The reference dialect's corpus (tests/support/reference_dialect.py): every command but the
refused forms parses, each to the command its canonical form parses to, and gives the same
records on the MMWR demo graph; the ones refused are listed and each gets the hint naming
the canonical way."""

from __future__ import annotations

from typing import Any

import pytest
from postel.messages.gasl import GaslPlan, PlanConfig
from postel.services.gasl import dialect
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.errors import GaslSyntaxError
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.gasl.parser import parse, parses_as_written
from support.gasl import SchemaModel
from support.reference_dialect import ACCEPTED, REFUSED, SETUP, Form


@pytest.fixture(scope="module")
def adapter() -> NetworkXAdapter:
    return NetworkXAdapter.from_graphml(DEMO_GRAPH)


def test_the_corpus_is_232_commands_and_all_but_the_16_refused_are_accepted() -> None:
    assert (len(ACCEPTED), len(REFUSED)) == (216, 16)
    written = [form.written for form in ACCEPTED] + [refused.written for refused in REFUSED]
    assert len(set(written)) == len(written)


def test_every_rule_is_read_by_some_accepted_form() -> None:
    applied = set()
    for form in ACCEPTED:
        applied.update(dialect.canonical(form.written, parses_as_written).applied)
    refusing_only = {"GRAPHPATTERN, GENERATE, CLUSTER", "SET <name> = <value>"}
    assert {name for name, _ in dialect.RULES} - refusing_only <= applied
    assert {"TRY ... CATCH without ANY", "TRY ... without END"} <= applied


@pytest.mark.parametrize("form", ACCEPTED, ids=lambda form: form.written[:60])
def test_a_form_parses_to_its_canonical_command(form: Form) -> None:
    read, meant = parse(form.written), parse(form.canonical)
    assert read == meant
    assert [c.text.lower() for c in read] == [c.text.lower() for c in meant]


@pytest.mark.parametrize("refused", REFUSED, ids=lambda refused: refused.written[:60])
def test_a_refused_form_gets_the_hint_naming_the_canonical_way(refused: Any) -> None:
    with pytest.raises(GaslSyntaxError) as error:
        parse(refused.written)
    assert refused.hint in error.value.hint


async def records(adapter: NetworkXAdapter, text: str) -> list[tuple[Any, ...]]:
    """What the text's commands give after SETUP: each record's status, count, rows and
    variable."""
    executor = GaslExecutor(adapter, model=SchemaModel(), max_rows=None)
    config = PlanConfig(stop_on_error=False, continue_on_empty=True)
    plan = GaslPlan(plan_id="p", commands=[*SETUP, text], config=config)
    done = (await executor.execute_plan(plan)).records
    assert all(r.status in ("success", "empty") for r in done[: len(SETUP)]), done
    return [(r.status, r.count, r.rows, r.variable) for r in done[len(SETUP) :]]


async def test_every_accepted_form_gives_the_records_of_its_canonical_form(
    adapter: NetworkXAdapter,
) -> None:
    differing = []
    for form in ACCEPTED:
        written, canonical = (
            await records(adapter, form.written),
            await records(adapter, form.canonical),
        )
        if written != canonical or not written:
            differing.append((form.written, written, canonical))
    assert differing == []
