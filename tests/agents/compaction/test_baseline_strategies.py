"""The baseline compaction strategies, one rule at a time: truncate, mask, window, summarize,
amortized, clear-tool-uses and hybrid. Invariants over random conversations are in
test_baseline_invariants.py, specs and user strategies in test_baseline_specs.py."""

import random

import pytest

from agents.compaction import make_strategy
from agents.compaction.boundaries import clean_boundaries
from agents.compaction.clearing import is_cleared
from agents.compaction.notes import BRIDGE_TEXT, TRIM_MARKER, is_synthetic
from agents.compaction.strategies import (
    AmortizedForgetting,
    ClearToolUses,
    HybridMaskSummarize,
    NoCompaction,
    ObservationMasking,
    SlidingWindow,
    SummarizeOlder,
)
from agents.compaction.summary import is_summary_boundary
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, protocol_problems
from tests.support.builders import result_bodies
from tests.support.fakes import COMPACTION_OVERHEAD as OVERHEAD
from tests.support.fakes import NO_BUDGET as HUGE
from tests.support.fakes import (
    FakeSummarizer,
    alternates_from_user,
    compaction_tokens,
    random_conversation,
    same_messages,
)
from tests.support.fakes import compaction_env as _env
from tests.support.fakes import compaction_request as _request
from tests.support.fakes import tool_conversation as _conversation
from tools.artifacts import ArtifactStore

# -- truncate ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["truncate", "raw"])
async def test_truncate_and_raw_never_compact_and_keep_their_names(name):
    messages = _conversation()
    strategy = make_strategy(name)
    assert strategy == NoCompaction(name) and strategy.name == name
    auto = await strategy.compact(_request(messages, budget=OVERHEAD + 10), _env())
    assert same_messages(auto.messages, messages) and auto.events == [] and auto.failure is None
    for trigger in ("manual", "prompt_too_long"):
        result = await strategy.compact(_request(messages, OVERHEAD + 10, trigger), _env())
        assert same_messages(result.messages, messages)
        assert result.failure and f"strategy '{name}' never compacts" in result.failure
        assert not result.changed


# -- mask ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "keep"), [("mask", 5), ("mask:keep=8", 8), ("mask:keep=0", 0)])
async def test_mask_keeps_exactly_the_last_n_result_bodies_even_under_budget(spec, keep):
    messages = _conversation(pairs=12)
    originals = result_bodies(messages)
    result = await make_strategy(spec).compact(_request(messages, budget=HUGE), _env())
    bodies = [b for m in result.messages for b in m.tool_results_in]
    assert len(bodies) == 12
    for block in bodies[: 12 - keep]:
        n = len(originals[block.tool_use_id])
        assert block.content == f'[observation elided: {n} chars; Recall(id="{block.tool_use_id}")]'
        assert "\n" not in block.content
    assert [b.content for b in bodies[12 - keep :]] == [originals[b.tool_use_id] for b in bodies[12 - keep :]]
    # Only result messages change; every other message is the same object.
    assert len(result.messages) == len(messages)
    for before, after in zip(messages, result.messages, strict=True):
        if not before.tool_results_in or before.tool_results_in[0].tool_use_id not in {
            b.tool_use_id for b in bodies[: 12 - keep]
        }:
            assert after is before
    [event] = result.events
    assert (event.kind, event.strategy, event.results_cleared) == ("clear", "mask", 12 - keep)
    again = await make_strategy(spec).compact(_request(result.messages), _env())
    assert again.events == [] and same_messages(again.messages, result.messages)  # idempotent


async def test_mask_counts_each_block_of_a_parallel_batch_and_stores_bodies(tmp_path):
    messages = [Message.user("task")]
    uses = [ToolUseBlock(id=f"p{i}", name="Read", input={"path": f"f{i}"}) for i in range(4)]
    messages.append(Message.assistant(TextBlock(text="reading"), *uses))
    messages.append(
        Message.tool_results([ToolResultBlock(tool_use_id=f"p{i}", content=f"body {i} " * 50) for i in (2, 0, 3, 1)])
    )
    messages.append(Message.assistant(TextBlock(text="done")))
    messages.append(Message.user("short"))
    store = ArtifactStore(tmp_path / "artifacts")
    try:
        result = await ObservationMasking(keep=2).compact(_request(messages), _env(artifacts=store))
        bodies = result.messages[2].tool_results_in
        assert [is_elided for is_elided in (b.content.startswith("[observation elided") for b in bodies)] == [
            True,
            True,
            False,
            False,
        ]
        assert store.get("p2") == "body 2 " * 50 and store.get("p0") == "body 0 " * 50
        assert "p3" not in store
    finally:
        store.close()


