"""Settings from the environment, prefix `POSTEL_` (the README lists every one).

Per-worker queue settings are `POSTEL_<WORKER>__JOB_TIMEOUT`, `..._MAX_TRIES` and
`..._POLL_DELAY` (two underscores before the field, e.g. `POSTEL_GENERATOR__JOB_TIMEOUT`). A
running job holds a lease of `POSTEL_LEASE_S` seconds, renewed while its process lives, so a
killed worker's job is taken over within about that time (arq alone would wait
job_timeout + 10 s); job_timeout can therefore be sized to the slowest honest model call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

WORKER_NAMES: tuple[str, ...] = ("intent", "planner", "gasl", "generator", "validator")

DEFAULT_EMBEDDED_PORT = 6391


class QueueSettings(BaseModel):
    job_timeout: float = Field(gt=0)
    max_tries: int = Field(default=3, ge=1, le=20)
    poll_delay: float = Field(default=0.005, gt=0, le=5)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="POSTEL_", env_nested_delimiter="__", extra="ignore"
    )

    redis_url: str | None = None
    embedded_port: int = Field(default=DEFAULT_EMBEDDED_PORT, ge=1, le=65535)
    state_dir: Path = Path.home() / ".local" / "state" / "postel"

    intent: QueueSettings = QueueSettings(job_timeout=120)
    planner: QueueSettings = QueueSettings(job_timeout=180)
    gasl: QueueSettings = QueueSettings(job_timeout=120)
    generator: QueueSettings = QueueSettings(job_timeout=180)
    validator: QueueSettings = QueueSettings(job_timeout=30)
    concurrency: int = Field(default=10, ge=1, le=1000)
    lease_s: float = Field(default=5.0, ge=1.0, le=600.0)

    events_maxlen: int = Field(default=100_000, ge=100)
    job_events_maxlen: int = Field(default=2_000, ge=10)
    job_ttl_s: int = Field(default=7 * 24 * 3600, ge=60)

    llm_provider: Literal["openai", "scripted", "local"] | None = None
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_model: str = "default"
    llm_structured_output: Literal["json_schema", "json_object", "none"] = "json_schema"
    llm_timeout_s: float = Field(default=120.0, gt=0)
    llm_max_retries: int = Field(default=4, ge=0, le=20)
    llm_cassette: Path | None = None
    llm_record: Path | None = None
    llm_capability: Literal["minimal", "limited", "standard"] | None = None
    llm_context_tokens: int | None = Field(default=None, ge=256)

    web_host: str = "127.0.0.1"
    web_port: int = Field(default=8040, ge=0, le=65535)
    web_token: SecretStr | None = None

    log_level: str = "INFO"
    log_format: Literal["json", "console"] = "json"

    def queue(self, worker: str) -> QueueSettings:
        if worker not in WORKER_NAMES:
            raise ValueError(
                f"unknown worker {worker!r}; expected one of {', '.join(WORKER_NAMES)}"
            )
        settings: QueueSettings = getattr(self, worker)
        return settings

    @property
    def embedded_url(self) -> str:
        return f"redis://127.0.0.1:{self.embedded_port}/0"

    @property
    def effective_redis_url(self) -> str:
        """The configured Redis, or the embedded server's fixed loopback address, which is
        how `postel submit` in another shell finds a running `postel up`."""
        return self.redis_url or self.embedded_url
