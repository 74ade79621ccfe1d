"""The scripted provider: replay, truncation, record/replay, exhaustion, responders, factory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from postel.services.llm import (
    CassetteEntry,
    CassetteExhausted,
    ChatMessage,
    LLMRequest,
    LLMResponse,
    LLMSettings,
    OpenAIClient,
    RecordingClient,
    ScriptedClient,
    Usage,
    build_llm_client,
    load_cassette,
)


def ask(text: str, max_tokens: int = 100, system: str = "be brief") -> LLMRequest:
    return LLMRequest(
        messages=[
            ChatMessage(role="system", content=system),
            ChatMessage(role="user", content=text),
        ],
        max_tokens=max_tokens,
    )


def write(path: Path, entries: list[dict[str, object]]) -> Path:
    path.write_text(json.dumps(entries))
    return path


async def test_replays_unmatched_entries_in_order(tmp_path: Path) -> None:
    cassette = write(tmp_path / "c.json", [{"response": "one"}, {"response": "two"}])
    client = ScriptedClient.from_cassette(cassette)
    assert (await client.complete(ask("a"))).text == "one"
    second = await client.complete(ask("b"))
    assert (second.text, second.finish_reason, second.model) == ("two", "stop", "scripted")
    assert second.usage.estimated and second.usage.completion_tokens == 1
    assert client.remaining == 0


async def test_matched_entries_are_served_by_content(tmp_path: Path) -> None:
    cassette = write(
        tmp_path / "c.json",
        [
            {"match": "France", "response": "Paris"},
            {"match": r"^\d+ \+ \d+$", "regex": True, "response": "4"},
            {"match": "be brief", "scope": "any", "response": "ok"},
            {"response": "fallback"},
        ],
    )
    client = ScriptedClient.from_cassette(cassette)
    assert (await client.complete(ask("2 + 2"))).text == "4"
    assert (await client.complete(ask("capital of France?"))).text == "Paris"
    assert (await client.complete(ask("anything"))).text == "ok"  # matched the system message
    assert (await client.complete(ask("more"))).text == "fallback"


async def test_truncates_at_max_tokens_like_a_real_model() -> None:
    client = ScriptedClient([CassetteEntry(response='{"sections": [{"id": "intro"}]}')])
    response = await client.complete(ask("go", max_tokens=5))
    assert response.finish_reason == "length"
    assert response.truncated
    assert response.text == '{"sections": [{'
    assert response.usage.completion_tokens == 5


async def test_exhausted_cassette_names_cassette_and_request(tmp_path: Path) -> None:
    cassette = write(tmp_path / "short.json", [{"match": "x", "response": "y"}])
    client = ScriptedClient.from_cassette(cassette)
    await client.complete(ask("x"))
    with pytest.raises(CassetteExhausted) as info:
        await client.complete(ask("what now?"))
    message = str(info.value)
    assert "short.json" in message
    assert "what now?" in message
    assert "1/1 entries used" in message


def test_malformed_cassette_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="response"):
        load_cassette(write(tmp_path / "bad.json", [{"match": "x"}]))


async def test_record_then_replay_round_trip(tmp_path: Path) -> None:
    answers = iter(["first answer, which is rather long", '{"cut": "of'])

    async def real_model(request: LLMRequest) -> str:
        return next(answers)

    class FakeReal(ScriptedClient):
        # Stands in for a real provider: reports its own usage and model.
        async def complete(self, request: LLMRequest) -> LLMResponse:
            response = await super().complete(request)
            usage = Usage(prompt_tokens=11, completion_tokens=13)
            return response.model_copy(update={"usage": usage, "model": "real-1"})

    path = tmp_path / "run" / "cassette.json"
    recorder = RecordingClient(FakeReal(responder=real_model), path)
    recorded = [
        await recorder.complete(ask("question one")),
        await recorder.complete(ask("question two", max_tokens=4)),
    ]
    await recorder.aclose()
    assert recorded[1].finish_reason == "length"

    replay = ScriptedClient.from_cassette(path)
    # Served by content, so a different order replays the same answers.
    replayed_two = await replay.complete(ask("question two", max_tokens=4))
    replayed_one = await replay.complete(ask("question one", max_tokens=2))
    for original, again in zip(recorded, [replayed_one, replayed_two], strict=True):
        assert again.text == original.text
        assert again.finish_reason == original.finish_reason
        assert again.usage == original.usage
        assert again.model == "real-1"


async def test_sync_responder_is_an_oracle_hook() -> None:
    client = ScriptedClient(responder=lambda request: request.last_user_message().upper())
    response = await client.complete(ask("shout this", max_tokens=1))
    assert (response.text, response.finish_reason) == ("SHOUT", "length")


def test_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        ScriptedClient()


async def test_factory_builds_each_provider(tmp_path: Path) -> None:
    cassette = write(tmp_path / "c.json", [{"response": "hi"}])
    scripted = build_llm_client(LLMSettings(provider="scripted", cassette=cassette))
    assert isinstance(scripted, ScriptedClient)
    assert (await scripted.complete(ask("x"))).text == "hi"

    settings = LLMSettings(base_url="http://127.0.0.1:1/v1", api_key="sk-hidden", model="m")
    assert "sk-hidden" not in repr(settings) + settings.model_dump_json()
    plain = build_llm_client(settings)
    assert isinstance(plain, OpenAIClient)
    await plain.aclose()
    recording = build_llm_client(settings.model_copy(update={"record": tmp_path / "r.json"}))
    assert isinstance(recording, RecordingClient)
    await recording.aclose()

    with pytest.raises(ValueError, match="needs base_url"):
        LLMSettings(provider="openai")
    with pytest.raises(ValueError, match="needs a cassette"):
        LLMSettings(provider="scripted")
