"""The strategies' peer parameters: events as a unit, SWE-agent's polling, amortized's
event trigger and kept tail, hybrid's count of kept turns and unmasked summaries, and
clear-tool-uses counting what it cleared."""

import pytest

from agents.compaction import make_strategy
from agents.compaction.clearing import is_cleared, is_elided
from agents.compaction.notes import (
    bridge,
    is_summary_boundary,
    summary_acknowledgement,
    summary_boundary,
    trim_note,
)
from agents.compaction.run import CompactionRun
from agents.compaction.strategies.masking import uncleared_tokens
from agents.compaction.units import head_end, message_events, split_keeping_recent
from agents.errors import ConfigError
from agents.messages import ClearedBody, Message, TextBlock, ToolResultBlock, ToolUseBlock
from tests.support.fakes import (
    COMPACTION_COUNTER,
    NO_BUDGET,
    FakeSummarizer,
    compaction_env,
    compaction_request,
    tool_conversation,
    tool_interaction,
)
from tools.artifacts import ArtifactStore


def _bodies(messages) -> list[ToolResultBlock]:
    return [b for m in messages for b in m.tool_results_in]


def _elided(messages) -> int:
    return sum(is_elided(b) for b in _bodies(messages))


# -- what an event is ---------------------------------------------------------------------


def test_each_tool_use_is_one_event_and_a_message_without_one_is_one():
    uses = [ToolUseBlock(id=f"u{i}", name="Read", input={}) for i in range(3)]
    assert message_events(Message.assistant(TextBlock(text="reading"), *uses)) == 3
    assert message_events(Message.assistant(TextBlock(text="done"))) == 1


def test_each_tool_result_is_one_event_and_other_user_content_one_more():
    results = [ToolResultBlock(tool_use_id=f"u{i}", content="x") for i in range(3)]
    assert message_events(Message.tool_results(results)) == 3
    with_text = Message(role="user", content=(*results, TextBlock(text="also check b.py")))
    assert message_events(with_text) == 4
    assert message_events(Message.user("task")) == 1


def test_a_summary_is_one_event_and_notes_and_bridges_are_none():
    assert message_events(summary_boundary("## Objective\nx", 10)) == 1
    assert message_events(Message(role="user", content=(trim_note(4, "window"),))) == 0
    assert message_events(bridge()) == 0
    assert message_events(summary_acknowledgement()) == 0


def test_a_recent_cut_in_events_drops_the_interaction_it_falls_inside():
    messages = tool_conversation(pairs=6)  # task, then (use, result) x 6: 13 events
    assert split_keeping_recent(messages, 4, "events") == 9  # exactly the last 2 steps
    assert split_keeping_recent(messages, 5, "events") == 9  # not the result whose use is older
    assert split_keeping_recent(messages, 13, "events") is None  # nothing older left


def test_a_head_in_events_holds_at_most_its_events_at_a_clean_boundary():
    messages = tool_conversation(pairs=6)
    assert head_end(messages, 1, "events") == 1
    assert head_end(messages, 2, "events") == 1  # a use without its result is not kept
    assert head_end(messages, 3, "events") == 3
    assert head_end(messages, 0, "events") == 0


# -- mask ---------------------------------------------------------------------------------


async def test_mask_by_events_keeps_the_results_among_the_last_events():
    messages = tool_conversation(pairs=12)
    result = await make_strategy("mask:keep=6,unit=events").compact(compaction_request(messages), compaction_env())
    assert [is_elided(b) for b in _bodies(result.messages)] == [True] * 9 + [False] * 3


async def test_mask_by_events_counts_each_call_of_a_parallel_batch():
    uses = [ToolUseBlock(id=f"p{i}", name="Read", input={"path": f"f{i}"}) for i in range(4)]
    messages = [
        Message.user("task"),
        Message.assistant(TextBlock(text="reading"), *uses),
        Message.tool_results([ToolResultBlock(tool_use_id=f"p{i}", content=f"body {i} " * 50) for i in range(4)]),
        Message.assistant(ToolUseBlock(id="q", name="Bash", input={"command": "make"})),
        Message(role="user", content=(ToolResultBlock(tool_use_id="q", content="ok " * 50), TextBlock(text="go on"))),
    ]
    # The last 5 events: the text, q's result, q's use, and two results of the batch.
    result = await make_strategy("mask:keep=5,unit=events").compact(compaction_request(messages), compaction_env())
    assert [is_elided(b) for b in _bodies(result.messages)] == [True, True, False, False, False]


