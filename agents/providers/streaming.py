"""Timeouts and retries around one streamed model call, shared by the real providers.

Three clocks (settings `providers.*`):
  connect   opening the connection (the SDK's HTTP timeout, `connect`)
  idle      the longest silence between two events of the stream; also the SDK's
            HTTP read timeout, so a server that never sends its headers is caught too
  total     the whole call, every retry included

Who retries what: the SDK retries the *request* (408/409/429/5xx and connection
errors before the reply starts, honouring `retry-after`), because it does that job
well. What it cannot see stays here: a stream that stalls or breaks after the reply
started, or an error event inside a 200 stream (Anthropic's `overloaded_error`).
Those raise `StreamBroken` in the provider and `call_with_retries` runs the whole
call again, at most `stream_retries` times, with backoff, inside the total deadline.

What is not retried, and is said as such: a stream whose event (chunk) data is not JSON,
or is an event the reply cannot use, is one ModelResponseError naming the provider and
what was malformed (the SDKs let `JSONDecodeError` through); a 429 whose `retry-after`
outlasts what is left of the total budget ends the call at once as Overloaded naming the
rate limit, instead of the SDK sleeping it out into a timeout that does not say why. A
request body the SDK cannot encode (text holding a surrogate that entered unescaped) is
sent once more with that text escaped (`tools.encodable`).
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import importlib
import json
import os
import random
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from agents.errors import ModelResponseError, ModelTimeout, Overloaded
from agents.ports import ModelRequest, ModelResponse
from agents.providers._catalog import nearest_known
from agents.redaction import remember
from agents.settings import ProviderSettings
from tools.encodable import encodable_value

__all__ = [
    "CallPolicy",
    "StallGuard",
    "StreamBroken",
    "StreamStalled",
    "StreamedClient",
    "StreamedReply",
    "call_with_retries",
    "not_found_hint",
    "retry_after_s",
    "transport_errors",
]

T = TypeVar("T")
_JITTER = 0.1


def not_found_hint(status: int, name: str) -> str:
    """After a 404 (the API serves no such model), the table's model `name` likely meant."""
    meant = nearest_known(name) if status == 404 else None
    return f"; unknown model? did you mean {meant}?" if meant else ""


@functools.cache
def transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's errors for a connection that broke while a body was read (the
    SDKs do not all wrap those raised mid-stream): httpx2 or httpx, whichever is present."""
    found = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


@functools.cache
def _tls_context(http_library: str) -> Any:
    """One TLS context per process for every client of `http_library` (httpx2 or httpx):
    making one loads the CA bundle, some 30 ms of CPU, and a batch makes a model client
    for every session and every subagent. A context is safe to share. None: the library
    cannot make one, so each client makes its own."""
    make = getattr(importlib.import_module(http_library), "create_ssl_context", None)
    return make() if make is not None else None


def _untrusted_certificate(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLCertVerificationError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def retry_after_s(headers: Any) -> float | None:
    """The wait a response asks for, in seconds, read as the SDKs read it: `retry-after-ms`,
    else `retry-after` as seconds or as an HTTP date; None when it asks for none."""
    try:
        return float(headers.get("retry-after-ms")) / 1000
    except (TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    when = email.utils.parsedate_tz(value)
    return None if when is None else email.utils.mktime_tz(when) - time.time()


class _GiveUp(BaseException):
    """Raised from the HTTP client's response hook to end a call the SDK would otherwise
    wait out; a BaseException so that the SDK's `except Exception` (which retries what it
    takes for a connection error) lets it through. Caught in `StreamedClient.create`."""


class StreamBroken(Exception):
    """A transient failure after the reply started; the call may run again."""


class StreamStalled(StreamBroken):
    def __init__(self, idle_s: float):
        super().__init__(f"the stream stalled: no event for {idle_s:g} s (providers.idle_timeout_s)")


@dataclass(frozen=True)
class CallPolicy:
    connect_timeout_s: float = 10.0
    idle_timeout_s: float = 120.0
    total_timeout_s: float = 1_800.0
    max_retries: int = 4
    stream_retries: int = 2
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 30.0

    @classmethod
    def from_settings(cls, settings: ProviderSettings) -> CallPolicy:
        return cls(
            connect_timeout_s=settings.connect_timeout_s,
            idle_timeout_s=settings.idle_timeout_s,
            total_timeout_s=settings.total_timeout_s,
            max_retries=settings.max_retries,
            stream_retries=settings.stream_retries,
        )

    def http_timeout(self) -> dict[str, float]:
        """Keyword arguments for the SDK's `Timeout`: connect, read = idle, and the rest."""
        return {
            "timeout": self.total_timeout_s,
            "connect": self.connect_timeout_s,
            "read": self.idle_timeout_s,
            "pool": self.connect_timeout_s,
        }

    def backoff_s(self, attempt: int) -> float:
        base = self.initial_backoff_s * (2.0 ** (attempt - 1))
        return min(base * (1.0 + _JITTER * random.random()), self.max_backoff_s)


