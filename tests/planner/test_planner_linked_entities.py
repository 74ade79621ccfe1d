"""The loop around a small model on a graph question: the intent keeps the linked entities
(not the model's say), a minimal model gets the one-task plan without being asked, the round
prompt and grammar show only the schema focus, and a question naming nothing the graph holds
ends with "not in the graph"."""

from __future__ import annotations

import json

from postel.messages.intent import Intent
from postel.messages.job import JobRequest
from postel.messages.pipeline import (
    IntentAnalyzed,
    JobFailed,
    JobSubmitted,
    TaskPlanned,
    ValidationRequested,
)
from postel.messages.task import JobProgress, Task, TaskPlan
from postel.services.ipv import infer
from postel.services.linking.aids import build_aids
from postel.services.linking.names import link
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.planner import on_intent_analyzed
from postel.services.planner.handlers import NOT_IN_GRAPH, on_task_planned
from postel.services.prompts import Capability
from postel.services.step import ModelDeps

AIDS = build_aids(
    [("Sunken Voice", {"entity_type": "FILM"}), ("Ada Lindsen", {"entity_type": "PERSON"})],
    [("Sunken Voice", "Ada Lindsen", ["directed_by"])],
    directed=True,
)
INTENT = {
    "detectedLanguage": "en",
    "normalizedRequest": "garbled",
    "intent": "x",
    "primaryGoal": "x",
    "linkedEntities": [{"mention": "x", "id": "INVENTED", "score": 1.0, "how": "exact"}],
}


def request(prompt: str, type_: str = "list[str]") -> JobRequest:
    return JobRequest(prompt=prompt, desired_type=type_, graph="movies")


class Recorder:
    def __init__(self, *answers: str) -> None:
        self.answers, self.requests = list(answers), []
        self.client = ScriptedClient(responder=self.respond)

    def respond(self, sent: LLMRequest) -> str:
        self.requests.append(sent)
        return self.answers.pop(0)


async def test_the_intent_keeps_the_linked_entities_not_the_models() -> None:
    prompt = "Who directed Sunken Voice?"
    linked = link(prompt, AIDS.names)
    model = Recorder(json.dumps(INTENT))
    submitted = JobSubmitted(job_id="j", message_id="j", request=request(prompt))
    step = await infer.handle(submitted, ModelDeps(model.client, Capability.MINIMAL), linked)
    [analyzed] = step.messages
    assert isinstance(analyzed, IntentAnalyzed)
    assert [e.id for e in analyzed.progress.intent.linked_entities] == ["Sunken Voice"]
    sent = model.requests[0]
    assert "'Sunken Voice' is 'Sunken Voice' (FILM)" in sent.prompt_text()
    assert "linkedEntities" not in json.dumps(sent.json_schema)


def _intent(prompt: str) -> Intent:
    intent = Intent.model_validate({**INTENT, "linkedEntities": []})
    return intent.model_copy(update={"linked_entities": link(prompt, AIDS.names)})


async def test_a_minimal_model_on_linked_entities_gets_one_graph_task_unasked() -> None:
    prompt = "Who directed Sunken Voice?"
    incoming = IntentAnalyzed(
        job_id="j",
        message_id="j:intent",
        request=request(prompt),
        progress=JobProgress(intent=_intent(prompt)),
    )
    model = Recorder()  # any call would fail: it has no answers
    step = await on_intent_analyzed(incoming, model.client, Capability.MINIMAL, None)
    [planned] = step.messages
    assert isinstance(planned, TaskPlanned) and planned.progress.plan is not None
    [task] = planned.progress.plan.tasks
    assert (task.kind, task.objective) == ("graph_analysis", prompt)
    assert step.figures.rationale.startswith("task plan (one graph task; a minimal model is not")


def _planned(prompt: str, type_: str = "list[str]") -> TaskPlanned:
    task = Task(id="analyse", objective=prompt, kind="graph_analysis")
    progress = JobProgress(intent=_intent(prompt), plan=TaskPlan(overview="", tasks=[task]))
    return TaskPlanned(
        job_id="j", message_id="j:t0", request=request(prompt, type_), progress=progress
    )


async def test_the_cards_one_chain_runs_without_asking_the_model() -> None:
    model = Recorder()  # any call would fail: it has no answers
    planned = _planned("Who directed Sunken Voice?")
    step = await on_task_planned(planned, model.client, Capability.MINIMAL, schema_card=AIDS.card)
    assert model.requests == []
    assert step.messages[0].plan.commands == [  # type: ignore[attr-defined]
        "NEIGHBORS 'Sunken Voice' DIRECTION out VIA 'directed_by' AS step1"
    ]


async def test_between_tied_chains_the_model_chooses_under_the_grammar() -> None:
    tied = build_aids(
        [
            ("Sunken Voice (1987)", {"entity_type": "FILM"}),
            ("Sunken Voice (2010)", {"entity_type": "FILM"}),
            ("Ada Lindsen", {"entity_type": "PERSON"}),
        ],
        [("Sunken Voice (2010)", "Ada Lindsen", ["directed_by"])],
        directed=True,
    )
    prompt = "Who directed Sunken Voice?"
    second = "NEIGHBORS 'Sunken Voice (2010)' DIRECTION out VIA 'directed_by' AS step1"
    model = Recorder(json.dumps({"decision": "continue", "commands": [second]}))
    planned = _planned(prompt)
    linked = link(prompt, tied.names)
    planned.progress.intent.linked_entities = linked
    step = await on_task_planned(planned, model.client, Capability.MINIMAL, schema_card=tied.card)
    sent = model.requests[0]
    assert "- 'Sunken Voice (1987)' (FILM)" in sent.prompt_text()
    assert "Plans for this question (choose one):" in sent.prompt_text()
    assert sent.grammar is not None and second.replace("'", "\\'") not in sent.grammar
    assert "'Sunken Voice (2010)' DIRECTION out VIA 'directed_by'" in sent.grammar
    assert "'Ada Lindsen'" not in sent.grammar  # not linked: no literal of it
    assert "GRAPHWALK" not in sent.grammar  # only the chains: no other command is writable
    assert step.messages[0].plan.commands == [second]  # type: ignore[attr-defined]


async def test_an_entity_the_graph_lacks_ends_with_not_in_the_graph() -> None:
    model = Recorder()
    prompt = "Who directed Zorblax Quuxfield?"
    said = NOT_IN_GRAPH.format(graph="movies")
    step = await on_task_planned(
        _planned(prompt, "str"), model.client, Capability.MINIMAL, schema_card=AIDS.card
    )
    [answer] = step.messages
    assert isinstance(answer, ValidationRequested) and answer.output == said
    assert said.startswith("Not in the graph")
    step = await on_task_planned(
        _planned(prompt), model.client, Capability.MINIMAL, schema_card=AIDS.card
    )
    [failed] = step.messages
    assert isinstance(failed, JobFailed) and failed.error == said
    assert model.requests == []  # the model was never asked to invent one
