"""The HDT handlers against the real GASL executor on the MMWR sample graph: the test plays
the gasl worker, a scripted responder plays the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from postel.messages.envelope import Envelope
from postel.messages.errors import GraphNotFound
from postel.messages.intent import Intent
from postel.messages.job import JobOptions, JobRequest
from postel.messages.pipeline import (
    GaslPlanExecuted,
    GaslPlanRequested,
    GenerationRequested,
    JobFailed,
    TaskPlanned,
    ValidationRequested,
    decode_message,
)
from postel.messages.task import JobProgress, Task, TaskOutcome, TaskPlan
from postel.messages.types import TypeSpec
from postel.services.gasl import GaslExecutor, NetworkXAdapter
from postel.services.gasl.budget import TimeBudget
from postel.services.gasl.schema_summary import summarize_graph
from postel.services.gasl.stage import GaslDeps
from postel.services.gasl.stage import handle as gasl_handle
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.planner import (
    PlannerDeps,
    on_gasl_executed,
    on_task_planned,
    read_round_answer,
)
from postel.services.planner import handle as planner_handle
from postel.services.prompts import Capability

GRAPH = Path(__file__).resolve().parents[2] / "services/gasl/data/mmwr_nano_graphrag.graphml"
PEOPLE = 'FIND nodes WHERE entity_type = "PERSON" AS people'


@pytest.fixture(scope="module")
def adapter() -> NetworkXAdapter:
    return NetworkXAdapter.from_graphml(GRAPH)


def answer(decision: str, *plans: tuple[float, list[str]], result: Any = None) -> str:
    return json.dumps(
        {
            "evaluation": f"judged {decision}",
            "decision": decision,
            "hypothesis": f"hypothesis for {decision}",
            "answer": result,
            "next_actions": [
                {"action": decision, "confidence": c, "plan": {"why": "w", "commands": cmds}}
                for c, cmds in plans
            ],
        }
    )


class Model:
    """Scripted answers in order; every prompt is kept."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.client = ScriptedClient(responder=self.respond)

    def respond(self, request: LLMRequest) -> str:
        self.prompts.append(request.prompt_text())
        return self.answers.pop(0)


def task_planned(
    tasks: list[Task],
    *,
    desired: str = "str",
    max_rounds: int | None = None,
    task_index: int = 0,
    outcomes: list[TaskOutcome] | None = None,
) -> TaskPlanned:
    intent = Intent(detected_language="en", normalized_request="q", intent="q", primary_goal="q")
    progress = JobProgress(
        intent=intent,
        plan=TaskPlan(tasks=tasks),
        task_index=task_index,
        outcomes=outcomes or [],
    )
    request = JobRequest(
        prompt="How many people are in the graph?",
        graph="mmwr",
        desired_type=TypeSpec.parse(desired),
        options=JobOptions(max_rounds=max_rounds),
    )
    return TaskPlanned(job_id="job1", message_id="job1:plan", request=request, progress=progress)


COUNT_TASK = Task(id="count", objective="Count the PERSON nodes", kind="graph_analysis")


async def run_loop(
    start: TaskPlanned,
    model: Model,
    adapter: NetworkXAdapter,
    notes: list[str] | None = None,
    capability: Capability = Capability.MINIMAL,
    decisions: list[tuple[str, str]] | None = None,
) -> list[Envelope]:
    """Every message the planner and the executor exchange until the planner leaves the loop;
    `decisions` collects each step's (decision, rationale)."""
    summary = summarize_graph(adapter)
    executor = GaslExecutor(adapter)
    trail: list[Envelope] = []
    step = await on_task_planned(start, model.client, capability, summary, notes=notes)
    out = step.messages
    if decisions is not None:
        decisions.append((step.figures.decision, step.figures.rationale))
    while True:
        trail.extend(out)
        [message] = out
        if not isinstance(message, GaslPlanRequested):
            return trail
        result = await executor.execute_plan(message.plan)
        executed: GaslPlanExecuted = message.derive(
            GaslPlanExecuted,
            f"gasl:{message.progress.task_index}:{message.round}:done",
            request=message.request,
            progress=message.progress,
            round=message.round,
            plan=message.plan,
            history=message.history,
            records=result.records,
            state_summary=result.state.model_dump(),
        )
        trail.append(executed)
        step = await on_gasl_executed(executed, model.client, capability, summary, notes=notes)
        out = step.messages
        if decisions is not None:
            decisions.append((step.figures.decision, step.figures.rationale))


