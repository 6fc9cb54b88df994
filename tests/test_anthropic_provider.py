"""AnthropicModelClient through the real anthropic SDK, over HTTP, against a fake server."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agents.errors import AuthError, ConfigError, ModelResponseError, Overloaded, PromptTooLong
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.ports import ModelClient, ModelRequest, ToolSchema
from agents.providers.anthropic import AnthropicModelClient, to_anthropic_params

MODEL = "claude-test-1"
EPHEMERAL = {"type": "ephemeral"}


class SleepRecorder:
    """A `sleep` that records the requested waits and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
async def make_client(messages_server, sleeps) -> AsyncIterator[Callable[..., AnthropicModelClient]]:
    made: list[AnthropicModelClient] = []

    def make(**kwargs: Any) -> AnthropicModelClient:
        kwargs.setdefault("api_key", "test-key")
        kwargs.setdefault("base_url", messages_server.url)
        kwargs.setdefault("sleep", sleeps)
        kwargs.setdefault("timeout_s", 5)
        client = AnthropicModelClient(MODEL, **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


def simple_request(text: str = "hi") -> ModelRequest:
    return ModelRequest(system="You are terse.", messages=(Message.user(text),), max_tokens=64)


def full_request() -> ModelRequest:
    return ModelRequest(
        system="You are a coding agent.",
        tools=(
            ToolSchema(name="read", description="Read a file", input_schema={"type": "object"}),
            ToolSchema(name="bash", description="Run a command", input_schema={"type": "object"}),
        ),
        messages=(
            Message.user("list files"),
            Message.assistant(
                TextBlock(text="Running ls."),
                ToolUseBlock(id="toolu_1", name="bash", input={"command": "ls"}),
            ),
            Message.tool_results([ToolResultBlock(tool_use_id="toolu_1", content="boom", is_error=True)]),
        ),
        max_tokens=256,
    )


def auth_header(headers: dict[str, str]) -> str:
    return headers.get("x-api-key") or headers.get("authorization", "")


async def test_client_satisfies_model_client_protocol_and_is_named_for_model(make_client):
    client = make_client()
    assert isinstance(client, ModelClient)
    assert client.name == f"anthropic:{MODEL}"


async def test_text_reply_is_parsed_with_usage_including_cache_tokens(make_client, messages_server):
    messages_server.push_text(
        "hello there",
        usage={
            "input_tokens": 12,
            "output_tokens": 3,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 900,
        },
    )
    response = await make_client().create(simple_request())
    assert response.content == (TextBlock(text="hello there"),)
    assert response.stop_reason == "end_turn"
    assert response.model == MODEL
    assert response.usage.input_tokens == 12
    assert response.usage.output_tokens == 3
    assert response.usage.cache_creation_input_tokens == 100
    assert response.usage.cache_read_input_tokens == 900
    assert len(messages_server.requests) == 1
    assert messages_server.requests[0].path == "/v1/messages"


async def test_tool_use_reply_is_parsed(make_client, messages_server):
    messages_server.push_tool_use("bash", {"command": "ls -la"}, id="toolu_abc", text="Let me look.")
    response = await make_client().create(simple_request())
    assert response.stop_reason == "tool_use"
    assert response.content == (
        TextBlock(text="Let me look."),
        ToolUseBlock(id="toolu_abc", name="bash", input={"command": "ls -la"}),
    )


async def test_thinking_blocks_are_ignored(make_client, messages_server):
    messages_server.push_content(
        [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "text", "text": "answer"},
        ]
    )
    response = await make_client().create(simple_request())
    assert response.content == (TextBlock(text="answer"),)


async def test_missing_cache_token_counts_become_zero(make_client, messages_server):
    messages_server.push_text(
        "x", usage={"cache_creation_input_tokens": None, "cache_read_input_tokens": None}
    )
    response = await make_client().create(simple_request())
    assert response.usage.cache_creation_input_tokens == 0
    assert response.usage.cache_read_input_tokens == 0


async def test_rate_limit_is_retried_and_wait_honours_retry_after(make_client, messages_server, sleeps):
    messages_server.push_rate_limit(retry_after_s=7)
    messages_server.push_text("after the wait")
    client = make_client(initial_backoff_s=0.5)
    response = await client.create(simple_request())
    assert response.content == (TextBlock(text="after the wait"),)
    assert sleeps.waits == [7.0]
    assert client.last_attempts == 2
    assert len(messages_server.requests) == 2


async def test_retry_after_ms_takes_precedence_over_retry_after(make_client, messages_server, sleeps):
    messages_server.push_error(
        429, "rate_limit_error", "slow", headers={"retry-after-ms": "1500", "retry-after": "9"}
    )
    await make_client().create(simple_request())
    assert sleeps.waits == [1.5]


async def test_retry_after_is_capped_at_max_backoff(make_client, messages_server, sleeps):
    messages_server.push_rate_limit(retry_after_s=120)
    await make_client(max_backoff_s=4).create(simple_request())
    assert sleeps.waits == [4.0]


async def test_overloaded_529_is_retried_then_succeeds(make_client, messages_server, sleeps):
    messages_server.push_overloaded()
    messages_server.push_overloaded()
    messages_server.push_text("finally")
    client = make_client(initial_backoff_s=1.0)
    response = await client.create(simple_request())
    assert response.content == (TextBlock(text="finally"),)
    assert client.last_attempts == 3
    assert len(sleeps.waits) == 2
    assert 1.0 <= sleeps.waits[0] <= 1.1
    assert 2.0 <= sleeps.waits[1] <= 2.2


