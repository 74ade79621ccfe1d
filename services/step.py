"""The one contract between a worker and its service: a message and its dependencies in, a
Step out.

Every service area exposes `async def handle(message, deps) -> Step`, where `deps` is the
area's own small dataclass of what it needs from outside (a model, a graph, a store). The
Step holds the messages to send next and the hop's figures; the worker adds the model
calls' counts and hands both to the runtime, which commits them in one transaction.

A hop's figures become fields of its event, so dashboards show them as columns: the AI
loop's iteration, repair, finish_reason, sections and elements; the HDT round, its decision
and rationale; a GASL round's commands, one line each: `<status> <count> <command>`. Text
figures are bounded (RATIONALE_CHARS, COMMANDS_CHARS, COMMAND_LINES); the full records
stay in the job's data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated

from postel.messages import Envelope, ExecutionRecord
from postel.services.llm.client import LLMClient
from postel.services.prompts import Capability
from pydantic import AfterValidator, BaseModel

RATIONALE_CHARS = 300
COMMANDS_CHARS = 2_000
COMMAND_LINES = 20
_COMMAND_CHARS = 160


def _bounded(limit: int) -> AfterValidator:
    return AfterValidator(lambda text: text if len(text) <= limit else text[: limit - 1] + "…")


class HopFigures(BaseModel):
    """What a service reports about one hop; 0 or empty where a figure does not apply."""

    iteration: int = 0
    round: int = 0
    repair: int = 0
    finish_reason: str = ""
    sections: int = 0
    elements: int = 0
    decision: str = ""
    rationale: Annotated[str, _bounded(RATIONALE_CHARS)] = ""
    commands: Annotated[str, _bounded(COMMANDS_CHARS)] = ""


@dataclass(frozen=True)
class Step:
    """A service's answer to one message. `continued` marks an AI-loop iteration that sends
    the job's next iteration (its event says `continued`, not `completed`)."""

    messages: list[Envelope]
    figures: HopFigures = field(default_factory=HopFigures)
    continued: bool = False


@dataclass(frozen=True)
class ModelDeps:
    """A model to call, and what it can do (which prompt shapes and constraints it takes)."""

    llm: LLMClient
    capability: Capability


def command_lines(records: Sequence[ExecutionRecord]) -> str:
    """A GASL round's commands for the `commands` figure: `<status> <count> <command>` per
    line, each command on one line and cut short, at most COMMAND_LINES lines."""
    lines = []
    for record in records[:COMMAND_LINES]:
        command = " ".join(record.command.split())
        if len(command) > _COMMAND_CHARS:
            command = command[: _COMMAND_CHARS - 1] + "…"
        lines.append(f"{record.status} {record.count} {command}")
    if len(records) > COMMAND_LINES:
        lines.append(f"… {len(records) - COMMAND_LINES} more")
    return "\n".join(lines)


def parse_command_lines(text: str) -> list[tuple[str, int, str]]:
    """The `commands` figure back as (status, count, command) rows."""
    rows = []
    for line in text.splitlines():
        status, count, command = ([*line.split(" ", 2), "", ""])[:3]
        rows.append((status, int(count), command) if count.isdigit() else ("", 0, line))
    return rows
