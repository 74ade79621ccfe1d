"""Answers by reference: `COMPLETE: ${var}` makes the value a round left the task's answer,
whole. The planner and the real gasl stage take turns on the MMWR sample graph, the round
store is in memory, and the validator's stage reads the answer as the desired type."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from postel.messages.envelope import Envelope
from postel.messages.gasl import ExecutionRecord
from postel.messages.intent import Intent
from postel.messages.job import JobOptions, JobRequest
from postel.messages.pipeline import (
    GaslPlanExecuted,
    GaslPlanRequested,
    GenerationRequested,
    JobCompleted,
    TaskPlanned,
    ValidationRequested,
)
from postel.messages.task import JobProgress, Task, TaskPlan
from postel.messages.types import TypeSpec
from postel.services.gasl import NetworkXAdapter
from postel.services.gasl.budget import TimeBudget
from postel.services.gasl.gbnf import Alt, Chars, Expr, Lit, Ref, Repeat, Rules, Seq
from postel.services.gasl.schema_summary import summarize_graph
from postel.services.gasl.stage import GaslDeps
from postel.services.gasl.stage import handle as gasl_handle
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.planner import PlannerDeps, read_round_answer
from postel.services.planner import handle as planner_handle
from postel.services.planner.empty import EMPTY_ANSWER
from postel.services.planner.probe import probe_plan
from postel.services.planner.reference import Reference, ReferenceProblem, find_reference
from postel.services.planner.round_grammar import round_answer_rules
from postel.services.planner.round_prompt import RoundInputs, round_messages
from postel.services.prompts import Capability
from postel.services.validator import validate

GRAPH = Path(__file__).resolve().parents[2] / "services/gasl/data/mmwr_nano_graphrag.graphml"
FORTY = 'FIND nodes WHERE entity_type = "PERSON" LIMIT 40 AS ans'
TASK = Task(id="people", objective="List 40 people", kind="graph_analysis")


@pytest.fixture(scope="module")
def adapter() -> NetworkXAdapter:
    return NetworkXAdapter.from_graphml(GRAPH)


def plan(*commands: str, decision: str = "continue") -> str:
    return json.dumps(
        {
            "evaluation": f"judged {decision}",
            "decision": decision,
            "hypothesis": "people are PERSON nodes",
            "answer": None,
            "next_actions": [
                {"action": decision, "confidence": 0.9, "plan": {"why": "w", "commands": commands}}
            ],
        }
    )


def complete(answer: str) -> str:
    return json.dumps({"evaluation": "found them", "decision": "complete", "answer": answer})


class Model:
    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.client = ScriptedClient(responder=self.respond)

    def respond(self, request: LLMRequest) -> str:
        self.prompts.append(request.prompt_text())
        return self.answers.pop(0)


class MemoryRounds:
    """The gasl worker's round store, in memory."""

    def __init__(self) -> None:
        self.states: dict[int, dict[str, Any]] = {}

    async def state_after(self, job_id: str, task: int, round_: int) -> dict[str, Any] | None:
        return self.states.get(round_)

    async def after_round(self, job_id: str, task: int, round_: int, state: dict) -> None:
        self.states[round_] = json.loads(json.dumps(state))  # as Redis would keep it

    async def record_round(self, executed: GaslPlanExecuted) -> None:
        return None


def start(desired: str, **options: Any) -> TaskPlanned:
    intent = Intent(detected_language="en", normalized_request="q", intent="q", primary_goal="q")
    request = JobRequest(
        prompt="Which people are in the graph?",
        graph="mmwr",
        desired_type=TypeSpec.parse(desired),
        options=JobOptions(max_rounds=5, **options),
    )
    progress = JobProgress(intent=intent, plan=TaskPlan(tasks=[TASK]))
    return TaskPlanned(job_id="job1", message_id="job1:plan", request=request, progress=progress)


async def run(
    adapter: NetworkXAdapter, model: Model, desired: str = "list[str]", **options: Any
) -> list[Envelope]:
    """The planner and the real gasl stage in turn until the planner hands over."""
    rounds = MemoryRounds()

    async def read(task: int, round_: int) -> dict[str, Any] | None:
        return await rounds.state_after("job1", task, round_)

    deps = PlannerDeps(model.client, Capability.STANDARD, summarize_graph(adapter), read)
    trail: list[Envelope] = []
    step = await planner_handle(start(desired, **options), deps)
    while isinstance(step.messages[0], GaslPlanRequested):
        trail.extend(step.messages)
        gasl = GaslDeps(adapter, rounds, None, TimeBudget())
        [done] = (await gasl_handle(step.messages[0], gasl)).messages
        assert isinstance(done, GaslPlanExecuted)
        trail.append(done)
        step = await planner_handle(done, deps)
    trail.extend(step.messages)
    return trail


