"""Settings from the environment, prefix `POSTEL_` (docs/API.md lists every one).

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
from typing import Annotated, Any, Literal

from postel.infra.runtime.names import WORKER_NAMES
from postel.infra.store.graph_ingest import GraphLimits
from postel.infra.store.graph_store import GraphStorage
from postel.messages.job import TENANT_PATTERN, Priority
from postel.services.llm.structured import GrammarDialect, StructuredOutput
from postel.services.urls import check_model_url
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
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

    # an error names the setting, never echoes its value (a URL may hold a password)
    model_config = ConfigDict(hide_input_in_errors=True)

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

    _model_url = field_validator("llm_base_url")(check_model_url)


ROUTE_FIELDS: tuple[str, ...] = tuple(
    name for name in QueueSettings.model_fields if name.startswith("llm_")
)
"""The model settings a worker kind may set for itself."""


class ProducerDefaults(BaseModel):
    """What an ingress producer's jobs get unless they say otherwise (POSTEL_PRODUCERS)."""

    model_config = ConfigDict(extra="forbid")

    priority: Priority | None = None
    tenant: str | None = Field(default=None, pattern=TENANT_PATTERN)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="POSTEL_",
        env_nested_delimiter="__",
        extra="ignore",
        hide_input_in_errors=True,  # an error names the setting, never echoes its value
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

    web_tenant: str = Field(
        default="web",
        pattern=TENANT_PATTERN,
        description="the tenant of a job submitted through the HTTP API that names none",
    )
    producers: dict[str, ProducerDefaults] = Field(
        default_factory=dict,
        description="per ingress producer (an entry's `producer` field), its jobs' default "
        'class and tenant: {"nightly": {"priority": "batch"}}; a producer\'s tenant defaults '
        "to its name",
    )
    tenant_max_in_flight: int | None = Field(
        default=None,
        ge=1,
        description="a tenant's hops running at once in each stage (per lane), past which "
        "its messages wait in the queue; unset: no cap (docs/JOB_CONTROL.md)",
    )
    tenant_max_in_flight_by: dict[str, Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict,
        description='per tenant, its own cap over tenant_max_in_flight: {"reports": 2}',
    )

    callback_secret: SecretStr | None = Field(
        default=None,
        description="the Standard Webhooks secret completion callbacks are signed with "
        "(`whsec_` and base64); without it, jobs asking for a callback get none (dead letter)",
    )
    callback_allow: list[str] = Field(
        default_factory=list,
        description="hosts or networks (127.0.0.1, 10.0.0.0/8, hooks.internal) a callback may "
        "reach although loopback, private or link-local",
    )
    callback_give_up_s: float = Field(
        default=3600.0, gt=0, description="retry a failing callback this long, then dead-letter it"
    )
    callback_timeout_s: float = Field(default=10.0, gt=0, description="one attempt's limit")

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

    graph_cache_dir: Path | None = Field(
        default=None,
        description="where this machine keeps fetched graph versions (unset: "
        "<state_dir>/graph-cache); every process on the machine opens the same files",
    )
    graph_volume: Path | None = Field(
        default=None,
        description="a shared volume every machine mounts: graph stores are kept there "
        "instead of as chunks in Redis",
    )
    graph_chunk_bytes: int = Field(default=4 * 1_048_576, ge=65_536, le=256 * 1_048_576)
    graph_max_bytes: int = Field(
        default=16 * 1024**3, ge=0, description="a graph input's bytes, unpacked; 0: no limit"
    )
    graph_max_nodes: int = Field(default=50_000_000, ge=0, description="0: no limit")
    graph_max_edges: int = Field(
        default=200_000_000, ge=0, description="relations of one input; 0: no limit"
    )
    graph_max_parallel: int = Field(
        default=10_000, ge=0, description="relations between one pair of nodes; 0: no limit"
    )
    graph_versions: int = Field(
        default=2, ge=1, le=64, description="graph versions one process keeps open"
    )
    graph_buffer_pool_mb: int | None = Field(
        default=None,
        ge=16,
        description="each process's engine memory: ladybug's buffer pool per open graph "
        "(unset: the engine's READ_BUFFER_POOL)",
    )
    graph_build_pool_mb: int | None = Field(
        default=None,
        ge=16,
        description="ladybug's buffer pool while `graph add` builds a store (unset: the "
        "engine's BUILD_BUFFER_POOL)",
    )

    log_level: str = "INFO"
    log_format: Literal["auto", "json", "console"] = Field(
        default="auto", description="auto: structlog's console renderer on a terminal, else JSON"
    )

    _model_url = field_validator("llm_base_url")(check_model_url)

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

    def graph_limits(self) -> GraphLimits:
        return GraphLimits(
            self.graph_max_bytes,
            self.graph_max_nodes,
            self.graph_max_edges,
            self.graph_max_parallel,
        )

    def graph_storage(self) -> GraphStorage:
        """How this process stores, ships and caches graph versions."""
        cache = self.graph_cache_dir or self.state_dir / "graph-cache"
        return GraphStorage(
            cache_dir=cache,
            volume=self.graph_volume,
            chunk_bytes=self.graph_chunk_bytes,
            limits=self.graph_limits(),
            buffer_pool_bytes=(
                None if self.graph_buffer_pool_mb is None else self.graph_buffer_pool_mb * 1_048_576
            ),
            build_pool_bytes=(
                None if self.graph_build_pool_mb is None else self.graph_build_pool_mb * 1_048_576
            ),
            spool_dir=cache / "spool",
        )

    @property
    def embedded_url(self) -> str:
        return f"redis://127.0.0.1:{self.embedded_port}/0"

    @property
    def effective_redis_url(self) -> str:
        """The configured Redis, or the embedded server's fixed loopback address, which is
        how `postel submit` in another shell finds a running `postel up`."""
        return self.redis_url or self.embedded_url
