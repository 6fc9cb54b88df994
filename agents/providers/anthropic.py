"""The Anthropic Messages API as a ModelClient: streamed, with extended thinking.

Every call streams (`messages.create(stream=True)`): no reply meets the SDK's
10-minute guard for long non-streamed requests, and the timeouts of
`agents.providers.streaming` apply (connect, idle between events, total).

Retries. The SDK's own machinery retries the request — 408, 409, 429, 5xx and 529,
connection errors — honouring `retry-after` (`providers.max_retries`). What stays
here, because the SDK cannot see it: a stream that stalls or breaks after the reply
began, or an `error` event inside the 200 stream (e.g. `overloaded_error`), is retried
as a whole call (`providers.stream_retries`), and the total deadline bounds it all.
`last_attempts` counts the HTTP requests of the latest call (an httpx event hook),
exact when calls of one client do not overlap.

Errors leave as the `agents.errors` tree, converted here with `raise ... from exc`:
401/403 AuthError (never retried), 413 or "prompt is too long" PromptTooLong (with the
provider's counts), retryable statuses after the retries Overloaded, any other
refusal ModelResponseError (a malformed stream too, see `agents.providers.streaming`).
A stream that carries no usage at all is estimated and marked so (`usage_reported`).

Conversion both ways lives in `agents.providers.anthropic_convert` (pure functions).
"""

from __future__ import annotations

import re
from typing import Any

import anthropic

from agents.errors import (
    AuthError,
    ConfigError,
    ModelError,
    ModelResponseError,
    Overloaded,
    PromptTooLong,
)
from agents.ports import ModelRequest, ModelResponse
from agents.providers.anthropic_convert import (
    CACHE_CONTROL,
    AnthropicReply,
    ThinkingOptions,
    parse_prompt_too_long,
    to_anthropic_params,
)
from agents.providers.base import ProviderContext
from agents.providers.streaming import (
    StreamBroken,
    StreamedClient,
    not_found_hint,
)
from agents.settings import AnthropicSettings, ProviderSettings

__all__ = [
    "AnthropicModelClient",
    "CACHE_CONTROL",
    "make_client",
    "parse_prompt_too_long",
    "to_anthropic_params",
]

_PROMPT_TOO_LONG = re.compile(r"prompt is too long", re.IGNORECASE)
_TRANSIENT_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})


def make_client(name: str, context: ProviderContext) -> AnthropicModelClient:
    """The `anthropic:` provider factory."""
    return AnthropicModelClient(name, settings=context.settings)


def _error_type(exc: anthropic.APIStatusError) -> str | None:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return error["type"]
    return None


def _provider_message(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
        if isinstance(message, str) and message:
            return message
    return exc.message or f"HTTP {exc.status_code}"


def _describe(exc: anthropic.APIStatusError) -> str:
    kind = _error_type(exc)
    return f"{exc.status_code}{' ' + kind if kind else ''}: {_provider_message(exc)}"


def _thinking_options(settings: AnthropicSettings) -> ThinkingOptions:
    return ThinkingOptions(
        mode=settings.thinking,
        budget_tokens=settings.thinking_budget_tokens,
        interleaved=settings.interleaved_thinking,
        effort=settings.effort,
    )


class AnthropicModelClient(StreamedClient):
    """ModelClient over `anthropic.AsyncAnthropic`, streamed."""

    provider = "anthropic"
    _sdk = anthropic
    _sdk_client_class = anthropic.AsyncAnthropic
    _api_key_env = "ANTHROPIC_API_KEY"
    _base_url_env = "ANTHROPIC_BASE_URL"

    def _configured_base_url(self, settings: ProviderSettings) -> str | None:
        return settings.anthropic.base_url

    def _keyless(self) -> str:
        raise ConfigError(f"{self.name} needs ANTHROPIC_API_KEY; set it or use a scripted:<file> model")

    def _configure(self, settings: ProviderSettings) -> None:
        self.thinking = _thinking_options(settings.anthropic)
        self.counts_tokens = settings.anthropic.count_tokens

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        return to_anthropic_params(request, self.model, self.thinking)

    async def count_tokens(self, request: ModelRequest) -> int | None:
        """The provider's count of the request's input tokens (no reply is made); None
        when the settings switch counting off."""
        if not self.counts_tokens:
            return None
        params = to_anthropic_params(request, self.model, self.thinking)
        for key in ("max_tokens", "output_config"):
            params.pop(key, None)
        try:
            counted = await self._client.messages.count_tokens(**params)
        except anthropic.APIStatusError as exc:
            raise self._final_error(exc) from exc
        except anthropic.AnthropicError as exc:
            raise ModelResponseError(f"{self.name}: token count failed: {exc}") from exc
        return counted.input_tokens

    async def _stream_once(self, params: dict[str, Any], request: ModelRequest) -> ModelResponse:
        try:
            stream = await self._client.messages.create(**params, stream=True)
        except anthropic.APIStatusError as exc:
            raise self._final_error(exc) from exc
        except anthropic.APIConnectionError as exc:
            raise self._unreachable(exc) from exc
        except anthropic.AnthropicError as exc:
            raise ModelResponseError(f"{self.name}: {exc}") from exc
        reply = AnthropicReply()
        try:
            await self._drain(stream, reply)
        except anthropic.APIStatusError as exc:  # an `error` event inside the stream
            if _error_type(exc) in _TRANSIENT_STREAM_ERRORS:
                raise StreamBroken(f"the stream ended with {_describe(exc)}") from exc
            raise self._final_error(exc) from exc
        return reply.response(request)

    def _final_error(self, exc: anthropic.APIStatusError) -> ModelError:
        status = exc.status_code
        if status in (401, 403):
            return AuthError(f"{self.name}: credentials refused ({_describe(exc)})")
        text = _provider_message(exc)
        if status == 413 or (status == 400 and _PROMPT_TOO_LONG.search(text)):
            actual, limit = parse_prompt_too_long(text)
            return PromptTooLong(
                f"{self.name}: request too long ({_describe(exc)})", actual_tokens=actual, limit_tokens=limit
            )
        if status in (408, 409, 429) or status >= 500:
            return Overloaded(
                f"{self.name}: still failing after {self._sent} attempts ({_describe(exc)})", status_code=status
            )
        return ModelResponseError(f"{self.name}: {_describe(exc)}{not_found_hint(status, self.name)}")
