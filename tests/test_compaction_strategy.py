"""The clear-then-summarize strategy end to end, with a fake summarizer and tiny budgets."""

import random
import re

import pytest

from agents.codec import encode_messages
from agents.compaction import (
    ClearThenSummarize,
    CompactionEnv,
    CompactionRequest,
    NoCompaction,
    make_strategy,
)
from agents.compaction.boundaries import clean_boundaries
from agents.compaction.clearing import clear_old_tool_results, is_cleared
from agents.compaction.ledger import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_MULTIPLIER,
    input_price_per_mtok,
)
from agents.compaction.summary import is_summary_boundary
from agents.config import CompactSettings, SummarizerSettings
from agents.errors import ConfigError
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, protocol_problems
from agents.tokens import CharRatioEstimator, estimate_messages_tokens
from tests.fakes import random_conversation
from tools.artifacts import ArtifactStore
from tools.base import ToolContext, ToolLimits
from tools.recall import RecallInput, RecallTool

COUNTER = CharRatioEstimator()
MODEL = "claude-sonnet-4-5"
OVERHEAD = 300
KEEP = 12  # preserve_recent_messages
KEEP_TOOLS = 3  # preserve_recent_tool_uses


class FakeSummarizer:
    """Records the messages it was given; answers `text`, raises `error`, and refuses to be
    called more than `max_calls` times (so a runaway loop fails instead of hanging)."""

    def __init__(
        self,
        text: str = "## Objective\nfix the parser",
        error: Exception | None = None,
        max_calls: int = 20,
    ):
        self.text = text
        self.error = error
        self.max_calls = max_calls
        self.calls: list[list[Message]] = []

    async def summarize(self, messages: list[Message], *, focus: str | None = None) -> str:
        self.calls.append(list(messages))
        if len(self.calls) > self.max_calls:
            raise RuntimeError(f"called more than {self.max_calls} times")
        if self.error is not None:
            raise self.error
        return self.text


def _settings(**overrides) -> CompactSettings:
    values = {
        "min_gain_tokens": 0,
        "preserve_recent_messages": KEEP,
        "preserve_recent_tool_uses": KEEP_TOOLS,
        "manual_keep_messages": 2,
        "summary_reserve_tokens": 100,
    }
    return CompactSettings(**(values | overrides))


def _env(summarizer=None, artifacts=None, **overrides) -> CompactionEnv:
    return CompactionEnv(
        counter=COUNTER,
        summarizer=summarizer or FakeSummarizer(),
        artifacts=artifacts,
        settings=_settings(**overrides),
        summarizer_settings=SummarizerSettings(),
        model_name=MODEL,
    )


def _body(k: int, chars: int) -> str:
    rng = random.Random(k)
    words = [
        "alpha",
        "β-beta",
        "gamma",
        "δέλτα",
        "ε",
        "🐍",
        "tests/test_x.py::test_y",
        "exit code: 1",
    ]
    out = []
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(words))
    return " ".join(out)[:chars]


def _conversation(pairs: int = 20, body_chars: int = 2_000) -> list[Message]:
    """user task, then `pairs` of (assistant text + tool_use, user tool_result); 1 + 2*pairs messages."""
    messages = [Message.user("Make the parser accept empty input.")]
    for k in range(pairs):
        messages.append(
            Message.assistant(
                TextBlock(text=f"Step {k}."),
                ToolUseBlock(id=f"toolu_{k:02d}", name="Bash", input={"command": f"pytest -k {k}"}),
            )
        )
        messages.append(
            Message.tool_results(
                [ToolResultBlock(tool_use_id=f"toolu_{k:02d}", content=_body(k, body_chars))]
            )
        )
    return messages


def _tokens(messages) -> int:
    return estimate_messages_tokens(COUNTER, messages)


def _cleared(messages) -> list[Message]:
    return clear_old_tool_results(
        messages, keep_recent_messages=KEEP, keep_recent_tool_uses=KEEP_TOOLS
    ).messages


def _request(messages, budget, trigger="auto", overhead=OVERHEAD) -> CompactionRequest:
    return CompactionRequest(
        messages=messages, overhead_tokens=overhead, budget_tokens=budget, trigger=trigger
    )


