"""Settings from the environment, prefix `POSTEL_` (the README lists every one).

Per-worker queue settings are `POSTEL_<WORKER>__JOB_TIMEOUT` and `..._MAX_TRIES` (two
underscores before the field, e.g. `POSTEL_GENERATOR__JOB_TIMEOUT`). A running job holds a
lease of `POSTEL_LEASE_S` seconds, renewed while its process lives, so a killed worker's job is
taken over within about that time (arq alone would wait job_timeout + 10 s); job_timeout can
therefore be sized to the slowest honest model call. Workers are woken by pushes
(infra/runtime/wake.py) and look at their queue unprompted every `POSTEL_FALLBACK_POLL_S`; they ride
out Redis outages, and exit only once Redis has been unreachable `POSTEL_REDIS_GIVE_UP_S`
(unset: never).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from postel.infra.runtime.names import WORKER_NAMES
from postel.services.llm.structured import GrammarDialect, StructuredOutput
from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_EMBEDDED_PORT = 6391


JOB_TIMEOUTS: dict[str, float] = {
    "intent": 120,
    "planner": 180,
    "gasl": 120,
    "generator": 180,
    "validator": 30,
}
"""Seconds one message of each worker kind may take, by default."""


class QueueSettings(BaseModel):
    """One worker kind's queue, and its model route. Setting one field alone
    (POSTEL_GASL__MAX_TRIES=5) keeps the kind's defaults for the others.

    The `llm_*` fields route the kind's model calls elsewhere than the global POSTEL_LLM_*
    (POSTEL_INTENT__LLM_MODEL=small-model): each one left unset falls back to its global."""

    job_timeout: float = Field(gt=0)
    max_tries: int = Field(default=3, ge=1, le=20)
    llm_provider: Literal["openai", "scripted", "local"] | None = None
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_model: str | None = None
    llm_capability: Literal["minimal", "limited", "standard"] | None = None
    llm_context_tokens: int | None = Field(default=None, ge=256)
    llm_rpm: int | None = Field(default=None, ge=0)
    llm_tpm: int | None = Field(default=None, ge=0)
    llm_max_concurrent: int | None = Field(default=None, ge=0)


ROUTE_FIELDS: tuple[str, ...] = tuple(
    name for name in QueueSettings.model_fields if name.startswith("llm_")
)
"""The model settings a worker kind may set for itself."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="POSTEL_", env_nested_delimiter="__", extra="ignore"
    )

    redis_url: str | None = None
    embedded_port: int = Field(default=DEFAULT_EMBEDDED_PORT, ge=1, le=65535)
    state_dir: Path = Path.home() / ".local" / "state" / "postel"

    intent: QueueSettings = QueueSettings(job_timeout=JOB_TIMEOUTS["intent"])
    planner: QueueSettings = QueueSettings(job_timeout=JOB_TIMEOUTS["planner"])
    gasl: QueueSettings = QueueSettings(job_timeout=JOB_TIMEOUTS["gasl"])
    generator: QueueSettings = QueueSettings(job_timeout=JOB_TIMEOUTS["generator"])
    validator: QueueSettings = QueueSettings(job_timeout=JOB_TIMEOUTS["validator"])
    concurrency: int = Field(default=10, ge=1, le=1000)
    lease_s: float = Field(default=5.0, ge=1.0, le=600.0)
    fallback_poll_s: float = Field(default=1.0, ge=0.01, le=60.0)
    redis_give_up_s: float | None = Field(default=None, gt=0)
    received_window_ms: float = Field(
        default=50.0,
        ge=0,
        le=60_000,
        description="a hop ending within this long writes its `received` event with its "
        "commit; a longer one writes it when this has passed (infra/runtime/arrival.py)",
    )

    events_maxlen: int = Field(default=100_000, ge=100)
    job_events_maxlen: int = Field(default=2_000, ge=10)
    job_ttl_s: int = Field(default=7 * 24 * 3600, ge=60)

    llm_provider: Literal["openai", "scripted", "local"] | None = None
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_model: str = "default"
    llm_structured_output: StructuredOutput = "json_schema"
    llm_grammar: GrammarDialect = Field(
        default="none",
        description="how the endpoint takes a grammar for constrained decoding (HDT round "
        "plans): gbnf (llama.cpp), guided_grammar (vLLM), none; the local model uses gbnf",
    )
    llm_timeout_s: float = Field(default=120.0, gt=0)
    llm_max_retries: int = Field(default=4, ge=0, le=20)
    llm_cassette: Path | None = None
    llm_record: Path | None = None
    llm_capability: Literal["minimal", "limited", "standard"] | None = None
    llm_context_tokens: int | None = Field(default=None, ge=256)
    llm_rpm: int = Field(default=0, ge=0, description="requests/min per route; 0: unlimited")
    llm_tpm: int = Field(default=0, ge=0, description="tokens/min per route; 0: unlimited")
    llm_max_concurrent: int = Field(default=0, ge=0, description="calls at once; 0: unlimited")
    record_calls: bool = True
    local_model_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="the bundled model's server port; unset: a free one",
    )
    schema_help: bool = Field(
        default=True,
        description="on a graph job: link the request's entities to the graph (intent), show "
        "small models only the relations the question is about and decode HDT rounds under "
        "the graph's own names (planner); off: the whole schema and the plain GASL grammar",
    )

    web_host: str = "127.0.0.1"
    web_port: int = Field(default=8040, ge=0, le=65535)
    web_token: SecretStr | None = None
    web_request_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="a client must send a request's headers and body within this long of "
        "connecting (or of its previous answer), or it is disconnected",
    )
    web_max_connections: int = Field(
        default=256, ge=1, description="connections at once; past it requests get 503"
    )
    web_max_streams: int = Field(
        default=64, ge=1, description="live event streams (SSE) at once; past it 429"
    )

    log_level: str = "INFO"
    log_format: Literal["auto", "json", "console"] = Field(
        default="auto", description="auto: structlog's console renderer on a terminal, else JSON"
    )

    @model_validator(mode="before")
    @classmethod
    def _queue_defaults_per_kind(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, timeout in JOB_TIMEOUTS.items():
                given = data.get(name)
                if isinstance(given, dict):
                    data[name] = {"job_timeout": timeout, **given}
        return data

    def queue(self, worker: str) -> QueueSettings:
        if worker not in WORKER_NAMES:
            raise ValueError(
                f"unknown worker {worker!r}; expected one of {', '.join(WORKER_NAMES)}"
            )
        settings: QueueSettings = getattr(self, worker)
        return settings

    def route(self, worker: str) -> Settings:
        """These settings with `worker`'s own model settings in place of the global ones."""
        queue = self.queue(worker)
        overrides = {
            name: getattr(queue, name) for name in ROUTE_FIELDS if getattr(queue, name) is not None
        }
        return self.model_copy(update=overrides) if overrides else self

    @property
    def embedded_url(self) -> str:
        return f"redis://127.0.0.1:{self.embedded_port}/0"

    @property
    def effective_redis_url(self) -> str:
        """The configured Redis, or the embedded server's fixed loopback address, which is
        how `postel submit` in another shell finds a running `postel up`."""
        return self.redis_url or self.embedded_url
