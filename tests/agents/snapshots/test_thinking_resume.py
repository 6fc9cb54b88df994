"""Thinking blocks survive the record: the msgpack codec, snapshots, and a resumed
session that sends them back to the provider with their signatures intact."""

from __future__ import annotations

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
from agents.opening._assembly import build_session
from agents.providers.testing import sign
from agents.settings._config import load_settings
from agents.snapshots._codec import decode_message, decode_messages, encode_message, encode_messages


def _every_block_kind() -> list[Message]:
    return [
        Message(
            role="user",
            content=(TextBlock(text="look"), ImageBlock(source=ImageSource(media_type="image/png", data="AAAA"))),
        ),
        Message.assistant(
            ThinkingBlock(thinking="plan", signature="sig-1"),
            RedactedThinkingBlock(data="opaque=="),
            TextBlock(text="reading"),
            ToolUseBlock(id="t1", name="Read", input={"path": "a"}),
            ToolUseBlock(id="t2", name="Read", raw_input='{"path": '),
        ),
        Message.tool_results(
            [
                ToolResultBlock(tool_use_id="t1", content="a"),
                ToolResultBlock(tool_use_id="t2", content="bad", is_error=True),
            ]
        ),
        Message.assistant(ThinkingBlock(thinking="unsigned, from an open model"), TextBlock(text="done")),
    ]


def test_every_block_kind_round_trips_through_msgpack_exactly():
    messages = _every_block_kind()
    assert decode_messages(encode_messages(messages)) == messages
    assert all(decode_message(encode_message(m)[1]) == m for m in messages)


def test_a_call_that_parsed_is_stored_without_a_raw_input_field():
    assert "raw_input" not in ToolUseBlock(id="t", name="Read", input={"a": 1}).model_dump()
    assert ToolUseBlock(id="t", name="Read", raw_input="x").model_dump()["raw_input"] == "x"


def _thinking_settings(tmp_path, messages_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    return load_settings(
        tmp_path,
        {
            "model": "anthropic:claude-sonnet-4-5",
            "agent": {"max_output_tokens": 4_096},
            "providers": {"anthropic": {"thinking": "enabled", "thinking_budget_tokens": 1_024}},
            "permissions": {"mode": "bypass"},
            "sandbox": {"enabled": False},
            "home": str(tmp_path / "home"),
        },
        home=tmp_path / "home",
    )


async def test_thinking_comes_back_from_a_snapshot_and_goes_back_signed(tmp_path, messages_server, monkeypatch):
    (tmp_path / "a.txt").write_text("alpha\n")
    settings = _thinking_settings(tmp_path, messages_server, monkeypatch)
    messages_server.push_content(
        [
            {"type": "thinking", "thinking": "Read a.txt first."},
            {"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"path": "a.txt"}},
        ],
        stop_reason="tool_use",
    )
    messages_server.push_content(
        [{"type": "redacted_thinking", "data": "Zm9v"}, {"type": "text", "text": "It says alpha."}]
    )
    session = build_session(settings, tmp_path)
    try:
        assert (await session.run_turn("what does a.txt say?")).reason == "end_turn"
    finally:
        await session.ports.model.aclose()
        await session.kit.judge.aclose()
    loaded = await session.ports.snapshots.aload(session.session_id)
    resumed = build_session(settings, tmp_path, session_id=session.session_id)
    resumed.restore(loaded.state)
    messages_server.push_text("Still alpha.")
    try:
        await resumed.run_turn("and now?")
    finally:
        await resumed.ports.model.aclose()
        await resumed.kit.judge.aclose()
    sent = messages_server.bodies[-1]["messages"]
    assert sent[1]["content"][0] == {
        "type": "thinking",
        "thinking": "Read a.txt first.",
        "signature": sign("Read a.txt first."),
    }
    assert sent[3]["content"][0] == {"type": "redacted_thinking", "data": "Zm9v"}
    assert messages_server.problems == []