def test_references_are_read_from_every_form_of_complete() -> None:
    assert read_round_answer("COMPLETE: ${ans}").answer == "${ans}"
    assert read_round_answer('{"decision": "complete", "answer": "${ans.id}"}').answer == (
        "${ans.id}"
    )
    assert read_round_answer('{"decision": "COMPLETE: ${ans}"}').answer == "${ans}"
    assert find_reference("${ans}") == Reference("ans")
    assert find_reference("the people are ${ ans.id }.") == Reference("ans", ("id",))
    assert find_reference(["${ans}"]) == Reference("ans")
    assert find_reference("371 people") is None and find_reference(["${a}", "${b}"]) is None
    with pytest.raises(ReferenceProblem, match="names 2 values"):
        find_reference("${a} and ${b}")


async def test_complete_by_reference_gives_all_forty_rows_as_names(
    adapter: NetworkXAdapter,
) -> None:
    model = Model(plan(FORTY), "COMPLETE: ${ans}")
    trail = await run(adapter, model)
    handed = trail[-1]
    assert isinstance(handed, ValidationRequested)
    assert len(handed.output) == 40 and handed.output[0]["entity_type"] == "PERSON"
    executed = next(m for m in trail if isinstance(m, GaslPlanExecuted))
    assert len(executed.records[0].rows) == 20, "the records the model saw held half of them"
    outcome = handed.progress.outcomes[-1]
    assert outcome.reference == "${ans}" and outcome.answer == handed.output
    [done] = validate(handed)
    assert isinstance(done, JobCompleted)
    assert done.result == [row["id"] for row in handed.output]
    assert len(set(done.result)) == 40 and all(isinstance(name, str) for name in done.result)


async def test_a_field_of_each_row_and_a_count(adapter: NetworkXAdapter) -> None:
    trail = await run(adapter, Model(plan(FORTY), complete("${ans.id}")))
    handed = trail[-1]
    assert isinstance(handed, ValidationRequested)
    assert len(handed.output) == 40 and all(isinstance(n, str) for n in handed.output)
    [done] = validate(handed)
    assert isinstance(done, JobCompleted) and done.result == handed.output
    counted = (await run(adapter, Model(plan(FORTY), "COMPLETE: ${ans}"), "int"))[-1]
    assert isinstance(counted, ValidationRequested)
    [done] = validate(counted)
    assert isinstance(done, JobCompleted) and done.result == 40


async def test_a_missing_variable_is_an_error_the_next_round_sees(
    adapter: NetworkXAdapter,
) -> None:
    model = Model(plan(FORTY), "COMPLETE: ${answer}", "COMPLETE: ${ans.nme}", "COMPLETE: ${ans}")
    trail = await run(adapter, model)
    requested = [m for m in trail if isinstance(m, GaslPlanRequested)]
    assert len(requested) == 3, "each bad reference cost a (probe) round, never an answer"
    problem = requested[1].history[-1].hypothesis
    assert "${answer} names nothing" in problem and "round 0 assigned ans" in problem
    assert "${answer} names nothing" in model.prompts[2]
    assert "PROBLEM WITH YOUR LAST ANSWER" in model.prompts[2]
    assert "no row of ans has the field 'nme'" in model.prompts[3]
    assert "its rows have entity_type, description, source_ids, clusters, id" in model.prompts[3]
    # the probe rounds assigned `probe`; `ans` is still read from round 0, whole
    handed = trail[-1]
    assert isinstance(handed, ValidationRequested) and len(handed.output) == 40


async def test_a_declared_state_key_and_a_document_answer(adapter: NetworkXAdapter) -> None:
    keep = ["DECLARE found AS LIST", FORTY, "UPDATE found WITH ans"]
    trail = await run(adapter, Model(plan(*keep), "COMPLETE: ${found.id}"), "document")
    written = trail[-1]
    assert isinstance(written, GenerationRequested)
    [task] = written.evidence["tasks"]
    assert task["answer"] == written.progress.outcomes[-1].answer and len(task["answer"]) == 40
    assert task["reference"] == "${found.id}"


NOBODY = 'FIND nodes WHERE entity_type = "ASTRONAUT" AS ans'


