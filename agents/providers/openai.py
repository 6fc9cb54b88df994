"""OpenAI Chat Completions as a ModelClient — OpenAI itself or any compatible server.

    openai:<model>      OPENAI_API_KEY, OPENAI_BASE_URL (or providers.openai.base_url)

With a base URL (vLLM, SGLang, llama.cpp's server, Ollama's /v1, a proxy) the key may
be absent; the SDK is then given a placeholder, as those servers expect. Without one the
client talks to api.openai.com and needs OPENAI_API_KEY.

Every call streams (`stream=True`, `stream_options.include_usage` unless
`providers.openai.stream_usage` is off), under the timeouts of
`agents.providers.streaming`. Retries: the SDK retries the request (408, 409, 429, 5xx,
connection errors, `retry-after` honoured); a stream that stalls, breaks, or carries an
`error` chunk after it began is retried here as a whole call. An `insufficient_quota`
429 is not transient and is reported as such.

The output limit goes as `max_completion_tokens` to OpenAI and as `max_tokens` to
other servers (which often know only that one); `providers.openai.max_tokens_param`
overrides. A context-length refusal in any of the known wordings (OpenAI, vLLM, SGLang,
llama.cpp) becomes PromptTooLong with the server's counts when it gives them. A 400
that names `stream_options` (a server older than the option) says how to stop sending
it (`providers.openai.stream_usage = false`); a 404 names the table's model the name
was likely meant to be.
Conversion both ways, and the servers' quirks, are in `agents.providers.openai_convert`.
"""

from __future__ import annotations

import re
from typing import Any

import openai

from agents.errors import (
    AuthError,
    ConfigError,
    ModelError,
    ModelResponseError,
    Overloaded,
    PromptTooLong,
)
from agents.ports import ModelRequest, ModelResponse
from agents.providers.base import ProviderContext
from agents.providers.openai_convert import OpenAIOptions, OpenAIReply, to_openai_params
from agents.providers.streaming import (
    StreamBroken,
    StreamedClient,
    not_found_hint,
)
from agents.settings import OpenAISettings, ProviderSettings

__all__ = ["OpenAIModelClient", "make_client", "parse_context_length"]

_PLACEHOLDER_KEY = "not-needed"  # local servers run without keys; the SDK insists on one
_CONTEXT_WORDS = re.compile(r"context length|context size|context window|maximum context|prompt is too long", re.I)
_COUNT_PATTERNS = (
    # OpenAI / vLLM: "maximum context length is 8192 tokens. However, you requested 9000 tokens"
    re.compile(
        r"maximum context length is (?P<limit>\d+) tokens.*?(?:resulted in|requested|has) (?P<actual>\d+)", re.I | re.S
    ),
    # SGLang: "The input (9000 tokens) is longer than the model's context length (8192 tokens)"
    re.compile(
        r"input \((?P<actual>\d+) tokens\) is longer than the model's context length \((?P<limit>\d+) tokens\)", re.I
    ),
    re.compile(r"(?P<actual>\d+) tokens?\s*>\s*(?P<limit>\d+)", re.I),
)


def make_client(name: str, context: ProviderContext) -> OpenAIModelClient:
    """The `openai:` provider factory."""
    return OpenAIModelClient(name, settings=context.settings)


def parse_context_length(message: str, body: Any = None) -> tuple[int | None, int | None]:
    """(actual, limit) tokens from a context-length refusal, when the server gave them."""
    if isinstance(body, dict) and isinstance(body.get("n_prompt_tokens"), int) and isinstance(body.get("n_ctx"), int):
        return body["n_prompt_tokens"], body["n_ctx"]  # llama.cpp
    for pattern in _COUNT_PATTERNS:
        match = pattern.search(message)
        if match:
            return int(match.group("actual")), int(match.group("limit"))
    return None, None


def _error_body(exc: openai.APIError) -> dict[str, Any]:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"]
    return body if isinstance(body, dict) else {}


