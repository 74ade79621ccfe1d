"""The request and response every LLM provider speaks, independent of any wire protocol."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant"]

# Providers report more reasons than these ("content_filter", "tool_calls", ...); they are
# passed through as-is, so the type stays an open string.
FinishReason = str
STOP: FinishReason = "stop"
LENGTH: FinishReason = "length"


class ChatMessage(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Role
    content: str


class LLMRequest(BaseModel):
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int = Field(default=1024, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    json_schema: dict[str, Any] | None = Field(
        default=None, description="ask for JSON output matching this JSON Schema"
    )
    grammar: str | None = Field(
        default=None,
        description="GBNF the answer must follow, sent to endpoints configured to take one "
        "(services.llm.structured.GrammarDialect); others read the answer as usual",
    )
    stop: list[str] = Field(default_factory=list)
    model: str | None = Field(default=None, description="overrides the provider's model")

    def last_user_message(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content
        return ""

    def prompt_text(self) -> str:
        return "\n".join(message.content for message in self.messages)


class Usage(BaseModel):
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    estimated: bool = Field(
        default=False, description="true when the provider reported no usage and it was counted"
    )


class LLMResponse(BaseModel):
    text: str
    finish_reason: FinishReason
    usage: Usage
    model: str
    latency_ms: float = Field(ge=0, description="wall time of the whole call, retries included")
    budget_wait_ms: float = Field(
        default=0.0, ge=0, description="of which waiting for the route's shared budget"
    )

    @property
    def truncated(self) -> bool:
        return self.finish_reason == LENGTH
