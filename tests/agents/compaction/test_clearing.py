"""Deterministic clearing of old tool results: what is protected, what is rewritten."""

from agents.compaction.clearing import clear_old_tool_results, is_cleared
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.snapshots._codec import encode_messages
from tests.support.builders import result_bodies


def _command_use(i: str, name: str = "Bash") -> ToolUseBlock:
    return ToolUseBlock(id=i, name=name, input={"command": f"run {i}", "nested": {"n": [1, 2]}})


def _result(i: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=i, content=f"output of {i}\n" * 40)


def _pair(i: str, name: str = "Bash") -> list[Message]:
    return [
        Message.assistant(TextBlock(text=f"calling {i}"), _command_use(i, name)),
        Message.tool_results([_result(i)]),
    ]


def _conversation(n_pairs: int, names: list[str] | None = None) -> list[Message]:
    messages = [Message.user("please fix the bug")]
    for k in range(n_pairs):
        messages += _pair(f"t{k}", names[k] if names else "Bash")
    messages.append(Message.assistant(TextBlock(text="all done")))
    return messages


def _cleared_ids(messages: list[Message]) -> set[str]:
    return {b.tool_use_id for m in messages for b in m.tool_results_in if is_cleared(b)}


def test_message_window_protects_results_outside_the_last_k_interactions():
    messages = _conversation(6)  # 14 messages: user, 6 pairs, final assistant
    out = clear_old_tool_results(messages, keep_recent_messages=5, keep_recent_tool_uses=1)
    # Last 5 messages hold results t4 (index 10) and t5 (index 12); only t5 is a "last K" interaction.
    assert _cleared_ids(out.messages) == {"t0", "t1", "t2", "t3"}
    assert result_bodies(out.messages)["t4"] == _result("t4").content


def test_tool_window_protects_the_last_k_interactions_outside_the_message_window():
    messages = _conversation(6)
    out = clear_old_tool_results(messages, keep_recent_messages=1, keep_recent_tool_uses=3)
    assert _cleared_ids(out.messages) == {"t0", "t1", "t2"}
    assert {c.tool_use_id for c in out.cleared} == {"t0", "t1", "t2"}


def test_tool_window_larger_than_the_history_protects_every_interaction():
    messages = _conversation(2)
    out = clear_old_tool_results(messages, keep_recent_messages=1, keep_recent_tool_uses=3)
    assert out.cleared == []
    assert _cleared_ids(out.messages) == set()


def test_parallel_batch_is_cleared_per_result():
    batch = [
        Message.user("look at three files"),
        Message.assistant(_command_use("a", "Read"), _command_use("b", "Read"), _command_use("c", "Read")),
        Message.tool_results([_result("a"), _result("b"), _result("c")]),
    ]
    messages = batch + _pair("d") + [Message.assistant(TextBlock(text="done"))]
    out = clear_old_tool_results(messages, keep_recent_messages=1, keep_recent_tool_uses=2)
    # The last two interactions (by use order) are "c" and "d".
    assert _cleared_ids(out.messages) == {"a", "b"}
    batch_results = out.messages[2].tool_results_in
    assert [b.tool_use_id for b in batch_results] == ["a", "b", "c"]
    assert batch_results[2].content == _result("c").content


def test_user_text_assistant_text_and_tool_uses_are_never_rewritten():
    messages = _conversation(4)
    mixed = Message(role="user", content=(_result("t0"), TextBlock(text="and also check the docs")))
    messages[2] = mixed
    out = clear_old_tool_results(messages, keep_recent_messages=1, keep_recent_tool_uses=0)
    assert len(out.cleared) == 4
    for before, after in zip(messages, out.messages, strict=True):
        assert before.role == after.role
        assert [b for b in before.content if not isinstance(b, ToolResultBlock)] == [
            b for b in after.content if not isinstance(b, ToolResultBlock)
        ]
    assert out.messages[2].text == "and also check the docs"
    assert out.messages[1].tool_uses == [_command_use("t0")]