def _error_text(exc: openai.APIError) -> str:
    message = _error_body(exc).get("message")
    return message if isinstance(message, str) and message else exc.message


def _is_context_length(exc: openai.APIStatusError) -> bool:
    error = _error_body(exc)
    if exc.status_code == 413 or error.get("code") == "context_length_exceeded":
        return True
    if error.get("type") == "exceed_context_size_error":
        return True
    return exc.status_code == 400 and bool(_CONTEXT_WORDS.search(_error_text(exc)))


def _refuses_stream_options(status: int, text: str, options: OpenAIOptions) -> bool:
    """A 400 (or a validating server's 422) that names the option Workingset sent for usage."""
    return options.stream_usage and status in (400, 422) and "stream_options" in text


def _options(settings: OpenAISettings, base_url: str | None) -> OpenAIOptions:
    param = settings.max_tokens_param
    if param == "auto":
        official = base_url is None or "api.openai.com" in base_url
        param = "max_completion_tokens" if official else "max_tokens"
    return OpenAIOptions(
        max_tokens_param=param, stream_usage=settings.stream_usage, reasoning_effort=settings.reasoning_effort
    )


class OpenAIModelClient(StreamedClient):
    """ModelClient over `openai.AsyncOpenAI` Chat Completions, streamed."""

    provider = "openai"
    _event_word = "chunk"
    _sdk = openai
    _sdk_client_class = openai.AsyncOpenAI
    _api_key_env = "OPENAI_API_KEY"
    _base_url_env = "OPENAI_BASE_URL"

    def _configured_base_url(self, settings: ProviderSettings) -> str | None:
        return settings.openai.base_url

    def _keyless(self) -> str:
        if self.base_url is None:
            raise ConfigError(
                f"{self.name} needs OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server); "
                "set it or use a scripted:<file> model"
            )
        return _PLACEHOLDER_KEY

    def _configure(self, settings: ProviderSettings) -> None:
        self.options = _options(settings.openai, self.base_url)

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        return to_openai_params(request, self.model, self.options)

    async def _stream_once(self, params: dict[str, Any], request: ModelRequest) -> ModelResponse:
        try:
            stream = await self._client.chat.completions.create(**params)
        except openai.APIStatusError as exc:
            raise self._final_error(exc) from exc
        except openai.APIConnectionError as exc:
            raise self._unreachable(exc) from exc
        except openai.OpenAIError as exc:
            raise ModelResponseError(f"{self.name}: {exc}") from exc
        reply = OpenAIReply()
        try:
            await self._drain(stream, reply)
        except openai.APIStatusError as exc:
            raise self._final_error(exc) from exc
        except openai.APIError as exc:  # an error chunk inside the 200 stream
            raise StreamBroken(f"the stream ended with an error: {_error_text(exc)}") from exc
        return reply.response(request)

    def _final_error(self, exc: openai.APIStatusError) -> ModelError:
        status = exc.status_code
        text = _error_text(exc)
        described = f"{status}: {text}"
        if status in (401, 403):
            return AuthError(f"{self.name}: credentials refused ({described})")
        if _is_context_length(exc):
            actual, limit = parse_context_length(text, _error_body(exc))
            return PromptTooLong(
                f"{self.name}: request too long ({described})", actual_tokens=actual, limit_tokens=limit
            )
        if _error_body(exc).get("code") == "insufficient_quota":
            return ModelResponseError(f"{self.name}: the account's quota is used up ({described})")
        if status in (408, 409, 429) or status >= 500:
            return Overloaded(
                f"{self.name}: still failing after {self._sent} attempts ({described})", status_code=status
            )
        if _refuses_stream_options(status, text, self.options):
            return ModelResponseError(
                f"{self.name}: {described}; this server does not take stream_options: set "
                "providers.openai.stream_usage = false (WORKINGSET_PROVIDERS__OPENAI__STREAM_USAGE"
                "=false) and usage is estimated instead"
            )
        return ModelResponseError(f"{self.name}: {described}{not_found_hint(status, self.name)}")
