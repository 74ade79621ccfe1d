"""The steps that ask a model (PROCESS, ANALYZE, ADD_FIELD ... USING, CLASSIFY), with bounded
input and typed output.

The executor stays free of any LLM client: it is handed something that satisfies
`GaslModel` (an async `complete_json`). The shared LLM layer provides one in production;
tests pass a small deterministic fake. The prompts themselves are the `gasl_process` and
`gasl_analyze` templates of `services.prompts`; this module only lays out one step's parts
(its instruction, its data excerpt and the answer's schema), which those templates are
given as a group of delimited parts: an instruction or a graph text that holds "Data:" or
a schema of its own cannot pose as the real part.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Protocol

from postel.services.gasl.budget import Deadline
from postel.services.gasl.combine import row_of
from postel.services.gasl.context import shorten
from postel.services.gasl.errors import BudgetSpent, StepFailure
from pydantic import BaseModel, Field, ValidationError


class GaslModel(Protocol):
    """A model that answers with JSON: returns (parsed object, metadata such as tokens).

    `step` is "process" or "analyze" (it picks the prompt template); `parts` maps each part
    title (STEP_PARTS) to its text: the step's instruction, its bounded data excerpt and the
    JSON schema of the answer."""

    async def complete_json(
        self, step: str, parts: dict[str, str], schema: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]: ...


class ProcessOutput(BaseModel):
    """What PROCESS must return: derived items, each ideally naming its source ids."""

    items: list[dict[str, Any]] = Field(
        description="derived items; keep `source_ids` of the inputs they come from"
    )


class ItemValue(BaseModel):
    index: int = Field(description="the `index` of the DATA item")
    value: Any = Field(description="the value read from that item")


class FieldOutput(BaseModel):
    """What ADD_FIELD ... USING must return: one value per DATA item."""

    values: list[ItemValue]


class ItemClass(BaseModel):
    index: int = Field(description="the `index` of the DATA item")
    label: str = Field(description="the item's class")


class ClassifyOutput(BaseModel):
    """What CLASSIFY must return: one class per DATA item."""

    classes: list[ItemClass]


class AnalyzeOutput(BaseModel):
    """What ANALYZE must return: an answer about the state and why."""

    answer: str
    rationale: str
    evidence: list[str] = Field(default_factory=list, description="ids or source ids cited")


# Per step: the title of each part, and how its text is laid out.
STEP_PARTS: dict[str, dict[str, str]] = {
    "process": {
        "INSTRUCTION": "{instruction}",
        "DATA": "{shown} of {total} items{truncated}, one per line:\n{excerpt}",
        "ANSWER SCHEMA": "{schema}",
    },
    "analyze": {
        "INSTRUCTION": "{instruction}",
        "FINDINGS": "under `{key}`, {shown} of {total} items{truncated}, one per line:\n{excerpt}",
        "ANSWER SCHEMA": "{schema}",
    },
}


@dataclass(frozen=True)
class Limits:
    """How much data a prompt may carry."""

    max_items: int = 30
    max_chars: int = 8000
    max_text: int = 200


@dataclass(frozen=True)
class Excerpt:
    text: str
    shown: int
    total: int

    @property
    def truncated(self) -> str:
        return "" if self.shown == self.total else ", truncated"

    def layout(self, instruction: str, **extra: Any) -> dict[str, Any]:
        """What a step's prompt parts (STEP_PARTS) are filled with."""
        return {
            "instruction": instruction,
            **extra,
            "shown": self.shown,
            "total": self.total,
            "truncated": self.truncated,
            "excerpt": self.text,
        }

    def metered(self, meta: dict[str, Any]) -> dict[str, Any]:
        """A call's metadata with how much of the data the model saw."""
        return {**meta, "input_items": self.shown, "input_total": self.total}


def excerpt(value: Any, limits: Limits) -> Excerpt:
    """JSON lines of the first items, each clipped, stopping at the character budget."""
    items = value if isinstance(value, list) else [value]
    lines: list[str] = []
    used = 0
    for item in items[: limits.max_items]:
        line = json.dumps(shorten(item, 5, limits.max_text), ensure_ascii=False, default=str)
        if used + len(line) > limits.max_chars and lines:
            break
        lines.append(line)
        used += len(line) + 1
    return Excerpt("\n".join(lines), len(lines), len(items))


