"""Every `--json` output is JSON and nothing else on stdout: one document, or, for the
commands that print one object per item (their help says "One JSON object per"), one
document per line. Logs go to stderr, at any level. The commands are found by walking the
click tree, so a new command with the flag fails this test until it is given a case here."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from postel.infra.cli.main import main
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.presence import announce, announcement
from postel.infra.runtime.settings import Settings
from postel.infra.store.deadletter import dead_letter
from postel.infra.store.graphs import GraphRegistry
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.llm import ScriptedClient
from postel.services.prompts import Capability
from postel_bench.data.documents import sample_document

CASSETTE = Path(__file__).parents[1] / "pipeline" / "cassettes" / "invoice_total.json"
PEOPLE = 'FIND nodes WHERE entity_type = "PERSON" LIMIT 3 AS p'


def json_commands(
    group: click.Group = main, path: tuple[str, ...] = ()
) -> dict[str, click.Command]:
    """Every command under `group` that takes --json, by its path ("dead list")."""
    found: dict[str, click.Command] = {}
    context = click.Context(group)
    for name in group.list_commands(context):  # lazily loaded commands included
        command = group.get_command(context, name)
        assert command is not None, name
        here = (*path, name)
        if isinstance(command, click.Group):
            found.update(json_commands(command, here))
        elif any("--json" in getattr(p, "opts", ()) for p in command.params):
            found[" ".join(here)] = command
    return found


def per_line(command: click.Command) -> bool:
    flag = next(p for p in command.params if "--json" in getattr(p, "opts", ()))
    return "One JSON object per" in (getattr(flag, "help", None) or "")


def invocations(job_id: str, export: Path, document: Path) -> dict[str, list[str]]:
    return {
        "events": ["events", job_id, "--json"],
        "workers": ["workers", "--json"],
        "dead list": ["dead", "list", "--json"],
        "calls": ["calls", job_id, "--json"],
        "replay": ["replay", str(export), "--json"],
        "graph list": ["graph", "list", "--json"],
        "gasl run": ["gasl", "run", "--graph", "sample", PEOPLE, "--json"],
        "bench gasl": [
            *("bench", "gasl", "--nodes", "100", "--path-nodes", "100", "--repeat", "1"),
            *("--no-cypher", "--plan-questions", "0", "--write-sizes", "", "--json"),
        ],
        "bench bus": [
            *("bench", "bus", "--jobs", "2", "--processes", "1", "--idle-s", "1"),
            *("--latency-jobs", "5", "--json"),
        ],
        "bench web": [
            *("bench", "web", "--jobs", "10", "--events", "100", "--requests", "1", "--json"),
        ],
        "bench chaos": [
            *("bench", "chaos", "--jobs", "2", "--max-kills", "0", "--no-redis-restart"),
            *("--faults", "ok=1", "--flaky", "", "--rate", "10", "--processes", "1"),
            *("--settle", "1", "--drain-timeout", "5", "--timeout", "60", "--json"),
        ],
        "bench fair": [
            *("bench", "fair", "--backlog", "10", "--urgent", "2", "--aging-s", "2", "--json"),
        ],
        "bench graphs": ["bench", "graphs", "--triples", "300", "--json"],
        "bench fuzz": ["bench", "fuzz", "--bodies", "1", "--json"],
        "bench graph-bomb": ["bench", "graph-bomb", "--edges", "10001", "--json"],
        "bench qa": [
            *("bench", "qa", "--triples", "300", "--questions", "2", "--planners", "right"),
            "--json",
        ],
        "bench link": ["bench", "link", "--triples", "400", "--questions", "6", "--json"],
        "bench loop": [
            *("bench", "loop", "--document", str(document), "--max-tokens", "60"),
            *("--scale", "1,2", "--json"),
        ],
    }


async def one_job_with_calls(url: str, settings: Settings) -> str:
    model = Model(ScriptedClient.from_cassette(CASSETTE), Capability.STANDARD)
    async with (
        LocalSystem(settings, redis_url=url, resources={RESOURCE: model}),
        Client(url, settings) as client,
    ):
        await GraphRegistry(client.pool, client.keyspace).add("mmwr", DEMO_GRAPH)
        job_id = await client.submit("get the total price", type="float")
        assert (await client.wait(job_id, timeout=60)).status == "completed"
        await dead_letter(
            client.pool, client.keyspace, source="ingress", error="for the listing", payload="x"
        )
        return job_id


async def a_live_worker(url: str) -> None:
    """A presence for `postel workers` to list (it lives 15 s)."""
    async with Client(url) as client:
        await announce(client.pool, client.keyspace, announcement(["intent"], ingress=False))


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "postel", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_every_command_with_json_has_a_case(tmp_path: Path) -> None:
    cases = invocations("job", tmp_path / "job.json", tmp_path / "document.json")
    assert set(json_commands()) == set(cases), "give every command with --json a case here"


def check_json_outputs(
    tmp_path: Path, redis_url: str, settings: Settings, *, benchmarks: bool
) -> None:
    """Run the cases of the commands (or only of the benchmarks) and read their stdout."""
    job_id = asyncio.run(one_job_with_calls(redis_url, settings))
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    # DEBUG: every log line a command can write is written, and must go to stderr
    env.update(POSTEL_REDIS_URL=redis_url, POSTEL_LOG_LEVEL="DEBUG", POSTEL_STATE_DIR=str(tmp_path))
    export = tmp_path / "job.json"
    assert run(["export", job_id, "-o", str(export)], env).returncode == 0
    document = tmp_path / "document.json"
    document.write_text(json.dumps(sample_document(2)))
    commands = json_commands()
    for name, args in invocations(job_id, export, document).items():
        if name.startswith("bench ") != benchmarks:
            continue
        if name == "workers":
            asyncio.run(a_live_worker(redis_url))
        done = run(args, env)
        assert done.returncode == 0, f"{name}: {done.stderr[-2000:]}"
        if per_line(commands[name]):
            lines = done.stdout.splitlines()
            assert lines, f"{name} printed nothing"
            for line in lines:
                json.loads(line)  # each line one document, nothing else
        else:
            json.loads(done.stdout)  # one document, nothing before or after it


def test_every_json_output_is_json_alone_on_stdout(
    tmp_path: Path, redis_url: str, settings: Settings
) -> None:
    check_json_outputs(tmp_path, redis_url, settings, benchmarks=False)


@pytest.mark.bench
def test_every_benchmarks_json_output_is_json_alone_on_stdout(
    tmp_path: Path, redis_url: str, settings: Settings
) -> None:
    check_json_outputs(tmp_path, redis_url, settings, benchmarks=True)


def test_logs_of_a_command_go_to_stderr_even_before_it_reads_its_settings(
    tmp_path: Path,
) -> None:
    """`bench gasl` logged the local model's start to stdout: it never configured logging.
    Every command's logs go to stderr, whatever it configures itself."""
    script = (
        "import structlog, postel_bench.plan_parse as plans\n"
        "async def rates(n):\n"
        "    structlog.get_logger('bench').info('local model started', n=n)\n"
        "    side = {'parsed': 0, 'rate': 0.0, 'seconds': 0, 'problems': []}\n"
        "    return {'questions': n, 'free': side, 'grammar': side}\n"
        "plans.plan_parse_rates = rates\n"
        "from postel.infra.cli.main import main\n"
        "main()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env.update(POSTEL_LOG_LEVEL="DEBUG", POSTEL_STATE_DIR=str(tmp_path))
    args = ["bench", "gasl", "--nodes", "100", "--path-nodes", "100", "--repeat", "1"]
    args += ["--no-cypher", "--plan-questions", "1", "--write-sizes", "", "--json"]
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["plan_parse"]["questions"] == 1
    assert "local model started" in done.stderr
