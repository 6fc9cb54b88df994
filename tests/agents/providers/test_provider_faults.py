"""Every provider fault a clear outcome: `workingset run` against a real local Messages-API
server (agents.providers.testing) that misbehaves in each way a provider can. A fault
the retries ride out ends the run normally; one they cannot ends it with exit 1 and one
line naming the fault — never a traceback, never an empty "success". A stream that
carries no usage is estimated, never free."""

import json

import pytest

from agents.providers.testing import StreamFault
from cluster.terminal._cli import main

MODEL = "anthropic:claude-sonnet-4-5"


@pytest.fixture
def run(tmp_path, monkeypatch, messages_server, capsys):
    """Run one prompt against the fake server with small retry budgets; returns
    (exit code, the JSON events, stderr)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    for key, value in {
        "MAX_RETRIES": "1",
        "STREAM_RETRIES": "1",
        "IDLE_TIMEOUT_S": "1",
        "TOTAL_TIMEOUT_S": "4",
    }.items():
        monkeypatch.setenv(f"WORKINGSET_PROVIDERS__{key}", value)

    def go() -> tuple[int, list[dict], str]:
        code = main(["run", "hello", "--cwd", str(tmp_path), "--model", MODEL, "--json", "--local"])
        captured = capsys.readouterr()
        events = [json.loads(line) for line in captured.out.splitlines() if line.startswith("{")]
        assert "Traceback" not in captured.err
        return code, events, captured.err

    return go


def _sse(*events: dict) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


MESSAGE_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    },
}
UNOPENED_BLOCK = _sse(
    MESSAGE_START, {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}}
)
CUT_SHORT = _sse(
    MESSAGE_START,
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half a rep"}},
)


def _twice(push):
    def both(server):
        push(server)
        push(server)

    return both


RIDDEN_OUT = {
    "429 with retry-after": lambda s: s.push_rate_limit(retry_after_s=0.05),
    "529 overloaded": lambda s: s.push_overloaded(),
    "500 once": lambda s: s.push_server_error(),
    "dropped connection once": lambda s: s.push_text("cut", fault=StreamFault(after=3, drop=True)),
    "empty body once": lambda s: s.push_raw(""),
}


@pytest.mark.parametrize("fault", list(RIDDEN_OUT))
def test_a_transient_fault_is_retried_and_the_run_ends_normally(run, messages_server, fault):
    RIDDEN_OUT[fault](messages_server)
    messages_server.push_text("Hello back.")
    code, events, _ = run()
    assert code == 0 and events[-1]["reason"] == "end_turn" and events[-1]["final_text"] == "Hello back."


FATAL = {
    "5xx that persists": (_twice(lambda s: s.push_server_error()), "Overloaded", "still failing after 2 attempts"),
    "401": (lambda s: s.push_auth_error(), "AuthError", "credentials refused"),
    "hang past the timeout": (
        _twice(lambda s: s.push_text("slow", fault=StreamFault(after=2, stall_s=6.0))),
        "",
        "no event for 1 s",
    ),
    "dropped connection every time": (
        _twice(lambda s: s.push_text("cut", fault=StreamFault(after=3, drop=True))),
        "Overloaded",
        "the stream broke",
    ),
    "empty 200 body": (_twice(lambda s: s.push_raw("")), "Overloaded", "not a Messages API stream"),
    "HTML 200 body": (
        _twice(lambda s: s.push_raw("<html><body>502 Bad Gateway</body></html>", content_type="text/html")),
        "Overloaded",
        "not a Messages API stream",
    ),
    "JSON that is not a message": (
        _twice(lambda s: s.push_raw('{"hello": "world"}')),
        "Overloaded",
        "not a Messages API stream",
    ),
    "malformed event stream": (
        _twice(lambda s: s.push_raw("data: {broken\n\n", content_type="text/event-stream")),
        "Overloaded",
        "not a Messages API stream",
    ),
    "truncated stream": (
        _twice(lambda s: s.push_raw(CUT_SHORT, content_type="text/event-stream")),
        "Overloaded",
        "ended before the reply was complete",
    ),
    "an event whose data is not JSON": (
        lambda s: s.push_text("Hello there.", fault=StreamFault(after=4, malformed="{broken")),
        "ModelResponseError",
        "anthropic:claude-sonnet-4-5: the stream held an event whose "
        "data is not JSON (Expecting property name enclosed in double quotes at character 1: "
        "'{broken')",
    ),
    "an event that cannot be used": (
        lambda s: s.push_raw(UNOPENED_BLOCK, content_type="text/event-stream"),
        "ModelResponseError",
        "a content_block_delta event that cannot be used (KeyError: 3)",
    ),
    "429 whose retry-after outlasts the total timeout": (
        lambda s: s.push_rate_limit(3600, header="retry-after"),
        "Overloaded",
        "rate limited by anthropic: retry-after 3600 s exceeds providers.total_timeout_s (4 s",
    ),
}


@pytest.mark.parametrize("fault", list(FATAL))
def test_a_fault_the_retries_cannot_ride_out_ends_the_run_with_exit_1_and_names_it(run, messages_server, fault):
    push, kind, words = FATAL[fault]
    push(messages_server)
    code, events, _ = run()
    ended = events[-1]
    assert code == 1 and (ended["type"], ended["reason"]) == ("session_ended", "error")
    assert ended["error"].startswith(kind) and words in ended["error"]
    assert [e for e in events if e["type"] == "assistant_text"] == []  # never an empty "success"


def test_an_unknown_content_block_is_left_out_with_a_notice(run, messages_server):
    messages_server.push_content([{"type": "mystery_block", "payload": 1}, {"type": "text", "text": "Still answered."}])
    code, events, _ = run()
    assert code == 0 and events[-1]["final_text"] == "Still answered."
    notices = [e["text"] for e in events if e["type"] == "notice"]
    assert any("content blocks of a type this Workingset does not know (mystery_block)" in t for t in notices)


def test_a_stream_without_usage_is_estimated_so_a_token_budget_still_trips(run, messages_server, monkeypatch):
    monkeypatch.setenv("WORKINGSET_SUBAGENTS__TREE_MAX_TOKENS", "1000")  # less than one request's system prompt
    for n in range(3):
        messages_server.push_tool_use("Glob", {"pattern": f"*.{n}"}, no_usage=True)
    code, events, _ = run()
    calls = [e for e in events if e["type"] == "model_call"]
    assert events[-1]["reason"] == "budget" and len(calls) == 1
    assert calls[0]["usage"]["input_tokens"] > 1000 and calls[0]["usage"]["output_tokens"] > 0
