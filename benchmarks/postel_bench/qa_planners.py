"""The scripted models of `postel bench qa`: every model call a question's job makes (intent,
task plan, HDT rounds, a rewrite), answered from the prompt like a model would.

Two planners write the HDT rounds:
- `right` writes the right GASL chain in round 1, canonical, with DIRECTION, then completes
  with a reference to the state, `COMPLETE: ${ans}`, as a bare line (`${hopN}` where the plan
  stopped at an empty hopN before reaching ans);
- `realistic` writes as models do: the spellings of other graph-reasoning prompts
  (`FIND nodes with entity_type=PERSON and id=Ada Lindsen AS start`, `GRAPHWALK from start
  follow directed_by depth 1 AS hop1`), one mistake in round 1 (a missing `AS`, an unquoted
  keyword or a verb from another graph language, in turn), which it fixes in round 2 only
  from the error's hint as the prompt shows it, and a `LIMIT 20` that makes it refine with
  no limit when the results fill it. It completes with `${ans.id}` in the JSON answer (the
  empty variable's where the plan stopped at one).

Both confirm an empty answer once when asked to (services.planner.empty): the bench never sets
`allow_empty`, so a question whose answer is none takes one more round.

The model knows each question's chain (it is scripted) but reads everything else from the
prompt: which question (the QUESTION part), which round (the ROUND part), what happened
(the LAST RESULTS part). What it learnt from a hint it keeps for the job's later rounds, as a
conversation would. `QaModel.planner` says which planner answers; the bench sets it per phase.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from postel.services.llm import LLMRequest
from postel.services.planner.empty import EMPTY_ANSWER
from postel.services.prompts import TEMPLATES

from postel_bench.data.qa_movies import Question

Planner = Literal["right", "realistic"]
PLANNERS: tuple[Planner, ...] = ("right", "realistic")
Mistake = Literal["missing_as", "unquoted_keyword", "foreign_verb"]
MISTAKES: tuple[Mistake, ...] = ("missing_as", "unquoted_keyword", "foreign_verb")
REALISTIC_LIMIT = 20

_SYSTEMS = {
    name: TEMPLATES.get(name).system
    for name in ("intent_analysis", "task_plan", "generate_value", "hdt_round")
}
_RECORD = re.compile(
    r"^\s*\d+\.\s+\[(?P<status>\w+)\]\s+(?P<command>.*?)\s+->\s+(?P<count>\d+)"
    r"(?:\s+as\s+(?P<var>\w+))?"
)
_ROUND = re.compile(r"plan (?P<n>\d+) of at most (?P<most>\d+)")
_NEAREST = re.compile(r"the nearest is (?P<verb>[A-Z_]+)")
_STOPPED = re.compile(r"the plan stopped early: empty: (?P<var>\w+)")
_CONFIRM = re.compile(re.escape(EMPTY_ANSWER) + r": (?P<reference>\$\{[^}]+\})")


def part(prompt: str, name: str) -> str:
    """The text of one delimited part of the round prompt (empty when it is not there)."""
    found = re.search(rf"<<<BEGIN {re.escape(name)}[^>]*>>>\n(.*?)\n<<<END ", prompt, re.DOTALL)
    return found.group(1) if found else ""


def right_chain(question: Question) -> list[str]:
    """The canonical chain: one NEIGHBORS per hop, walked the way the relation points."""
    commands = []
    start = json.dumps(question.start)
    for index, hop in enumerate(question.hops):
        name = _hop_name(question, index)
        commands.append(
            f'NEIGHBORS {start} DIRECTION {hop.direction} VIA "{hop.relation}" AS {name}'
        )
        start = f"${{{name}}}"
    if question.exclude_start:
        last = _hop_name(question, len(question.hops) - 1)
        commands.append(f"SELECT {last} WHERE id != {json.dumps(question.start)} AS ans")
    return commands


def _hop_name(question: Question, index: int) -> str:
    last = index == len(question.hops) - 1
    return "ans" if last and not question.exclude_start else f"hop{index + 1}"


def mistake_of(question: Question) -> Mistake:
    """The kinds in turn over each hop count's questions (the set takes 1, 2, 3 hops in
    turn), so every hop count meets every kind of mistake."""
    return MISTAKES[int(question.id[1:5]) // 3 % len(MISTAKES)]


def realistic_chain(question: Question, *, limit: int | None = REALISTIC_LIMIT) -> list[str]:
    """The chain as models write it, before any mistake: other spellings for the start and
    the walks, the canonical form for the last hop (with a LIMIT), and the exclusion."""
    commands = [
        f"FIND nodes with entity_type={question.start_type} and id={question.start} AS start"
    ]
    previous = "start"
    for index, hop in enumerate(question.hops[:-1]):
        name = f"hop{index + 1}"
        commands.append(f"GRAPHWALK from {previous} follow {hop.relation} depth 1 AS {name}")
        previous = name
    last = question.hops[-1]
    name = _hop_name(question, len(question.hops) - 1)
    limited = f" LIMIT {limit}" if limit is not None else ""
    commands.append(
        f'NEIGHBORS ${{{previous}}} DIRECTION {last.direction} VIA "{last.relation}"'
        f"{limited} AS {name}"
    )
    if question.exclude_start:
        commands.append(f"SELECT {name} WHERE id != {json.dumps(question.start)} AS ans")
    return commands


def with_mistake(commands: list[str], mistake: Mistake) -> list[str]:
    """The last walk (the NEIGHBORS) written wrong in one way."""
    index = next(i for i, c in enumerate(commands) if c.startswith("NEIGHBORS"))
    command = commands[index]
    if mistake == "missing_as":
        command = re.sub(r"\s+AS\s+\w+$", "", command)
    elif mistake == "unquoted_keyword":
        command = re.sub(r'VIA "(\w+)"', r"VIA \1", command)
    else:
        command = "EXPAND" + command[len("NEIGHBORS") :]
    return [*commands[:index], command, *commands[index + 1 :]]


def fix_from_hint(
    commands: list[str], failed: str, hint: str, meant: list[str]
) -> list[str] | None:
    """The plan with the failed command fixed as the hint says, or None when the hint says
    nothing this model knows how to act on. `meant` is the plan the model meant to write: a
    missing `AS` gets the name it meant there, which the commands after it read."""
    if failed not in commands:
        return None
    index = commands.index(failed)
    if "needs `AS <name>`" in hint:
        fixed = f"{failed} AS {meant[index].rsplit(' AS ', 1)[-1]}"
    elif "double quotes" in hint:
        fixed = re.sub(r"\bVIA (\w+)", r'VIA "\1"', failed)
    elif nearest := _NEAREST.search(hint):
        fixed = nearest["verb"] + " " + failed.split(maxsplit=1)[1]
    else:
        return None
    return [*commands[:index], fixed, *commands[index + 1 :]]


@dataclass
class _Memory:
    """What one job's planner learnt: the plan that ran once its mistake was fixed."""

    fixed: list[str] | None = None


