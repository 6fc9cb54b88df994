"""Compaction strategies by name and spec: the registry, the raw strategy, and the default
strategy's spec parameters overriding the settings they default to."""

import re

import pytest

from agents.compaction import ClearThenSummarize, NoCompaction, make_strategy
from agents.errors import ConfigError
from agents.snapshots._codec import encode_messages
from tests.support.clear_then_summarize_support import (
    OVERHEAD,
    bash_conversation,
    cleared_conversation,
    messages_tokens,
    run_clear_then_summarize,
    strategy_env,
    strategy_request,
    summary_budget,
)

# -- registry -------------------------------------------------------------------------------


def test_make_strategy_unknown_name_lists_the_known_ones():
    with pytest.raises(ConfigError) as info:
        make_strategy("nope")
    message = str(info.value)
    assert "nope" in message
    assert "clear-then-summarize" in message and "raw" in message


def test_make_strategy_builds_the_named_strategy():
    assert isinstance(make_strategy("clear-then-summarize"), ClearThenSummarize)
    assert isinstance(make_strategy("raw"), NoCompaction)


async def test_raw_strategy_never_compacts():
    messages = bash_conversation()
    auto = await NoCompaction().compact(strategy_request(messages, 10), strategy_env())
    assert auto.events == [] and auto.failure is None
    manual = await NoCompaction().compact(strategy_request(messages, 10, "manual"), strategy_env())
    assert manual.failure and "never compacts" in manual.failure
    assert all(a is b for a, b in zip(manual.messages, messages, strict=True))


def test_the_default_takes_spec_parameters_named_in_its_table():
    assert make_strategy("clear-then-summarize:last=3,keep=1") == ClearThenSummarize(last=3, keep=1)
    assert make_strategy("clear-then-summarize:manual_keep=4,min_gain=0,summary_reserve=500") == ClearThenSummarize(
        manual_keep=4, min_gain=0, summary_reserve=500
    )


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("clear-then-summarize:last=0", "last must be >= 1 (or none for the setting compact.preserve_recent_messages)"),
        ("clear-then-summarize:keep=-1", "keep must be >= 0"),
        ("clear-then-summarize:summary_reserve=99", "summary_reserve must be >= 100"),
        ("clear-then-summarize:kep=3", "valid parameters: last: int | None = None, keep: int | None = None"),
    ],
)
def test_default_spec_errors_say_what_is_valid(spec, needle):
    with pytest.raises(ConfigError, match=re.escape(needle)):
        make_strategy(spec)


async def test_a_spec_parameter_overrides_the_setting_it_defaults_to():
    messages = bash_conversation()
    budget = summary_budget(messages)
    by_setting, _ = await run_clear_then_summarize(messages, budget, env=strategy_env(preserve_recent_messages=3))
    by_spec = await make_strategy("clear-then-summarize:last=3").compact(
        strategy_request(messages, budget), strategy_env()
    )
    unset, _ = await run_clear_then_summarize(messages, budget, env=strategy_env())
    assert encode_messages(by_spec.messages) == encode_messages(by_setting.messages)
    assert encode_messages(by_spec.messages) != encode_messages(unset.messages)


async def test_manual_keep_parameter_overrides_manual_keep_messages():
    messages = bash_conversation()
    result = await ClearThenSummarize(manual_keep=6).compact(
        strategy_request(messages, 10**6, "manual"), strategy_env()
    )
    assert result.events[0].messages_summarized == len(messages) - 6
    assert result.messages[-6:] == messages[-6:]


async def test_min_gain_parameter_overrides_min_gain_tokens():
    messages = bash_conversation()
    budget = OVERHEAD + messages_tokens(cleared_conversation(messages))
    gain = messages_tokens(messages) - messages_tokens(cleared_conversation(messages))
    env = strategy_env(min_gain_tokens=gain + 1)
    skipped = await ClearThenSummarize().compact(strategy_request(messages, budget), env)
    assert "clear" not in [e.kind for e in skipped.events]
    cleared = await ClearThenSummarize(min_gain=gain).compact(strategy_request(messages, budget), env)
    assert [e.kind for e in cleared.events] == ["clear"]
