import pytest
from postel.services.llm import ChatMessage, LLMRequest, LLMRequestRejected, ScriptedClient
from postel.services.llm.context_window import ContextWindowClient


def request(prompt: str, max_tokens: int) -> LLMRequest:
    return LLMRequest(messages=[ChatMessage(role="user", content=prompt)], max_tokens=max_tokens)


async def test_max_tokens_is_lowered_to_what_fits_beside_the_prompt() -> None:
    seen: list[int] = []

    def respond(req: LLMRequest) -> str:
        seen.append(req.max_tokens)
        return "ok"

    client = ContextWindowClient(ScriptedClient(responder=respond), context_tokens=2048)
    await client.complete(request("word " * 400, 2048))
    await client.complete(request("short", 100))
    # 400 words are about 400 tokens; the margin keeps a quarter more free
    assert 2048 - 400 * 1.25 - 40 <= seen[0] < 2048 - 400
    assert seen[1] == 100, "a budget that fits is left alone"


async def test_a_prompt_that_leaves_no_room_is_refused_clearly() -> None:
    client = ContextWindowClient(ScriptedClient(responder=lambda _r: "ok"), context_tokens=512)
    with pytest.raises(LLMRequestRejected, match="512-token context window"):
        await client.complete(request("word " * 400, 64))