def _summary_budget(messages, keep=KEEP, extra=200) -> int:
    """A budget that the cleared conversation exceeds but summary + last `keep` fits."""
    budget = OVERHEAD + _tokens(messages[-keep:]) + extra
    assert OVERHEAD + _tokens(_cleared(messages)) > budget
    return budget


async def _compact(messages, budget, trigger="auto", env=None, overhead=OVERHEAD):
    env = env or _env()
    return await ClearThenSummarize().compact(
        _request(messages, budget, trigger, overhead), env
    ), env


# -- auto ---------------------------------------------------------------------------------


async def test_under_budget_leaves_the_conversation_unchanged():
    messages = _conversation()
    result, env = await _compact(messages, OVERHEAD + _tokens(messages))
    assert result.events == []
    assert result.failure is None
    assert not result.changed
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))
    assert env.summarizer.calls == []


async def test_clearing_that_is_enough_skips_the_summary():
    messages = _conversation()
    result, env = await _compact(messages, OVERHEAD + _tokens(_cleared(messages)))
    assert env.summarizer.calls == []
    assert [e.kind for e in result.events] == ["clear"]
    assert encode_messages(result.messages) == encode_messages(_cleared(messages))


async def test_request_overhead_alone_can_trigger_compaction():
    messages = _conversation()
    budget = OVERHEAD + _tokens(messages) + 10
    quiet, _ = await _compact(messages, budget, overhead=OVERHEAD)
    assert quiet.events == []
    loud, _ = await _compact(messages, budget, overhead=OVERHEAD + 500)
    assert loud.events
    assert loud.events[0].kind == "clear"


async def test_caller_estimate_of_total_tokens_is_trusted():
    messages = _conversation()
    request = CompactionRequest(
        messages=messages, overhead_tokens=OVERHEAD, budget_tokens=10**6, total_tokens=10**7
    )
    result = await ClearThenSummarize().compact(request, _env())
    assert result.events and result.events[0].kind == "clear"


async def test_still_over_after_clearing_summarizes_keeping_the_last_12_messages():
    messages = _conversation()
    result, env = await _compact(messages, _summary_budget(messages))
    assert [e.kind for e in result.events] == ["clear", "summary"]
    assert result.failure is None
    assert is_summary_boundary(result.messages[0])
    assert "fix the parser" in result.messages[0].text
    # recent starts with an assistant turn, so no acknowledgement is added
    assert len(result.messages) == 1 + KEEP
    assert all(a is b for a, b in zip(result.messages[1:], messages[-KEEP:], strict=True))


async def test_auto_summary_sees_the_cleared_older_history():
    messages = _conversation()
    _, env = await _compact(messages, _summary_budget(messages))
    [older] = env.summarizer.calls
    assert len(older) == len(messages) - KEEP
    assert encode_messages(older) == encode_messages(_cleared(messages)[: len(messages) - KEEP])


async def test_auto_summary_keeps_fewer_messages_when_12_do_not_fit():
    messages = _conversation()
    budget = OVERHEAD + _tokens(messages[-6:]) + 200
    result, _ = await _compact(messages, budget)
    assert result.failure is None
    assert result.events[-1].kind == "summary"
    assert OVERHEAD + _tokens(result.messages) <= budget
    assert 2 <= len(result.messages) - 1 < KEEP
    assert protocol_problems(result.messages) == []


async def test_auto_summary_failure_keeps_the_cleared_conversation():
    messages = _conversation()
    summarizer = FakeSummarizer(error=RuntimeError("summarizer down"))
    result, _ = await _compact(messages, _summary_budget(messages), env=_env(summarizer))
    assert encode_messages(result.messages) == encode_messages(_cleared(messages))
    assert [e.kind for e in result.events] == ["clear", "summary"]
    failed = result.events[-1]
    assert failed.failed and "summarizer down" in failed.failed
    assert failed.applied is False
    assert result.events[0].applied is True
    assert "summarizer down" in result.failure