async def _ask(
    model: GaslModel,
    kind: str,
    fields: dict[str, Any],
    output: type[BaseModel],
    deadline: Deadline,
    schema: dict[str, Any] | None = None,
) -> tuple[BaseModel, dict[str, Any]]:
    schema = schema or output.model_json_schema()
    values = {"schema": json.dumps(schema), **fields}
    parts = {title: layout.format(**values) for title, layout in STEP_PARTS[kind].items()}
    try:
        async with asyncio.timeout(deadline.remaining()):
            raw, meta = await model.complete_json(kind, parts, schema)
    except TimeoutError:
        raise BudgetSpent(deadline.cap, deadline.seconds) from None
    except StepFailure:
        raise
    except Exception as exc:  # any provider failure is a step error, reported not raised
        raise StepFailure(f"model call failed: {exc}", "error") from exc
    try:
        return output.model_validate(raw), dict(meta)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise StepFailure(
            f"model output does not match the schema: {problems}", "schema_mismatch"
        ) from None


async def run_process(
    model: GaslModel,
    data: Any,
    instruction: str,
    limits: Limits,
    deadline: Deadline | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Derived items, each carrying `extraction` metadata, plus the call's metadata.

    The model must answer by `deadline`, else BudgetSpent names the budget it ran out of."""
    part = excerpt(data, limits)
    fields = part.layout(instruction)
    parsed, meta = await _ask(model, "process", fields, ProcessOutput, deadline or Deadline.never())
    assert isinstance(parsed, ProcessOutput)
    extraction = part.metered({"instruction": instruction, "model": meta.get("model")})
    items = [{**item, "extraction": extraction} for item in parsed.items]
    return items, part.metered(meta)


async def run_analyze(
    model: GaslModel,
    key: str,
    data: Any,
    instruction: str,
    limits: Limits,
    deadline: Deadline | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An answer about one state key, seen only through a bounded sample."""
    sample = list(data.items()) if isinstance(data, dict) else data
    part = excerpt(sample, limits)
    fields = part.layout(instruction, key=key)
    parsed, meta = await _ask(model, "analyze", fields, AnalyzeOutput, deadline or Deadline.never())
    return parsed.model_dump(), part.metered(meta)


async def _ask_per_row(
    model: GaslModel,
    rows: list[Any],
    instruction: str,
    output: type[BaseModel],
    limits: Limits,
    deadline: Deadline | None,
    schema: dict[str, Any] | None = None,
) -> tuple[Any, Excerpt, dict[str, Any]]:
    """Ask about each row of an excerpt that numbers them (`index`), for the answers of
    ADD_FIELD ... USING and CLASSIFY, which name the row each is for."""
    part = excerpt([{"index": i, "item": row} for i, row in enumerate(rows)], limits)
    parsed, meta = await _ask(
        model, "process", part.layout(instruction), output, deadline or Deadline.never(), schema
    )
    return parsed, part, part.metered(meta)


async def run_add_field(
    model: GaslModel,
    rows: list[Any],
    name: str,
    instruction: str,
    limits: Limits,
    deadline: Deadline | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows the model was shown, each with field `name` set to the value it read from
    the row (None where it gave none)."""
    parsed, part, meta = await _ask_per_row(
        model,
        rows,
        f"For every DATA item, give the value of a new field `{name}`: {instruction}. "
        "Answer with each item's `index`.",
        FieldOutput,
        limits,
        deadline,
    )
    values = {v.index: v.value for v in parsed.values}
    return [{**row_of(rows[i]), name: values.get(i)} for i in range(part.shown)], meta


async def run_classify(
    model: GaslModel,
    rows: list[Any],
    labels: tuple[str, ...],
    instruction: str | None,
    limits: Limits,
    deadline: Deadline | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows the model was shown, each with `class` set to the label it chose (one of
    `labels` when they are given; None where it gave none)."""
    choice = f" Use exactly one of these labels: {', '.join(labels)}." if labels else ""
    schema = ClassifyOutput.model_json_schema()
    if labels:
        schema["$defs"]["ItemClass"]["properties"]["label"]["enum"] = list(labels)
    parsed, part, meta = await _ask_per_row(
        model,
        rows,
        f"Give every DATA item a class{f' ({instruction})' if instruction else ''}.{choice} "
        "Answer with each item's `index` and its `label`.",
        ClassifyOutput,
        limits,
        deadline,
        schema,
    )
    chosen = {c.index: c.label for c in parsed.classes}
    strays = sorted({label for label in chosen.values() if labels and label not in labels})
    if strays:
        raise StepFailure(
            f"model output does not match the schema: labels {strays} are not among {list(labels)}",
            "schema_mismatch",
        )
    return [{**row_of(rows[i]), "class": chosen.get(i)} for i in range(part.shown)], meta