@dataclass
class QaModel:
    """Answers every call of the bench's jobs; `planner` picks the HDT round writer."""

    questions: list[Question]
    planner: Planner = "right"
    _by_text: dict[str, Question] = field(init=False)
    # calls answered per prompt template (intent_analysis, task_plan, hdt_round, ...)
    calls: Counter[str] = field(default_factory=Counter, init=False)
    _memory: dict[tuple[str, str], _Memory] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self._by_text = {q.text: q for q in self.questions}

    def question_in(self, text: str) -> Question:
        for candidate, question in self._by_text.items():
            if candidate in text:
                return question
        raise LookupError(f"no benchmark question in the prompt: {text[:200]!r}")

    def respond(self, request: LLMRequest) -> str:
        """The FakeModel's responder (called from its HTTP threads)."""
        system = request.messages[0].content
        prompt = request.prompt_text()
        with self._lock:
            self.calls[next((n for n, text in _SYSTEMS.items() if text == system), "other")] += 1
        if system == _SYSTEMS["intent_analysis"]:
            return json.dumps(_intent(self.question_in(prompt)))
        if system == _SYSTEMS["task_plan"]:
            question = self.question_in(prompt)
            task = {"id": "t1", "objective": question.text, "kind": "graph_analysis"}
            return json.dumps({"overview": "one graph question", "tasks": [task]})
        if system == _SYSTEMS["generate_value"]:
            return _rewrite(prompt)
        if system == _SYSTEMS["hdt_round"]:
            question = self.question_in(part(prompt, "QUESTION"))
            if self.planner == "right":
                return self._right(question, prompt)
            return self._realistic(question, prompt)
        raise LookupError(f"the qa model has no answer for a prompt whose system is {system!r}")

    def _right(self, question: Question, prompt: str) -> str:
        if _round(prompt) == 0:
            return _plan("continue", "nothing has run yet", right_chain(question))
        if confirm := _CONFIRM.search(prompt):
            return f"COMPLETE: {confirm['reference']}"
        stopped = _STOPPED.search(prompt)
        return "COMPLETE: ${" + (stopped["var"] if stopped else "ans") + "}"

    def _realistic(self, question: Question, prompt: str) -> str:
        with self._lock:
            memory = self._memory.setdefault((self.planner, question.id), _Memory())
        if _round(prompt) == 0:
            written = with_mistake(realistic_chain(question), mistake_of(question))
            return _plan("continue", "nothing has run yet", written)
        results = part(prompt, "LAST RESULTS")
        records = [m for m in map(_RECORD.match, results.splitlines()) if m]
        tried = memory.fixed or with_mistake(realistic_chain(question), mistake_of(question))
        failed = next((r for r in records if r["status"] in ("error", "binding_failure")), None)
        if failed is not None:
            meant = realistic_chain(question)
            fixes = (
                fix_from_hint(tried, failed["command"], hint, meant) for hint in _hints(results)
            )
            fixed = next((f for f in fixes if f is not None), None)
            if fixed is None:  # no hint it can act on: it tries the same plan again
                return _plan("refine", f"{failed['command']} failed", tried)
            memory.fixed = fixed
            return _plan("refine", "fixed as the error's hint says", fixed)
        limited = next((r for r in records if f"LIMIT {REALISTIC_LIMIT}" in r["command"]), None)
        if limited is not None and int(limited["count"]) >= REALISTIC_LIMIT:
            unlimited = [c.replace(f" LIMIT {REALISTIC_LIMIT}", "") for c in tried]
            memory.fixed = unlimited
            return _plan("refine", f"{REALISTIC_LIMIT} results: the LIMIT cut them", unlimited)
        if confirm := _CONFIRM.search(prompt):
            return _complete("the graph holds none", confirm["reference"])
        if any(r["var"] == "ans" and r["status"] == "success" for r in records):
            return _complete("the last walk answers the question", "${ans.id}")
        empty = next((r["var"] for r in records if r["status"] == "empty" and r["var"]), None)
        if empty is not None:
            return _complete(f"{empty} is empty: none", f"${{{empty}.id}}")
        return _plan("refine", "the answer has not been found yet", tried)