def of_type(trail: list[Envelope], cls: type[Envelope]) -> list[Any]:
    return [m for m in trail if isinstance(m, cls)]


async def test_a_parse_error_reaches_the_model_which_fixes_its_plan(
    adapter: NetworkXAdapter,
) -> None:
    model = Model(
        answer("continue", (0.9, ['FIND nodes WHERE entity_type = "PERSON" people'])),
        answer("refine", (0.9, [PEOPLE, "COUNT people AS n"])),
        "COMPLETE: 371",
    )
    trail = await run_loop(task_planned([COUNT_TASK], desired="int"), model, adapter)
    first = of_type(trail, GaslPlanExecuted)[0]
    assert first.records[0].status == "error"
    syntax_error = first.records[0].error
    assert syntax_error and "AS <name>" in syntax_error
    assert syntax_error in model.prompts[1]  # the parser's own words go back to the model
    second = of_type(trail, GaslPlanExecuted)[1]
    assert [r.status for r in second.records] == ["success", "success"]
    assert "-> 371" in model.prompts[2]
    done = trail[-1]
    assert isinstance(done, ValidationRequested) and done.output == "371"
    assert done.message_id == "job1:validate:0" and done.task_id == "count"
    outcome = done.progress.outcomes[-1]
    assert outcome.answer == "371" and not outcome.incomplete
    count = outcome.evidence["last_results"][-1]
    assert count == {
        "command": "COUNT people AS n",
        "status": "success",
        "count": 371,
        "rows": [371],
    }
    assert outcome.evidence["last_results"][0]["rows"][1]["id"] == "ROBIN LEE"
    assert outcome.provenance and all(p.startswith("chunk-") for p in outcome.provenance)
    assert [m.message_id for m in of_type(trail, GaslPlanRequested)] == [
        "job1:gasl:0:0",
        "job1:gasl:0:1",
    ]


async def test_a_pivot_after_an_empty_result(adapter: NetworkXAdapter) -> None:
    model = Model(
        answer("continue", (0.9, ['FIND nodes WHERE entity_type = "AUTHOR" AS people'])),
        answer("pivot", (0.9, [PEOPLE])),
        answer("complete", result=371),
    )
    trail = await run_loop(task_planned([COUNT_TASK], desired="str"), model, adapter)
    assert "[empty]" in model.prompts[1]
    pivot = of_type(trail, GaslPlanRequested)[1]
    assert pivot.plan.commands == [PEOPLE] and pivot.plan.plan_id == "t0-r1"
    assert "FIND empty 0" in pivot.history[0].outcome
    assert "judged pivot" in pivot.history[0].outcome
    assert pivot.history[1].hypothesis == "hypothesis for pivot"
    written = trail[-1]
    assert isinstance(written, GenerationRequested) and written.message_id == "job1:gen:0"
    assert not written.incomplete_evidence
    [finding] = written.evidence["tasks"]
    assert finding["answer"] == 371 and finding["sources"]
    assert "Cite the source ids" in written.instructions


async def test_complete_moves_on_to_the_next_task(adapter: NetworkXAdapter) -> None:
    write = Task(id="write", objective="Write a report on the people", kind="generation")
    model = Model(answer("continue", (0.9, [PEOPLE])), "COMPLETE: 371 people")
    trail = await run_loop(task_planned([COUNT_TASK, write]), model, adapter)
    following = trail[-1]
    assert isinstance(following, TaskPlanned) and following.message_id == "job1:task:1"
    assert following.progress.task_index == 1
    assert following.progress.outcomes[0].answer == "371 people"
    # the generation task then hands the outcome to the writer
    [request] = (await on_task_planned(following, model.client, Capability.MINIMAL)).messages
    assert isinstance(request, GenerationRequested) and request.task_id == "write"
    assert request.evidence["tasks"][0]["objective"] == COUNT_TASK.objective
    assert request.instructions.startswith(write.objective)


