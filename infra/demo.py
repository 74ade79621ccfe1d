"""`postel demo`: the whole mission in one job, followed live.

It registers the bundled sample graph (nano-graphrag's knowledge graph of CDC MMWR reports)
as `mmwr`, asks which authors collaborate most and on what topics, with desired type
`document`, prints every hop as it happens (stage, HDT round, continuation iteration,
tokens), then the validated document — marked as the model's words — or the failure with
what was delivered.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

from postel.infra.client import Client
from postel.infra.events import Event
from postel.infra.graphs import GraphInfo, GraphNotFound, GraphRegistry
from postel.infra.jobs import JobRecord
from postel.infra.model import provider_of
from postel.infra.session import connected, run_job
from postel.infra.settings import Settings
from postel.messages import JobOptions, JobRequest, TypeSpec
from postel.services.gasl.cli_support import DEMO_GRAPH

QUESTION = "Which authors in these reports collaborate most, and on what topics?"
GRAPH_NAME = "mmwr"

Echo = Callable[[str], None]


async def register_sample_graph(client: Client) -> GraphInfo:
    """The bundled graph under `mmwr`; re-registered only if the stored copy differs."""
    registry = GraphRegistry(client.pool)
    digest = hashlib.sha256(DEMO_GRAPH.read_bytes()).hexdigest()
    try:
        info = await registry.info(GRAPH_NAME)
        if info.sha256 == digest:
            return info
    except GraphNotFound:
        pass
    return await registry.add(GRAPH_NAME, DEMO_GRAPH)


def model_line(settings: Settings) -> str:
    provider = provider_of(settings)
    if provider == "local":
        return "model: SmolLM2-135M-Instruct, bundled and offline (tiny: expect weak answers)"
    if provider == "scripted":
        return f"model: scripted replay of {settings.llm_cassette}"
    return f"model: {settings.llm_model} at {settings.llm_base_url}"


def progress_line(event: Event, elapsed: float) -> str:
    where = {
        "planner": f" round {event.round}" if event.round else "",
        "gasl": f" round {event.round}",
        "generator": f" iteration {event.iteration}" if event.iteration else "",
    }.get(event.worker, "")
    parts = [f"[{elapsed:6.1f}s] {event.worker:<9} {event.status:<13} {event.type}{where}"]
    if event.llm_calls:
        parts.append(
            f"llm {event.llm_calls}x, {event.prompt_tokens}+{event.completion_tokens} tokens"
        )
    if event.finish_reason:
        parts.append(f"finish {event.finish_reason}, {event.sections} sections so far")
    if event.error:
        parts.append(f"error: {event.error[:160]}")
    return " | ".join(parts)


async def run_demo(
    settings: Settings, echo: Echo, *, max_rounds: int, max_tokens: int, timeout: float
) -> JobRecord:
    echo(model_line(settings))
    async with connected(settings) as client:
        info = await register_sample_graph(client)
        echo(
            f"graph {info.name}: {info.nodes} nodes, {info.edges} edges "
            f"({info.format}, version {info.version})"
        )
        echo(f"question: {QUESTION}")
        request = JobRequest(
            prompt=QUESTION,
            desired_type=TypeSpec(kind="document"),
            graph=GRAPH_NAME,
            options=JobOptions(max_rounds=max_rounds, max_tokens=max_tokens),
        )
        started = time.monotonic()

        def show(event: Event) -> None:
            if event.status != "received":
                echo(progress_line(event, time.monotonic() - started))

        return await run_job(client, request, timeout=timeout, on_event=show)