async def test_an_empty_reference_is_confirmed_once_then_accepted(
    adapter: NetworkXAdapter,
) -> None:
    """The first empty answer is a question back: the model is told its answer is empty and
    asked to confirm it or query again, with a probe of what the question names; the second
    empty answer is the answer."""
    model = Model(plan(NOBODY), "COMPLETE: ${ans}", "COMPLETE: ${ans}")
    trail = await run(adapter, model)
    handed = trail[-1]
    assert isinstance(handed, ValidationRequested) and handed.output == []
    requested = [m for m in trail if isinstance(m, GaslPlanRequested)]
    assert len(requested) == 2, "one round asked to confirm"
    assert requested[1].history[-1].hypothesis.startswith(EMPTY_ANSWER)
    assert "PROBLEM WITH YOUR LAST ANSWER" in model.prompts[2]
    assert "${ans} holds nothing" in model.prompts[2] and "again to confirm" in model.prompts[2]
    # the probe looks at what the question names: "Which people ..." has no type of its own
    # in this graph, so the commonest; a question naming a type gets that type
    assert requested[1].plan.commands == [
        'FIND nodes WHERE entity_type = "PERSON" LIMIT 10 AS probe_person'
    ]


async def test_an_empty_reference_then_a_better_query_answers(adapter: NetworkXAdapter) -> None:
    """Asked to confirm, the model queries again and completes with what it found."""
    model = Model(plan(NOBODY), "COMPLETE: ${ans}", plan(FORTY), "COMPLETE: ${ans}")
    handed = (await run(adapter, model))[-1]
    assert isinstance(handed, ValidationRequested) and len(handed.output) == 40


async def test_allow_empty_accepts_an_empty_reference_at_once(adapter: NetworkXAdapter) -> None:
    model = Model(plan(NOBODY), "COMPLETE: ${ans}")
    trail = await run(adapter, model, allow_empty=True)
    assert len([m for m in trail if isinstance(m, GaslPlanRequested)]) == 1
    assert isinstance(trail[-1], ValidationRequested) and trail[-1].output == []


async def test_a_plan_stopped_at_an_empty_step_says_what_is_empty_and_unreached(
    adapter: NetworkXAdapter,
) -> None:
    """A 2-hop question whose second hop finds nothing: the plan stops there, `ans` is never
    assigned. The next prompt says which variables are empty and which were never reached;
    `COMPLETE: ${ans}` is told to name the empty step, and `COMPLETE: ${a_h2}` (confirmed
    once) ends the task with the empty answer."""
    two_hops = [
        'FIND nodes WHERE entity_type = "PERSON" LIMIT 3 AS a_h1',
        'FIND nodes WHERE entity_type = "ASTRONAUT" AS a_h2',
        'SELECT a_h2 WHERE entity_type = "PERSON" AS ans',
    ]
    model = Model(plan(*two_hops), "COMPLETE: ${ans}", "COMPLETE: ${a_h2}", "COMPLETE: ${a_h2}")
    trail = await run(adapter, model)
    stopped = "the plan stopped early: empty: a_h2; never reached (not assigned): ans"
    assert stopped in model.prompts[1]
    assert "${ans} was never assigned" in model.prompts[2]
    assert "answer COMPLETE: ${a_h2} if nothing matches" in model.prompts[2]
    handed = trail[-1]
    assert isinstance(handed, ValidationRequested) and handed.output == []
    assert handed.progress.outcomes[-1].reference == "${a_h2}"
    [done] = validate(handed)
    assert isinstance(done, JobCompleted) and done.result == []


def test_the_probe_is_built_from_the_question() -> None:
    summary = {"entity_types": {"PERSON": 9, "FILM": 5, "RESEARCH_LAB": 2}}
    assert probe_plan("p", summary, "Which films did Ada Lindsen direct?").commands == [
        'FIND nodes WHERE entity_type = "FILM" LIMIT 10 AS probe_film'
    ]
    assert probe_plan("p", summary, "the research labs").commands == [
        'FIND nodes WHERE entity_type = "RESEARCH_LAB" LIMIT 10 AS probe_research_lab'
    ]
    linked = [SimpleNamespace(id='Sunken "Voice" (2010)', entity_type="FILM")]
    assert probe_plan("p", summary, "films", linked).commands == [
        'FIND nodes WHERE id = "Sunken \\"Voice\\" (2010)" AS probe_1',
        'NEIGHBORS "Sunken \\"Voice\\" (2010)" LIMIT 10 AS probe_1_around',
    ]


async def test_an_empty_reference_is_an_accepted_empty_answer(adapter: NetworkXAdapter) -> None:
    model = Model(plan(NOBODY), "COMPLETE: ${ans}", "COMPLETE: ${ans}")
    handed = (await run(adapter, model))[-1]
    assert isinstance(handed, ValidationRequested) and handed.output == []
    [done] = validate(handed)
    assert isinstance(done, JobCompleted) and done.result == []
    # typed, the same empty list is refused: the model may not just say "none"
    typed = handed.model_copy(
        update={
            "progress": handed.progress.model_copy(
                update={
                    "outcomes": [
                        handed.progress.outcomes[-1].model_copy(update={"reference": None})
                    ]
                }
            )
        }
    )
    [rewrite] = validate(typed)
    assert isinstance(rewrite, GenerationRequested)
    assert "says nothing: the list is empty" in rewrite.evidence["validation_error"]