async def test_the_round_cap_hands_over_incomplete_evidence(adapter: NetworkXAdapter) -> None:
    keep = ["DECLARE people AS LIST", PEOPLE, "UPDATE people WITH people"]
    model = Model(
        answer("continue", (0.9, keep)),
        answer("refine", (0.9, [PEOPLE])),
        answer("refine", (0.9, [PEOPLE])),  # not complete although no round is left
    )
    notes: list[str] = []
    decisions: list[tuple[str, str]] = []
    trail = await run_loop(
        task_planned([COUNT_TASK], desired="int", max_rounds=2),
        model,
        adapter,
        notes,
        decisions=decisions,
    )
    assert [decision for decision, _ in decisions] == ["continue", "refine", "capped"]
    assert decisions[:2] == [("continue", "hypothesis for continue"), ("refine", "judged refine")]
    assert decisions[2][1] == "round cap 2 reached without COMPLETE; judged refine"
    assert len(of_type(trail, GaslPlanRequested)) == 2
    assert "no plan may run any more" in model.prompts[2]
    handed = trail[-1]
    assert isinstance(handed, GenerationRequested)  # no answer to validate, only findings
    assert handed.incomplete_evidence
    outcome = handed.progress.outcomes[-1]
    assert outcome.incomplete and outcome.answer is None
    assert outcome.evidence["keys"][0]["key"] == "people"
    assert outcome.evidence["keys"][0]["size"] == 371
    assert outcome.provenance
    assert any("round cap 2" in note for note in notes)
    assert "could not be established" in handed.instructions
    assert decode_message(handed.model_dump_json()) == handed  # plain JSON on the wire


async def test_the_most_confident_action_runs(adapter: NetworkXAdapter) -> None:
    weak = ['FIND nodes WHERE entity_type = "ORGANIZATION" AS orgs']
    model = Model(answer("continue", (0.3, weak), (0.9, [PEOPLE]), (0.6, weak)))
    notes: list[str] = []
    step = await on_task_planned(
        task_planned([COUNT_TASK]), model.client, Capability.MINIMAL, notes=notes
    )
    [request] = step.messages
    assert isinstance(request, GaslPlanRequested)
    assert request.plan.commands == [PEOPLE]
    assert any("most confident of 3" in note for note in notes)


async def test_an_unreadable_answer_becomes_a_probe_and_feedback(
    adapter: NetworkXAdapter,
) -> None:
    model = Model(
        "I think we should look at people.",
        answer("continue", (0.9, [PEOPLE, "COUNT people AS n"])),
        "COMPLETE: 371",
    )
    notes: list[str] = []
    trail = await run_loop(task_planned([COUNT_TASK], desired="int"), model, adapter, notes)
    probe = of_type(trail, GaslPlanRequested)[0]
    # the probe looks at what the question names (PERSON nodes)
    assert probe.plan.commands == [
        'FIND nodes WHERE entity_type = "PERSON" LIMIT 10 AS probe_person'
    ]
    assert "could not be used" in model.prompts[1]
    assert "not one JSON object" in model.prompts[1]
    assert isinstance(trail[-1], ValidationRequested)
    assert any("probe plan" in note for note in notes)


async def test_complete_before_any_plan_is_refused(adapter: NetworkXAdapter) -> None:
    model = Model("COMPLETE: about 400")
    step = await on_task_planned(
        task_planned([COUNT_TASK]), model.client, Capability.MINIMAL, summarize_graph(adapter)
    )
    [request] = step.messages
    assert (
        step.figures.decision == "refine"
        and "after a plan has gathered evidence" in step.figures.rationale
    )
    assert isinstance(request, GaslPlanRequested)
    assert request.plan.commands[0].endswith("AS probe_person")
    assert "after a plan has gathered evidence" in request.history[0].hypothesis