async def test_empty_summary_is_a_failure():
    messages = _conversation()
    result, _ = await _compact(
        messages, _summary_budget(messages), env=_env(FakeSummarizer(text="  "))
    )
    assert result.failure and "empty" in result.failure
    assert not any(is_summary_boundary(m) for m in result.messages)
    assert encode_messages(result.messages) == encode_messages(_cleared(messages))


async def test_summary_that_can_never_fit_fails_after_a_bounded_number_of_calls():
    messages = _conversation()
    messages[-1] = Message.tool_results(
        [ToolResultBlock(tool_use_id="toolu_19", content="z" * 40_000)]
    )
    budget = OVERHEAD + 2_000  # smaller than the final tool_result alone
    summarizer = FakeSummarizer(max_calls=10)
    result, _ = await _compact(messages, budget, env=_env(summarizer))
    assert len(summarizer.calls) <= 5
    assert result.failure is not None and "over the budget" in result.failure
    assert result.events[-1].failed


async def test_min_gain_tokens_skips_a_clear_that_frees_too_little():
    messages = _conversation()
    gain = _tokens(messages) - _tokens(_cleared(messages))
    budget = _summary_budget(messages)
    skipped, env = await _compact(messages, budget, env=_env(min_gain_tokens=gain + 1))
    assert "clear" not in [e.kind for e in skipped.events]
    assert not any(is_cleared(b) for m in env.summarizer.calls[0] for b in m.tool_results_in)
    taken, _ = await _compact(messages, budget, env=_env(min_gain_tokens=gain))
    assert [e.kind for e in taken.events][0] == "clear"


async def test_a_clear_that_grows_the_conversation_is_skipped():
    messages = _conversation(body_chars=10)  # "[cleared …]" notes are longer than these bodies
    result, _ = await _compact(
        messages, OVERHEAD + _tokens(messages) - 1, env=_env(min_gain_tokens=0)
    )
    assert "clear" not in [e.kind for e in result.events]


# -- manual -------------------------------------------------------------------------------


async def test_manual_keeps_the_last_2_messages_even_under_budget():
    messages = _conversation()
    result, env = await _compact(messages, 10**6, trigger="manual")
    assert result.failure is None
    assert [e.kind for e in result.events] == ["summary"]
    assert [e.trigger for e in result.events] == ["manual"]
    assert len(result.messages) == 3
    assert result.messages[1] is messages[-2] and result.messages[2] is messages[-1]
    [older] = env.summarizer.calls
    assert all(a is b for a, b in zip(older, messages[:-2], strict=True))  # original, not cleared


async def test_manual_failure_returns_the_original_history_with_a_reason():
    messages = _conversation()
    summarizer = FakeSummarizer(error=TimeoutError("took too long"))
    result, _ = await _compact(
        messages, _summary_budget(messages), trigger="manual", env=_env(summarizer)
    )
    assert len(result.messages) == len(messages)
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))
    assert result.failure and "took too long" in result.failure
    assert not result.changed


async def test_manual_with_nothing_older_is_a_failure():
    messages = _conversation(pairs=0) + [Message.assistant(TextBlock(text="hi"))]
    result, env = await _compact(messages, 10**6, trigger="manual")
    assert result.failure and "nothing older" in result.failure
    assert env.summarizer.calls == []
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))


# -- prompt too long --------------------------------------------------------------------------


async def test_prompt_too_long_keeps_the_largest_clean_suffix_that_fits():
    messages = _conversation()
    budget = OVERHEAD + 100 + 2_500
    result, env = await _compact(messages, budget, trigger="prompt_too_long")
    room = budget - OVERHEAD - 100  # summary_reserve_tokens=100
    clean = clean_boundaries(messages)
    fitting = [i for i in range(1, len(messages)) if clean[i] and _tokens(messages[i:]) <= room]
    split = min(fitting)
    assert not clean[split - 1] or _tokens(messages[split - 1 :]) > room
    assert [e.kind for e in result.events] == ["prompt_too_long"]
    assert result.events[0].messages_summarized == split
    recent = [m for m in result.messages if not is_summary_boundary(m)][-(len(messages) - split) :]
    assert all(a is b for a, b in zip(recent, messages[split:], strict=True))
    [older] = env.summarizer.calls
    assert all(a is b for a, b in zip(older, messages[:split], strict=True))


