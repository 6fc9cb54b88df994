"""The clear-then-summarize strategy end to end, with a fake summarizer and tiny budgets: the
auto, manual and prompt-too-long triggers, and the protocol invariant on random
conversations. What it leaves on record (Recall, the ledger) is in
test_compaction_strategy_records.py, its specs and the registry in
test_compaction_strategy_specs.py."""

import random

from agents.compaction import ClearThenSummarize, CompactionRequest
from agents.compaction.boundaries import clean_boundaries
from agents.compaction.clearing import is_cleared
from agents.compaction.summary import is_summary_boundary
from agents.messages import Message, TextBlock, ToolResultBlock, protocol_problems
from agents.snapshots._codec import encode_messages
from tests.support.clear_then_summarize_support import (
    KEEP,
    OVERHEAD,
    bash_conversation,
    cleared_conversation,
    messages_tokens,
    run_clear_then_summarize,
    strategy_env,
    strategy_request,
    summary_budget,
)
from tests.support.fakes import FakeSummarizer, random_conversation

# -- auto ---------------------------------------------------------------------------------


async def test_under_budget_leaves_the_conversation_unchanged():
    messages = bash_conversation()
    result, env = await run_clear_then_summarize(messages, OVERHEAD + messages_tokens(messages))
    assert result.events == []
    assert result.failure is None
    assert not result.changed
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))
    assert env.summarizer.calls == []


async def test_clearing_that_is_enough_skips_the_summary():
    messages = bash_conversation()
    result, env = await run_clear_then_summarize(messages, OVERHEAD + messages_tokens(cleared_conversation(messages)))
    assert env.summarizer.calls == []
    assert [e.kind for e in result.events] == ["clear"]
    assert encode_messages(result.messages) == encode_messages(cleared_conversation(messages))


async def test_request_overhead_alone_can_trigger_compaction():
    messages = bash_conversation()
    budget = OVERHEAD + messages_tokens(messages) + 10
    quiet, _ = await run_clear_then_summarize(messages, budget, overhead=OVERHEAD)
    assert quiet.events == []
    loud, _ = await run_clear_then_summarize(messages, budget, overhead=OVERHEAD + 500)
    assert loud.events
    assert loud.events[0].kind == "clear"


async def test_caller_estimate_of_total_tokens_is_trusted():
    messages = bash_conversation()
    request = CompactionRequest(messages=messages, overhead_tokens=OVERHEAD, budget_tokens=10**6, total_tokens=10**7)
    result = await ClearThenSummarize().compact(request, strategy_env())
    assert result.events and result.events[0].kind == "clear"


async def test_still_over_after_clearing_summarizes_keeping_the_last_12_messages():
    messages = bash_conversation()
    result, env = await run_clear_then_summarize(messages, summary_budget(messages))
    assert [e.kind for e in result.events] == ["clear", "summary"]
    assert result.failure is None
    assert is_summary_boundary(result.messages[0])
    assert "fix the parser" in result.messages[0].text
    # recent starts with an assistant turn, so no acknowledgement is added
    assert len(result.messages) == 1 + KEEP
    assert all(a is b for a, b in zip(result.messages[1:], messages[-KEEP:], strict=True))


async def test_auto_summary_sees_the_cleared_older_history():
    messages = bash_conversation()
    _, env = await run_clear_then_summarize(messages, summary_budget(messages))
    [older] = env.summarizer.calls
    assert len(older) == len(messages) - KEEP
    assert encode_messages(older) == encode_messages(cleared_conversation(messages)[: len(messages) - KEEP])


async def test_auto_summary_keeps_fewer_messages_when_12_do_not_fit():
    messages = bash_conversation()
    budget = OVERHEAD + messages_tokens(messages[-6:]) + 200
    result, _ = await run_clear_then_summarize(messages, budget)
    assert result.failure is None
    assert result.events[-1].kind == "summary"
    assert OVERHEAD + messages_tokens(result.messages) <= budget
    assert 2 <= len(result.messages) - 1 < KEEP
    assert protocol_problems(result.messages) == []