@pytest.mark.parametrize(("steps", "elided"), [(10, 3), (11, 6), (12, 6), (13, 6), (14, 9)])
async def test_mask_polling_moves_the_elision_only_every_polling_results(steps, elided):
    # SWE-agent with n=5, polling=3 elides observations[1 : (T+1)//3*3 - 5], the task
    # message being observation 0: 3, 6, 6, 6, 9 of T = 10..14 results.
    messages = tool_conversation(pairs=steps)
    result = await make_strategy("mask:keep=5,polling=3").compact(compaction_request(messages), compaction_env())
    assert _elided(result.messages) == elided


@pytest.mark.parametrize("steps", range(3, 15))
async def test_mask_polling_one_is_the_plain_rule(steps):
    messages = tool_conversation(pairs=steps)
    plain = await make_strategy("mask:keep=5").compact(compaction_request(messages), compaction_env())
    polled = await make_strategy("mask:keep=5,polling=1").compact(compaction_request(messages), compaction_env())
    assert [b.content for b in _bodies(polled.messages)] == [b.content for b in _bodies(plain.messages)]


def test_mask_refuses_polling_counted_in_events():
    with pytest.raises(ConfigError, match="polling applies to unit=results only"):
        make_strategy("mask:polling=2,unit=events")


def test_a_unit_outside_its_values_is_a_config_error_naming_them():
    with pytest.raises(ConfigError, match="expected one of messages, events"):
        make_strategy("window:unit=tokens")


# -- window -------------------------------------------------------------------------------


async def test_window_by_events_keeps_the_first_and_last_events():
    messages = tool_conversation(pairs=12)  # 25 events
    result = await make_strategy("window:first=1,last=6,unit=events").compact(
        compaction_request(messages), compaction_env()
    )
    assert result.messages[0] is messages[0] and result.messages[-6:] == messages[-6:]
    assert sum(message_events(m) for m in result.messages) == 7


async def test_window_by_events_drops_the_step_its_cut_falls_inside():
    messages = tool_conversation(pairs=12)
    result = await make_strategy("window:first=1,last=5,unit=events").compact(
        compaction_request(messages), compaction_env()
    )
    assert result.messages[-4:] == messages[-4:] and result.messages[-5] is not messages[-5]


async def test_window_by_events_leaves_a_conversation_within_first_plus_last():
    messages = tool_conversation(pairs=12)  # 25 events; both cuts would round inward
    result = await make_strategy("window:first=2,last=23,unit=events").compact(
        compaction_request(messages), compaction_env()
    )
    assert result.messages == messages and result.events == []


# -- summarize and amortized ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("summarize:first=0,last=4,max_events=11,max_tokens=1000000000,unit=events", "summary"),
        ("amortized:max_events=11,max_tokens=1000000000,unit=events", "clear"),
    ],
)
async def test_max_events_in_events_triggers_only_over_that_many_events(spec, kind):
    under = await make_strategy(spec).compact(compaction_request(tool_conversation(pairs=5)), compaction_env())
    over = await make_strategy(spec).compact(compaction_request(tool_conversation(pairs=6)), compaction_env())
    assert under.events == [] and [e.kind for e in over.events] == [kind]  # 11 events, then 13


async def test_summarize_by_events_keeps_the_last_events_after_one_summary_event():
    messages = tool_conversation(pairs=6)
    result = await make_strategy("summarize:first=0,last=4,max_events=11,unit=events").compact(
        compaction_request(messages), compaction_env()
    )
    assert is_summary_boundary(result.messages[0]) and result.messages[1:] == messages[-4:]
    assert sum(message_events(m) for m in result.messages) == 5


# -- amortized ----------------------------------------------------------------------------


async def test_amortized_keep_last_keeps_the_last_units_instead_of_halving():
    messages = tool_conversation(pairs=12)
    result = await make_strategy("amortized:max_tokens=1,keep_last=4").compact(
        compaction_request(messages), compaction_env()
    )
    assert result.messages[0] is messages[0] and result.messages[-4:] == messages[-4:]
    assert len(result.messages) == 1 + 2 + 4  # task, bridge and trim note, the last 4


async def test_amortized_halves_what_follows_the_head_counted_in_events():
    messages = tool_conversation(pairs=12)  # the task, then 24 events
    result = await make_strategy("amortized:max_tokens=1,unit=events").compact(
        compaction_request(messages), compaction_env()
    )
    assert result.messages[0] is messages[0] and result.messages[-12:] == messages[-12:]
    assert sum(message_events(m) for m in result.messages) == 1 + 12


# -- hybrid -------------------------------------------------------------------------------


async def _hybrid_summaries(spec: str, steps: int) -> list[int]:
    summarizer = FakeSummarizer()
    env = compaction_env(summarizer)
    strategy = make_strategy(spec)
    conversation, at = [Message.user("task")], []
    for k in range(steps):
        conversation = [*conversation, *tool_interaction(k, body_chars=100)]
        result = await strategy.compact(compaction_request(conversation), env)
        if any(e.kind == "summary" and e.applied for e in result.events):
            at.append(k + 1)
        conversation = result.messages
    return at


