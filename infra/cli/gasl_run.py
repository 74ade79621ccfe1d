"""What `postel gasl run|check` does: run commands, render records, check syntax."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from postel.infra.cli.support import clip
from postel.infra.runtime.memory import MemoryPolicy
from postel.messages.gasl import ExecutionRecord, GaslPlan, GaslRunResult
from postel.services.gasl.engines.protocol import GraphAdapter
from postel.services.gasl.engines.registry import Engine, open_engine
from postel.services.gasl.errors import GaslSyntaxError
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.llm_steps import GaslModel
from postel.services.gasl.parser import parse
from postel.services.gasl.state import JsonFileStateBackend, StateStore

STATE_FILE = "gasl_state.json"


def load_plan(source: str | Path | dict[str, Any] | list[str]) -> GaslPlan:
    """A plan from a plan object, a JSON file path, or a bare list of commands."""
    if isinstance(source, list):
        return GaslPlan(plan_id="cli", why="commands from the command line", commands=source)
    if isinstance(source, dict):
        return GaslPlan.model_validate(source)
    return GaslPlan.model_validate_json(Path(source).read_text("utf-8"))


def run_plan(
    graph_path: str | Path,
    plan: GaslPlan,
    state_dir: str | Path | None = None,
    model: GaslModel | None = None,
    max_rows: int | None = None,
    engine: Engine = "networkx",
) -> GaslRunResult:
    """Open the graph on `engine`, run one plan, persist the state under `state_dir` (if
    given); each record keeps up to `max_rows` result rows (None: all)."""
    backend = JsonFileStateBackend(Path(state_dir) / STATE_FILE) if state_dir else None
    # this process holds the graph as a worker does: under a memory policy
    policy = MemoryPolicy()
    with ExitStack() as stack:
        with policy.building():
            adapter = stack.enter_context(opened_graph(Path(graph_path), engine))
        stack.callback(policy.done)
        policy.settled()
        executor = GaslExecutor(
            adapter, StateStore(backend), model, max_rows=max_rows, bulk=policy.rows_made
        )
        return asyncio.run(executor.execute_plan(plan))


@contextmanager
def opened_graph(graph_path: Path, engine: Engine) -> Iterator[GraphAdapter]:
    """The graph at `graph_path` on `engine`: a GraphML file for either engine (ladybug
    builds a store of it in a temporary folder, removed after), or a ladybug store folder."""
    if engine == "ladybug" and not graph_path.is_dir():
        from postel.services.gasl.engines.ladybug_store import build_from_graphml

        with tempfile.TemporaryDirectory(prefix="postel-store-") as folder:
            build_from_graphml(graph_path, Path(folder) / "store")
            with opened_graph(Path(folder) / "store", engine) as adapter:
                yield adapter
        return
    adapter = open_engine(engine, graph_path)
    try:
        yield adapter
    finally:
        close = getattr(adapter, "close", None)
        if close is not None:
            close()


def run_commands(
    graph_path: str | Path,
    plan_or_commands: str | Path | dict[str, Any] | list[str],
    state_dir: str | Path | None = None,
    model: GaslModel | None = None,
    engine: Engine = "networkx",
) -> list[ExecutionRecord]:
    """`postel gasl run`: the records of a plan file/object or of loose commands."""
    plan = load_plan(plan_or_commands)
    return run_plan(graph_path, plan, state_dir, model, engine=engine).records


def check_commands(commands: list[str]) -> list[str | GaslSyntaxError]:
    """`postel gasl check`: per command, "ok" or its syntax error (never raises)."""
    results: list[str | GaslSyntaxError] = []
    for command in commands:
        try:
            parse(command)
            results.append("ok")
        except GaslSyntaxError as exc:
            results.append(exc)
    return results


def _cell(text: str, width: int) -> str:
    return clip(" ".join(text.split()), width)


def format_records_table(records: list[ExecutionRecord]) -> str:
    """A fixed-width table for people: one line per command, errors under it."""
    header = f"{'#':>3}  {'status':<16}{'count':>7}{'ms':>10}  {'caps':<14}command"
    lines = [header, "-" * len(header)]
    for index, record in enumerate(records, 1):
        caps = ",".join(record.caps_hit) or "-"
        lines.append(
            f"{index:>3}  {record.status:<16}{record.count:>7}{record.duration_ms:>10.1f}  "
            f"{_cell(caps, 13):<14}{_cell(record.command, 70)}"
        )
        written = record.detail.get("written")
        if written:
            lines.append(f"     written as: {written}")
        if record.error:
            lines.append(f"     error: {record.error}")
        hint = record.detail.get("hint")
        if hint:
            lines.append(f"     hint: {hint}")
    return "\n".join(lines)


def records_json(records: list[ExecutionRecord]) -> str:
    """The records, with their rows, as a JSON array for machines."""
    return json.dumps([r.model_dump(mode="json") for r in records], ensure_ascii=False)