async def test_persistent_server_error_raises_overloaded_after_max_retries(
    make_client, messages_server, sleeps
):
    for _ in range(10):
        messages_server.push_server_error()
    client = make_client(max_retries=3, initial_backoff_s=1.0, max_backoff_s=3.0)
    with pytest.raises(Overloaded) as info:
        await client.create(simple_request())
    assert info.value.status_code == 500
    assert info.value.attempts == 4
    assert client.last_attempts == 4
    assert len(messages_server.requests) == 4
    assert len(sleeps.waits) == 3
    assert all(w <= 3.0 for w in sleeps.waits)
    assert info.value.__cause__ is not None


async def test_on_retry_callback_receives_attempt_status_and_wait(make_client, messages_server):
    calls: list[tuple[int, int | None, float]] = []
    messages_server.push_rate_limit(retry_after_s=2)
    messages_server.push_overloaded()
    messages_server.push_text()
    client = make_client(initial_backoff_s=1.0, on_retry=lambda *args: calls.append(args))
    await client.create(simple_request())
    assert [(a, s) for a, s, _ in calls] == [(1, 429), (2, 529)]
    assert calls[0][2] == 2.0


async def test_unauthorized_raises_auth_error_without_retry(make_client, messages_server, sleeps):
    messages_server.push_auth_error()
    with pytest.raises(AuthError) as info:
        await make_client().create(simple_request())
    assert len(messages_server.requests) == 1
    assert sleeps.waits == []
    assert "invalid x-api-key" in str(info.value)


async def test_prompt_too_long_raises_with_parsed_token_counts(make_client, messages_server, sleeps):
    messages_server.push_prompt_too_long(210000, 200000)
    with pytest.raises(PromptTooLong) as info:
        await make_client().create(simple_request())
    assert info.value.actual_tokens == 210000
    assert info.value.limit_tokens == 200000
    assert len(messages_server.requests) == 1


async def test_request_too_large_413_raises_prompt_too_long(make_client, messages_server):
    messages_server.push_error(413, "request_too_large", "Request exceeds the maximum allowed size")
    with pytest.raises(PromptTooLong) as info:
        await make_client().create(simple_request())
    assert info.value.actual_tokens is None
    assert info.value.limit_tokens is None


async def test_other_client_error_raises_model_response_error_with_message(
    make_client, messages_server
):
    messages_server.push_error(400, "invalid_request_error", "messages: roles must alternate")
    with pytest.raises(ModelResponseError) as info:
        await make_client().create(simple_request())
    assert "roles must alternate" in str(info.value)
    assert len(messages_server.requests) == 1


async def test_unreachable_server_raises_overloaded_after_retries(sleeps):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = AnthropicModelClient(
        MODEL, api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=2, sleep=sleeps
    )
    try:
        with pytest.raises(Overloaded) as info:
            await client.create(simple_request())
    finally:
        await client.aclose()
    assert info.value.status_code is None
    assert info.value.attempts == 3
    assert len(sleeps.waits) == 2


def test_missing_api_key_raises_config_error():
    with pytest.raises(ConfigError, match=r"anthropic:claude-test-1 needs ANTHROPIC_API_KEY"):
        AnthropicModelClient(MODEL)


async def test_api_key_and_base_url_come_from_env(monkeypatch, messages_server):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-secret")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    client = AnthropicModelClient(MODEL)
    try:
        await client.create(simple_request())
    finally:
        await client.aclose()
    assert len(messages_server.requests) == 1
    assert "env-secret" in auth_header(messages_server.requests[0].headers)


async def test_request_body_sent_over_http_carries_cache_breakpoints(make_client, messages_server):
    await make_client().create(full_request())
    body = messages_server.requests[0].body
    assert body["model"] == MODEL
    assert body["max_tokens"] == 256
    assert body["system"][-1]["cache_control"] == EPHEMERAL
    assert body["tools"][-1]["cache_control"] == EPHEMERAL
    assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL


def test_conversion_puts_cache_control_on_system_last_tool_and_last_message_block():
    params = to_anthropic_params(full_request(), MODEL)
    assert params["system"] == [
        {"type": "text", "text": "You are a coding agent.", "cache_control": EPHEMERAL}
    ]
    assert [t["name"] for t in params["tools"]] == ["read", "bash"]
    assert "cache_control" not in params["tools"][0]
    assert params["tools"][1] == {
        "name": "bash",
        "description": "Run a command",
        "input_schema": {"type": "object"},
        "cache_control": EPHEMERAL,
    }
    cached = [
        (i, j)
        for i, m in enumerate(params["messages"])
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]
    assert cached == [(2, 0)]


def test_conversion_keeps_tool_result_is_error():
    params = to_anthropic_params(full_request(), MODEL)
    result = params["messages"][2]
    assert result["role"] == "user"
    assert result["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "boom",
        "is_error": True,
        "cache_control": EPHEMERAL,
    }
    assert params["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "bash",
        "input": {"command": "ls"},
    }


def test_conversion_does_not_mutate_the_request():
    request = full_request()
    to_anthropic_params(request, MODEL)
    assert request == full_request()


def test_conversion_without_tools_omits_tools_key():
    params = to_anthropic_params(simple_request(), MODEL)
    assert "tools" not in params
    assert params["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": EPHEMERAL}]}
    ]
