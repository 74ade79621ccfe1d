"""The model a process's workers call: chosen from settings, built once per process.

Provider, in order:
- POSTEL_LLM_PROVIDER=scripted: replay POSTEL_LLM_CASSETTE (tests, demos of recorded runs);
- POSTEL_LLM_PROVIDER=openai, or POSTEL_LLM_BASE_URL set: any OpenAI-compatible endpoint;
- otherwise (or POSTEL_LLM_PROVIDER=local): the bundled SmolLM2-135M served by
  llama-cpp-python on a free loopback port, started here and stopped on exit (the `local`
  extra).
POSTEL_LLM_RECORD writes a cassette of a real run that `scripted` can replay.
POSTEL_LLM_CONTEXT_TOKENS (the local model: 4096) keeps each call's max_tokens inside the
model's context window.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from postel.infra.runtime.actor import Runtime
from postel.infra.runtime.local_model import LocalModelServer
from postel.infra.runtime.settings import ROUTE_FIELDS, Settings
from postel.infra.runtime.tracing import TracedClient, tracing_enabled
from postel.infra.store.budgets import RedisCallGate, route_id
from postel.services.llm import (
    LLMClient,
    LLMSettings,
    MeteredClient,
    OpenAIClient,
    RecordingClient,
    RetryPolicy,
    build_llm_client,
)
from postel.services.llm.context_window import ContextWindowClient
from postel.services.llm.gate import CallGate
from postel.services.prompts import Capability
from pydantic import SecretStr

log = structlog.get_logger(__name__)

RESOURCE = "model"
LOCAL_CONTEXT_TOKENS = 4096


@dataclass
class Model:
    client: LLMClient
    capability: Capability
    local_server: LocalModelServer | None = None

    def metered(self, job_model: str | None = None) -> MeteredClient:
        """A hop's client; `job_model` (the job's `options.model`) names the model for calls
        on this route's endpoint."""
        client = TracedClient(self.client) if tracing_enabled() else self.client
        return MeteredClient(client, self.capability.value, job_model)

    async def aclose(self) -> None:
        await self.client.aclose()
        if self.local_server is not None:
            await self.local_server.stop()


def provider_of(settings: Settings) -> str:
    if settings.llm_provider is not None:
        return settings.llm_provider
    return "openai" if settings.llm_base_url else "local"


def _gate(settings: Settings, runtime: Runtime | None, base_url: str | None) -> CallGate | None:
    """The route's shared budget, when it has limits and the process has Redis."""
    limits = (settings.llm_rpm, settings.llm_tpm, settings.llm_max_concurrent)
    if runtime is None or not any(limits):
        return None
    rpm, tpm, most = limits
    route = route_id(base_url, settings.llm_model)
    return RedisCallGate(
        runtime.redis, runtime.keyspace, route, rpm=rpm, tpm=tpm, max_concurrent=most
    )


async def open_model(settings: Settings, runtime: Runtime | None = None) -> Model:
    """The model `settings` name; with `runtime`, its calls share the route's budget
    (POSTEL_LLM_RPM, _TPM, _MAX_CONCURRENT) in its Redis with every process calling it."""
    provider = provider_of(settings)
    retry = RetryPolicy(max_attempts=settings.llm_max_retries + 1)
    if provider == "local":
        context = settings.llm_context_tokens or LOCAL_CONTEXT_TOKENS
        server = LocalModelServer(n_ctx=context, port=settings.local_model_port)
        await server.start()
        client: LLMClient = OpenAIClient(
            server.openai_config(timeout=settings.llm_timeout_s, retry=retry),
            _gate(settings, runtime, None),
        )
        if settings.llm_record is not None:
            client = RecordingClient(client, settings.llm_record)
        log.info("local model started", base_url=server.base_url)
        capability = Capability(settings.llm_capability or "minimal")
        return Model(ContextWindowClient(client, context), capability, server)
    client = build_llm_client(
        LLMSettings(
            provider="scripted" if provider == "scripted" else "openai",
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key,
            model=settings.llm_model,
            timeout=settings.llm_timeout_s,
            retry=retry,
            structured_output=settings.llm_structured_output,
            grammar=settings.llm_grammar,
            cassette=settings.llm_cassette,
            record=settings.llm_record,
        ),
        _gate(settings, runtime, settings.llm_base_url),
    )
    if settings.llm_context_tokens is not None:
        client = ContextWindowClient(client, settings.llm_context_tokens)
    log.info("model client ready", provider=provider, model=settings.llm_model)
    return Model(client, Capability(settings.llm_capability or "standard"))


def route_key(routed: Settings) -> str:
    """Workers whose routes are the same (every route setting, its API key included, so
    two keys for one endpoint never share a client) share one client in a process."""
    values = [getattr(routed, name) for name in ROUTE_FIELDS]
    shown = [v.get_secret_value() if isinstance(v, SecretStr) else v for v in values]
    return f"{RESOURCE}:{hashlib.sha256(repr(shown).encode()).hexdigest()[:16]}"


def ensure_model(worker: str) -> Callable[[Runtime], Awaitable[None]]:
    """Worker setup hook: the model of `worker`'s route (its POSTEL_<WORKER>__LLM_* settings
    over the global POSTEL_LLM_*), opened once per process and shared by the workers in it
    that route to the same model. A process given a model (`resources[RESOURCE]`: tests, an
    embedding application) uses it for every worker without a route of its own."""

    async def setup(runtime: Runtime) -> None:
        routed = runtime.settings.route(worker)
        key = RESOURCE if routed is runtime.settings else route_key(routed)
        if key not in runtime.resources:
            runtime.resources[key] = await open_model(routed, runtime)
        runtime.resources[f"{RESOURCE}:{worker}"] = runtime.resources[key]

    return setup


def model_of(runtime: Runtime, worker: str) -> Model:
    model: Model = runtime.resources.get(f"{RESOURCE}:{worker}") or runtime.resources[RESOURCE]
    return model