async def test_a_confirmed_empty_answer_passes_an_intents_counting_criterion(
    adapter: NetworkXAdapter,
) -> None:
    """An intent that expected "at least 1 item" does not refuse a "none" confirmed on empty
    evidence: its counting criteria were written for an answer that has some."""
    model = Model(plan(NOBODY), "COMPLETE: ${ans}", "COMPLETE: ${ans}")
    handed = (await run(adapter, model))[-1]
    assert isinstance(handed, ValidationRequested)
    intent = handed.progress.intent.model_copy(update={"success_criteria": ["at least 1 item"]})
    expecting = handed.model_copy(
        update={"progress": handed.progress.model_copy(update={"intent": intent})}
    )
    assert expecting.progress.task_intent().success_criteria == ["at least 1 item"]
    [done] = validate(expecting)
    assert isinstance(done, JobCompleted) and done.result == []


@pytest.mark.parametrize("capability", list(Capability))
def test_the_round_prompt_teaches_the_form_and_says_what_is_not_shown(
    capability: Capability,
) -> None:
    rows = [{"entity_type": "PERSON", "id": f"PERSON {i}"} for i in range(20)]
    records = [
        ExecutionRecord(command=FORTY, status="success", count=40, rows=rows, variable="ans"),
        ExecutionRecord(command="COUNT ans AS n", status="success", count=40, rows=[40]),
    ]
    state = {"keys": [{"key": "found", "type": "LIST", "size": 40, "sample": rows[:3]}]}
    round_ = RoundInputs(
        question="Which people?",
        task_index=0,
        round_number=1,
        max_rounds=5,
        records=records,
        state_summary=state,
    )
    text = "\n".join(m.content for m in round_messages(capability, round_))
    assert "COMPLETE: ${people} is all of people's rows as the answer" in text  # cheat sheet
    assert '"answer": "${films}" (all rows, whole, shown or not)' in text  # the rule
    assert "-> 40 as ans\n   fields: entity_type, id\n" in text
    assert "37 more rows not shown; name all 40 as ${ans} (one field of each: ${ans.id})" in text
    assert "-> 40\n   rows: 40" in text, "a COUNT's number is its whole result"
    assert "found (LIST, size 40)" in text and "37 more not shown: name all as ${found}" in text
    if capability is not Capability.MINIMAL:  # examples are for models with room for them
        assert '"answer": "${coauthors.id}"' in text


def _regex(expr: Expr, rules: Rules) -> str:
    """The regular expression of a non-recursive part of a grammar."""
    match expr:
        case Lit(text):
            return re.escape(text)
        case Chars(ranges, negated):
            inner = "".join(f"{re.escape(a)}-{re.escape(b)}" for a, b in ranges)
            return f"[{'^' if negated else ''}{inner}]"
        case Ref(name):
            return _regex(rules[name], rules)
        case Seq(items):
            return "".join(_regex(item, rules) for item in items)
        case Alt(options):
            return "(?:" + "|".join(_regex(option, rules) for option in options) + ")"
        case Repeat(item, least, most):
            return f"(?:{_regex(item, rules)}){{{least},{most}}}"
    raise AssertionError(expr)


def test_the_round_grammar_admits_a_complete_by_reference() -> None:
    """A grammar-constrained model can write the form: the complete branch's answer is text."""
    rules = round_answer_rules()
    root = rules["root"]
    assert isinstance(root, Seq) and isinstance(root.items[2], Alt)
    complete_branch = Seq((root.items[0], root.items[1], root.items[2].options[0], root.items[3]))
    pattern = re.compile(_regex(complete_branch, rules))
    for reference in ("${ans}", "${ans.id}"):
        text = (
            '{"evaluation": "all 40 found", "decision": "complete", "hypothesis": "h", '
            f'"answer": "{reference}"}}'
        )
        assert pattern.fullmatch(text), text
        assert find_reference(read_round_answer(text).answer) is not None


async def test_rows_that_cannot_be_the_type_go_to_the_writer_by_name(
    adapter: NetworkXAdapter,
) -> None:
    handed = (await run(adapter, Model(plan(FORTY), "COMPLETE: ${ans}"), "list[int]"))[-1]
    assert isinstance(handed, ValidationRequested)
    [rewrite] = validate(handed)
    assert isinstance(rewrite, GenerationRequested)
    assert "the value of ${ans} (40 items), given in the evidence" in rewrite.instructions
    assert "PERSON" not in rewrite.instructions, "the rows stay in the evidence"
    assert rewrite.evidence["answer"] == handed.output