async def test_handlers_are_deterministic(adapter: NetworkXAdapter) -> None:
    def script() -> Model:
        return Model(answer("continue", (0.9, [PEOPLE])), "COMPLETE: 371")

    first = await run_loop(task_planned([COUNT_TASK], desired="int"), script(), adapter)
    second = await run_loop(task_planned([COUNT_TASK], desired="int"), script(), adapter)

    def planner_output(trail: list[Envelope]) -> list[dict[str, Any]]:
        # executed messages come from the executor here, with wall-clock durations
        return [
            m.model_dump(exclude={"created_at"})
            for m in trail
            if not isinstance(m, GaslPlanExecuted)
        ]

    assert planner_output(first) == planner_output(second)
    assert [m.message_id for m in first] == [
        "job1:gasl:0:0",
        "job1:gasl:0:0:done",
        "job1:validate:0",
    ]


async def test_a_task_pointing_past_the_plan_fails_the_job() -> None:
    start = task_planned([COUNT_TASK])
    past = start.model_copy(
        update={"progress": start.progress.model_copy(update={"task_index": 5})}
    )
    [failed] = (await on_task_planned(past, Model().client, Capability.MINIMAL)).messages
    assert isinstance(failed, JobFailed) and failed.status == "plan_failed"
    assert "past the plan" in failed.error and failed.message_id == "job1:failed"


async def test_a_graph_task_on_a_job_without_a_graph_raises_the_missing_graph_error() -> None:
    start = task_planned([COUNT_TASK])
    graphless = start.model_copy(
        update={"request": start.request.model_copy(update={"graph": None})}
    )
    with pytest.raises(GraphNotFound, match="names no graph"):
        await on_task_planned(graphless, Model().client, Capability.MINIMAL)


class MemoryRounds:
    """The gasl worker's round store, in memory: the state each round left."""

    def __init__(self) -> None:
        self.states: dict[int, dict[str, Any] | None] = {}

    async def state_after(self, job_id: str, task: int, round_: int) -> dict[str, Any] | None:
        return None if round_ < 0 else self.states[round_]

    async def after_round(self, job_id: str, task: int, round_: int, state: dict) -> None:
        self.states[round_] = state

    async def record_round(self, executed: GaslPlanExecuted) -> None:
        return None


async def rounds_until_done(
    adapter: NetworkXAdapter, model: Model, rounds: MemoryRounds
) -> list[GaslPlanExecuted]:
    """The planner and the real gasl stage in turn; every executed round."""
    deps = PlannerDeps(model.client, Capability.STANDARD, summarize_graph(adapter))
    step = await planner_handle(task_planned([COUNT_TASK], max_rounds=5), deps)
    executed: list[GaslPlanExecuted] = []
    while isinstance(step.messages[0], GaslPlanRequested):
        gasl = GaslDeps(adapter, rounds, None, TimeBudget())
        [done] = (await gasl_handle(step.messages[0], gasl)).messages
        assert isinstance(done, GaslPlanExecuted)
        executed.append(done)
        step = await planner_handle(done, deps)
    return executed


def keys_of(state: dict[str, Any] | None) -> set[str]:
    return set((state or {}).get("variables", {}))


async def test_a_pivot_starts_from_the_state_before_the_failed_hypothesis(
    adapter: NetworkXAdapter,
) -> None:
    model = Model(
        answer("continue", (0.9, ["DECLARE people AS LIST", PEOPLE, "UPDATE people WITH people"])),
        # the next hypothesis writes to the state, then finds nothing
        answer("continue", (0.9, ["DECLARE labs AS LIST", 'FIND nodes WHERE id = "NO LAB" AS l'])),
        answer("pivot", (0.9, ["COUNT people AS n"])),
        answer("complete", result=371),
    )
    rounds = MemoryRounds()
    _, failed, after = await rounds_until_done(adapter, model, rounds)
    assert failed.records[-1].status == "empty" and keys_of(rounds.states[1]) == {"people", "labs"}
    # round 2 ran from round 0's state: people is there, the abandoned round's labs is not
    assert after.base_round == 0 and keys_of(rounds.states[2]) == {"people"}
    notes = {note.round: note for note in after.history}
    assert notes[1].abandoned and notes[2].decision == "pivot"
    assert not notes[0].abandoned and not notes[2].abandoned
    assert "round 1 (continue) [abandoned" in model.prompts[-1]


