"""The `compacted` cache breakpoint: the last message before the newest that carries a
compaction marker."""

from agents.compaction.cache_points import compacted_breakpoint
from agents.compaction.notes import bridge, digest_message
from agents.messages import ClippedBody, Message, ToolResultBlock, ToolUseBlock


def _pair(i: str, marker=None) -> list[Message]:
    use = ToolUseBlock(id=i, name="bash", input={"command": "ls"})
    return [
        Message.assistant(use),
        Message.tool_results([ToolResultBlock(tool_use_id=i, content="out", marker=marker)]),
    ]


def test_an_unmarked_conversation_has_no_compacted_breakpoint():
    assert compacted_breakpoint([Message.user("task"), *_pair("t0"), *_pair("t1")]) is None


def test_the_breakpoint_is_on_the_latest_digest():
    messages = [
        Message.user("task"),
        bridge(),
        digest_message(2, "- a"),
        bridge(),
        digest_message(2, "- b"),
        *_pair("t0"),
    ]
    assert compacted_breakpoint(messages) == 4


def test_a_clipped_body_is_not_a_compaction_marker():
    clipped = ClippedBody(removed_chars=5, offset=2)
    assert compacted_breakpoint([Message.user("task"), *_pair("t0", clipped), *_pair("t1")]) is None


def test_the_last_message_never_takes_it_and_a_bridge_is_no_marker():
    assert compacted_breakpoint([Message.user("task"), bridge(), digest_message(2, "- a")]) is None