def _complete(evaluation: str, answer: str) -> str:
    return json.dumps(
        {"evaluation": evaluation, "decision": "complete", "hypothesis": "", "answer": answer}
    )


def _round(prompt: str) -> int:
    found = _ROUND.search(part(prompt, "ROUND"))
    return int(found["n"]) - 1 if found else 99


def _hints(results: str) -> list[str]:
    """Every `Hint:` text LAST RESULTS shows (a failed record's error carries its hint whole)."""
    return [piece.split("\n", 1)[0].strip() for piece in results.split("Hint:")[1:]]


def _plan(decision: str, evaluation: str, commands: list[str]) -> str:
    return json.dumps(
        {
            "evaluation": evaluation,
            "decision": decision,
            "hypothesis": "the chain of relations from the named entity answers it",
            "answer": None,
            "next_actions": [
                {
                    "action": decision,
                    "confidence": 0.9,
                    "plan": {"why": "walk the relations", "commands": commands},
                }
            ],
        }
    )


def _intent(question: Question) -> dict[str, object]:
    return {
        "detectedLanguage": "en",
        "normalizedRequest": question.text,
        "intent": "Answer the question from the movie knowledge graph.",
        "contextItems": [],
        "primaryGoal": "the names that answer the question",
        "dataType": "list",
        "expectedFormats": ["list"],
        "successCriteria": ["at least 1 item"],
    }


def _rewrite(prompt: str) -> str:
    """A rewrite of a graph answer the validator refused: the model has only what the prompt
    shows, so it repeats the analysis's answer when that is a list, else says it does not
    know (which the validator refuses in turn)."""
    found = re.search(r'"answer":\s*(\[[^\]]*\])', prompt)
    return found.group(1) if found else "unknown"
