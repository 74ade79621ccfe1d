"""OpenTelemetry traces (infra/runtime/tracing.py): one trace per job, linked hop to hop through the
trace context each message carries, with a GenAI span per model call under its hop; nothing
at all when tracing is off."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from postel.infra.client.client import Client
from postel.infra.runtime import tracing
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.settings import Settings
from postel.infra.runtime.tracing import disable_tracing, enable_tracing
from postel.services.llm import ScriptedClient
from postel.services.prompts import Capability

CASSETTE = Path(__file__).parents[1] / "pipeline" / "cassettes" / "invoice_total.json"
INVOICE = "ACME Tools — Invoice 2026-118\n2 x hammer $40.00\nTOTAL DUE: $165.50"
HOPS = ["intent", "planner", "planner", "generator", "validator"]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing(provider)
    try:
        yield exporter
    finally:
        disable_tracing()


async def run_jobs(url: str, settings: Settings, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        model = Model(ScriptedClient.from_cassette(CASSETTE), Capability.STANDARD)
        async with (
            LocalSystem(settings, redis_url=url, resources={RESOURCE: model}),
            Client(url, settings) as client,
        ):
            job_id = await client.submit("get the total price", type="float", text=INVOICE)
            assert await client.result(job_id, timeout=30) == 165.5
            ids.append(job_id)
    return ids


def by_trace(finished: tuple[ReadableSpan, ...]) -> dict[int, list[ReadableSpan]]:
    traces: dict[int, list[ReadableSpan]] = {}
    for span in finished:
        assert span.context is not None
        traces.setdefault(span.context.trace_id, []).append(span)
    return traces


async def test_one_trace_per_job_with_a_span_per_hop_and_per_model_call(
    redis_url: str, settings: Settings, spans: InMemorySpanExporter
) -> None:
    job_ids = await run_jobs(redis_url, settings, 2)
    traces = by_trace(spans.get_finished_spans())
    assert len(traces) == 2, "one trace per job"
    for trace_spans in traces.values():
        ids = {span.context.span_id for span in trace_spans if span.context}
        roots = [span for span in trace_spans if span.parent is None]
        assert [span.name for span in roots] == ["postel.submit"]
        job_id = roots[0].attributes["postel.job_id"]  # type: ignore[index]
        assert job_id in job_ids
        hops = [s for s in trace_spans if s.attributes and "postel.worker" in s.attributes]
        assert sorted(s.attributes["postel.worker"] for s in hops) == sorted(HOPS)  # type: ignore[index]
        for span in trace_spans:
            if span.parent is not None:
                assert span.parent.span_id in ids, f"{span.name} links inside its job's trace"
        chats = [s for s in trace_spans if s.name.startswith("chat ")]
        assert len(chats) == 3, "intent, task plan, the answer"
        hop_by_id = {s.context.span_id: s for s in hops if s.context}
        for chat in chats:
            assert chat.parent is not None and chat.parent.span_id in hop_by_id
            attributes = chat.attributes or {}
            assert attributes["gen_ai.operation.name"] == "chat"
            assert attributes["gen_ai.usage.input_tokens"] > 0  # type: ignore[operator]
            assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
        # a hop's parent is the hop (or the submission) that sent its message
        intent = next(s for s in hops if s.attributes["postel.worker"] == "intent")  # type: ignore[index]
        assert intent.parent is not None and intent.parent.span_id == roots[0].context.span_id  # type: ignore[union-attr]


async def queued_traceparent(url: str, settings: Settings) -> str | None:
    """The trace context of a submitted job's first message, as it waits on its queue."""
    async with Client(url, settings) as client:
        job_id = await client.submit("traced?")
        raw = await client.pool.get(f"arq:job:{job_id}:submitted")
    assert raw is not None
    message = json.loads(raw)["a"][0]
    return message["traceparent"]


async def test_messages_carry_trace_context_only_when_tracing_is_on(
    redis_url: str, settings: Settings
) -> None:
    assert await queued_traceparent(redis_url, settings) is None, "off: nothing added"
    provider = TracerProvider()
    enable_tracing(provider)
    try:
        traced = await queued_traceparent(redis_url, settings)
    finally:
        disable_tracing()
    assert traced is not None and re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-0[0-9a-f]", traced)


async def test_spans_are_exported_over_otlp_when_the_endpoint_is_set(
    redis_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    received: list[tuple[str, str, int]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers["Content-Type"], len(body)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    try:
        tracing.configure_from_environment()
        assert tracing.tracing_enabled()
        await run_jobs(redis_url, settings, 1)
    finally:
        tracing.disable_tracing()  # flushes the batch to the collector
        server.shutdown()
    assert received and all(path == "/v1/traces" for path, _, _ in received)
    assert received[0][1] == "application/x-protobuf" and received[0][2] > 0
