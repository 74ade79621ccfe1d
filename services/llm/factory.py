"""Build the configured provider. The integrator maps POSTEL_LLM_* settings onto
`LLMSettings`; nothing here reads the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from postel.services.llm.client import LLMClient
from postel.services.llm.gate import CallGate
from postel.services.llm.openai import OpenAIClient, OpenAIConfig
from postel.services.llm.recording import RecordingClient
from postel.services.llm.retry import RetryPolicy
from postel.services.llm.scripted import ScriptedClient
from postel.services.llm.structured import GrammarDialect, StructuredOutput
from postel.services.urls import check_model_url
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator


class LLMSettings(BaseModel):
    model_config = ConfigDict(frozen=True, hide_input_in_errors=True)

    provider: Literal["openai", "scripted"] = "openai"
    base_url: str | None = Field(default=None, description="API root with version, e.g. …/v1")
    api_key: SecretStr | None = None
    model: str = "default"
    timeout: float = Field(default=60.0, gt=0)
    connect_timeout: float = Field(default=5.0, gt=0)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    structured_output: StructuredOutput = "json_schema"
    grammar: GrammarDialect = "none"
    cassette: Path | None = Field(default=None, description="scripted: the cassette to replay")
    record: Path | None = Field(default=None, description="openai: write a cassette of the run")

    _model_url = field_validator("base_url")(check_model_url)

    @model_validator(mode="after")
    def _complete_for_provider(self) -> LLMSettings:
        if self.provider == "openai" and not self.base_url:
            raise ValueError("provider 'openai' needs base_url")
        if self.provider == "scripted" and self.cassette is None:
            raise ValueError("provider 'scripted' needs a cassette path")
        if self.provider == "scripted" and self.record is not None:
            raise ValueError("record wraps a real provider; it cannot record 'scripted'")
        return self


def build_llm_client(settings: LLMSettings, gate: CallGate | None = None) -> LLMClient:
    """The provider `settings` name; `gate` (the route's shared budget) guards an
    endpoint's calls."""
    if settings.provider == "scripted":
        assert settings.cassette is not None  # checked by LLMSettings
        return ScriptedClient.from_cassette(settings.cassette, model=settings.model)
    assert settings.base_url is not None  # checked by LLMSettings
    client: LLMClient = OpenAIClient(
        OpenAIConfig(
            base_url=settings.base_url,
            api_key=settings.api_key,
            model=settings.model,
            timeout=settings.timeout,
            connect_timeout=settings.connect_timeout,
            retry=settings.retry,
            structured_output=settings.structured_output,
            grammar=settings.grammar,
        ),
        gate,
    )
    if settings.record is not None:
        client = RecordingClient(client, settings.record)
    return client