async def test_auto_summary_failure_keeps_the_cleared_conversation():
    messages = bash_conversation()
    summarizer = FakeSummarizer(error=RuntimeError("summarizer down"))
    result, _ = await run_clear_then_summarize(messages, summary_budget(messages), env=strategy_env(summarizer))
    assert encode_messages(result.messages) == encode_messages(cleared_conversation(messages))
    assert [e.kind for e in result.events] == ["clear", "summary"]
    failed = result.events[-1]
    assert failed.failed and "summarizer down" in failed.failed
    assert failed.applied is False
    assert result.events[0].applied is True
    assert "summarizer down" in result.failure


async def test_empty_summary_is_a_failure():
    messages = bash_conversation()
    result, _ = await run_clear_then_summarize(
        messages, summary_budget(messages), env=strategy_env(FakeSummarizer(text="  "))
    )
    assert result.failure and "empty" in result.failure
    assert not any(is_summary_boundary(m) for m in result.messages)
    assert encode_messages(result.messages) == encode_messages(cleared_conversation(messages))


async def test_summary_that_can_never_fit_fails_after_a_bounded_number_of_calls():
    messages = bash_conversation()
    messages[-1] = Message.tool_results([ToolResultBlock(tool_use_id="toolu_19", content="z" * 40_000)])
    budget = OVERHEAD + 2_000  # smaller than the final tool_result alone
    summarizer = FakeSummarizer(max_calls=10)
    result, _ = await run_clear_then_summarize(messages, budget, env=strategy_env(summarizer))
    assert len(summarizer.calls) <= 5
    assert result.failure is not None and "over the budget" in result.failure
    assert result.events[-1].failed


async def test_min_gain_tokens_skips_a_clear_that_frees_too_little():
    messages = bash_conversation()
    gain = messages_tokens(messages) - messages_tokens(cleared_conversation(messages))
    budget = summary_budget(messages)
    skipped, env = await run_clear_then_summarize(messages, budget, env=strategy_env(min_gain_tokens=gain + 1))
    assert "clear" not in [e.kind for e in skipped.events]
    assert not any(is_cleared(b) for m in env.summarizer.calls[0] for b in m.tool_results_in)
    taken, _ = await run_clear_then_summarize(messages, budget, env=strategy_env(min_gain_tokens=gain))
    assert [e.kind for e in taken.events][0] == "clear"


async def test_a_clear_that_grows_the_conversation_is_skipped():
    messages = bash_conversation(body_chars=10)  # "[cleared …]" notes are longer than these bodies
    result, _ = await run_clear_then_summarize(
        messages, OVERHEAD + messages_tokens(messages) - 1, env=strategy_env(min_gain_tokens=0)
    )
    assert "clear" not in [e.kind for e in result.events]


# -- manual -------------------------------------------------------------------------------


async def test_manual_keeps_the_last_2_messages_even_under_budget():
    messages = bash_conversation()
    result, env = await run_clear_then_summarize(messages, 10**6, trigger="manual")
    assert result.failure is None
    assert [e.kind for e in result.events] == ["summary"]
    assert [e.trigger for e in result.events] == ["manual"]
    assert len(result.messages) == 3
    assert result.messages[1] is messages[-2] and result.messages[2] is messages[-1]
    [older] = env.summarizer.calls
    assert all(a is b for a, b in zip(older, messages[:-2], strict=True))  # original, not cleared


async def test_manual_failure_returns_the_original_history_with_a_reason():
    messages = bash_conversation()
    summarizer = FakeSummarizer(error=TimeoutError("took too long"))
    result, _ = await run_clear_then_summarize(
        messages, summary_budget(messages), trigger="manual", env=strategy_env(summarizer)
    )
    assert len(result.messages) == len(messages)
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))
    assert result.failure and "took too long" in result.failure
    assert not result.changed


async def test_manual_with_nothing_older_is_a_failure():
    messages = bash_conversation(pairs=0) + [Message.assistant(TextBlock(text="hi"))]
    result, env = await run_clear_then_summarize(messages, 10**6, trigger="manual")
    assert result.failure and "nothing older" in result.failure
    assert env.summarizer.calls == []
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))


