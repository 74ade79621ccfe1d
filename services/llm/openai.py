"""The `openai` provider: any OpenAI-compatible ``/chat/completions`` endpoint over httpx
(OpenAI, vLLM, Ollama, llama.cpp servers, LiteLLM).

Retries 429, 5xx, timeouts and unreachable servers with exponential backoff (a 429's
Retry-After wins: waited whole within the hop's budget, failing at once past it); any other
4xx fails at once with the server's message."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import structlog
from postel.services.llm.budget import remaining_budget
from postel.services.llm.call_log import count_failed_attempt
from postel.services.llm.errors import (
    LLMBadResponse,
    LLMConnectionError,
    LLMError,
    LLMRateLimited,
    LLMRequestRejected,
    LLMServerError,
    LLMTimeout,
)
from postel.services.llm.gate import CallGate
from postel.services.llm.models import LLMRequest, LLMResponse, Usage
from postel.services.llm.retry import RetryPolicy, parse_retry_after
from postel.services.llm.structured import (
    GrammarDialect,
    StructuredOutput,
    grammar_field,
    response_format,
)
from postel.services.llm.tokens import count_tokens
from postel.services.redact import Redactor
from postel.services.urls import check_model_url, join_url, shown_url, url_secrets
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

log = structlog.get_logger(__name__)

_EXCERPT = 500


class OpenAIConfig(BaseModel):
    model_config = ConfigDict(frozen=True, hide_input_in_errors=True)

    base_url: str = Field(
        description="API root including the version, e.g. https://api.openai.com/v1"
    )
    api_key: SecretStr | None = None
    model: str
    timeout: float = Field(
        default=60.0, gt=0, description="seconds per attempt for the whole answer"
    )
    connect_timeout: float = Field(default=5.0, gt=0)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    structured_output: StructuredOutput = Field(
        default="json_schema", description="response_format dialect; see services.llm.structured"
    )
    grammar: GrammarDialect = Field(
        default="none", description="how a request's grammar is sent; see services.llm.structured"
    )
    strict_schema: bool = True
    schema_name: str = "response"

    _model_url = field_validator("base_url")(check_model_url)


class OpenAIClient:
    def __init__(self, config: OpenAIConfig, gate: CallGate | None = None) -> None:
        """`gate`: the route's shared budget (services/llm/gate.py), asked before each
        attempt."""
        self._config = config
        self._gate = gate
        self._url = join_url(config.base_url, "chat/completions")
        # what errors and logs name: the URL without userinfo or query (services/urls.py)
        self._shown = shown_url(self._url)
        key = config.api_key.get_secret_value() if config.api_key is not None else ""
        # what the endpoint sends back is scrubbed of the key and the URL's secrets, as
        # written and base64-encoded, and of any Authorization value (services/redact.py)
        self._redact = Redactor([*url_secrets(self._url), key])
        headers = {"Accept": "application/json"}
        if config.api_key is not None:
            headers["Authorization"] = f"Bearer {config.api_key.get_secret_value()}"
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(config.timeout, connect=config.connect_timeout),
        )

    def __repr__(self) -> str:
        return f"OpenAIClient(url={self._shown!r}, model={self._config.model!r})"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        body = self._body(request)
        policy = self._config.retry
        started = time.perf_counter()
        failure: tuple[type[LLMError], str] = (LLMError, "no attempt made")
        estimated = count_tokens(request.prompt_text()) + request.max_tokens if self._gate else 0
        waited_s = 0.0
        for attempt in range(1, policy.max_attempts + 1):
            retry_after: str | None = None
            permit = await self._gate.acquire(estimated) if self._gate else None
            waited_s += permit.waited_s if permit else 0.0
            used = 0
            timeout = self._attempt_timeout(failure, attempt)
            try:
                async with asyncio.timeout(timeout):
                    response = await self._http.post(self._url, json=body)
            except (TimeoutError, httpx.TimeoutException):
                failure = (LLMTimeout, f"no answer within {timeout:g}s")
            except httpx.TransportError as exc:
                failure = (LLMConnectionError, self._scrub(f"{type(exc).__name__}: {exc}"))
            else:
                if response.is_success:
                    result = self._parse(request, response, started, waited_s)
                    used = result.usage.prompt_tokens + result.usage.completion_tokens
                    return result
                message = self._server_message(response)
                status = response.status_code
                if status == 429:
                    failure = (LLMRateLimited, f"HTTP 429: {message}")
                    retry_after = response.headers.get("retry-after")
                    if self._gate:
                        await self._gate.pause(parse_retry_after(retry_after) or 1.0)
                elif status >= 500:
                    failure = (LLMServerError, f"HTTP {status}: {message}")
                else:
                    count_failed_attempt()
                    raise LLMRequestRejected(
                        f"{self._shown} rejected the request (HTTP {status}): {message}",
                        status_code=status,
                        server_message=message,
                    )
            finally:
                # every attempt gives its permit back, whatever ended it (an unreadable
                # answer or a cancelled hop too), with the tokens it really used
                if self._gate and permit:
                    await self._gate.release(permit, used)
            count_failed_attempt()
            if attempt == policy.max_attempts:
                break
            left = remaining_budget()
            delay = policy.delay(attempt, retry_after, left)
            if left is not None and delay >= left:
                kind, detail = failure
                raise kind(
                    f"{self._shown} failed after {attempt} attempt(s): {detail}; the next try "
                    f"would start in {delay:.1f}s, after the hop's time budget "
                    f"({left:.1f}s left)"
                )
            log.warning(
                "llm.retry",
                url=self._shown,
                attempt=attempt,
                error=failure[0].__name__,
                detail=failure[1],
                delay_s=round(delay, 3),
            )
            await asyncio.sleep(delay)
        kind, detail = failure
        raise kind(f"{self._shown} failed after {policy.max_attempts} attempt(s): {detail}")

    def _attempt_timeout(self, failure: tuple[type[LLMError], str], attempt: int) -> float:
        """The configured per-attempt timeout, shortened to the hop's remaining budget."""
        left = remaining_budget()
        if left is None:
            return self._config.timeout
        if left <= 0:
            kind, detail = failure if attempt > 1 else (LLMTimeout, "no attempt made")
            raise kind(f"{self._shown}: the hop's time budget is spent ({detail})")
        return min(self._config.timeout, left)

    def _body(self, request: LLMRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model or self._config.model,
            "messages": [message.model_dump() for message in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.stop:
            body["stop"] = request.stop
        constrained = grammar_field(self._config.grammar, request.grammar)
        if constrained:
            body.update(constrained)
        elif request.json_schema is not None:
            fmt = response_format(
                self._config.structured_output,
                request.json_schema,
                name=self._config.schema_name,
                strict=self._config.strict_schema,
            )
            if fmt is not None:
                body["response_format"] = fmt
        return body

    def _parse(
        self, request: LLMRequest, response: httpx.Response, started: float, waited_s: float
    ) -> LLMResponse:
        try:
            data = response.json()
            choice = data["choices"][0]
            text = self._scrub(choice["message"].get("content") or "")
            finish_reason = choice.get("finish_reason") or "unknown"
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise LLMBadResponse(
                f"{self._shown} answered HTTP {response.status_code} without a chat completion "
                f"({type(exc).__name__}): {self._scrub(response.text)[:_EXCERPT]}"
            ) from None
        result = LLMResponse(
            text=text,
            finish_reason=finish_reason,
            usage=_usage(data.get("usage"), request, text),
            model=data.get("model") or request.model or self._config.model,
            latency_ms=(time.perf_counter() - started) * 1000,
            budget_wait_ms=waited_s * 1000,
        )
        log.debug(
            "llm.complete",
            model=result.model,
            finish_reason=result.finish_reason,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            latency_ms=round(result.latency_ms, 1),
        )
        return result

    def _server_message(self, response: httpx.Response) -> str:
        """The human part of an error body: OpenAI's {"error": {"message"}}, FastAPI's
        {"detail"}, or the raw text."""
        message: Any = None
        try:
            data = response.json()
        except ValueError:
            data = None
        if isinstance(data, dict):
            error = data.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            message = message or data.get("detail") or data.get("message")
        text = str(message) if message else response.text or response.reason_phrase
        return self._scrub(text)[:_EXCERPT]

    def _scrub(self, text: str) -> str:
        # Some servers echo the credential they refused (or the URL); it must not reach logs
        # or errors.
        return self._redact(text.replace(self._url, self._shown))


def _usage(raw: Any, request: LLMRequest, text: str) -> Usage:
    if isinstance(raw, dict):
        prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            return Usage(prompt_tokens=prompt, completion_tokens=completion)
    return Usage(
        prompt_tokens=count_tokens(request.prompt_text()),
        completion_tokens=count_tokens(text),
        estimated=True,
    )
