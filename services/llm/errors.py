"""Errors of the LLM layer; every provider raises these and nothing else for call failures.

Messages name the endpoint, the status and the attempts made, never credentials."""

from __future__ import annotations

from postel.messages.errors import Unavailable


class LLMError(Unavailable):
    """Base of every LLM call failure."""


class LLMRateLimited(LLMError):
    """The server kept answering 429 until the attempts ran out."""


class LLMServerError(LLMError):
    """The server kept failing (5xx) until the attempts ran out."""


class LLMTimeout(LLMError):
    """The server did not answer within the timeout, on every attempt."""


class LLMConnectionError(LLMError):
    """The server could not be reached, on every attempt."""


class LLMRequestRejected(LLMError):
    """The server refused the request (4xx other than 429); retrying would not help."""

    def __init__(self, message: str, *, status_code: int, server_message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.server_message = server_message


class LLMBadResponse(LLMError):
    """The server answered 2xx with a body that is not a chat completion."""


class CassetteExhausted(LLMError):
    """A scripted provider has no unused cassette entry for a request."""
