"""Benchmark of the AI loop, in-process with the oracle model.

Figures per iteration: prompt tokens (the loop's own text plus a fixed base standing in for
what the prompt builder adds around it), completion tokens, the time to read the one answer
into the loop state, and for comparison a naive re-parse of everything accumulated so far. Per run:
LLM calls against the minimum ceil(document tokens / max_tokens), and whether the document
came back equal. The minimum is exact, not a bound: each continuation goes on from the
character where the last answer was cut, so the answers together are the document's text
once (`oracle`). `summarise_run` computes the same report from figures gathered elsewhere
(the run over the real bus in `postel bench loop`)."""

from __future__ import annotations

import json
import math
import time
from typing import Any

from postel.messages.document import SectionsDocument
from postel.services.generation.loop import LoopState, continuation_prompt, step
from postel.services.generation.summary import summary_lines
from postel.services.llm.tokens import count_tokens
from postel.services.prompts.templates import SECTIONS_OUTPUT_FORMAT
from pydantic import BaseModel
from pydantic_core import from_json

from postel.testing.oracle import Oracle, serialise

BASE_PROMPT_TOKENS = 400  # role, guidelines and request: the same on every call


class IterationFigures(BaseModel):
    iteration: int
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    decision: str
    parse_ms: float
    naive_parse_ms: float
    summary_lines: int


def naive_parse_ms(sections: list[dict[str, Any]]) -> float:
    """Time to re-parse everything accumulated, as a loop that cannot resume reading would."""
    text = json.dumps({"sections": sections}, ensure_ascii=False)
    began = time.perf_counter()
    from_json(text, allow_partial=True)
    return (time.perf_counter() - began) * 1000


def _same_document(left: dict[str, Any], right: dict[str, Any]) -> bool:
    return SectionsDocument.model_validate(left) == SectionsDocument.model_validate(right)


def summarise_run(
    document: dict[str, Any],
    max_tokens: int,
    figures: list[IterationFigures],
    final_document: dict[str, Any],
) -> dict[str, Any]:
    document_tokens = count_tokens(serialise(document))
    continuations = [f.prompt_tokens for f in figures[1:]]
    return {
        "max_tokens": max_tokens,
        "document_tokens": document_tokens,
        "llm_calls": len(figures),
        "min_llm_calls": math.ceil(document_tokens / max_tokens),
        "final_decision": figures[-1].decision if figures else None,
        "document_equal": _same_document(document, final_document),
        "prompt_tokens_total": sum(f.prompt_tokens for f in figures),
        "completion_tokens_total": sum(f.completion_tokens for f in figures),
        "max_continuation_prompt_tokens": max(continuations, default=0),
        "parse_ms_total": sum(f.parse_ms for f in figures),
        "naive_parse_ms_total": sum(f.naive_parse_ms for f in figures),
        "iterations": [f.model_dump() for f in figures],
    }


def run_loop_bench(
    document: dict[str, Any], max_tokens: int, max_iterations: int = 500
) -> dict[str, Any]:
    oracle = Oracle(document, max_tokens)
    state = LoopState()
    prompt = SECTIONS_OUTPUT_FORMAT
    figures: list[IterationFigures] = []
    while True:
        reply = oracle.answer(prompt)
        result = step(state, reply.text, reply.finish_reason, max_iterations)
        state = result.state
        figures.append(
            IterationFigures(
                iteration=result.metrics.iteration,
                prompt_tokens=BASE_PROMPT_TOKENS + count_tokens(prompt),
                completion_tokens=reply.completion_tokens,
                finish_reason=reply.finish_reason,
                decision=result.decision,
                parse_ms=result.metrics.parse_ms,
                naive_parse_ms=naive_parse_ms(state.delivered_sections()),
                summary_lines=len(summary_lines(state.delivered_sections())),
            )
        )
        if result.decision != "continue":
            break
        text = continuation_prompt(state)
        prompt = f"{text.instructions}\n\n{text.user_text}"
    return summarise_run(document, max_tokens, figures, {"sections": state.delivered_sections()})


def scaled(document: dict[str, Any], factor: int) -> dict[str, Any]:
    """The document's sections `factor` times over, ids kept unique."""
    return {
        "sections": [
            {**section, "id": f"{section['id']}-{copy}"} if section.get("id") else section
            for copy in range(factor)
            for section in document.get("sections") or []
        ]
    }


def scale_row(base_document: dict[str, Any], factor: int, report: dict[str, Any]) -> dict[str, Any]:
    """One line of a scale study, from the report of a run on the `factor`-times document."""
    continuations = [f["prompt_tokens"] for f in report["iterations"][1:]]
    return {
        "factor": factor,
        "sections": len(base_document.get("sections") or []) * factor,
        "llm_calls": report["llm_calls"],
        "min_llm_calls": report["min_llm_calls"],
        "document_equal": report["document_equal"],
        "max_summary_lines": max(f["summary_lines"] for f in report["iterations"]),
        "max_continuation_prompt_tokens": max(continuations, default=0),
        "mean_continuation_prompt_tokens": (
            round(sum(continuations) / len(continuations)) if continuations else 0
        ),
        "mean_parse_ms": report["parse_ms_total"] / report["llm_calls"],
        "mean_naive_parse_ms": report["naive_parse_ms_total"] / report["llm_calls"],
    }


def scale_study(
    base_document: dict[str, Any],
    factors: tuple[int, ...] = (1, 2, 5, 10, 20),
    max_tokens: int = 1000,
) -> dict[str, Any]:
    """Continuation prompt size for the same document at growing lengths: it grows with the
    summary until the summary's cap, then stays flat."""
    rows = [
        scale_row(base_document, factor, run_loop_bench(scaled(base_document, factor), max_tokens))
        for factor in factors
    ]
    return {"max_tokens": max_tokens, "factors": rows}


def format_loop_bench(report: dict[str, Any]) -> str:
    if "factors" in report:
        lines = [f"scale study (max_tokens={report['max_tokens']})"]
        lines.append(
            "factor sections calls(min) equal summary_lines max_prompt mean_prompt"
            " parse_ms naive_ms"
        )
        for row in report["factors"]:
            lines.append(
                f"{row['factor']:>6} {row['sections']:>8} {row['llm_calls']:>5}"
                f"({row['min_llm_calls']}) {row['document_equal']!s:>5} "
                f"{row['max_summary_lines']:>13} {row['max_continuation_prompt_tokens']:>10} "
                f"{row['mean_continuation_prompt_tokens']:>11} {row['mean_parse_ms']:>8.3f} "
                f"{row['mean_naive_parse_ms']:>8.3f}"
            )
        return "\n".join(lines)
    lines = [
        f"loop bench: document {report['document_tokens']} tokens, "
        f"max_tokens {report['max_tokens']}",
        f"LLM calls {report['llm_calls']} (minimum {report['min_llm_calls']}), "
        f"final {report['final_decision']}, document equal: {report['document_equal']}",
        f"prompt tokens {report['prompt_tokens_total']}, completion tokens "
        f"{report['completion_tokens_total']}",
        f"reading the answers {report['parse_ms_total']:.2f} ms in all vs naive re-parse "
        f"{report['naive_parse_ms_total']:.2f} ms",
        "iter prompt completion finish  decision  parse_ms naive_ms",
    ]
    for row in report["iterations"]:
        lines.append(
            f"{row['iteration']:>4} {row['prompt_tokens']:>6} {row['completion_tokens']:>10} "
            f"{row['finish_reason']!s:>6} {row['decision']:>9} {row['parse_ms']:>8.3f} "
            f"{row['naive_parse_ms']:>8.3f}"
        )
    return "\n".join(lines)