async def test_prompt_too_long_failure_keeps_the_original_history():
    messages = _conversation()
    summarizer = FakeSummarizer(error=RuntimeError("nope"))
    result, _ = await _compact(
        messages, OVERHEAD + 3_000, trigger="prompt_too_long", env=_env(summarizer)
    )
    assert result.failure
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))


async def test_prompt_too_long_fails_when_no_suffix_fits():
    messages = _conversation()
    result, env = await _compact(messages, OVERHEAD + 150, trigger="prompt_too_long")
    assert result.failure and "fits" in result.failure
    assert env.summarizer.calls == []
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))


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
    messages = _conversation(body_chars=3_000)
    originals = {b.tool_use_id: b.content for m in messages for b in m.tool_results_in}
    store = ArtifactStore(tmp_path / "artifacts")
    try:
        result, _ = await _compact(
            messages, OVERHEAD + _tokens(_cleared(messages)), env=_env(artifacts=store)
        )
        ids = re.findall(
            r'Recall\(id="([^"]+)"\)',
            "\n".join(b.content for m in result.messages for b in m.tool_results_in),
        )
        assert len(ids) == result.events[0].results_cleared == 20 - 6
        assert len(store) == len(ids)
        tool = RecallTool()
        ctx = ToolContext(
            workspace=tmp_path, limits=ToolLimits(result_max_tokens=275), artifacts=store  # recall pages of 700 characters
        )
        for recall_id in ids:
            assert await _recall_all(tool, ctx, recall_id) == originals[recall_id]
    finally:
        store.close()


async def test_artifacts_survive_reopening_the_store(tmp_path):
    messages = _conversation()
    store = ArtifactStore(tmp_path / "artifacts")
    await _compact(messages, OVERHEAD + _tokens(_cleared(messages)), env=_env(artifacts=store))
    store.close()
    reopened = ArtifactStore(tmp_path / "artifacts")
    try:
        assert reopened.get("toolu_00") == messages[2].tool_results_in[0].content
    finally:
        reopened.close()


# -- ledger ---------------------------------------------------------------------------------


def _expected_costs(
    before: int, after: int, unchanged: int, cached: int | None = None
) -> tuple[int, float, float]:
    """The ledger's formulas; `cached` is what the previous call sent (default: before)."""
    price = input_price_per_mtok(MODEL) / 1_000_000
    invalidated = (before if cached is None else cached) - unchanged
    net = (
        CACHE_WRITE_MULTIPLIER * (after - unchanged) - CACHE_READ_MULTIPLIER * invalidated
    ) * price
    saving = CACHE_READ_MULTIPLIER * (before - after) * price
    return invalidated, net, saving


async def test_clear_event_records_tokens_counts_and_cache_costs():
    messages = _conversation()
    cleared = _cleared(messages)
    result, _ = await _compact(messages, OVERHEAD + _tokens(cleared))
    [event] = result.events
    before, after = OVERHEAD + _tokens(messages), OVERHEAD + _tokens(cleared)
    assert (event.tokens_before, event.tokens_after) == (before, after)
    assert event.tokens_before > event.tokens_after
    assert event.tokens_freed == before - after
    assert event.results_cleared == 20 - 6
    assert (event.kind, event.trigger, event.strategy) == ("clear", "auto", "clear-then-summarize")
    unchanged = OVERHEAD + _tokens(messages[:2])  # the first tool_result is the first change
    invalidated, net, saving = _expected_costs(before, after, unchanged)
    assert event.cached_prefix_invalidated_tokens == invalidated > 0
    assert event.estimated_next_call_net_cost_usd == pytest.approx(net, abs=1e-6)
    assert event.estimated_saving_per_later_call_usd == pytest.approx(saving, abs=1e-6)
    assert event.failed is None and event.applied


