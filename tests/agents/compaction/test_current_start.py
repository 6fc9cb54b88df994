"""When `current` compacts: by default once the request passes the window minus the output
reserve and its headroom (a request that fits is sent as it is); with `start=…` before the
budget is reached, or after it but never past the window minus the output reserve."""

import pytest

from agents.compaction import CompactionEnv, CompactionRequest, make_strategy
from agents.errors import ConfigError
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.settings._config import CompactSettings, SummarizerSettings
from agents.tokens import CharRatioEstimator, estimate_messages_tokens

COUNTER = CharRatioEstimator()
ENV = CompactionEnv(
    counter=COUNTER,
    summarizer=None,
    artifacts=None,
    settings=CompactSettings(),
    summarizer_settings=SummarizerSettings(),
    model_name="claude-sonnet-4-5",
)


def _conversation() -> list[Message]:
    messages = [Message.user("Make the parser accept empty input.")]
    for k in range(12):
        use = ToolUseBlock(id=f"toolu_{k:02d}", name="bash", input={"command": f"cat src/part{k}.py"})
        body = f"def part{k}():\n" + "x" * 1_500
        messages += [
            Message.assistant(TextBlock(text=f"Step {k}."), use),
            Message.tool_results([ToolResultBlock(tool_use_id=use.id, content=body)]),
        ]
    return messages


async def test_a_request_past_start_times_the_budget_is_compacted_to_the_target_though_under_the_budget():
    messages = _conversation()
    tokens = estimate_messages_tokens(COUNTER, messages)
    request = CompactionRequest(messages=messages, overhead_tokens=0, budget_tokens=int(tokens / 0.7), trigger="auto")
    assert not (await make_strategy("current").compact(request, ENV)).changed
    result = await make_strategy("current:start=0.6,target=0.3").compact(request, ENV)
    assert result.changed and estimate_messages_tokens(COUNTER, result.messages) <= 0.3 * request.budget_tokens


def test_a_start_below_the_target_is_refused_naming_both():
    with pytest.raises(ConfigError, match="start must be >= target"):
        make_strategy("current:start=0.5")


async def test_a_start_over_one_leaves_a_request_past_the_budget_that_still_fits_the_window():
    messages = _conversation()
    tokens = estimate_messages_tokens(COUNTER, messages)
    request = CompactionRequest(messages=messages, overhead_tokens=0, budget_tokens=int(tokens / 1.1), trigger="auto")
    assert (await make_strategy("current:start=1.0").compact(request, ENV)).changed
    assert not (
        await make_strategy("current:start=1.25").compact(request, ENV)
    ).changed  # ratio 0.8: the limit is 1.25×


async def test_the_default_sends_a_request_over_the_budget_unchanged_while_it_fits_the_window():
    messages = _conversation()
    tokens = estimate_messages_tokens(COUNTER, messages)
    # ratio 0.8: the window less the output reserve is 1.25 × the budget; less 5% headroom, 1.1875×
    request = CompactionRequest(messages=messages, overhead_tokens=0, budget_tokens=int(tokens / 1.15), trigger="auto")
    assert not (await make_strategy("current").compact(request, ENV)).changed


async def test_the_default_compacts_to_its_target_once_past_the_window_less_its_headroom():
    messages = _conversation()
    tokens = estimate_messages_tokens(COUNTER, messages)
    request = CompactionRequest(messages=messages, overhead_tokens=0, budget_tokens=int(tokens / 1.2), trigger="auto")
    result = await make_strategy("current").compact(request, ENV)
    assert result.changed and estimate_messages_tokens(COUNTER, result.messages) <= 0.6 * request.budget_tokens


async def test_a_larger_headroom_compacts_a_request_the_default_leaves():
    messages = _conversation()
    tokens = estimate_messages_tokens(COUNTER, messages)
    request = CompactionRequest(messages=messages, overhead_tokens=0, budget_tokens=int(tokens / 1.15), trigger="auto")
    assert (await make_strategy("current:headroom=0.1").compact(request, ENV)).changed  # 1.125× the budget


async def test_a_start_over_one_never_waits_past_the_window_minus_the_output_reserve():
    messages = _conversation()
    tokens = estimate_messages_tokens(COUNTER, messages)
    request = CompactionRequest(messages=messages, overhead_tokens=0, budget_tokens=int(tokens / 1.3), trigger="auto")
    result = await make_strategy("current:start=3").compact(request, ENV)
    assert result.changed and estimate_messages_tokens(COUNTER, result.messages) <= request.budget_tokens
