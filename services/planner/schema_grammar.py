"""What one job's HDT rounds may name, and the grammar that holds a model to it.

A small model cannot recall a graph's ids or relation names; it can choose among a few it is
shown. `schema_choice` picks them for one question: the entities the intent stage linked, the
card's relations the schema retriever ranks first (services.linking.card), the graph's entity
types and node fields, and the job's variable names. `schema_round_gbnf` is the round answer's
grammar (services.planner.round_grammar) over GASL (services/gasl/grammar.lark, translated by
services.gasl.gbnf) with its open terminals closed to those names:
- a string literal (STRING) is one of the linked ids, relation names or entity types;
- a name (NAME) is one of the node fields or the variables;
- a reference (BINDING) is `${variable}` or `${variable.field}`;
- only the read-only statements a question needs (SCHEMA_STATEMENTS).
It stays a sub-language of GASL: the rules are the lark grammar's own, only fewer words. The
grammar is small (built from the top relations, not the whole graph) and cached per choice,
that is per graph version and question. `schema_focus` is the same choice as the GRAPH part of
a small model's round prompt, with example commands made from the graph's own triples.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from postel.messages.gasl import ExecutionRecord
from postel.messages.intent import LinkedEntity
from postel.services.gasl.gbnf import (
    Alt,
    Expr,
    Lit,
    Ref,
    Repeat,
    Rules,
    Seq,
    gasl_rules,
    refs,
    rule_name,
)
from postel.services.gasl.gbnf import render as render_rules
from postel.services.linking.card import named_types, rank_relations, relation_mentions
from postel.services.linking.paths import answer_types, gasl_literal, question_chains
from postel.services.planner.round_grammar import compact_round_rules, round_rules

TOP_RELATIONS = 4
TOP_ENTITIES = 3
SCHEMA_TEXT_CHARS = 60
# the job's variables: one per walk of a chain of up to three hops, and the answer
VARIABLES = ("step1", "step2", "step3", "answer")
SCHEMA_STATEMENTS = (
    "neighbors",
    "graphwalk",
    "find_items",
    "select_where",
    "count",
    "merge",
    "compare_sets",
)
# a small model's plan: at most this many walks in a chain
CHAIN_WALKS = 3
_CHAIN_TERMINALS = ("_NEIGHBORS", "_DIRECTION", "DIRECTION", "_VIA", "_AS", "_SELECT", "_WHERE")
_CHAIN_TERMINALS = ("_NEIGHBORS", "_DIRECTION", "DIRECTION", "_VIA", "_AS", "_SELECT", "_WHERE")
_CACHED_GRAMMARS = 256


@dataclass(frozen=True)
class SchemaChoice:
    """The names one question's rounds may use (hashable: the grammar cache's key)."""

    entities: tuple[tuple[str, str], ...]  # (id, entity_type), best first
    relations: tuple[tuple[str, str, str], ...]  # (name, source type, target type), best first
    entity_types: tuple[str, ...]
    fields: tuple[str, ...]
    variables: tuple[str, ...]
    examples: tuple[tuple[str, str, str], ...] = ()  # (relation, source id, target id)
    walks: int = 1  # a small model's chain: one walk per relation the question names
    # types a chain may keep: those the question asks for, else those linked or named by it
    filter_types: tuple[str, ...] = ()
    # the chains the card gives for the question (services.linking.paths), best first, as
    # their commands; a small model's plan is one of them when there are any
    chains: tuple[tuple[str, ...], ...] = ()
    chain_answers: tuple[str, ...] = ()  # the variable each chain's answer is in

    @property
    def relation_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for name, _, _ in self.relations))

    def strings(self) -> tuple[str, ...]:
        """Every string literal the grammar allows."""
        found = [i for i, _ in self.entities] + list(self.relation_names)
        return tuple(dict.fromkeys([*found, *self.entity_types]))


def schema_choice(
    card: dict[str, Any],
    question: str,
    linked: Sequence[LinkedEntity],
    state_keys: Sequence[str] = (),
) -> SchemaChoice:
    """The choice for one question (see the module's docstring). `state_keys` are the
    variables the job's state holds already (they stay nameable)."""
    ranked = rank_relations(card, question, linked)
    # the relations the question's words name, when it names any; else the top ones
    named = [r for r in ranked if r["named"] > 0] or ranked
    top = set(list(dict.fromkeys(r["name"] for r in named))[:TOP_RELATIONS])
    relations = [r for r in ranked if r["name"] in top]
    variables = [v for v in state_keys if _is_name(v)] + list(VARIABLES)
    linked_types = [e.entity_type for e in linked[:TOP_ENTITIES] if e.entity_type]
    asked = answer_types(card, question, linked)
    chains = question_chains(card, question, linked)
    return SchemaChoice(
        entities=tuple((e.id, e.entity_type) for e in linked[:TOP_ENTITIES]),
        relations=tuple((r["name"], r["source"], r["target"]) for r in relations),
        entity_types=tuple(card.get("entity_types", {})),
        fields=tuple(dict.fromkeys(["id", *filter(_is_name, card.get("node_fields", {}))])),
        variables=tuple(dict.fromkeys(variables)),
        examples=tuple(
            (r["name"], *r["example"]) for r in relations[:2] if len(r.get("example", ())) == 2
        ),
        walks=min(max(relation_mentions(card, question, linked), 1), CHAIN_WALKS),
        filter_types=asked
        or tuple(dict.fromkeys([*linked_types, *named_types(card, question, linked)])),
        chains=tuple(c.commands() for c in chains),
        chain_answers=tuple(c.answer for c in chains),
    )


def _is_name(text: str) -> bool:
    return text.isidentifier() and text.isascii()


def gasl_string(value: str) -> str:
    """`value` as a GASL string literal written inside a JSON string: single quotes, and the
    JSON escapes of what GASL escapes."""
    return json.dumps(gasl_literal(value), ensure_ascii=False)[1:-1]


def schema_gasl_rules(choice: SchemaChoice) -> tuple[Rules, str]:
    """GASL's rules (in JSON strings) with the open terminals closed to the choice, and
    only SCHEMA_STATEMENTS (grammar.lark's rule names)."""
    rules, statement = gasl_rules(in_json_string=True)
    rules = dict(rules)
    kept = [Ref(rule_name(name, False)) for name in SCHEMA_STATEMENTS]
    rules[statement] = Alt(tuple(kept))
    rules[rule_name("STRING", True)] = Seq(
        (_one_of(gasl_string(s) for s in choice.strings()), Repeat(Lit(" "), 0, 1))
    )
    rules[rule_name("NAME", True)] = Seq((_one_of((*choice.variables, *choice.fields)), Lit(" ")))
    bindings = [f"${{{v}}}" for v in choice.variables]
    bindings += [f"${{{v}.{f}}}" for v in choice.variables for f in choice.fields]
    rules[rule_name("BINDING", True)] = Seq((_one_of(bindings), Repeat(Lit(" "), 0, 1)))
    return _reachable(rules, statement), statement


def _one_of(texts: Any) -> Expr:
    options = tuple(Lit(t) for t in dict.fromkeys(texts))
    return options[0] if len(options) == 1 else Alt(options)


def _reachable(rules: Rules, start: str) -> Rules:
    keep: dict[str, None] = {}
    stack = [start]
    while stack:
        name = stack.pop()
        if name not in keep:
            keep[name] = None
            stack.extend(refs(rules[name]))
    return {name: rules[name] for name in keep}


def chain_rules(choice: SchemaChoice) -> tuple[Rules, Expr]:
    """A small model's plan as a chain of walks, and the rules it uses: the first walk starts
    at a linked id, each next one at the variable the walk before it made (`NEIGHBORS <id>
    [DIRECTION d] VIA <relation> AS step1`, `NEIGHBORS ${step1} ... AS step2`), one walk per
    relation the question names (`choice.walks`, at most CHAIN_WALKS; the model chooses which
    relation each walks; on a graph whose edges name none, a walk takes every edge), and a
    chain may end by leaving the linked id out of its last variable (`SELECT step2 WHERE id !=
    <id> AS answer`) or keeping one entity type of it (`SELECT step1 WHERE entity_type =
    'PERSON' AS answer`, a type linked or named in the question). Each command is a sentence
    of grammar.lark's own NEIGHBORS or SELECT rule, with fewer of its options; no variable is
    read before a command made it. With chains from the card (`choice.chains`), the plan is
    one of them whole: the model only chooses. Returns the rules and the commands list's
    inside."""
    if choice.chains:
        plans = [
            Lit(", ".join(json.dumps(c, ensure_ascii=False) for c in chain))
            for chain in choice.chains
        ]
        return {}, plans[0] if len(plans) == 1 else Alt(tuple(plans))
    rules, _ = gasl_rules(in_json_string=True)
    space = Repeat(Lit(" "), 0, 1)
    ids = [gasl_string(i) for i, _ in choice.entities]
    walks = choice.walks if ids else 0
    used: Rules = {"c-start": Seq((_one_of(ids or [""]), space))}
    keyword = {n: Ref(rule_name(n, True)) for n in _CHAIN_TERMINALS}
    direction = Repeat(Seq((keyword["_DIRECTION"], keyword["DIRECTION"])), 0, 1)
    via: Expr = Lit("")  # a graph whose edges name no relation: a walk takes every edge
    if choice.relation_names:
        used["c-relation"] = Seq((_one_of(gasl_string(r) for r in choice.relation_names), space))
        via = Seq((keyword["_VIA"], Ref("c-relation")))
    for number in range(1, walks + 1):
        start = Ref("c-start") if number == 1 else Lit(f"${{step{number - 1}}} ")
        used[f"c-walk-{number}"] = Seq(
            (
                Lit('"'),
                keyword["_NEIGHBORS"],
                start,
                direction,
                via,
                keyword["_AS"],
                Lit(f"step{number} "),
                Lit('"'),
            )
        )
        kept = [Seq((Lit("id != "), Ref("c-start")))]
        if choice.filter_types:
            kept.append(Seq((Lit("entity_type = "), Ref("c-type"))))
            used["c-type"] = Seq((_one_of(gasl_string(t) for t in choice.filter_types), space))
        used[f"c-leave-out-{number}"] = Seq(
            (
                Lit('"'),
                keyword["_SELECT"],
                Lit(f"step{number} "),
                keyword["_WHERE"],
                Alt(tuple(kept)) if len(kept) > 1 else kept[0],
                keyword["_AS"],
                Lit("answer "),
                Lit('"'),
            )
        )
    # walk 1, ..., walk n [, leave-out]: as many walks as the question names relations
    tail: Expr | None = None
    if walks:
        parts: list[Expr] = [Ref("c-walk-1")]
        parts += [Seq((Lit(", "), Ref(f"c-walk-{n}"))) for n in range(2, walks + 1)]
        parts.append(Repeat(Seq((Lit(", "), Ref(f"c-leave-out-{walks}"))), 0, 1))
        tail = Seq(tuple(parts))
    used.update({ref.name: rules[ref.name] for ref in keyword.values()})
    return used, tail if tail is not None else Lit("")


def schema_round_rules(
    choice: SchemaChoice, answers: tuple[str, ...] = (), *, compact: bool = False
) -> Rules:
    """The round answer's rules. `answers` are the variables that hold rows (a COMPLETE may
    name only them: `COMPLETE: ${step1}`); with none (no plan has run, or it found nothing)
    the answer can only plan. `compact`: the short answer of a small model
    (round_grammar.compact_round_rules), whose plans are chains of walks (chain_rules)."""
    references = tuple(f"${{{v}}}" for v in answers)
    if compact:
        chain, commands = chain_rules(choice)
        return compact_round_rules(chain, commands, references, complete=bool(answers))
    gasl, statement = schema_gasl_rules(choice)
    if not answers:
        return round_rules(gasl, statement, SCHEMA_TEXT_CHARS, complete=False)
    return round_rules(gasl, statement, SCHEMA_TEXT_CHARS, references)


@lru_cache(maxsize=_CACHED_GRAMMARS)
def schema_round_gbnf(
    choice: SchemaChoice, answers: tuple[str, ...] = (), *, compact: bool = False
) -> str:
    """The GBNF text of the job's round answers, `root` first (cached per choice, that is
    per graph version and question, and per answerable variables)."""
    return render_rules(schema_round_rules(choice, answers, compact=compact))


def answerable(choice: SchemaChoice, records: Sequence[ExecutionRecord]) -> tuple[str, ...]:
    """The variable a COMPLETE may name: the one the last plan's last command made, when it
    holds rows (a chain's answer is its end); none otherwise."""
    last = records[-1] if records else None
    if last is None or last.status != "success" or last.count == 0:
        return ()
    return (last.variable,) if last.variable in choice.variables else ()


def schema_focus(choice: SchemaChoice) -> str:
    """The GRAPH part of a small model's round prompt: only what the choice holds."""
    lines = []
    if choice.entities:
        lines.append("The question names (use these ids exactly):")
        lines += [f"- '{i}' ({t or 'no type'})" for i, t in choice.entities]
    else:
        lines.append("The question names no entity of this graph.")
    if choice.relations:
        lines.append("Relations for this question (name: from type -> to type):")
        lines += [f"- {n}: {s} -> {t}" for n, s, t in choice.relations]
    else:
        lines.append("Edges name no relation: a walk takes every edge (NEIGHBORS 'id' AS step1)")
    if choice.filter_types:
        lines.append(f"Types to keep: {', '.join(choice.filter_types)}")
    if choice.chains:
        lines.append("Plans for this question (choose one):")
        lines += [f"{n}. {'; '.join(chain)}" for n, chain in enumerate(choice.chains, 1)]
    if choice.examples:
        lines.append("Examples from this graph:")
        for relation, source, target in choice.examples:
            lines.append(
                f"- NEIGHBORS {gasl_string(source)} VIA '{relation}' AS step1 "
                f"(gives {json.dumps(target, ensure_ascii=False)} and the others)"
            )
    lines.append("Chain walks: NEIGHBORS ${step1} VIA '<relation>' AS step2")
    lines.append(f"Variables: {', '.join(choice.variables)}")
    lines.append("Done: COMPLETE: ${<variable>} (the variable holding the answer)")
    return "\n".join(lines)