async def test_summary_event_records_messages_summarized_and_cache_costs():
    messages = _conversation()
    result, _ = await _compact(messages, _summary_budget(messages))
    event = result.events[-1]
    assert event.kind == "summary"
    assert event.messages_summarized == len(messages) - KEEP
    assert event.summarizer_calls == 1
    assert event.tokens_before > event.tokens_after == OVERHEAD + _tokens(result.messages)
    # The cache was written for the original conversation, before the clearing step.
    cached = OVERHEAD + _tokens(messages)
    invalidated, net, saving = _expected_costs(event.tokens_before, event.tokens_after, OVERHEAD, cached)
    assert event.cached_prefix_invalidated_tokens == invalidated > 0
    assert event.estimated_next_call_net_cost_usd == pytest.approx(net, abs=1e-6)
    assert event.estimated_saving_per_later_call_usd == pytest.approx(saving, abs=1e-6)


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
    messages = _conversation()
    auto = await NoCompaction().compact(_request(messages, 10), _env())
    assert auto.events == [] and auto.failure is None
    manual = await NoCompaction().compact(_request(messages, 10, "manual"), _env())
    assert manual.failure and "never compacts" in manual.failure
    assert all(a is b for a, b in zip(manual.messages, messages, strict=True))


def test_the_default_takes_spec_parameters_named_in_its_table():
    assert make_strategy("clear-then-summarize:last=3,keep=1") == ClearThenSummarize(last=3, keep=1)
    assert make_strategy(
        "clear-then-summarize:manual_keep=4,min_gain=0,summary_reserve=500"
    ) == ClearThenSummarize(manual_keep=4, min_gain=0, summary_reserve=500)


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
    messages = _conversation()
    budget = _summary_budget(messages)
    by_setting, _ = await _compact(messages, budget, env=_env(preserve_recent_messages=3))
    by_spec = await make_strategy("clear-then-summarize:last=3").compact(_request(messages, budget), _env())
    unset, _ = await _compact(messages, budget, env=_env())
    assert encode_messages(by_spec.messages) == encode_messages(by_setting.messages)
    assert encode_messages(by_spec.messages) != encode_messages(unset.messages)


async def test_manual_keep_parameter_overrides_manual_keep_messages():
    messages = _conversation()
    result = await ClearThenSummarize(manual_keep=6).compact(_request(messages, 10**6, "manual"), _env())
    assert result.events[0].messages_summarized == len(messages) - 6
    assert result.messages[-6:] == messages[-6:]


async def test_min_gain_parameter_overrides_min_gain_tokens():
    messages = _conversation()
    budget = OVERHEAD + _tokens(_cleared(messages))
    gain = _tokens(messages) - _tokens(_cleared(messages))
    env = _env(min_gain_tokens=gain + 1)
    skipped = await ClearThenSummarize().compact(_request(messages, budget), env)
    assert "clear" not in [e.kind for e in skipped.events]
    cleared = await ClearThenSummarize(min_gain=gain).compact(_request(messages, budget), env)
    assert [e.kind for e in cleared.events] == ["clear"]


# -- the protocol invariant --------------------------------------------------------------------


def _random_conversation(rng: random.Random) -> list[Message]:
    return random_conversation(rng, max_turns=18)


def _random_cases():
    for seed in range(25):
        rng = random.Random(seed)
        messages = _random_conversation(rng)
        total = OVERHEAD + _tokens(messages)
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
        env = _env(preserve_recent_messages=_keep_for(seed), preserve_recent_tool_uses=keep_tools)
        result = await ClearThenSummarize().compact(_request(messages, budget, trigger), env)
        assert protocol_problems(result.messages, allow_trailing_uses=False) == [], (
            seed,
            trigger,
            budget,
        )


async def test_every_compacted_conversation_alternates_roles_from_a_user_turn():
    for seed, messages, trigger, budget, keep_tools in _random_cases():
        env = _env(preserve_recent_messages=_keep_for(seed), preserve_recent_tool_uses=keep_tools)
        result = await ClearThenSummarize().compact(_request(messages, budget, trigger), env)
        assert result.messages[0].role == "user"
        assert all(
            a.role != b.role for a, b in zip(result.messages, result.messages[1:], strict=False)
        ), (seed, trigger)


def _keep_for(seed: int) -> int:
    return random.Random(1_000 + seed).choice([1, 2, 3, 5, 12])
