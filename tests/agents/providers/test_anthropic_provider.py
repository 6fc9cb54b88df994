"""AnthropicModelClient through the real anthropic SDK, streamed over HTTP, against a
fake Messages API that checks what it receives as the real one does."""

from __future__ import annotations

import email.utils
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agents.errors import (
    AuthError,
    ConfigError,
    ModelResponseError,
    ModelTimeout,
    Overloaded,
    PromptTooLong,
)
from agents.messages import (
    ImageBlock,
    ImageSource,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from agents.ports import ModelClient, ModelRequest, TokenCountingClient, ToolSchema
from agents.providers import load_model_client
from agents.providers.anthropic import AnthropicModelClient, to_anthropic_params
from agents.providers.anthropic_convert import INTERLEAVED_THINKING_BETA, ThinkingOptions
from agents.providers.testing import StreamFault, error_body, sign
from agents.settings._config import AnthropicSettings, ProviderSettings

MODEL = "claude-test-1"
EPHEMERAL = {"type": "ephemeral"}
TOOLS = (
    ToolSchema(name="read", description="Read a file", input_schema={"type": "object"}),
    ToolSchema(name="bash", description="Run a command", input_schema={"type": "object"}),
)


def settings(**fields: Any) -> ProviderSettings:
    anthropic = fields.pop("anthropic", {})
    base = {"idle_timeout_s": 5.0, "total_timeout_s": 30.0, "max_retries": 2, "stream_retries": 2}
    return ProviderSettings(**{**base, **fields}, anthropic=AnthropicSettings(**anthropic))


@pytest.fixture
async def make_client(messages_server, sleeps) -> AsyncIterator[Callable[..., AnthropicModelClient]]:
    made: list[AnthropicModelClient] = []

    def make(**fields: Any) -> AnthropicModelClient:
        client = AnthropicModelClient(
            MODEL, api_key="test-key", base_url=messages_server.url, settings=settings(**fields), sleep=sleeps
        )
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


def simple_request(text: str = "hi", max_tokens: int = 64) -> ModelRequest:
    return ModelRequest(system="You are terse.", messages=(Message.user(text),), max_tokens=max_tokens)


def full_request(max_tokens: int = 256) -> ModelRequest:
    return ModelRequest(
        system="You are a coding agent.",
        tools=TOOLS,
        messages=(
            Message.user("list files"),
            Message.assistant(
                TextBlock(text="Running ls."), ToolUseBlock(id="toolu_1", name="bash", input={"command": "ls"})
            ),
            Message.tool_results([ToolResultBlock(tool_use_id="toolu_1", content="boom", is_error=True)]),
        ),
        max_tokens=max_tokens,
    )


def thinking_loop(first: ThinkingBlock | RedactedThinkingBlock | None) -> ModelRequest:
    """A tool loop waiting on the model: the last assistant message made a call, its result is in."""
    blocks = [b for b in (first, ToolUseBlock(id="toolu_7", name="read", input={"path": "a"})) if b is not None]
    return ModelRequest(
        system="s",
        tools=TOOLS,
        messages=(
            Message.user("go"),
            Message.assistant(*blocks),
            Message.tool_results([ToolResultBlock(tool_use_id="toolu_7", content="x")]),
        ),
        max_tokens=16_000,
    )


# ------------------------------------------------------------------------- basics


async def test_client_satisfies_the_ports_and_is_named_for_its_model(make_client):
    client = make_client()
    assert isinstance(client, ModelClient) and isinstance(client, TokenCountingClient)
    assert client.name == f"anthropic:{MODEL}"


async def test_every_call_is_streamed(make_client, messages_server):
    await make_client().create(simple_request())
    assert messages_server.bodies[0]["stream"] is True


async def test_streamed_text_reply_is_parsed_with_usage_including_cache_tokens(make_client, messages_server):
    usage = {"input_tokens": 12, "output_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 900}
    messages_server.push_text("hello there, in several pieces", usage=usage)
    response = await make_client().create(simple_request())
    assert response.content == (TextBlock(text="hello there, in several pieces"),)
    assert (response.stop_reason, response.model) == ("end_turn", MODEL)
    u = response.usage
    assert (u.input_tokens, u.output_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens) == (
        12,
        3,
        100,
        900,
    )


async def test_tool_use_input_arriving_in_pieces_is_parsed_once_complete(make_client, messages_server):
    messages_server.push_tool_use("bash", {"command": "ls -la /some/long/path"}, id="toolu_abc", text="Let me look.")
    response = await make_client().create(simple_request())
    assert response.stop_reason == "tool_use"
    assert response.content == (
        TextBlock(text="Let me look."),
        ToolUseBlock(id="toolu_abc", name="bash", input={"command": "ls -la /some/long/path"}),
    )


async def test_tool_input_cut_off_mid_json_is_kept_raw_not_a_crash(make_client, messages_server):
    cut = {"type": "tool_use", "id": "toolu_cut", "name": "bash", "partial_json": '{"command": "echo hel'}
    messages_server.push_content([cut], stop_reason="max_tokens")
    response = await make_client().create(simple_request())
    assert response.stop_reason == "max_tokens"
    assert response.content == (ToolUseBlock(id="toolu_cut", name="bash", raw_input='{"command": "echo hel'),)


async def test_api_key_and_base_url_come_from_the_environment(monkeypatch, messages_server):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-secret")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    client = load_model_client(f"anthropic:{MODEL}")
    try:
        await client.create(simple_request())
    finally:
        await client.aclose()
    headers = messages_server.requests[0].headers
    assert "env-secret" in (headers.get("x-api-key") or headers.get("authorization", ""))


def test_missing_api_key_is_a_config_error_naming_the_variable():
    with pytest.raises(ConfigError, match=r"anthropic:claude-test-1 needs ANTHROPIC_API_KEY"):
        AnthropicModelClient(MODEL)


async def test_count_tokens_asks_the_count_endpoint(make_client, messages_server):
    messages_server.token_counts.append(4321)
    assert await make_client().count_tokens(full_request()) == 4321
    request = messages_server.requests[0]
    assert request.path == "/v1/messages/count_tokens" and "max_tokens" not in request.body


# ------------------------------------------------------------------ what is sent


async def test_request_sent_over_http_has_three_cache_breakpoints_and_paired_tools(make_client, messages_server):
    await make_client().create(full_request())
    body = messages_server.bodies[0]
    assert body["system"][-1]["cache_control"] == EPHEMERAL
    assert body["tools"][-1]["cache_control"] == EPHEMERAL and "cache_control" not in body["tools"][0]
    assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
    assert messages_server.problems == []  # pairing, ≤ 4 breakpoints, no empty text: all as the API wants


def test_tool_result_keeps_is_error_and_tool_use_its_input():
    params = to_anthropic_params(full_request(), MODEL)
    assert params["messages"][2]["content"][0] == {
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


def test_conversion_does_not_mutate_the_request_and_omits_absent_tools():
    request = simple_request()
    params = to_anthropic_params(request, MODEL)
    assert request == simple_request() and "tools" not in params
    assert params["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": EPHEMERAL}]}
    ]


