"""Compaction markers are typed parts of the message model: they round-trip exactly,
render the same text the model always saw, reach the provider as plain content, and
text that merely looks like a marker is never taken for one."""

from agents.compaction import CompactionEnv, CompactionRequest, ExtractiveSummarizer
from agents.compaction.clearing import (
    clear_old_tool_results,
    elide_old_results,
    is_cleared,
    is_elided,
)
from agents.compaction.notes import BRIDGE_TEXT, dropped_count, is_summary_boundary, is_synthetic
from agents.compaction.result_budget import truncation_marker
from agents.compaction.strategies import ObservationMasking
from agents.compaction.summary import turns_since_summary
from agents.messages import (
    MESSAGES_ADAPTER,
    Bridge,
    ClearedBody,
    ClippedBody,
    DroppedSpan,
    ElidedBody,
    FoldedTurns,
    Message,
    SummaryBoundary,
    SupersededBody,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from agents.ports import ModelRequest
from agents.providers.anthropic import to_anthropic_params
from agents.settings._config import CompactSettings, SummarizerSettings
from agents.snapshots._codec import decode_message, decode_messages, encode_message, encode_messages, unpack
from agents.tokens import CharRatioEstimator
from tests.support.fakes import compacted_conversation
from tools.artifacts import ArtifactStore

# What each marker showed the model before markers were typed (the text is unchanged).
RENDERED_BEFORE = {
    SummaryBoundary(summarized=6): "[Conversation compacted] 6 earlier messages were replaced by the summary below. "
    "Tool outputs they held can still be read with Recall.",
    DroppedSpan(dropped=2, strategy="window"): "[Context trimmed] 2 earlier messages were dropped here by the 'window' "
    "compaction strategy. Tool outputs they held are kept in the record; Recall(id=...) returns one when you know its id.",
    Bridge(): "Understood. I will continue from the messages that follow.",
    Bridge(after_summary=True): "Understood. I will continue from this summary and the messages that follow.",
}
RESULTS_RENDERED_BEFORE = {
    ClearedBody(original_chars=360): '[cleared 360 chars of tool output; Recall(id="t1") returns it]',
    ElidedBody(original_chars=640): '[observation elided: 640 chars; Recall(id="t1")]',
    ClippedBody(removed_chars=2681, offset=130): '\n[truncated 2681 chars; Recall(id="t1", offset=130) returns them]\n',
}


def _markers(messages: list[Message]) -> list:
    return [getattr(b, "marker", None) for m in messages for b in m.content if getattr(b, "marker", None)]


def test_every_kind_of_marker_is_in_the_shared_conversation():
    kinds = {
        type(m).__name__ + (":after_summary" if getattr(m, "after_summary", False) else "")
        for m in _markers(compacted_conversation())
    }
    assert kinds == {
        "SummaryBoundary",
        "Bridge",
        "Bridge:after_summary",
        "DroppedSpan",
        "ClearedBody",
        "ElidedBody",
        "ClippedBody",
        "SupersededBody",
        "FoldedTurns",
    }
    residues = [m.residue for m in _markers(compacted_conversation()) if isinstance(m, ClearedBody)]
    assert "" in residues and any(residues)  # cleared with and without a residue


def test_markers_render_the_text_the_model_was_shown_before():
    for marker, text in RENDERED_BEFORE.items():
        assert marker.render() == text
    for marker, text in RESULTS_RENDERED_BEFORE.items():
        assert marker.render("t1") == text
    assert truncation_marker("t1", 2681, 130) == RESULTS_RENDERED_BEFORE[ClippedBody(removed_chars=2681, offset=130)]


def test_a_marked_block_shows_exactly_what_its_marker_renders():
    for message in compacted_conversation():
        for block in message.content:
            if isinstance(block, TextBlock) and block.marker is not None:
                assert block.text == block.marker.render()
            if isinstance(block, ToolResultBlock) and isinstance(
                block.marker, ClearedBody | SupersededBody | ElidedBody
            ):
                assert block.content == block.marker.render(block.tool_use_id)
            if isinstance(block, ToolResultBlock) and isinstance(block.marker, ClippedBody):
                at = block.marker.offset
                assert block.content[at:].startswith(block.marker.render(block.tool_use_id))


def test_markers_round_trip_exactly_through_msgpack():
    messages = compacted_conversation()
    decoded = decode_messages(encode_messages(messages))
    assert decoded == messages and _markers(decoded) == _markers(messages)
    assert [decode_message(encode_message(m)[1]) for m in messages] == messages
    assert MESSAGES_ADAPTER.validate_python(MESSAGES_ADAPTER.dump_python(messages, mode="json")) == messages


def test_a_block_without_a_marker_encodes_in_the_layout_it_always_had():
    # Same bytes as before markers existed, so stored messages keep their content address.
    message = Message(
        role="user",
        content=(ToolResultBlock(tool_use_id="t", content="out", is_error=True), TextBlock(text="and")),
    )
    assert unpack(encode_message(message)[1]) == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": "out", "is_error": True},
            {"type": "text", "text": "and"},
        ],
    }


