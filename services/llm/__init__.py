"""The LLM layer: one async client interface, an OpenAI-compatible provider, a scripted
provider with record/replay, and a factory choosing between them."""

from postel.services.llm.cassette import CassetteEntry, load_cassette, save_cassette
from postel.services.llm.client import LLMClient
from postel.services.llm.errors import (
    CassetteExhausted,
    LLMBadResponse,
    LLMConnectionError,
    LLMError,
    LLMRateLimited,
    LLMRequestRejected,
    LLMServerError,
    LLMTimeout,
)
from postel.services.llm.factory import LLMSettings, build_llm_client
from postel.services.llm.metered import Meter, MeteredClient
from postel.services.llm.models import ChatMessage, LLMRequest, LLMResponse, Usage
from postel.services.llm.openai import OpenAIClient, OpenAIConfig
from postel.services.llm.recording import RecordingClient
from postel.services.llm.retry import RetryPolicy
from postel.services.llm.scripted import Responder, ScriptedClient
from postel.services.llm.structured import StructuredOutput

__all__ = [
    "CassetteEntry",
    "CassetteExhausted",
    "ChatMessage",
    "LLMBadResponse",
    "LLMClient",
    "LLMConnectionError",
    "LLMError",
    "LLMRateLimited",
    "LLMRequest",
    "LLMRequestRejected",
    "LLMResponse",
    "LLMServerError",
    "LLMSettings",
    "LLMTimeout",
    "Meter",
    "MeteredClient",
    "OpenAIClient",
    "OpenAIConfig",
    "RecordingClient",
    "Responder",
    "RetryPolicy",
    "ScriptedClient",
    "StructuredOutput",
    "Usage",
    "build_llm_client",
    "load_cassette",
    "save_cassette",
]