async def test_hybrid_count_kept_counts_the_turns_the_summary_kept():
    assert await _hybrid_summaries("hybrid:keep=100,every=5,last=4,count_kept=true", 12) == [5, 8, 11]


async def test_hybrid_without_count_kept_waits_every_turns_after_the_kept_ones():
    assert await _hybrid_summaries("hybrid:keep=100,every=5,last=4", 12) == [5, 10]


async def test_hybrid_summarize_unmasked_gives_the_summarizer_the_elided_bodies(tmp_path):
    summarizer = FakeSummarizer()
    env = compaction_env(summarizer, artifacts=ArtifactStore(tmp_path / "artifacts"))
    messages = tool_conversation(pairs=4)
    originals = {b.tool_use_id: b.content for b in _bodies(messages)}
    result = await make_strategy("hybrid:keep=1,every=4,last=2,summarize_unmasked=true").compact(
        compaction_request(messages), env
    )
    read = _bodies(summarizer.calls[0])
    assert [b.content for b in read] == [originals[b.tool_use_id] for b in read] and len(read) == 3
    assert is_summary_boundary(result.messages[2]) and result.messages[-2:] == messages[-2:]


async def test_hybrid_summarize_unmasked_leaves_a_body_clipped_before_masking_elided(tmp_path):
    summarizer = FakeSummarizer()
    store = ArtifactStore(tmp_path / "artifacts")
    env = compaction_env(summarizer, artifacts=store)
    messages = tool_conversation(pairs=4)
    store.put("toolu_00", "the whole output " * 500)  # stored whole; the conversation holds less
    await make_strategy("hybrid:keep=1,every=4,last=2,summarize_unmasked=true").compact(
        compaction_request(messages), env
    )
    read = {b.tool_use_id: b for b in _bodies(summarizer.calls[0])}
    assert is_elided(read["toolu_00"]) and not is_elided(read["toolu_01"])


# -- clear-tool-uses ----------------------------------------------------------------------


async def _cleared_per_call(spec: str, tmp_path) -> list[int]:
    env = compaction_env(artifacts=ArtifactStore(tmp_path / "artifacts"))
    strategy = make_strategy(spec)
    conversation, cleared = [Message.user("task")], []
    for k in range(12):
        conversation = [*conversation, *tool_interaction(k, body_chars=2_000)]
        result = await strategy.compact(compaction_request(conversation), env)
        conversation = result.messages
        cleared.append(sum(is_cleared(b) for b in _bodies(conversation)))
    return cleared


async def test_clear_tool_uses_count_cleared_keeps_only_the_last_uses_once_past_the_trigger(tmp_path):
    # 500 tokens a step: past 3,000 from step 6 on, on the history as it was.
    assert await _cleared_per_call("clear-tool-uses:trigger=3000,keep=2,count_cleared=true", tmp_path) == [
        0,
        0,
        0,
        0,
        0,
        4,
        5,
        6,
        7,
        8,
        9,
        10,
    ]


async def test_clear_tool_uses_counts_the_conversation_as_sent_by_default(tmp_path):
    cleared = await _cleared_per_call("clear-tool-uses:trigger=3000,keep=2", tmp_path)
    assert cleared[5] == 4 and cleared[6] == 4  # after a clear it waits for the trigger again


def _one_cleared(body: str, stored: str, tmp_path) -> CompactionRun:
    store = ArtifactStore(tmp_path / "artifacts")
    store.put("c", stored)
    cleared = ToolResultBlock(tool_use_id="c", content="[cleared]", marker=ClearedBody(original_chars=len(body)))
    messages = [
        Message.user("task"),
        Message.assistant(ToolUseBlock(id="c", name="Bash", input={})),
        Message.tool_results([cleared]),
    ]
    return CompactionRun("clear-tool-uses", compaction_request(messages, NO_BUDGET), compaction_env(artifacts=store))


def test_uncleared_tokens_counts_a_cleared_body_as_it_was(tmp_path):
    body = "y" * 4_000
    run = _one_cleared(body, body, tmp_path)
    placeholder = COMPACTION_COUNTER.count_text("[cleared]")
    assert uncleared_tokens(run) == run.tokens() - placeholder + COMPACTION_COUNTER.count_text(body)


def test_uncleared_tokens_counts_a_body_clipped_before_clearing_by_its_clipped_share(tmp_path):
    run = _one_cleared("y" * 2_000, "y" * 8_000, tmp_path)
    placeholder = COMPACTION_COUNTER.count_text("[cleared]")
    assert uncleared_tokens(run) == run.tokens() - placeholder + 500