# -- prompt too long --------------------------------------------------------------------------


async def test_prompt_too_long_keeps_the_largest_clean_suffix_that_fits():
    messages = bash_conversation()
    budget = OVERHEAD + 100 + 2_500
    result, env = await run_clear_then_summarize(messages, budget, trigger="prompt_too_long")
    room = budget - OVERHEAD - 100  # summary_reserve_tokens=100
    clean = clean_boundaries(messages)
    fitting = [i for i in range(1, len(messages)) if clean[i] and messages_tokens(messages[i:]) <= room]
    split = min(fitting)
    assert not clean[split - 1] or messages_tokens(messages[split - 1 :]) > room
    assert [e.kind for e in result.events] == ["prompt_too_long"]
    assert result.events[0].messages_summarized == split
    recent = [m for m in result.messages if not is_summary_boundary(m)][-(len(messages) - split) :]
    assert all(a is b for a, b in zip(recent, messages[split:], strict=True))
    [older] = env.summarizer.calls
    assert all(a is b for a, b in zip(older, messages[:split], strict=True))


async def test_prompt_too_long_failure_keeps_the_original_history():
    messages = bash_conversation()
    summarizer = FakeSummarizer(error=RuntimeError("nope"))
    result, _ = await run_clear_then_summarize(
        messages, OVERHEAD + 3_000, trigger="prompt_too_long", env=strategy_env(summarizer)
    )
    assert result.failure
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))


async def test_prompt_too_long_fails_when_no_suffix_fits():
    messages = bash_conversation()
    result, env = await run_clear_then_summarize(messages, OVERHEAD + 150, trigger="prompt_too_long")
    assert result.failure and "fits" in result.failure
    assert env.summarizer.calls == []
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))


async def test_prompt_too_long_summarizes_everything_when_only_the_last_result_is_over_the_room():
    messages = bash_conversation()
    last = messages_tokens(messages[-1:])
    result, env = await run_clear_then_summarize(messages, OVERHEAD + last + last // 10, trigger="prompt_too_long")
    assert result.failure is None and len(env.summarizer.calls) == 1
    assert len(result.messages) == 1 and is_summary_boundary(result.messages[0])


# -- the protocol invariant --------------------------------------------------------------------


def _random_conversation(rng: random.Random) -> list[Message]:
    return random_conversation(rng, max_turns=18)


def _random_cases():
    for seed in range(25):
        rng = random.Random(seed)
        messages = _random_conversation(rng)
        total = OVERHEAD + messages_tokens(messages)
        for trigger in ("auto", "manual", "prompt_too_long"):
            for fraction in (0.05, 0.2, 0.5, 0.9, 1.1):
                yield (
                    seed,
                    messages,
                    trigger,
                    max(OVERHEAD + 1, int(total * fraction)),
                    rng.randint(0, 4),
                )


async def test_no_compaction_path_splits_a_tool_pair():
    for seed, messages, trigger, budget, keep_tools in _random_cases():
        env = strategy_env(preserve_recent_messages=_keep_for(seed), preserve_recent_tool_uses=keep_tools)
        result = await ClearThenSummarize().compact(strategy_request(messages, budget, trigger), env)
        assert protocol_problems(result.messages, allow_trailing_uses=False) == [], (
            seed,
            trigger,
            budget,
        )


async def test_every_compacted_conversation_alternates_roles_from_a_user_turn():
    for seed, messages, trigger, budget, keep_tools in _random_cases():
        env = strategy_env(preserve_recent_messages=_keep_for(seed), preserve_recent_tool_uses=keep_tools)
        result = await ClearThenSummarize().compact(strategy_request(messages, budget, trigger), env)
        assert result.messages[0].role == "user"
        assert all(a.role != b.role for a, b in zip(result.messages, result.messages[1:], strict=False)), (
            seed,
            trigger,
        )


def _keep_for(seed: int) -> int:
    return random.Random(1_000 + seed).choice([1, 2, 3, 5, 12])