async def test_mask_leaves_bodies_shorter_than_their_placeholder():
    messages = _conversation(pairs=8, body_chars=5)
    result = await ObservationMasking(keep=1).compact(_request(messages), _env())
    assert same_messages(result.messages, messages) and result.events == []
    manual = await ObservationMasking(keep=1).compact(_request(messages, trigger="manual"), _env())
    assert manual.failure and "nothing to mask" in manual.failure and not manual.changed


# -- window --------------------------------------------------------------------------------------


async def test_window_keeps_first_k_and_last_m_with_one_marker():
    messages = _conversation(pairs=20)  # 41 messages
    result = await make_strategy("window:first=1,last=10").compact(_request(messages), _env())
    out = result.messages
    assert out[0] is messages[0]
    assert same_messages(out[-10:], messages[-10:])
    synthetic = out[1:-10]
    assert all(is_synthetic(m) for m in synthetic)
    notes = [m for m in synthetic if m.text.startswith(TRIM_MARKER)]
    assert len(notes) == 1 and notes[0].text.startswith(f"{TRIM_MARKER} 30 earlier messages")
    assert alternates_from_user(out) and protocol_problems(out, allow_trailing_uses=False) == []
    [event] = result.events
    assert (event.kind, event.results_cleared) == ("clear", 15)
    # The window slides: two more messages, and the note counts everything dropped.
    grown = [
        *out,
        Message.assistant(TextBlock(text="next"), ToolUseBlock(id="n1", name="Bash", input={})),
        Message.tool_results([ToolResultBlock(tool_use_id="n1", content="ok")]),
    ]
    again = await make_strategy("window:first=1,last=10").compact(_request(grown), _env())
    notes = [m for m in again.messages if m.text.startswith(TRIM_MARKER)]
    assert len(notes) == 1 and notes[0].text.startswith(f"{TRIM_MARKER} 32 earlier messages")
    assert same_messages(again.messages[-10:], grown[-10:])
    # Nothing new to drop: no change, no event.
    still = await make_strategy("window:first=1,last=10").compact(_request(again.messages), _env())
    assert still.events == [] and same_messages(still.messages, again.messages)


async def test_window_extends_to_clean_boundaries():
    messages = _conversation(pairs=20)
    result = await SlidingWindow(first=2, last=9).compact(_request(messages), _env())
    out = result.messages
    # first=2 ends inside a tool interaction (use at 1, result at 2): the head extends to 3;
    # last=9 starts on a result: the tail extends back to 10 messages.
    assert same_messages(out[:3], messages[:3])
    assert same_messages(out[-10:], messages[-10:])
    assert protocol_problems(out, allow_trailing_uses=False) == []


async def test_window_does_nothing_to_a_short_conversation():
    messages = _conversation(pairs=5)
    result = await SlidingWindow().compact(_request(messages), _env())
    assert same_messages(result.messages, messages) and result.events == []


# -- summarize ---------------------------------------------------------------------------------


async def test_summarize_waits_for_the_budget_then_keeps_first_and_last_m():
    messages = _conversation(pairs=15)  # 31 messages
    summarizer = FakeSummarizer()
    under = await SummarizeOlder().compact(_request(messages, compaction_tokens(messages)), _env(summarizer))
    assert same_messages(under.messages, messages) and summarizer.calls == []

    result = await SummarizeOlder().compact(_request(messages, compaction_tokens(messages) - 1), _env(summarizer))
    [older] = summarizer.calls
    split = len(messages) - 10  # an assistant message: a clean boundary
    assert clean_boundaries(messages)[split]
    assert same_messages(older, messages[1:split])
    out = result.messages
    assert out[0] is messages[0] and same_messages(out[-10:], messages[split:])
    assert out[1].text == BRIDGE_TEXT and is_summary_boundary(out[2])
    assert "fix the parser" in out[2].text
    assert alternates_from_user(out)
    [event] = result.events
    assert (event.kind, event.messages_summarized, event.summarizer_calls) == (
        "summary",
        split - 1,
        1,
    )


