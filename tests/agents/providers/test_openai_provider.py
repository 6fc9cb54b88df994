"""OpenAIModelClient through the real openai SDK, streamed over HTTP, against a fake
OpenAI-compatible server that checks what it receives and plays the quirks of vLLM,
SGLang, llama.cpp and Ollama."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agents.errors import AuthError, ConfigError, ModelResponseError, Overloaded, PromptTooLong
from agents.messages import (
    ImageBlock,
    ImageSource,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from agents.ports import ModelClient, ModelRequest, ToolSchema
from agents.providers import load_model_client
from agents.providers.openai import OpenAIModelClient, parse_context_length
from agents.providers.openai_convert import OpenAIOptions, to_openai_params
from agents.providers.testing import Quirks, ScriptedCompletion, StreamFault, openai_error
from agents.settings._config import OpenAISettings, ProviderSettings

MODEL = "fake-model"
TOOLS = (
    ToolSchema(
        name="Read",
        description="Read a file",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    ),
    ToolSchema(name="Grep", description="Search", input_schema={"type": "object"}),
)


def settings(**fields: Any) -> ProviderSettings:
    openai = fields.pop("openai", {})
    base = {"idle_timeout_s": 5.0, "total_timeout_s": 30.0, "max_retries": 2, "stream_retries": 2}
    return ProviderSettings(**{**base, **fields}, openai=OpenAISettings(**openai))


@pytest.fixture
async def make_client(openai_server, sleeps) -> AsyncIterator[Callable[..., OpenAIModelClient]]:
    made: list[OpenAIModelClient] = []

    def make(**fields: Any) -> OpenAIModelClient:
        client = OpenAIModelClient(
            MODEL, api_key="k", base_url=f"{openai_server.url}/v1", settings=settings(**fields), sleep=sleeps
        )
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


def simple_request(text: str = "hi") -> ModelRequest:
    return ModelRequest(system="You are terse.", tools=TOOLS, messages=(Message.user(text),), max_tokens=64)


def tool_conversation() -> ModelRequest:
    return ModelRequest(
        system="s",
        tools=TOOLS,
        messages=(
            Message.user("find it"),
            Message.assistant(
                ThinkingBlock(thinking="I should search."),
                TextBlock(text="Searching."),
                ToolUseBlock(id="call_a", name="Grep", input={"pattern": "x"}),
                ToolUseBlock(id="call_b", name="Read", input={"path": "f.py"}),
            ),
            Message.tool_results(
                [
                    ToolResultBlock(tool_use_id="call_a", content="f.py:1: x"),
                    ToolResultBlock(tool_use_id="call_b", content="no such file", is_error=True),
                ]
            ),
        ),
        max_tokens=128,
    )


# ------------------------------------------------------------------------- basics


async def test_client_satisfies_the_port_and_is_named_for_its_model(make_client):
    client = make_client()
    assert isinstance(client, ModelClient) and client.name == f"openai:{MODEL}"


async def test_the_spec_reads_the_base_url_from_the_environment_and_needs_no_key_for_it(monkeypatch, openai_server):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{openai_server.url}/v1")
    client = load_model_client(f"openai:{MODEL}")
    try:
        response = await client.create(simple_request())
    finally:
        await client.aclose()
    assert response.content == (TextBlock(text="ok"),)
    assert openai_server.requests[0].path == "/v1/chat/completions"


def test_openai_itself_needs_a_key_and_says_which():
    with pytest.raises(ConfigError, match="openai:gpt-4o needs OPENAI_API_KEY"):
        load_model_client("openai:gpt-4o")


async def test_every_call_streams_and_asks_for_usage(make_client, openai_server):
    await make_client().create(simple_request())
    body = openai_server.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_a_server_that_refuses_stream_options_can_be_spared_them(make_client, openai_server):
    openai_server.refused_params = {"stream_options"}
    response = await make_client(openai={"stream_usage": False}).create(simple_request())
    assert "stream_options" not in openai_server.bodies[0] and response.content


async def test_a_refusal_of_stream_options_names_the_setting_that_stops_them(make_client, openai_server):
    openai_server.refused_params = {"stream_options"}
    with pytest.raises(ModelResponseError) as refused:
        await make_client().create(simple_request())
    message = str(refused.value)
    assert "400: Unrecognized request argument supplied: stream_options" in message
    assert "providers.openai.stream_usage = false" in message
    assert "WORKINGSET_PROVIDERS__OPENAI__STREAM_USAGE=false" in message


def test_the_output_limit_is_max_completion_tokens_for_openai_and_max_tokens_elsewhere():
    official = OpenAIModelClient("gpt-4o", api_key="k")
    local = OpenAIModelClient("qwen", api_key="k", base_url="http://127.0.0.1:9/v1")
    assert official.options.max_tokens_param == "max_completion_tokens"
    assert local.options.max_tokens_param == "max_tokens"
    params = to_openai_params(simple_request(), "m", local.options)
    assert params["max_tokens"] == 64 and "max_completion_tokens" not in params


# ------------------------------------------------------------------ what is sent


async def test_a_tool_loop_goes_over_as_paired_tool_calls_and_tool_messages(make_client, openai_server):
    await make_client().create(tool_conversation())
    messages = openai_server.bodies[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assistant = messages[2]
    assert assistant["content"] == "Searching."
    assert [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in assistant["tool_calls"]
    ] == [
        ("call_a", "Grep", {"pattern": "x"}),
        ("call_b", "Read", {"path": "f.py"}),
    ]
    assert [(m["tool_call_id"], m["content"]) for m in messages[3:]] == [
        ("call_a", "f.py:1: x"),
        ("call_b", "Error: no such file"),
    ]
    assert openai_server.problems == []


async def test_an_unanswered_tool_call_is_what_the_server_refuses(make_client, openai_server):
    bad = ModelRequest(
        system="s",
        messages=(Message.user("a"), Message.assistant(ToolUseBlock(id="call_z", name="Read")), Message.user("b")),
    )
    with pytest.raises(ModelResponseError, match="did not have response messages: call_z"):
        await make_client().create(bad)


def test_reasoning_is_never_sent_back():
    params = to_openai_params(tool_conversation(), "m")
    assert all("reasoning" not in json.dumps(m) for m in params["messages"][2:3])
    assert params["messages"][2]["content"] == "Searching."


def test_arguments_that_did_not_parse_go_back_exactly_as_the_model_sent_them():
    request = ModelRequest(
        system="s",
        messages=(
            Message.user("a"),
            Message.assistant(ToolUseBlock(id="c1", name="Read", raw_input='{"path": "a')),
            Message.tool_results([ToolResultBlock(tool_use_id="c1", content="bad json", is_error=True)]),
        ),
    )
    call = to_openai_params(request, "m")["messages"][2]["tool_calls"][0]
    assert call["function"]["arguments"] == '{"path": "a'


def test_images_in_a_user_message_become_image_url_parts():
    request = ModelRequest(
        system="",
        messages=(
            Message(
                role="user",
                content=(
                    TextBlock(text="what is this?"),
                    ImageBlock(source=ImageSource(media_type="image/png", data="AAAA")),
                ),
            ),
        ),
    )
    (user,) = to_openai_params(request, "m")["messages"]
    assert user["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]


def test_text_after_tool_results_in_one_message_follows_the_tool_messages():
    request = ModelRequest(
        system="",
        messages=(
            Message.user("a"),
            Message.assistant(ToolUseBlock(id="c1", name="Read")),
            Message(
                role="user", content=(ToolResultBlock(tool_use_id="c1", content="r"), TextBlock(text="and now this"))
            ),
        ),
    )
    roles = [m["role"] for m in to_openai_params(request, "m", OpenAIOptions())["messages"]]
    assert roles == ["user", "assistant", "tool", "user"]


# ------------------------------------------------------------------------ replies


async def test_parallel_tool_calls_in_pieces_are_assembled_in_order(make_client, openai_server):
    openai_server.push_tool_calls(
        [
            {"name": "Grep", "input": {"pattern": "def main"}, "id": "call_1"},
            {"name": "Read", "input": {"path": "src/app/main.py"}, "id": "call_2"},
        ],
        text="Looking.",
    )
    response = await make_client().create(simple_request())
    assert response.stop_reason == "tool_use"
    assert response.content == (
        TextBlock(text="Looking."),
        ToolUseBlock(id="call_1", name="Grep", input={"pattern": "def main"}),
        ToolUseBlock(id="call_2", name="Read", input={"path": "src/app/main.py"}),
    )


async def test_arguments_that_are_not_json_are_kept_raw_for_the_loop(make_client, openai_server):
    openai_server.push_tool_calls([{"name": "Read", "arguments": '{"path": "a.py"', "id": "call_x"}])
    (use,) = (await make_client().create(simple_request())).content
    assert use == ToolUseBlock(id="call_x", name="Read", raw_input='{"path": "a.py"')


async def test_missing_and_reused_tool_call_ids_are_replaced_by_unique_ones(make_client, openai_server):
    openai_server.push_tool_calls(
        [{"name": "Read", "input": {}}, {"name": "Grep", "input": {}}], quirks=Quirks(omit_tool_ids=True)
    )
    openai_server.push_tool_calls([{"name": "Read", "input": {}}], quirks=Quirks(reuse_tool_ids=True))
    client = make_client()
    first = await client.create(simple_request())
    earlier = ModelRequest(
        system="s",
        messages=(
            Message.user("a"),
            Message.assistant(ToolUseBlock(id="call_0", name="Read")),
            Message.tool_results([ToolResultBlock(tool_use_id="call_0", content="r")]),
        ),
    )
    second = await client.create(earlier)
    ids = [b.id for b in (*first.content, *second.content)]
    assert len(set(ids)) == 3 and "call_0" not in ids and all(ids)


async def test_tool_call_pieces_without_an_index_still_make_separate_calls(make_client, openai_server):
    openai_server.push_tool_calls(
        [{"name": "Read", "input": {"path": "a"}}, {"name": "Grep", "input": {"pattern": "b"}}],
        quirks=Quirks(no_index=True),
    )
    uses = (await make_client().create(simple_request())).content
    assert [(u.name, u.input) for u in uses] == [("Read", {"path": "a"}), ("Grep", {"pattern": "b"})]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_from_either_field_becomes_an_unsigned_thinking_block(make_client, openai_server, field):
    openai_server.push_text("42", reasoning="Six times seven.", quirks=Quirks(reasoning_field=field))
    response = await make_client().create(simple_request())
    assert response.content == (ThinkingBlock(thinking="Six times seven."), TextBlock(text="42"))


async def test_usage_maps_cached_and_reasoning_tokens(make_client, openai_server):
    openai_server.push_text(
        "x",
        usage={
            "prompt_tokens": 1000,
            "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 800},
            "completion_tokens_details": {"reasoning_tokens": 120},
        },
    )
    u = (await make_client().create(simple_request())).usage
    assert (u.input_tokens, u.cache_read_input_tokens, u.output_tokens, u.reasoning_tokens) == (200, 800, 300, 120)
    assert u.prompt_tokens == 1000


async def test_reasoning_tokens_are_estimated_when_the_server_streams_reasoning_but_does_not_count_it(
    make_client, openai_server
):
    openai_server.push_text("x", reasoning="r" * 400, usage={"prompt_tokens": 50, "completion_tokens": 150})
    assert (await make_client().create(simple_request())).usage.reasoning_tokens == 100


async def test_usage_on_the_last_choice_chunk_is_read(make_client, openai_server):
    openai_server.push_text("x", usage={"prompt_tokens": 77}, quirks=Quirks(usage="last_choice"))
    response = await make_client().create(simple_request())
    assert response.usage.input_tokens == 77 and response.usage_reported


async def test_a_server_that_sends_no_usage_gets_an_estimate_marked_as_such(make_client, openai_server):
    openai_server.push_text("some reply", quirks=Quirks(usage="none"))
    response = await make_client().create(simple_request())
    assert not response.usage_reported and response.usage.input_tokens > 0 and response.usage.output_tokens > 0


@pytest.mark.parametrize(
    "finish, calls, expected",
    [
        ("stop", False, "end_turn"),
        ("length", False, "max_tokens"),
        ("tool_calls", True, "tool_use"),
        ("content_filter", False, "refusal"),
        ("stop", True, "tool_use"),
    ],
)
async def test_finish_reasons_map_to_stop_reasons(make_client, openai_server, finish, calls, expected):
    tool_calls = [{"name": "Read", "input": {"path": "a"}}] if calls else []
    openai_server.push(ScriptedCompletion(text="t", tool_calls=tool_calls, finish_reason=finish))
    assert (await make_client().create(simple_request())).stop_reason == expected


async def test_a_refusal_text_is_a_refusal_with_its_words(make_client, openai_server):
    openai_server.push_text(None, refusal="I can't help with that.")
    response = await make_client().create(simple_request())
    assert (response.stop_reason, response.stop_details) == ("refusal", "I can't help with that.")


# ----------------------------------------------------------- errors and retries


async def test_a_wrong_key_is_an_auth_error_never_retried(make_client, openai_server):
    openai_server.push_error(401, "Incorrect API key provided", code="invalid_api_key")
    with pytest.raises(AuthError, match="Incorrect API key"):
        await make_client().create(simple_request())
    assert len(openai_server.requests) == 1


async def test_context_length_exceeded_is_prompt_too_long_with_the_counts(make_client, openai_server):
    openai_server.push_context_length(130_000, 128_000)
    with pytest.raises(PromptTooLong) as info:
        await make_client().create(simple_request())
    assert (info.value.actual_tokens, info.value.limit_tokens) == (130_000, 128_000)


async def test_a_llama_cpp_context_refusal_is_prompt_too_long(make_client, openai_server):
    body = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 9000,
            "n_ctx": 8192,
        }
    }
    openai_server.push_error(400, "", body=body)
    with pytest.raises(PromptTooLong) as info:
        await make_client().create(simple_request())
    assert (info.value.actual_tokens, info.value.limit_tokens) == (9000, 8192)


@pytest.mark.parametrize(
    "message, counts",
    [
        (
            "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, "
            "1000 in the completion). Please reduce the length of the messages or completion.",
            (5000, 4096),
        ),
        ("The input (9000 tokens) is longer than the model's context length (8192 tokens).", (9000, 8192)),
        ("prompt is too long", (None, None)),
    ],
)
def test_context_refusal_wordings_of_compatible_servers_are_read(message, counts):
    assert parse_context_length(message) == counts


async def test_a_rate_limit_is_retried_by_the_sdk(make_client, openai_server):
    openai_server.push_rate_limit()
    openai_server.push_text("after")
    client = make_client()
    assert (await client.create(simple_request())).content == (TextBlock(text="after"),)
    assert client.last_attempts == 2


async def test_a_rate_limit_asking_a_wait_past_the_total_timeout_fails_at_once_naming_it(make_client, openai_server):
    openai_server.push_rate_limit(3600, header="retry-after")
    with pytest.raises(
        Overloaded,
        match=rf"openai:{MODEL}: rate limited by openai: retry-after 3600 s exceeds "
        r"providers.total_timeout_s \(30 s",
    ) as info:
        await make_client().create(simple_request())
    assert info.value.status_code == 429 and len(openai_server.requests) == 1


async def test_a_chunk_whose_data_is_not_json_is_one_model_error_naming_the_provider(make_client, openai_server):
    openai_server.push_text("a reply in pieces", fault=StreamFault(after=2, malformed="{not json"))
    with pytest.raises(
        ModelResponseError,
        match=rf"openai:{MODEL}: the stream held a chunk whose data is not JSON .*"
        r"'\{not json'\); the reply was not used",
    ):  # noqa: RUF039
        await make_client().create(simple_request())
    assert len(openai_server.requests) == 1  # a garbled stream is not asked for again


async def test_quota_used_up_is_not_reported_as_overload(make_client, openai_server):
    for _ in range(3):
        openai_server.push_error(
            429,
            "You exceeded your current quota",
            type="insufficient_quota",
            code="insufficient_quota",
            headers={"retry-after-ms": "1"},
        )
    with pytest.raises(ModelResponseError, match="quota is used up"):
        await make_client().create(simple_request())


async def test_a_persistent_server_error_is_overloaded_after_the_retries(make_client, openai_server):
    for _ in range(4):
        openai_server.push_server_error()
    with pytest.raises(Overloaded) as info:
        await make_client(max_retries=1).create(simple_request())
    assert (info.value.status_code, info.value.attempts) == (500, 2)


async def test_a_stalled_stream_is_retried(make_client, openai_server, sleeps):
    openai_server.push_text("never ends", fault=StreamFault(after=2, stall_s=2.0))
    openai_server.push_text("fine")
    assert (await make_client(idle_timeout_s=0.3).create(simple_request())).content == (TextBlock(text="fine"),)
    assert len(sleeps.waits) == 1


async def test_an_error_chunk_inside_the_stream_is_retried(make_client, openai_server, sleeps):
    openai_server.push_text("half", fault=StreamFault(after=2, error=openai_error("worker died", type="server_error")))
    openai_server.push_text("whole")
    assert (await make_client().create(simple_request())).content == (TextBlock(text="whole"),)
    assert len(sleeps.waits) == 1


async def test_a_dropped_connection_mid_stream_is_retried(make_client, openai_server, sleeps):
    openai_server.push_text("cut", fault=StreamFault(after=2, drop=True))
    openai_server.push_text("intact")
    assert (await make_client().create(simple_request())).content == (TextBlock(text="intact"),)


def test_compaction_markers_are_ours_and_only_their_text_is_sent():
    from agents.messages import ClearedBody, SummaryBoundary

    boundary = SummaryBoundary(summarized=4)
    request = ModelRequest(
        system="s",
        messages=(
            Message(role="user", content=(TextBlock(text=boundary.render(), marker=boundary),)),
            Message.assistant(ToolUseBlock(id="t1", name="Read")),
            Message.tool_results(
                [ToolResultBlock(tool_use_id="t1", content="[cleared]", marker=ClearedBody(original_chars=9))]
            ),
        ),
    )
    sent = to_openai_params(request, "m")["messages"]
    assert "marker" not in str(sent) and sent[1]["content"] == boundary.render()


# ------------------------------------------------------------------ the whole run


def test_workingset_run_against_an_openai_compatible_server(tmp_path, monkeypatch, openai_server, capsys):
    from cluster.terminal._cli import main

    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{openai_server.url}/v1")
    monkeypatch.setenv("WORKINGSET_COMPACT__CONTEXT_WINDOW", "32768")
    openai_server.push_tool_calls([{"name": "Glob", "input": {"pattern": "*.py"}}], text="Looking.")
    openai_server.push_text("One file: a.py.")
    code = main(["run", "which files?", "--cwd", str(tmp_path), "--model", f"openai:{MODEL}", "--json"])
    assert code == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [e["name"] for e in events if e["type"] == "tool_call"] == ["Glob"]
    assert events[-1]["type"] == "session_ended" and events[-1]["reason"] == "end_turn"
    second = openai_server.bodies[1]["messages"]
    assert second[-1]["role"] == "tool" and "a.py" in second[-1]["content"] and openai_server.problems == []


def test_workingset_run_against_a_server_that_refuses_stream_options_ends_naming_the_setting(
    tmp_path, monkeypatch, openai_server, capsys
):
    from cluster.terminal._cli import main

    openai_server.refused_params = {"stream_options"}
    monkeypatch.setenv("OPENAI_BASE_URL", f"{openai_server.url}/v1")
    monkeypatch.setenv("WORKINGSET_COMPACT__CONTEXT_WINDOW", "32768")
    assert main(["run", "hi", "--cwd", str(tmp_path), "--model", f"openai:{MODEL}", "--json"]) == 1
    ended = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert ended["type"] == "session_ended" and ended["reason"] == "error"
    assert "stream_options" in ended["error"] and "WORKINGSET_PROVIDERS__OPENAI__STREAM_USAGE=false" in ended["error"]

    monkeypatch.setenv("WORKINGSET_PROVIDERS__OPENAI__STREAM_USAGE", "false")  # as the error says
    assert main(["run", "hi", "--cwd", str(tmp_path), "--model", f"openai:{MODEL}", "--json"]) == 0


def test_workingset_run_with_a_model_of_unknown_window_asks_for_it_in_one_line(
    tmp_path, monkeypatch, openai_server, capsys
):
    from cluster.terminal._cli import main

    monkeypatch.setenv("OPENAI_BASE_URL", f"{openai_server.url}/v1")
    assert main(["run", "hi", "--cwd", str(tmp_path), "--model", "openai:mystery"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "compact.context_window" in err and openai_server.requests == []