class StallGuard:
    """Cancels the task that reads a stream when `touch()` was not called for `idle_s`,
    and turns that into StreamStalled. One timer per silence, not one per event: an
    event costs a clock read."""

    def __init__(self, idle_s: float):
        self.idle_s = idle_s
        self.stalled = False

    async def __aenter__(self) -> StallGuard:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._last = self._loop.time()
        self._handle = self._loop.call_at(self._last + self.idle_s, self._check)
        return self

    def touch(self) -> None:
        self._last = self._loop.time()

    def _check(self) -> None:
        due = self._last + self.idle_s
        if self._loop.time() >= due:
            self.stalled = True
            self._task.cancel()
        else:
            self._handle = self._loop.call_at(due, self._check)

    async def __aexit__(self, exc_type, exc, tb) -> None:
        self._handle.cancel()
        if self.stalled and exc_type is asyncio.CancelledError and self._task.uncancel() == 0:
            raise StreamStalled(self.idle_s) from None


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: CallPolicy,
    name: str,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    on_retry: Callable[[int, str, float], object] | None = None,
) -> T:
    """Run `attempt` until it returns, retrying StreamBroken; the total deadline bounds all."""
    deadline = asyncio.timeout(policy.total_timeout_s)
    try:
        async with deadline:
            made = 0
            while True:
                made += 1
                try:
                    return await attempt()
                except StreamBroken as exc:
                    if made > policy.stream_retries:
                        raise Overloaded(
                            f"{name}: {exc}; still so after {made} attempts", status_code=None, attempts=made
                        ) from exc
                    wait = policy.backoff_s(made)
                    if on_retry is not None:
                        on_retry(made, str(exc), wait)
                    await sleep(wait)
    except TimeoutError as exc:
        if not deadline.expired():
            raise
        raise ModelTimeout(
            f"{name}: no complete reply within {policy.total_timeout_s:g} s (providers.total_timeout_s)"
        ) from exc


class StreamedReply(Protocol):
    """What a provider assembles a reply in, one stream event at a time."""

    def feed(self, event: Any) -> None: ...

    def missing(self) -> str | None: ...