async def test_summarize_by_event_count_and_failure_keeps_the_conversation():
    messages = _conversation(pairs=15)
    summarizer = FakeSummarizer()
    result = await make_strategy("summarize:max_events=30,last=4").compact(_request(messages), _env(summarizer))
    assert len(summarizer.calls) == 1 and result.changed
    assert same_messages(result.messages[-4:], messages[-4:]) and same_messages(summarizer.calls[0], messages[1:-4])
    failing = FakeSummarizer(error=RuntimeError("summarizer down"))
    failed = await make_strategy("summarize:max_events=30").compact(_request(messages), _env(failing))
    assert same_messages(failed.messages, messages)
    assert failed.failure and "summarizer down" in failed.failure
    assert failed.events[-1].failed and not failed.changed


async def test_summarize_does_not_summarize_its_own_summary_again():
    messages = _conversation(pairs=15)
    summarizer = FakeSummarizer()
    tight = OVERHEAD + 100  # the last 10 messages alone are over this
    first = await SummarizeOlder().compact(_request(messages, tight), _env(summarizer))
    assert first.changed and len(summarizer.calls) == 1
    again = await SummarizeOlder().compact(_request(first.messages, tight), _env(summarizer))
    assert len(summarizer.calls) == 1
    assert again.failure and "nothing new" in again.failure
    assert same_messages(again.messages, first.messages) and not again.changed


async def test_summarize_manual_keeps_manual_keep_messages():
    messages = _conversation(pairs=6)
    summarizer = FakeSummarizer()
    result = await SummarizeOlder().compact(_request(messages, trigger="manual"), _env(summarizer))
    assert same_messages(summarizer.calls[0], messages[1:-2])
    assert result.messages[0] is messages[0] and same_messages(result.messages[-2:], messages[-2:])


@pytest.mark.parametrize("strategy", [SummarizeOlder(manual_keep=4), HybridMaskSummarize(keep=HUGE, manual_keep=4)])
async def test_manual_keep_parameter_overrides_the_setting(strategy):
    messages = _conversation(pairs=6)
    summarizer = FakeSummarizer()
    result = await strategy.compact(_request(messages, trigger="manual"), _env(summarizer))
    assert same_messages(summarizer.calls[0], messages[1:-4])
    assert result.messages[0] is messages[0] and same_messages(result.messages[-4:], messages[-4:])


# -- amortized --------------------------------------------------------------------------------


async def test_amortized_drops_the_older_half_only_when_over_budget():
    messages = _conversation(pairs=11)  # 23 messages: task + 22
    under = await AmortizedForgetting().compact(_request(messages, compaction_tokens(messages)), _env())
    assert same_messages(under.messages, messages) and under.events == []

    result = await AmortizedForgetting().compact(_request(messages, compaction_tokens(messages) - 1), _env())
    # half of the 22 after the task is 11 → index 12, a tool result: the cut moves to 13.
    assert not clean_boundaries(messages)[12] and clean_boundaries(messages)[13]
    out = result.messages
    assert out[0] is messages[0] and same_messages(out[-10:], messages[13:])
    assert len(out) == 1 + 2 + 10  # task, bridge + note, the newer half
    notes = [m for m in out if m.text.startswith(TRIM_MARKER)]
    assert len(notes) == 1 and notes[0].text.startswith(f"{TRIM_MARKER} 12 earlier messages")
    assert "summary" not in [e.kind for e in result.events]
    assert alternates_from_user(out) and protocol_problems(out, allow_trailing_uses=False) == []
    assert result.events[0].kind == "clear" and result.events[0].tokens_after < result.events[0].tokens_before


async def test_amortized_with_a_parallel_batch_cuts_only_at_clean_boundaries():
    rng = random.Random(7)
    for _ in range(30):
        messages = random_conversation(rng)
        result = await AmortizedForgetting(max_tokens=1).compact(_request(messages), _env())
        assert protocol_problems(result.messages, allow_trailing_uses=False) == []
        kept = [m for m in result.messages if not is_synthetic(m)]
        assert kept[0] is messages[0]
        assert same_messages(kept[1:], messages[len(messages) - len(kept) + 1 :])


# -- clear-tool-uses ------------------------------------------------------------------------------