def test_unchanged_messages_keep_identity_and_the_recent_tail_is_byte_identical():
    messages = _conversation(8)
    out = clear_old_tool_results(messages, keep_recent_messages=6, keep_recent_tool_uses=1)
    assert out.cleared
    changed = {i for i, (a, b) in enumerate(zip(messages, out.messages, strict=True)) if a is not b}
    assert changed == {i for i, m in enumerate(messages) if m.tool_results_in and i < len(messages) - 6}
    assert all(a is b for a, b in zip(messages[-6:], out.messages[-6:], strict=True))
    assert encode_messages(out.messages[-6:]) == encode_messages(messages[-6:])


def test_orphan_results_and_unanswered_uses_are_left_alone():
    messages = [
        Message.user("start"),
        Message.tool_results([ToolResultBlock(tool_use_id="orphan", content="no use for me " * 20)]),
        *_pair("t0"),
        *_pair("t1"),
        Message.assistant(TextBlock(text="one more"), _command_use("pending")),
    ]
    out = clear_old_tool_results(messages, keep_recent_messages=1, keep_recent_tool_uses=0)
    assert _cleared_ids(out.messages) == {"t0", "t1"}
    assert out.messages[1] is messages[1]
    assert out.messages[-1] is messages[-1]


def test_clearing_is_idempotent():
    messages = _conversation(6)
    once = clear_old_tool_results(messages, keep_recent_messages=3, keep_recent_tool_uses=1)
    twice = clear_old_tool_results(once.messages, keep_recent_messages=3, keep_recent_tool_uses=1)
    assert twice.cleared == []
    assert all(a is b for a, b in zip(once.messages, twice.messages, strict=True))
    assert encode_messages(twice.messages) == encode_messages(once.messages)


def test_every_tool_type_is_cleared():
    names = ["mcp__server__tool", "Agent", "LoadSkill", "Read"]
    messages = _conversation(4, names)
    out = clear_old_tool_results(messages, keep_recent_messages=1, keep_recent_tool_uses=0)
    assert sorted(c.tool_name for c in out.cleared) == sorted(names)
    assert _cleared_ids(out.messages) == {"t0", "t1", "t2", "t3"}


def test_cleared_body_names_the_recall_id_and_the_original_is_returned():
    messages = _conversation(2)
    out = clear_old_tool_results(messages, keep_recent_messages=1, keep_recent_tool_uses=0)
    body = result_bodies(out.messages)["t0"]
    assert body.startswith("[cleared ")
    assert 'Recall(id="t0")' in body
    assert str(len(_result("t0").content)) in body
    originals = {c.tool_use_id: c.original for c in out.cleared}
    assert originals["t0"] == _result("t0").content


def test_cleared_result_keeps_its_error_flag():
    messages = _conversation(2)
    messages[2] = Message.tool_results([ToolResultBlock(tool_use_id="t0", content="boom " * 50, is_error=True)])
    out = clear_old_tool_results(messages, keep_recent_messages=1, keep_recent_tool_uses=0)
    assert out.messages[2].tool_results_in[0].is_error is True
    assert is_cleared(out.messages[2].tool_results_in[0])


def test_excluded_tools_are_not_cleared():
    messages = _conversation(3, ["Bash", "Read", "Bash"])
    out = clear_old_tool_results(messages, keep_recent_messages=1, keep_recent_tool_uses=0, exclude_tools={"Read"})
    assert _cleared_ids(out.messages) == {"t0", "t2"}
    assert result_bodies(out.messages)["t1"] == _result("t1").content


def test_nothing_to_clear_returns_the_same_messages():
    messages = _conversation(2)
    out = clear_old_tool_results(messages, keep_recent_messages=50, keep_recent_tool_uses=0)
    assert out.cleared == []
    assert all(a is b for a, b in zip(messages, out.messages, strict=True))