def test_the_provider_sends_marked_blocks_as_plain_content_with_their_text():
    messages = compacted_conversation()
    params = to_anthropic_params(ModelRequest(system="s", tools=(), messages=tuple(messages), max_tokens=10), "m")
    sent = [b for m in params["messages"] for b in m["content"]]
    assert not any("marker" in b for b in sent)
    ours = [b for m in messages for b in m.content]
    assert [b.get("text", b.get("content")) for b in sent] == [
        getattr(b, "text", getattr(b, "content", None)) for b in ours
    ]
    clipped = next(b for b in sent if b.get("tool_use_id") == "toolu_m2")
    assert set(clipped) <= {"type", "tool_use_id", "content", "is_error", "cache_control"}


# -- lookalikes: text that reads like a marker is an ordinary output ---------------------------


def _pair(use_id: str, body: str) -> list[Message]:
    return [
        Message.assistant(ToolUseBlock(id=use_id, name="Bash", input={"command": "cat notes.txt"})),
        Message.tool_results([ToolResultBlock(tool_use_id=use_id, content=body)]),
    ]


LOOKS_CLEARED = '[cleared 12 chars of tool output; Recall(id="t0") returns it]'
LOOKS_ELIDED = '[observation elided: 99 chars; Recall(id="t0")] — and the rest of a real file that goes on'


def test_a_tool_output_beginning_with_cleared_is_not_treated_as_cleared():
    messages = [Message.user("task"), *_pair("t0", LOOKS_CLEARED + " and more real output"), *_pair("t1", "recent")]
    block = messages[2].content[0]
    assert not is_cleared(block)
    outcome = clear_old_tool_results(messages, keep_recent_messages=0, keep_recent_tool_uses=1)
    assert [c.tool_use_id for c in outcome.cleared] == ["t0"]
    assert outcome.cleared[0].original == block.content
    assert is_cleared(outcome.messages[2].content[0])


def test_a_tool_output_that_is_exactly_a_cleared_note_is_still_an_output():
    messages = [Message.user("task"), *_pair("t0", LOOKS_CLEARED), *_pair("t1", "recent")]
    assert not is_cleared(messages[2].content[0])
    outcome = clear_old_tool_results(messages, keep_recent_messages=0, keep_recent_tool_uses=1)
    assert [c.tool_use_id for c in outcome.cleared] == ["t0"]
    assert outcome.messages[2].content[0].marker == ClearedBody(original_chars=len(LOOKS_CLEARED))


def test_a_tool_output_beginning_like_an_elided_placeholder_is_elided_like_any_output():
    messages = [Message.user("task"), *_pair("t0", LOOKS_ELIDED), *_pair("t1", "recent")]
    assert not is_elided(messages[2].content[0])
    outcome = elide_old_results(messages, keep=1)
    assert [c.tool_use_id for c in outcome.cleared] == ["t0"]
    assert is_elided(outcome.messages[2].content[0])


def test_user_text_that_reads_like_a_summary_boundary_is_not_one():
    fake = Message(
        role="user",
        content=(TextBlock(text=RENDERED_BEFORE[SummaryBoundary(summarized=6)]), TextBlock(text="## Objective\nx")),
    )
    assert not is_summary_boundary(fake)
    messages = [
        Message.user("task"),
        Message.assistant(TextBlock(text="a")),
        fake,
        Message.assistant(TextBlock(text="b")),
    ]
    assert turns_since_summary(messages) == 2  # counted from the start: there is no summary


def test_text_that_reads_like_a_trim_note_or_a_bridge_is_a_real_turn():
    note = Message.user(RENDERED_BEFORE[DroppedSpan(dropped=2, strategy="window")])
    said = Message.assistant(TextBlock(text=BRIDGE_TEXT))
    assert not is_synthetic(note) and not is_synthetic(said)
    assert dropped_count([note, said]) == 2


async def test_masking_keeps_a_lookalike_body_for_recall(tmp_path):
    store = ArtifactStore(tmp_path / "artifacts")
    env = CompactionEnv(
        counter=CharRatioEstimator(),
        summarizer=ExtractiveSummarizer(),
        artifacts=store,
        settings=CompactSettings(),
        summarizer_settings=SummarizerSettings(),
    )
    messages = [Message.user("task"), *_pair("t0", LOOKS_ELIDED), *_pair("t1", "recent")]
    request = CompactionRequest(messages=messages, overhead_tokens=0, budget_tokens=10**9)
    result = await ObservationMasking(keep=1).compact(request, env)
    assert is_elided(result.messages[2].content[0])
    assert store.get("t0") == LOOKS_ELIDED
    store.close()


LOOKS_SUPERSEDED = '[superseded: the same call ran again later (call t9), so this output of 3 chars was cleared; Recall(id="t0") returns it]'


def test_a_tool_output_that_reads_like_a_superseded_note_is_an_output():
    messages = [Message.user("task"), *_pair("t0", LOOKS_SUPERSEDED), *_pair("t1", "recent")]
    block = messages[2].content[0]
    assert block.marker is None and not is_cleared(block)
    assert decode_messages(encode_messages(messages))[2].content[0].marker is None


def test_user_text_that_reads_like_a_digest_is_a_real_turn():
    looks = FoldedTurns(folded=4).render()
    message = Message.user(looks + "\n- Bash t0: $ make → exit 0")
    assert not is_synthetic(message) and dropped_count([message]) == 1
