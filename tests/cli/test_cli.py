"""The `postel` command line: the flows of docs/API.md and exit codes a script can rely on."""

from __future__ import annotations

import ast
import json
import os
import pty
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from click.testing import Result
from postel.infra.store.redis_server import free_port

CASSETTE = Path(__file__).parents[1] / "pipeline" / "cassettes" / "invoice_total.json"


def postel(
    *args: str, env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "postel", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def base_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env.update(POSTEL_LOG_LEVEL="WARNING", POSTEL_STATE_DIR=str(tmp_path / "state"), **extra)
    return env


def test_up_then_submit_from_another_shell_then_ctrl_c(tmp_path: Path) -> None:
    port = str(free_port())
    web_port = free_port()
    env = base_env(
        tmp_path,
        POSTEL_EMBEDDED_PORT=port,
        POSTEL_WEB_PORT=str(web_port),
        POSTEL_LLM_PROVIDER="scripted",
        POSTEL_LLM_CASSETTE=str(CASSETTE),
    )
    up = subprocess.Popen(
        [sys.executable, "-m", "postel", "up"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert up.stdout is not None
        banner = up.stdout.readline()
        assert banner.strip() == f"postel up: redis at redis://127.0.0.1:{port}/0"
        dashboard = up.stdout.readline().split()
        assert dashboard[:2] == ["dashboard:", f"http://127.0.0.1:{web_port}/"]
        assert httpx.get(f"http://127.0.0.1:{web_port}/api/workers").json()[0]["ingress"]
        # another shell: no POSTEL_REDIS_URL, only the same (default) port
        other = base_env(tmp_path, POSTEL_EMBEDDED_PORT=port)
        done = postel("submit", "get the total price", "--type", "float", "--wait", env=other)
        assert done.returncode == 0, done.stderr
        job_id, result = (
            done.stdout.splitlines()[0],
            json.loads("".join(done.stdout.splitlines()[1:])),
        )
        assert result == 165.5
        status = postel("status", job_id, env=other)
        assert json.loads(status.stdout)["status"] == "completed"
        events = postel("events", job_id, "--json", env=other)
        workers = [json.loads(line)["worker"] for line in events.stdout.splitlines()]
        assert {"intent", "planner", "generator", "validator"} <= set(workers)
    finally:
        up.send_signal(signal.SIGINT)
        rest, _ = up.communicate(timeout=30)
    assert up.returncode == 0
    assert "stopping" in rest
    assert (tmp_path / "state" / "postel.aof").exists() or any(
        (tmp_path / "state").glob("appendonlydir*")
    )


def test_web_serves_the_running_system_and_refuses_an_open_address_without_a_token(
    tmp_path: Path, redis_url: str
) -> None:
    env = base_env(tmp_path, POSTEL_REDIS_URL=redis_url)
    open_address = postel("web", "--host", "0.0.0.0", "--port", "0", env=env)
    assert open_address.returncode == 2 and "needs a token" in open_address.stderr
    port = free_port()
    web = subprocess.Popen(
        [sys.executable, "-m", "postel", "web", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert web.stdout is not None
        assert web.stdout.readline().startswith(f"postel web: http://127.0.0.1:{port}/")
        assert httpx.get(f"http://127.0.0.1:{port}/api/queues").json()["jobs"] == 0
        taken = postel("web", "--port", str(port), env=env)
        assert taken.returncode == 2 and f"cannot serve on 127.0.0.1:{port}" in taken.stderr
    finally:
        web.send_signal(signal.SIGINT)
        web.communicate(timeout=30)
    assert web.returncode == 0


def test_exit_codes(redis_url: str, in_process: Callable[..., Result]) -> None:
    def postel(*args: str, **env: str) -> Result:
        return in_process(*args, env={"POSTEL_REDIS_URL": redis_url, **env})

    assert postel("status", "no-such-job").exit_code == 4
    bad_type = postel("submit", "x", "--type", "banana")
    assert bad_type.exit_code == 2 and "unknown type 'banana'" in bad_type.stderr
    bad_schema = postel("submit", "x", "--type", '{"type": "nosuchtype"}')
    assert bad_schema.exit_code == 2, bad_schema.stderr
    assert "unknown JSON Schema type ['nosuchtype']" in bad_schema.stderr
    unknown_graph = postel("submit", "x", "--graph", "nowhere")
    assert unknown_graph.exit_code == 4 and "no graph named 'nowhere'" in unknown_graph.stderr
    unreachable = postel("submit", "x", POSTEL_REDIS_URL="redis://127.0.0.1:1/0")
    assert unreachable.exit_code == 3 and "cannot reach Redis" in unreachable.stderr
    coerce = postel("coerce", "--type", "float", "--", "-$5.00")
    assert (coerce.exit_code, coerce.stdout.strip()) == (0, "-5.0")
    maybe = postel("coerce", "--type", "bool", "maybe")
    assert maybe.exit_code == 2 and "expected bool" in maybe.stderr
    # no worker runs here: the wait times out (a TimeoutError is an OSError, not Redis)
    waited = postel("submit", "x", "--wait", "--timeout", "1")
    assert waited.exit_code == 5 and "timed out" in waited.stderr
    # one queue setting alone keeps the kind's other defaults instead of crashing
    alone = postel("status", "no-such-job", POSTEL_GASL__MAX_TRIES="5")
    assert alone.exit_code == 4, alone.stderr


def test_arguments_are_checked_before_redis_is_reached(in_process: Callable[..., Result]) -> None:
    """A command that checks its arguments does so before `with_client` connects: a bad one
    is exit 2 even where Redis is unreachable (exit 3)."""
    env = {"POSTEL_REDIS_URL": "redis://127.0.0.1:1/0"}
    assert in_process("dead", "redrive", env=env).exit_code == 2
    assert in_process("dead", "discard", "1-1", "--worker", "x", env=env).exit_code == 2
    assert in_process("submit", "x", "--type", "banana", env=env).exit_code == 2
    assert in_process("replay", "nope", "--graph", "nameless", env=env).exit_code == 2
    assert in_process("dead", "redrive", "--all", env=env).exit_code == 3


def test_one_helper_opens_the_client_for_the_commands() -> None:
    """`with_client` (infra/cli/client_command.py) is the only place a command opens a
    Client: no command module builds one itself."""
    cli = Path(__file__).parents[2] / "infra" / "cli"
    opened = [
        f"{path.name}:{node.lineno}"
        for path in sorted(cli.glob("*.py"))
        if path.name != "client_command.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Client"
    ]
    assert opened == []


def test_the_exit_code_of_the_postel_process_is_the_commands(tmp_path: Path) -> None:
    """What test_exit_codes checks in this process holds for the `postel` process too."""
    assert postel("coerce", "--type", "bool", "maybe", env=base_env(tmp_path)).returncode == 2


def test_schema_writes_one_json_schema_per_message(tmp_path: Path) -> None:
    out = postel("schema", str(tmp_path / "schemas"), env=base_env(tmp_path))
    assert out.returncode == 0
    names = {Path(p).name for p in out.stdout.split()}
    for message_type in ("job.submitted", "generation.continued", "job.failed"):
        assert f"{message_type}.schema.json" in names
    schema = json.loads((tmp_path / "schemas" / "job.submitted.schema.json").read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert {"job_id", "message_id", "type", "request"} <= set(schema["properties"])
    assert "message.schema.json" in names and "job_request.schema.json" in names
    assert "job_export.schema.json" in names


@pytest.mark.parametrize("command", [["--help"], ["demo", "--help"], ["bench", "loop", "--help"]])
def test_help_is_available(tmp_path: Path, command: list[str]) -> None:
    assert postel(*command, env=base_env(tmp_path)).returncode == 0


def test_every_command_is_in_the_api_pages_command_reference() -> None:
    import click
    from postel.infra.cli.main import main

    page = (Path(__file__).parents[2] / "docs" / "API.md").read_text()
    reference = page[page.index("## The command line") : page.index("Exit codes:")]
    missing = []
    # listed as `postel --help` lists them: those installed distributions add included
    context = click.Context(main)
    for name in main.list_commands(context):
        command = main.get_command(context, name)
        subcommands = command.list_commands(context) if isinstance(command, click.Group) else [""]
        for sub in subcommands:
            spelled = f"postel {name} {sub}".strip()
            shorthand = f"/ `{name} {sub}" if sub else spelled  # "`graph add …` / `graph list`"
            if f"`{spelled}" not in reference and shorthand not in reference:
                missing.append(spelled)
    assert not missing, f"commands missing from docs/API.md's reference: {missing}"


def test_up_on_another_port_prints_a_hint_that_works_in_a_plain_shell(tmp_path: Path) -> None:
    port = free_port()
    env = base_env(tmp_path, POSTEL_LLM_PROVIDER="scripted", POSTEL_LLM_CASSETTE=str(CASSETTE))
    up = subprocess.Popen(
        [sys.executable, "-m", "postel", "up", "--port", str(port), "--no-web"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert up.stdout is not None
        lines = [up.stdout.readline() for _ in range(2)]
        hint = lines[1].strip().removeprefix("other shells: ")
        assert hint == f"POSTEL_REDIS_URL=redis://127.0.0.1:{port}/0 postel submit 'hello'"
        plain = base_env(tmp_path)  # another shell: nothing of the first one's settings
        # the hint as printed, run by a shell, `postel` being this interpreter's
        shell = f'postel() {{ "{sys.executable}" -m postel "$@"; }}; {hint}'
        done = subprocess.run(
            ["bash", "-c", shell], env=plain, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert len(done.stdout.strip()) == 32  # the job id
        # without what the hint adds, a plain shell looks on the default port
        bare = postel("submit", "hello", env=plain)
        assert bare.returncode == 3
    finally:
        up.send_signal(signal.SIGINT)
        up.communicate(timeout=30)


LOG_ONE_LINE = (
    "import structlog; from postel.infra.cli.support import settings; settings(); "
    "structlog.get_logger('t').warning('hello there', job_id='j1')"
)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def log_line(env: dict[str, str], *, terminal: bool) -> str:
    """What one log call writes on stderr: a pipe, or a pseudo-terminal."""
    command = [sys.executable, "-c", LOG_ONE_LINE]
    if not terminal:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        return done.stderr
    parent, child = pty.openpty()
    try:
        process = subprocess.Popen(command, env=env, stderr=child, stdout=subprocess.DEVNULL)
        os.close(child)
        chunks = []
        while True:
            try:
                chunk = os.read(parent, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=60)
    finally:
        os.close(parent)
    return ANSI.sub("", b"".join(chunks).decode())


def test_logs_are_rendered_for_people_on_a_terminal_and_as_json_otherwise(
    tmp_path: Path,
) -> None:
    env = base_env(tmp_path)
    piped = json.loads(log_line(env, terminal=False))
    assert piped["event"] == "hello there" and piped["job_id"] == "j1"
    shown = log_line(env, terminal=True)
    assert re.search(r"\[warning\s*\] hello there\s+job_id=j1", shown), shown
    assert not shown.lstrip().startswith("{")
    # POSTEL_LOG_FORMAT forces either
    forced = log_line({**env, "POSTEL_LOG_FORMAT": "console"}, terminal=False)
    assert re.search(r"\[warning\s*\] hello there\s+job_id=j1", forced), forced
    forced_json = log_line({**env, "POSTEL_LOG_FORMAT": "json"}, terminal=True)
    assert json.loads(forced_json)["event"] == "hello there"