async def test_clear_tool_uses_honours_the_trigger_and_keep():
    messages = _conversation(pairs=10)
    total = compaction_tokens(messages)
    quiet = await make_strategy(f"clear-tool-uses:trigger={total}").compact(_request(messages), _env())
    assert same_messages(quiet.messages, messages) and quiet.events == []
    # Default trigger: the compact budget.
    assert (await ClearToolUses().compact(_request(messages, total), _env())).events == []

    result = await make_strategy(f"clear-tool-uses:trigger={total - 1},keep=2").compact(_request(messages), _env())
    bodies = [b for m in result.messages for b in m.tool_results_in]
    assert [is_cleared(b) for b in bodies] == [True] * 8 + [False] * 2
    assert 'Recall(id="toolu_00")' in bodies[0].content
    uses = [u for m in result.messages for u in m.tool_uses]
    assert all(u.input for u in uses)  # inputs stay by default
    [event] = result.events
    assert (event.kind, event.strategy, event.results_cleared) == ("clear", "clear-tool-uses", 8)


async def test_clear_tool_uses_clear_at_least_exclude_tools_and_clear_tool_inputs():
    messages = _conversation(pairs=10, tools=("Bash", "Read"))
    freed = compaction_tokens(messages) - compaction_tokens(
        (await ClearToolUses(trigger=1, keep=3).compact(_request(messages), _env())).messages
    )
    too_much = await ClearToolUses(trigger=1, keep=3, clear_at_least=freed + 1).compact(_request(messages), _env())
    assert too_much.events == [] and same_messages(too_much.messages, messages)
    enough = await ClearToolUses(trigger=1, keep=3, clear_at_least=freed).compact(_request(messages), _env())
    assert enough.events[0].tokens_freed == freed

    excluded = await make_strategy("clear-tool-uses:trigger=1,keep=0,exclude_tools=Read").compact(
        _request(messages), _env()
    )
    by_id = {u.id: u.name for m in messages for u in m.tool_uses}
    for block in (b for m in excluded.messages for b in m.tool_results_in):
        assert is_cleared(block) == (by_id[block.tool_use_id] == "Bash")

    inputs = await make_strategy("clear-tool-uses:trigger=1,keep=2,clear_tool_inputs=true").compact(
        _request(messages), _env()
    )
    uses = [u for m in inputs.messages for u in m.tool_uses]
    assert [u.input == {} for u in uses] == [True] * 8 + [False] * 2
    assert [u.name for u in uses] == [by_id[u.id] for u in uses]
    assert [m.text for m in inputs.messages] == [m.text for m in messages]  # text never rewritten
    assert protocol_problems(inputs.messages, allow_trailing_uses=False) == []


# -- hybrid ---------------------------------------------------------------------------------------


async def test_hybrid_masks_every_call_and_summarizes_every_k_turns():
    summarizer = FakeSummarizer()
    env = _env(summarizer)
    strategy = make_strategy("hybrid:keep=2,every=6,last=4")
    conversation = _conversation(pairs=5)  # 5 assistant turns: no summary yet
    result = await strategy.compact(_request(conversation), env)
    assert summarizer.calls == [] and [e.kind for e in result.events] == ["clear"]
    bodies = [b for m in result.messages for b in m.tool_results_in]
    assert [b.content.startswith("[observation elided") for b in bodies] == [True] * 3 + [False] * 2

    conversation = _conversation(pairs=6)  # 6 turns: summary
    result = await strategy.compact(_request(conversation), env)
    assert [e.kind for e in result.events] == ["clear", "summary"]
    assert len(summarizer.calls) == 1
    assert result.messages[0] is conversation[0] and is_summary_boundary(result.messages[2])
    assert same_messages(result.messages[-4:], conversation[-4:])  # last=4, both results verbatim
    older_results = [b for m in summarizer.calls[0] for b in m.tool_results_in]
    assert len(older_results) == 4 and all(b.content.startswith("[observation elided") for b in older_results)
    real = [m for m in result.messages if not is_synthetic(m) and not is_summary_boundary(m)]
    assert len(real) == 1 + 4
    # The next summary waits for `every` new turns after what the summary kept.
    grown = list(result.messages)
    for k in range(6):
        grown.append(Message.assistant(ToolUseBlock(id=f"z{k}", name="Bash", input={})))
        grown.append(Message.tool_results([ToolResultBlock(tool_use_id=f"z{k}", content="y" * 500)]))
        step = await strategy.compact(_request(grown), env)
        grown = step.messages
        assert len(summarizer.calls) == (1 if k < 5 else 2), k
    assert protocol_problems(grown, allow_trailing_uses=False) == [] and alternates_from_user(grown)
