"""The Anthropic Messages API as a ModelClient.

The SDK's own retries are switched off (`max_retries=0`); this module retries 429,
529, other 5xx, 408 and connection failures itself, so waits are observable
(`on_retry`, `last_attempts`) and testable (injectable `sleep`). Every SDK exception
is converted into the `agents.errors` tree with `raise ... from exc`.

Conversion both ways lives in pure functions (`to_anthropic_params`,
`from_anthropic_message`) so it can be tested without a network.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anthropic

from agents.errors import AuthError, ConfigError, ModelResponseError, Overloaded, PromptTooLong
from agents.messages import Message, TextBlock, ToolUseBlock
from agents.ports import ModelRequest, ModelResponse, StopReason, Usage

__all__ = [
    "AnthropicModelClient",
    "CACHE_CONTROL",
    "RetryCallback",
    "from_anthropic_message",
    "parse_prompt_too_long",
    "to_anthropic_params",
]

CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}

RetryCallback = Callable[[int, int | None, float], None]
"""on_retry(attempt, status_code or None for connection errors, wait_s)."""

_RETRYABLE_4XX = frozenset({408, 429})
_PROMPT_TOO_LONG = re.compile(r"prompt is too long", re.IGNORECASE)
_TOKEN_COUNTS = re.compile(r"(\d[\d,]*)\s*tokens?\s*>\s*(\d[\d,]*)", re.IGNORECASE)
_KNOWN_STOP_REASONS: frozenset[str] = frozenset(
    {"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"}
)
_JITTER = 0.1  # backoff waits are stretched by up to 10%


# --------------------------------------------------------------------------- request


def _with_cache(block: dict[str, Any]) -> dict[str, Any]:
    return {**block, "cache_control": dict(CACHE_CONTROL)}


def _message_param(message: Message) -> dict[str, Any]:
    # A compaction marker is ours: the model is sent only the text it renders.
    return {"role": message.role, "content": [block.model_dump(exclude=_OURS) for block in message.content]}


_OURS = {"marker"}


def to_anthropic_params(request: ModelRequest, model: str) -> dict[str, Any]:
    """Keyword arguments for `messages.create`.

    Cache breakpoints go on the system block, the last tool schema and the last
    content block of the last message: the stable prefix plus the newest turn.
    """
    params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens}
    if request.system:
        params["system"] = [_with_cache({"type": "text", "text": request.system})]
    if request.tools:
        tools = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
        tools[-1] = _with_cache(tools[-1])
        params["tools"] = tools
    messages = [_message_param(m) for m in request.messages]
    if messages and messages[-1]["content"]:
        messages[-1]["content"][-1] = _with_cache(messages[-1]["content"][-1])
    params["messages"] = messages
    return params


# -------------------------------------------------------------------------- response


def _stop_reason(raw: str | None, content: tuple[TextBlock | ToolUseBlock, ...]) -> StopReason:
    if raw in _KNOWN_STOP_REASONS:
        return raw  # type: ignore[return-value]
    if raw == "model_context_window_exceeded":
        return "max_tokens"
    return "tool_use" if any(isinstance(b, ToolUseBlock) for b in content) else "end_turn"


def from_anthropic_message(message: Any) -> ModelResponse:
    """Our ModelResponse from an SDK `Message`. Non text/tool_use blocks are dropped."""
    blocks: list[TextBlock | ToolUseBlock] = []
    for block in message.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            blocks.append(TextBlock(text=block.text))
        elif kind == "tool_use":
            if not isinstance(block.input, dict):
                raise ModelResponseError(
                    f"tool_use {block.id} ({block.name}) input is not a JSON object: {block.input!r}"
                )
            blocks.append(ToolUseBlock(id=block.id, name=block.name, input=dict(block.input)))
    content = tuple(blocks)
    u = message.usage
    usage = Usage(
        input_tokens=getattr(u, "input_tokens", None) or 0,
        output_tokens=getattr(u, "output_tokens", None) or 0,
        cache_read_input_tokens=getattr(u, "cache_read_input_tokens", None) or 0,
        cache_creation_input_tokens=getattr(u, "cache_creation_input_tokens", None) or 0,
    )
    return ModelResponse(
        content=content,
        stop_reason=_stop_reason(message.stop_reason, content),
        usage=usage,
        model=message.model or "",
    )


# ---------------------------------------------------------------------------- errors


def parse_prompt_too_long(message: str) -> tuple[int | None, int | None]:
    """(actual, limit) from e.g. "prompt is too long: 210000 tokens > 200000 maximum"."""
    match = _TOKEN_COUNTS.search(message)
    if match is None:
        return None, None
    return int(match.group(1).replace(",", "")), int(match.group(2).replace(",", ""))


def _provider_message(exc: anthropic.APIStatusError) -> str:
    return exc.api_message or exc.message or f"HTTP {exc.status_code}"


def _describe(exc: anthropic.APIStatusError) -> str:
    kind = f" {exc.type}" if exc.type else ""
    return f"{exc.status_code}{kind}: {_provider_message(exc)}"


def _is_retryable(status: int) -> bool:
    return status in _RETRYABLE_4XX or status >= 500


def _retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait, from `retry-after-ms` or `retry-after`."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    return max(float(email.utils.mktime_tz(parsed)) - time.time(), 0.0)


# ---------------------------------------------------------------------------- client


class AnthropicModelClient:
    """ModelClient over `anthropic.AsyncAnthropic`, with our own retry policy."""

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        initial_backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        timeout_s: float = 600,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        on_retry: RetryCallback | None = None,
    ) -> None:
        self.model = model
        self.name = f"anthropic:{model}"
        key = api_key or os.environ.get("ANTHROPIC_API_KEY") or None
        if not key:
            raise ConfigError(
                f"{self.name} needs ANTHROPIC_API_KEY; set it or use a scripted:<file> model"
            )
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.max_retries = max(0, max_retries)
        self.initial_backoff_s = initial_backoff_s
        self.max_backoff_s = max_backoff_s
        self._sleep = sleep
        self._on_retry = on_retry
        self.last_attempts = 0
        """HTTP attempts made by the latest `create` call (1 = no retry)."""
        self._client = anthropic.AsyncAnthropic(
            api_key=key, base_url=self.base_url, max_retries=0, timeout=timeout_s
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> AnthropicModelClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def backoff_s(self, attempt: int, headers: Mapping[str, str] | None = None) -> float:
        """Wait before the retry that follows failed attempt number `attempt` (1-based)."""
        asked = _retry_after_s(headers) if headers is not None else None
        if asked is not None:
            return min(asked, self.max_backoff_s)
        base = self.initial_backoff_s * (2.0 ** (attempt - 1))
        return min(base * (1.0 + _JITTER * random.random()), self.max_backoff_s)

    async def create(self, request: ModelRequest) -> ModelResponse:
        params = to_anthropic_params(request, self.model)
        attempt = 0
        while True:
            attempt += 1
            self.last_attempts = attempt
            try:
                message = await self._client.messages.create(**params)
            except anthropic.APIStatusError as exc:
                self._raise_if_final(exc, attempt)
                status: int | None = exc.status_code
                wait = self.backoff_s(attempt, exc.response.headers)
            except anthropic.APIConnectionError as exc:
                if attempt > self.max_retries:
                    raise Overloaded(
                        f"{self.name}: cannot reach the API after {attempt} attempts: {exc.message}",
                        status_code=None,
                        attempts=attempt,
                    ) from exc
                status = None
                wait = self.backoff_s(attempt)
            except anthropic.AnthropicError as exc:
                raise ModelResponseError(f"{self.name}: {exc}") from exc
            else:
                return from_anthropic_message(message)
            if self._on_retry is not None:
                self._on_retry(attempt, status, wait)
            await self._sleep(wait)

    def _raise_if_final(self, exc: anthropic.APIStatusError, attempt: int) -> None:
        """Raise the converted error unless `exc` should be retried now."""
        status = exc.status_code
        if status in (401, 403):
            raise AuthError(f"{self.name}: credentials refused ({_describe(exc)})") from exc
        text = _provider_message(exc)
        if status == 413 or (status == 400 and _PROMPT_TOO_LONG.search(text)):
            actual, limit = parse_prompt_too_long(text)
            raise PromptTooLong(
                f"{self.name}: request too long ({_describe(exc)})",
                actual_tokens=actual,
                limit_tokens=limit,
            ) from exc
        if not _is_retryable(status):
            raise ModelResponseError(f"{self.name}: {_describe(exc)}") from exc
        if attempt > self.max_retries:
            raise Overloaded(
                f"{self.name}: still failing after {attempt} attempts ({_describe(exc)})",
                status_code=status,
                attempts=attempt,
            ) from exc