def test_empty_text_blocks_are_not_sent():
    request = ModelRequest(
        system="s",
        messages=(
            Message.user("go"),
            Message.assistant(TextBlock(text=""), ToolUseBlock(id="t1", name="read")),
            Message.tool_results([ToolResultBlock(tool_use_id="t1", content="x")]),
        ),
    )
    assistant = to_anthropic_params(request, MODEL)["messages"][1]
    assert [b["type"] for b in assistant["content"]] == ["tool_use"]


def test_a_tool_use_whose_arguments_did_not_parse_goes_back_with_an_empty_input():
    request = ModelRequest(
        system="s",
        messages=(
            Message.user("go"),
            Message.assistant(ToolUseBlock(id="t1", name="read", raw_input="{oops")),
            Message.tool_results([ToolResultBlock(tool_use_id="t1", content="bad", is_error=True)]),
        ),
    )
    assert to_anthropic_params(request, MODEL)["messages"][1]["content"][0]["input"] == {}


def test_images_go_as_base64_or_url_sources():
    request = ModelRequest(
        system="s",
        messages=(
            Message(
                role="user",
                content=(
                    TextBlock(text="what is this?"),
                    ImageBlock(source=ImageSource(media_type="image/png", data="iVBORw0KGgo=")),
                    ImageBlock(source=ImageSource(type="url", url="https://example.org/a.png")),
                ),
            ),
        ),
    )
    content = to_anthropic_params(request, MODEL)["messages"][0]["content"]
    assert content[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    assert content[2]["source"] == {"type": "url", "url": "https://example.org/a.png"}


# ------------------------------------------------------------------------ thinking


async def test_thinking_and_redacted_thinking_are_kept_with_their_signatures(make_client, messages_server):
    messages_server.push_content(
        [
            {"type": "thinking", "thinking": "Let me check the tests first."},
            {"type": "redacted_thinking", "data": "EncryptedBlob=="},
            {"type": "text", "text": "answer"},
        ]
    )
    response = await make_client(anthropic={"thinking": "enabled", "thinking_budget_tokens": 1024}).create(
        simple_request(max_tokens=4096)
    )
    assert response.content == (
        ThinkingBlock(thinking="Let me check the tests first.", signature=sign("Let me check the tests first.")),
        RedactedThinkingBlock(data="EncryptedBlob=="),
        TextBlock(text="answer"),
    )


async def test_thinking_is_sent_back_unchanged_with_tool_use_and_the_api_accepts_it(make_client, messages_server):
    client = make_client(anthropic={"thinking": "enabled", "thinking_budget_tokens": 2048})
    messages_server.push_content(
        [
            {"type": "thinking", "thinking": "Read a first."},
            {"type": "tool_use", "id": "toolu_9", "name": "read", "input": {"path": "a"}},
        ],
        stop_reason="tool_use",
    )
    first = await client.create(ModelRequest(system="s", tools=TOOLS, messages=(Message.user("go"),), max_tokens=8_000))
    conversation = (
        Message.user("go"),
        first.as_message(),
        Message.tool_results([ToolResultBlock(tool_use_id="toolu_9", content="a body")]),
    )
    await client.create(ModelRequest(system="s", tools=TOOLS, messages=conversation, max_tokens=8_000))
    sent = messages_server.bodies[1]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert sent["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "Read a first.",
        "signature": sign("Read a first."),
    }
    assert INTERLEAVED_THINKING_BETA in messages_server.requests[1].headers.get("anthropic-beta", "")
    assert messages_server.problems == []


async def test_a_tampered_signature_is_what_the_api_refuses(make_client, messages_server):
    client = make_client(anthropic={"thinking": "enabled", "thinking_budget_tokens": 2048})
    with pytest.raises(ModelResponseError, match="Invalid `signature`"):
        await client.create(thinking_loop(ThinkingBlock(thinking="edited", signature=sign("original"))))


async def test_thinking_is_left_off_for_a_tool_loop_whose_last_reply_had_none(make_client, messages_server):
    client = make_client(anthropic={"thinking": "enabled", "thinking_budget_tokens": 2048})
    await client.create(thinking_loop(None))
    assert "thinking" not in messages_server.bodies[0]
    assert messages_server.problems == []


def test_thinking_is_left_off_for_a_request_too_small_to_hold_its_budget():
    options = ThinkingOptions(mode="enabled", budget_tokens=2048)
    assert "thinking" not in to_anthropic_params(simple_request(max_tokens=1024), MODEL, options)


def test_unsigned_reasoning_from_another_provider_is_never_sent():
    request = thinking_loop(ThinkingBlock(thinking="from an open model"))
    for mode in ("off", "enabled"):
        assistant = to_anthropic_params(request, MODEL, ThinkingOptions(mode=mode, budget_tokens=2048))["messages"][1]
        assert [b["type"] for b in assistant["content"]] == ["tool_use"]


def test_adaptive_thinking_and_effort_are_sent_as_the_api_names_them():
    params = to_anthropic_params(simple_request(), MODEL, ThinkingOptions(mode="adaptive", effort="high"))
    assert params["thinking"] == {"type": "adaptive"} and params["output_config"] == {"effort": "high"}


def test_thinking_off_sends_no_thinking_blocks_at_all():
    request = thinking_loop(ThinkingBlock(thinking="t", signature=sign("t")))
    params = to_anthropic_params(request, MODEL)
    assert "thinking" not in params
    assert [b["type"] for b in params["messages"][1]["content"]] == ["tool_use"]


# -------------------------------------------------------------------- stop reasons


@pytest.mark.parametrize(
    "raw, ours",
    [
        ("end_turn", "end_turn"),
        ("stop_sequence", "stop_sequence"),
        ("max_tokens", "max_tokens"),
        ("pause_turn", "pause_turn"),
        ("refusal", "refusal"),
        ("model_context_window_exceeded", "max_tokens"),
    ],
)
async def test_every_stop_reason_comes_through(make_client, messages_server, raw, ours):
    messages_server.push_text("partial", stop_reason=raw)
    assert (await make_client().create(simple_request())).stop_reason == ours


async def test_a_refusal_carries_its_category_and_explanation(make_client, messages_server):
    details = {"type": "refusal", "category": "cyber", "explanation": "This could enable harm."}
    messages_server.push_text("Hello..", stop_reason="refusal", stop_details=details)
    response = await make_client().create(simple_request())
    assert response.stop_details == "cyber: This could enable harm."


# ----------------------------------------------------------- retries and failures


async def test_rate_limit_is_retried_by_the_sdk(make_client, messages_server):
    messages_server.push_rate_limit(retry_after_s=0.01)
    messages_server.push_text("after the wait")
    client = make_client()
    assert (await client.create(simple_request())).content == (TextBlock(text="after the wait"),)
    assert client.last_attempts == 2
    assert [r.headers.get("x-stainless-retry-count") for r in messages_server.requests] == ["0", "1"]


async def test_a_rate_limit_whose_retry_after_date_is_past_the_total_timeout_fails_at_once_naming_it(
    make_client, messages_server
):
    later = email.utils.formatdate(time.time() + 3600, usegmt=True)
    messages_server.push_error(429, "rate_limit_error", "Rate limited", headers={"retry-after": later})
    with pytest.raises(
        Overloaded,
        match=rf"{MODEL}: rate limited by anthropic: retry-after 3\d+ s exceeds "
        r"providers.total_timeout_s \(30 s",
    ) as info:
        await make_client().create(simple_request())
    assert info.value.status_code == 429 and len(messages_server.requests) == 1


async def test_a_stream_that_carries_no_usage_gets_an_estimate_marked_as_such(make_client, messages_server):
    messages_server.push_text("some reply", no_usage=True)
    response = await make_client().create(simple_request())
    assert not response.usage_reported and response.usage.input_tokens > 0 and response.usage.output_tokens > 0


async def test_overloaded_529_is_retried_then_succeeds(make_client, messages_server):
    messages_server.push_overloaded()
    messages_server.push_overloaded()
    messages_server.push_text("finally")
    client = make_client()
    assert (await client.create(simple_request())).content == (TextBlock(text="finally"),)
    assert client.last_attempts == 3


async def test_persistent_server_error_is_overloaded_after_the_sdk_retries(make_client, messages_server):
    for _ in range(5):
        messages_server.push_server_error()
    with pytest.raises(Overloaded) as info:
        await make_client(max_retries=2).create(simple_request())
    assert (info.value.status_code, info.value.attempts, len(messages_server.requests)) == (500, 3, 3)
    assert info.value.__cause__ is not None


async def test_unauthorized_is_an_auth_error_never_retried(make_client, messages_server):
    messages_server.push_auth_error()
    with pytest.raises(AuthError, match="invalid x-api-key"):
        await make_client().create(simple_request())
    assert len(messages_server.requests) == 1


async def test_prompt_too_long_carries_the_providers_counts(make_client, messages_server):
    messages_server.push_prompt_too_long(210_000, 200_000)
    with pytest.raises(PromptTooLong) as info:
        await make_client().create(simple_request())
    assert (info.value.actual_tokens, info.value.limit_tokens) == (210_000, 200_000)
    assert len(messages_server.requests) == 1


async def test_request_too_large_413_is_prompt_too_long(make_client, messages_server):
    messages_server.push_error(413, "request_too_large", "Request exceeds the maximum allowed size")
    with pytest.raises(PromptTooLong):
        await make_client().create(simple_request())


async def test_other_client_error_is_a_model_response_error_with_the_message(make_client, messages_server):
    messages_server.push_error(400, "invalid_request_error", "messages: roles must alternate")
    with pytest.raises(ModelResponseError, match="roles must alternate"):
        await make_client().create(simple_request())
    assert len(messages_server.requests) == 1


async def test_unreachable_server_is_overloaded_after_the_sdk_retries(sleeps):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = AnthropicModelClient(
        MODEL, api_key="k", base_url=f"http://127.0.0.1:{port}", settings=settings(max_retries=1)
    )
    try:
        with pytest.raises(Overloaded) as info:
            await client.create(simple_request())
    finally:
        await client.aclose()
    assert info.value.status_code is None and info.value.attempts == 2


async def test_a_stalled_stream_is_retried_as_a_transient_error(make_client, messages_server, sleeps):
    messages_server.push_text("never finishes", fault=StreamFault(after=3, stall_s=2.0))
    messages_server.push_text("second try")
    client = make_client(idle_timeout_s=0.3)
    assert (await client.create(simple_request())).content == (TextBlock(text="second try"),)
    assert len(sleeps.waits) == 1 and len(messages_server.requests) == 2


async def test_a_stream_that_keeps_stalling_is_overloaded_after_the_stream_retries(
    make_client, messages_server, sleeps
):
    for _ in range(3):
        messages_server.push_text("stall", fault=StreamFault(after=2, stall_s=2.0))
    with pytest.raises(Overloaded, match="stalled: no event for 0.3 s"):
        await make_client(idle_timeout_s=0.3, stream_retries=1).create(simple_request())
    assert len(messages_server.requests) == 2 and len(sleeps.waits) == 1


async def test_an_overloaded_error_event_inside_the_stream_is_retried(make_client, messages_server, sleeps):
    messages_server.push_text("half", fault=StreamFault(after=4, error=error_body("overloaded_error", "Overloaded")))
    messages_server.push_text("whole")
    assert (await make_client().create(simple_request())).content == (TextBlock(text="whole"),)
    assert len(sleeps.waits) == 1


async def test_an_invalid_request_error_event_inside_the_stream_is_not_retried(make_client, messages_server, sleeps):
    messages_server.push_text(
        "half", fault=StreamFault(after=4, error=error_body("invalid_request_error", "bad thing"))
    )
    with pytest.raises(ModelResponseError, match="bad thing"):
        await make_client().create(simple_request())
    assert sleeps.waits == []


async def test_a_dropped_connection_mid_stream_is_retried(make_client, messages_server, sleeps):
    messages_server.push_text("cut", fault=StreamFault(after=3, drop=True))
    messages_server.push_text("intact")
    assert (await make_client().create(simple_request())).content == (TextBlock(text="intact"),)


async def test_the_total_timeout_bounds_the_call_and_its_retries(make_client, messages_server):
    for _ in range(3):
        messages_server.push_text("slow", fault=StreamFault(after=2, stall_s=3.0))
    with pytest.raises(ModelTimeout, match="total_timeout_s"):
        await make_client(idle_timeout_s=2.0, total_timeout_s=0.5).create(simple_request())


def test_compaction_markers_are_ours_and_only_their_text_is_sent():
    from agents.messages import ClearedBody, SummaryBoundary

    boundary = SummaryBoundary(summarized=4)
    request = ModelRequest(
        system="s",
        messages=(
            Message(
                role="user", content=(TextBlock(text=boundary.render(), marker=boundary), TextBlock(text="summary"))
            ),
            Message.assistant(ToolUseBlock(id="t1", name="read")),
            Message.tool_results(
                [ToolResultBlock(tool_use_id="t1", content="[cleared]", marker=ClearedBody(original_chars=9))]
            ),
        ),
    )
    sent = to_anthropic_params(request, MODEL)["messages"]
    assert "marker" not in str(sent)
    assert sent[0]["content"][0] == {"type": "text", "text": boundary.render()}
