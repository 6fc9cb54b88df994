import pytest

from agents.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    completed_tool_interactions,
    is_protocol_complete,
    protocol_problems,
)
from agents.snapshots._codec import CodecError, decode_messages, encode_messages


def _read_use(i: str, name: str = "Read") -> ToolUseBlock:
    return ToolUseBlock(id=i, name=name, input={"path": f"{i}.py", "nested": {"a": [1, 2.5, None, True]}})


def _result(i: str, text: str = "ok", err: bool = False) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=i, content=text, is_error=err)


def _conversation() -> list[Message]:
    return [
        Message.user("fix it"),
        Message.assistant(TextBlock(text="looking"), _read_use("a"), _read_use("b")),
        Message.tool_results([_result("a"), _result("b", "boom", err=True)]),
        Message.assistant(_read_use("c")),
        Message.tool_results([_result("c", "ünïcødé ✓")]),
        Message.assistant(TextBlock(text="done")),
    ]


def test_msgpack_round_trip_is_exact():
    messages = _conversation()
    assert decode_messages(encode_messages(messages)) == messages


def test_decoding_garbage_is_a_codec_error():
    with pytest.raises(CodecError):
        decode_messages(b"\xc1\xc1garbage")


def test_decoding_wrong_shape_is_a_codec_error():
    from agents.snapshots._codec import pack

    with pytest.raises(CodecError, match="valid conversation"):
        decode_messages(pack([{"role": "robot", "content": []}]))


def test_completed_interactions_pair_uses_and_results_by_id():
    done = completed_tool_interactions(_conversation())
    assert [(d.use.id, d.result.content) for d in done] == [("a", "ok"), ("b", "boom"), ("c", "ünïcødé ✓")]
    assert (done[0].use_index, done[0].result_index) == (1, 2)


def test_unanswered_use_is_not_a_completed_interaction():
    messages = _conversation()[:2]
    assert completed_tool_interactions(messages) == []


def test_result_without_its_use_breaks_the_protocol():
    messages = [Message.user("hi"), Message.tool_results([_result("ghost")])]
    assert protocol_problems(messages) == ["message 1: tool_result ghost has no earlier tool_use"]


def test_use_left_dangling_before_a_user_turn_breaks_the_protocol():
    messages = [Message.user("hi"), Message.assistant(_read_use("a")), Message.user("and?")]
    assert protocol_problems(messages) == ["message 1: tool_use a unanswered before message 2"]


def test_trailing_unanswered_use_is_allowed_only_while_in_flight():
    messages = [Message.user("hi"), Message.assistant(_read_use("a"))]
    assert protocol_problems(messages) == []
    assert not is_protocol_complete(messages)
    assert is_protocol_complete(_conversation())


def test_edited_copy_of_a_message_drops_its_token_cache():
    from agents.tokens import CharRatioEstimator

    counter = CharRatioEstimator()
    message = Message.user("x" * 400)
    before = counter.count_message(message)
    edited = message.model_copy(update={"content": (TextBlock(text="y"),)})
    assert counter.count_message(edited) < before