async def test_a_pivot_also_leaves_behind_what_the_abandoned_round_created(
    adapter: NetworkXAdapter,
) -> None:
    """Nodes a round made with CREATE_* are part of the state it left: a pivot back to an
    earlier round does not see the abandoned round's groups, a later continue does."""
    groups = 'FIND nodes WHERE entity_type = "GROUP" AS groups'
    model = Model(
        answer("continue", (0.9, ["DECLARE seen AS LIST"])),
        answer(
            "continue", (0.9, [PEOPLE, "CREATE_GROUPS FROM people BY entity_type AS g", groups])
        ),
        answer("pivot", (0.9, [groups])),
        answer("continue", (0.9, [PEOPLE, "CREATE_GROUPS FROM people BY entity_type AS g"])),
        answer("complete", result=0),
    )
    rounds = MemoryRounds()
    _, made, pivoted, again = await rounds_until_done(adapter, model, rounds)
    assert made.records[-1].count == 1, "the creating round sees its group"
    assert pivoted.base_round == 0 and pivoted.records[-1].status == "empty"
    assert again.base_round == 2 and again.records[-1].count == 1


async def test_a_pivot_after_a_pivot_goes_back_to_where_that_one_started(
    adapter: NetworkXAdapter,
) -> None:
    model = Model(
        answer("continue", (0.9, ["DECLARE people AS LIST", PEOPLE, "UPDATE people WITH people"])),
        answer("pivot", (0.9, ["DECLARE first_guess AS LIST"])),
        answer("pivot", (0.9, ["DECLARE second_guess AS LIST"])),
        answer("complete", result=0),
    )
    rounds = MemoryRounds()
    _, first, second = await rounds_until_done(adapter, model, rounds)
    assert (first.base_round, second.base_round) == (-1, -1)
    assert keys_of(rounds.states[1]) == {"first_guess"}
    assert keys_of(rounds.states[2]) == {"second_guess"}
    assert [note.abandoned for note in second.history] == [True, True, False]


async def test_a_refine_applies_the_models_cap_changes() -> None:
    read = read_round_answer(
        json.dumps(
            {
                "decision": "refine",
                "next_actions": [
                    {"action": "refine", "caps": {"max_results": 50}, "plan": [PEOPLE]}
                ],
            }
        )
    )
    assert read.actions[0].commands == ["SET adapter.caps.max_results=50", PEOPLE]


async def test_an_unparseable_plan_identical_to_one_already_run_is_not_run_again(
    adapter: NetworkXAdapter,
) -> None:
    broken = ['FIND nodes WHERE entity_type = "PERSON" people']
    model = Model(
        answer("continue", (0.9, broken)),
        answer("refine", (0.9, broken)),
        answer("refine", (0.9, ['FIND   nodes WHERE entity_type = "PERSON"  people'])),
        "COMPLETE: 371",
    )
    decisions: list[tuple[str, str]] = []
    trail = await run_loop(
        task_planned([COUNT_TASK], desired="int", max_rounds=4),
        model,
        adapter,
        decisions=decisions,
    )
    plans = [m.plan.commands for m in of_type(trail, GaslPlanRequested)]
    assert plans.count(broken) == 1  # the unparseable plan ran once, not three times
    assert len(plans) == 3 and all(p[0].endswith("AS probe_person") for p in plans[1:])
    assert [d for d, _ in decisions] == ["continue", "refine", "refine", "complete"]
    assert "the one round 0 ran, which does not parse (command 1: line 1" in decisions[1][1]
    assert "it was not run again" in model.prompts[2]
    assert "it was not run again" in model.prompts[3]
    assert isinstance(trail[-1], ValidationRequested)


async def test_a_plan_that_parsed_may_run_again_as_the_state_changes(
    adapter: NetworkXAdapter,
) -> None:
    """A failure that depends on the state (a variable not defined yet) is no reason to
    refuse the same plan once an earlier round has defined what it needs."""
    needs_people = ["COUNT people AS n"]
    model = Model(
        answer("continue", (0.9, needs_people)),
        answer("refine", (0.9, [PEOPLE])),
        answer("continue", (0.9, needs_people)),
        "COMPLETE: 371",
    )
    trail = await run_loop(task_planned([COUNT_TASK], desired="int", max_rounds=4), model, adapter)
    plans = [m.plan.commands for m in of_type(trail, GaslPlanRequested)]
    assert plans == [needs_people, [PEOPLE], needs_people]