class StreamedClient:
    """What the real providers share: the client's settings (model, name, base URL and
    API key from arguments, settings or the environment, the call policy), one SDK
    client (`_client`, made with `_event_hooks()` so every HTTP request is counted),
    `create` as one streamed attempt (`_stream_once`, given the request `_params`
    built) under `call_with_retries`, a stream read under the idle clock (`_drain`),
    and closing. `last_attempts` is exact when calls of one client do not overlap.

    A provider names itself (`provider`), its SDK (`_sdk`, `_sdk_client_class`) and
    its environment variables, and says where its base URL is set
    (`_configured_base_url`), what a missing key means (`_keyless`) and what else it
    reads from the settings (`_configure`)."""

    provider: str
    _event_word = "event"  # what one item of the provider's stream is called
    _sdk: Any
    _sdk_client_class: Any
    _api_key_env: str
    _base_url_env: str
    name: str
    policy: CallPolicy
    _client: Any

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        settings: ProviderSettings | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        settings = settings or ProviderSettings()
        self.model = model
        self.name = f"{self.provider}:{model}"
        self.base_url = base_url or self._configured_base_url(settings) or os.environ.get(self._base_url_env) or None
        given = api_key or os.environ.get(self._api_key_env)
        remember(given)  # an error body that echoes it is redacted (agents.redaction)
        key = given or self._keyless()
        self.policy = CallPolicy.from_settings(settings)
        self._sleep = sleep
        self._sent = 0
        self._deadline: float | None = None  # loop time at which the current call's total budget ends
        self.last_attempts = 0
        """HTTP requests made by the latest `create` call (1 = no retry)."""
        self._configure(settings)
        self._client = self._sdk_client(api_key=key, base_url=self.base_url)

    def _configured_base_url(self, settings: ProviderSettings) -> str | None:
        raise NotImplementedError

    def _keyless(self) -> str:
        """The key to use when none is given; raises ConfigError where one is needed."""
        raise NotImplementedError

    def _configure(self, settings: ProviderSettings) -> None:
        """Read the provider's own settings (called before the SDK client is made)."""

    def _sdk_client(self, **kwargs: Any) -> Any:
        """The SDK's async client with our timeouts, its own retries, and counted requests."""
        timeout = self._sdk.Timeout(**self.policy.http_timeout())
        client_class = self._sdk.DefaultAsyncHttpxClient
        tls = _tls_context(client_class.__mro__[1].__module__.partition(".")[0])
        shared = {"verify": tls} if tls is not None else {}
        hooks = {"request": [self._count_request], "response": [self._watch_rate_limit]}
        http = client_class(timeout=timeout, event_hooks=hooks, **shared)
        return self._sdk_client_class(max_retries=self.policy.max_retries, timeout=timeout, http_client=http, **kwargs)

    async def _count_request(self, request: Any) -> None:
        self._sent += 1

    async def _watch_rate_limit(self, response: Any) -> None:
        """A 429 whose `retry-after` outlasts what is left of the total budget: the SDK would
        sleep it out and the call end as a timeout that never says why. Give up at once,
        naming the rate limit."""
        if response.status_code != 429 or self._deadline is None:
            return
        wait = retry_after_s(response.headers)
        left = self._deadline - asyncio.get_running_loop().time()
        if wait is None or wait <= left:
            return
        raise _GiveUp(
            f"{self.name}: rate limited by {self.provider}: retry-after {wait:.0f} s exceeds providers.total_timeout_s "
            f"({self.policy.total_timeout_s:g} s, {max(left, 0):.0f} s of it left); wait and run again, or raise "
            "providers.total_timeout_s"
        )

    def _unreachable(self, exc: BaseException) -> Overloaded:
        """No connection after every retry; a certificate nobody here vouches for is said
        so, since the SDKs' own words for it are only "Connection error"."""
        where = self.base_url or "the API"
        untrusted = _untrusted_certificate(exc)
        if untrusted is not None:
            return Overloaded(
                f"{self.name}: cannot reach {where}: its TLS certificate is not trusted "
                f"({untrusted.verify_message or untrusted}); if a proxy or private CA signs it, put "
                "that CA's bundle in SSL_CERT_FILE",
                status_code=None,
            )
        message = getattr(exc, "message", None) or str(exc)
        return Overloaded(f"{self.name}: cannot reach {where} after {self._sent} attempts: {message}", status_code=None)

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    async def _stream_once(self, params: dict[str, Any], request: ModelRequest) -> ModelResponse:
        raise NotImplementedError

    async def create(self, request: ModelRequest) -> ModelResponse:
        params = self._params(request)
        before = self._sent
        self._deadline = asyncio.get_running_loop().time() + self.policy.total_timeout_s

        async def attempt() -> ModelResponse:
            nonlocal params
            try:
                return await self._stream_once(params, request)
            except UnicodeEncodeError:
                # The SDK could not encode the body: text that entered without being made
                # encodable (a system prompt naming a path that is not UTF-8). Send it
                # escaped rather than fail every request from now on.
                params = encodable_value(params)
                return await self._stream_once(params, request)

        try:
            return await call_with_retries(attempt, policy=self.policy, name=self.name, sleep=self._sleep)
        except Overloaded as exc:
            exc.attempts = self._sent - before
            raise
        except _GiveUp as exc:
            raise Overloaded(str(exc), status_code=429, attempts=self._sent - before) from None
        finally:
            self.last_attempts = self._sent - before

    async def _drain(self, stream: Any, reply: StreamedReply) -> None:
        """Feed every event of `stream` to `reply` under the idle clock, and close the
        stream whatever happens. A connection that breaks mid-stream, and a reply that
        ends incomplete (an empty, HTML or cut-short 200 body is no reply: never an
        empty success), are StreamBroken; the SDK's other errors pass through."""
        try:
            async with StallGuard(self.policy.idle_timeout_s) as guard:
                async for event in stream:
                    guard.touch()
                    try:
                        reply.feed(event)
                    except (KeyError, IndexError, AttributeError, TypeError, ValueError) as exc:
                        kind = getattr(event, "type", None) or type(event).__name__
                        raise self._malformed(
                            f"a {kind} {self._event_word} that cannot be used ({type(exc).__name__}: {exc})"
                        ) from exc
        except self._sdk.APIConnectionError as exc:
            raise StreamBroken(f"the stream broke: {exc.message}") from exc
        except transport_errors() as exc:
            raise StreamBroken(f"the stream broke: {type(exc).__name__}: {exc}") from exc
        except json.JSONDecodeError as exc:  # the SDK decodes each event's data and lets this through
            article = "an" if self._event_word[0] in "aeiou" else "a"
            raise self._malformed(
                f"{article} {self._event_word} whose data is not JSON ({exc.msg} at character {exc.pos}: "
                f"{exc.doc[:80]!r})"
            ) from exc
        finally:
            await stream.close()
        missing = reply.missing()
        if missing is not None:
            raise StreamBroken(missing)

    def _malformed(self, what: str) -> ModelResponseError:
        # Not retried: a server or proxy that garbles its stream does so again.
        return ModelResponseError(f"{self.name}: the stream held {what}; the reply was not used")

    async def aclose(self) -> None:
        await self._client.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
