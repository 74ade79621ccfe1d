"""OpenTelemetry traces: one trace per job, a span per hop, a span per model call.

A job's trace starts when it is submitted (a `postel.submit` span). Every message carries the
W3C trace context of the span that sent it (`traceparent` in the envelope), so a hop's span
(`<worker> <message type>`) is the child of the hop that sent its message, whatever process
or machine runs it. Each model call made in a hop is a child span following the GenAI
semantic conventions (`chat <model>`: gen_ai.operation.name, gen_ai.request.model,
gen_ai.request.max_tokens, gen_ai.request.temperature, gen_ai.response.model,
gen_ai.response.finish_reasons, gen_ai.usage.input_tokens, gen_ai.usage.output_tokens).

Off unless OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: then
each process exports over OTLP/HTTP, named by OTEL_SERVICE_NAME (default `postel`). Off, it
costs nothing: no tracer exists, every hook returns at its first line and messages carry no
trace context. An application embedding postel may pass its own TracerProvider to
`enable_tracing`, and stop with `disable_tracing` (which first flushes the spans of a provider
built from the environment).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from postel.messages import Envelope
from postel.services.llm.client import LLMClient
from postel.services.llm.models import LLMRequest, LLMResponse

M = TypeVar("M", bound=Envelope)

_PROPAGATOR = TraceContextTextMapPropagator()
_tracer: Tracer | None = None
_exporting: Any = None  # the SDK provider configure_from_environment built, to flush it


def enable_tracing(provider: trace.TracerProvider) -> None:
    """Trace this process's jobs, hops and model calls with `provider`."""
    global _tracer
    _tracer = provider.get_tracer("postel")


def disable_tracing() -> None:
    """Stop tracing; spans built from the environment are flushed to their exporter first."""
    global _tracer, _exporting
    if _exporting is not None:
        _exporting.shutdown()
    _tracer = _exporting = None


def tracing_enabled() -> bool:
    return _tracer is not None


def configure_from_environment() -> None:
    """Export over OTLP when the standard OpenTelemetry variables ask for it."""
    wanted = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
    if not wanted or _tracer is not None:
        return
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME", "postel")
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    enable_tracing(provider)
    global _exporting
    _exporting = provider


def _context_of(message: Envelope) -> otel_context.Context | None:
    if message.traceparent is None:
        return None
    return _PROPAGATOR.extract({"traceparent": message.traceparent})


def _traceparent() -> str | None:
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent")


@contextlib.contextmanager
def submit_span(job_id: str) -> Iterator[None]:
    """The root of a job's trace, around its submission."""
    if _tracer is None:
        yield
        return
    with _tracer.start_as_current_span(
        "postel.submit", kind=SpanKind.PRODUCER, attributes={"postel.job_id": job_id}
    ):
        yield


@contextlib.contextmanager
def hop_span(worker: str, message: Envelope) -> Iterator[Span | None]:
    """A hop's span, the child of the span that sent `message`."""
    if _tracer is None:
        yield None
        return
    attributes = {
        "postel.job_id": message.job_id,
        "postel.message_id": message.message_id,
        "postel.message_type": message.type,
        "postel.worker": worker,
        "postel.attempt": message.attempt,
    }
    with _tracer.start_as_current_span(
        f"{worker} {message.type}",
        context=_context_of(message),
        kind=SpanKind.CONSUMER,
        attributes=attributes,
    ) as span:
        yield span


def with_trace(message: M) -> M:
    """`message`, carrying the current span's trace context (unchanged when tracing is off)."""
    if _tracer is None:
        return message
    parent = _traceparent()
    return message if parent is None else message.model_copy(update={"traceparent": parent})


class TracedClient:
    """A model client whose calls are GenAI spans under the current hop's span."""

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if _tracer is None:
            return await self.inner.complete(request)
        model = request.model or "default"
        attributes: dict[str, str | int | float] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.request.max_tokens": request.max_tokens,
            "gen_ai.request.temperature": request.temperature,
        }
        with _tracer.start_as_current_span(
            f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            try:
                response = await self.inner.complete(request)
            except Exception as exc:
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
                raise
            span.set_attribute("gen_ai.response.model", response.model)
            span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
            span.set_attribute("gen_ai.usage.input_tokens", response.usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", response.usage.completion_tokens)
            return response

    async def aclose(self) -> None:
        await self.inner.aclose()
