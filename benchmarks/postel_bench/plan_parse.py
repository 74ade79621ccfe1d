"""How often the local model's HDT round answers hold a plan that parses, decoded with and
without the grammar generated from GASL's (services.planner.round_grammar).

Each question is asked as the first round over the demo graph, exactly as the planner asks
it (`round_messages`), once free and once under the grammar. An answer "parses" when it
reads as a round answer (services.planner.round_answer) and, unless it completes, every
command of the plan the planner would run parses as GASL.
"""

from __future__ import annotations

import time
from typing import Any

from postel.infra.runtime.local_model import LocalModelServer
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.errors import GaslSyntaxError
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.gasl.parser import parse
from postel.services.gasl.schema_summary import summarize_graph
from postel.services.llm import ChatMessage, LLMRequest
from postel.services.llm.ask import AnswerError
from postel.services.llm.openai import OpenAIClient
from postel.services.planner.hdt import ANSWER_TOKENS
from postel.services.planner.round_answer import read_round_answer
from postel.services.planner.round_grammar import round_answer_gbnf
from postel.services.planner.round_prompt import RoundInputs, round_messages
from postel.services.prompts import Capability

# Questions like the demo's, over the MMWR graph nano-graphrag built.
QUESTIONS: tuple[str, ...] = (
    "How many people are in the graph?",
    "Which organizations is the CDC connected to?",
    "List the vaccines mentioned in the reports.",
    "Who co-authored reports with ROBIN LEE?",
    "Which diseases appear most often?",
    "What statistical measures are reported for COVID-19?",
    "Which interventions are linked to influenza?",
    "How many datasets are described?",
    "Which people are connected to VAERS?",
    "What does the graph say about the JANSSEN COVID-19 VACCINE?",
    "Which recommendations mention children?",
    "Which geographic locations appear in the reports?",
    "What events are linked to the CDC?",
    "How many entity types does the graph have?",
    "Which persons have the most connections?",
    "Which organizations published recommendations?",
    "What populations are studied in the reports?",
    "Which diseases are connected to vaccines?",
    "Find the paths between the CDC and VAERS.",
    "Which reports mention both a vaccine and a disease?",
)


def answer_parses(text: str) -> tuple[bool, str]:
    """Whether a round answer holds a usable plan (or completes), and why not."""
    try:
        answer = read_round_answer(text)
    except (AnswerError, ValueError) as error:
        return False, f"not a round answer: {error}"
    for command in answer.actions[0].commands if answer.actions else ():
        try:
            parse(command)
        except GaslSyntaxError as error:
            return False, f"command does not parse: {error}"
    return True, ""


async def _ask(client: OpenAIClient, messages: list[ChatMessage], grammar: str | None) -> str:
    request = LLMRequest(messages=messages, max_tokens=ANSWER_TOKENS, grammar=grammar)
    return (await client.complete(request)).text


async def plan_parse_rates(questions: int = len(QUESTIONS)) -> dict[str, Any]:
    """Per decoding (free, grammar): answers that parse, of how many, and seconds spent."""
    summary = summarize_graph(NetworkXAdapter.from_graphml(DEMO_GRAPH))
    asked = [QUESTIONS[i % len(QUESTIONS)] for i in range(questions)]
    grammar = round_answer_gbnf()
    figures: dict[str, Any] = {"questions": questions, "model": "local"}
    async with LocalModelServer(n_ctx=4096, startup_timeout=120) as server:
        client = OpenAIClient(server.openai_config(timeout=300))
        try:
            for name, used in (("free", None), ("grammar", grammar)):
                parsed, problems, started = 0, [], time.perf_counter()
                for question in asked:
                    inputs = RoundInputs(question, 0, 0, 5, graph_summary=summary)
                    messages = round_messages(Capability.MINIMAL, inputs)
                    ok, problem = answer_parses(await _ask(client, messages, used))
                    parsed += ok
                    if problem:
                        problems.append(problem[:160])
                figures[name] = {
                    "parsed": parsed,
                    "rate": round(parsed / questions, 3) if questions else None,
                    "seconds": round(time.perf_counter() - started, 1),
                    "problems": problems[:5],
                }
        finally:
            await client.aclose()
    return figures


def format_plan_parse_rates(figures: dict[str, Any]) -> str:
    lines = [f"round plans that parse, local model, {figures['questions']} questions:"]
    for name, label in (("free", "unconstrained"), ("grammar", "GASL grammar")):
        side = figures[name]
        lines.append(
            f"  {label:<14}{side['parsed']:>3}/{figures['questions']} ({side['rate']:.0%}) "
            f"in {side['seconds']} s"
        )
        lines.extend(f"    e.g. {problem}" for problem in side["problems"][:2])
    return "\n".join(lines)
