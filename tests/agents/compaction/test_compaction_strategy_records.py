"""What a clear-then-summarize compaction leaves on record: cleared bodies stored for Recall
(exact, and surviving a reopened store), and ledger events with their token counts and
cache costs."""

import re

import pytest

from agents.compaction.ledger import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_MULTIPLIER,
    input_price_per_mtok,
)
from tests.support.clear_then_summarize_support import (
    KEEP,
    MODEL,
    OVERHEAD,
    bash_conversation,
    cleared_conversation,
    messages_tokens,
    run_clear_then_summarize,
    strategy_env,
    summary_budget,
)
from tools.artifacts import ArtifactStore
from tools.base import ToolContext, ToolLimits
from tools.recall import RecallInput, RecallTool

# -- Recall ----------------------------------------------------------------------------------


async def _recall_all(tool: RecallTool, ctx: ToolContext, recall_id: str) -> str:
    note = re.compile(r'\n\[(\d+) more chars; Recall\(id="([^"]+)", offset=(\d+)\) continues\]$')
    text, offset = "", 0
    for _ in range(1_000):
        page = (await tool.run(RecallInput(id=recall_id, offset=offset), ctx)).content
        match = note.search(page)
        if match is None:
            return text + page
        assert match.group(2) == recall_id
        text += page[: match.start()]
        offset = int(match.group(3))
        assert offset == len(text)
    raise AssertionError("Recall never finished")


async def test_cleared_bodies_are_stored_and_recall_returns_the_exact_original(tmp_path):
    messages = bash_conversation(body_chars=3_000)
    originals = {b.tool_use_id: b.content for m in messages for b in m.tool_results_in}
    store = ArtifactStore(tmp_path / "artifacts")
    try:
        result, _ = await run_clear_then_summarize(
            messages, OVERHEAD + messages_tokens(cleared_conversation(messages)), env=strategy_env(artifacts=store)
        )
        ids = re.findall(
            r'Recall\(id="([^"]+)"\)',
            "\n".join(b.content for m in result.messages for b in m.tool_results_in),
        )
        assert len(ids) == result.events[0].results_cleared == 20 - 6
        assert len(store) == len(ids)
        tool = RecallTool()
        ctx = ToolContext(
            workspace=tmp_path,
            limits=ToolLimits(result_max_tokens=275),
            artifacts=store,  # recall pages of 700 characters
        )
        for recall_id in ids:
            assert await _recall_all(tool, ctx, recall_id) == originals[recall_id]
    finally:
        store.close()


async def test_artifacts_survive_reopening_the_store(tmp_path):
    messages = bash_conversation()
    store = ArtifactStore(tmp_path / "artifacts")
    await run_clear_then_summarize(
        messages, OVERHEAD + messages_tokens(cleared_conversation(messages)), env=strategy_env(artifacts=store)
    )
    store.close()
    reopened = ArtifactStore(tmp_path / "artifacts")
    try:
        assert reopened.get("toolu_00") == messages[2].tool_results_in[0].content
    finally:
        reopened.close()


# -- ledger ---------------------------------------------------------------------------------


def _expected_costs(before: int, after: int, unchanged: int, cached: int | None = None) -> tuple[int, float, float]:
    """The ledger's formulas; `cached` is what the previous call sent (default: before)."""
    price = input_price_per_mtok(MODEL) / 1_000_000
    invalidated = (before if cached is None else cached) - unchanged
    net = (CACHE_WRITE_MULTIPLIER * (after - unchanged) - CACHE_READ_MULTIPLIER * invalidated) * price
    saving = CACHE_READ_MULTIPLIER * (before - after) * price
    return invalidated, net, saving


async def test_clear_event_records_tokens_counts_and_cache_costs():
    messages = bash_conversation()
    cleared = cleared_conversation(messages)
    result, _ = await run_clear_then_summarize(messages, OVERHEAD + messages_tokens(cleared))
    [event] = result.events
    before, after = OVERHEAD + messages_tokens(messages), OVERHEAD + messages_tokens(cleared)
    assert (event.tokens_before, event.tokens_after) == (before, after)
    assert event.tokens_before > event.tokens_after
    assert event.tokens_freed == before - after
    assert event.results_cleared == 20 - 6
    assert (event.kind, event.trigger, event.strategy) == ("clear", "auto", "clear-then-summarize")
    unchanged = OVERHEAD + messages_tokens(messages[:2])  # the first tool_result is the first change
    invalidated, net, saving = _expected_costs(before, after, unchanged)
    assert event.cached_prefix_invalidated_tokens == invalidated > 0
    assert event.estimated_next_call_net_cost_usd == pytest.approx(net, abs=1e-6)
    assert event.estimated_saving_per_later_call_usd == pytest.approx(saving, abs=1e-6)
    assert event.failed is None and event.applied


async def test_summary_event_records_messages_summarized_and_cache_costs():
    messages = bash_conversation()
    result, _ = await run_clear_then_summarize(messages, summary_budget(messages))
    event = result.events[-1]
    assert event.kind == "summary"
    assert event.messages_summarized == len(messages) - KEEP
    assert event.summarizer_calls == 1
    assert event.tokens_before > event.tokens_after == OVERHEAD + messages_tokens(result.messages)
    # The cache was written for the original conversation, before the clearing step.
    cached = OVERHEAD + messages_tokens(messages)
    invalidated, net, saving = _expected_costs(event.tokens_before, event.tokens_after, OVERHEAD, cached)
    assert event.cached_prefix_invalidated_tokens == invalidated > 0
    assert event.estimated_next_call_net_cost_usd == pytest.approx(net, abs=1e-6)
    assert event.estimated_saving_per_later_call_usd == pytest.approx(saving, abs=1e-6)
