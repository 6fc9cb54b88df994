"""What holds for every baseline strategy: protocol-complete output on random conversations
for every trigger, the ledger's events when the conversation changes, and the
prompt-too-long path that drops or summarizes to fit."""

import random

import pytest

from agents.compaction import make_strategy
from agents.compaction.ledger import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_MULTIPLIER,
    input_price_per_mtok,
)
from agents.compaction.notes import is_synthetic
from agents.compaction.summary import is_summary_boundary
from agents.messages import TextBlock, protocol_problems
from tests.support.fakes import COMPACTION_MODEL as MODEL
from tests.support.fakes import COMPACTION_OVERHEAD as OVERHEAD
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

TRIGGERS = ("auto", "manual", "prompt_too_long")

# -- every strategy on random conversations ----------------------------------------------------------

SPECS = [
    "truncate",
    "mask",
    "mask:keep=1",
    "window",
    "window:first=0,last=3",
    "window:first=2,last=1",
    "summarize",
    "summarize:max_events=6,last=3",
    "amortized",
    "amortized:first=0",
    "clear-tool-uses",
    "clear-tool-uses:trigger=1,keep=1,clear_tool_inputs=true,exclude_tools=Agent",
    "hybrid",
    "hybrid:keep=1,every=2,last=3",
    # the peers' units and options
    "mask:keep=3,unit=events",
    "mask:keep=2,polling=3",
    "window:first=0,last=5,unit=events",
    "window:first=2,last=3,unit=events",
    "summarize:max_events=8,last=4,unit=events",
    "amortized:max_events=6,keep_last=3,unit=events",
    "amortized:first=0,max_tokens=1,unit=events",
    "clear-tool-uses:trigger=1,count_cleared=true",
    "hybrid:keep=1,every=3,last=3,count_kept=true,summarize_unmasked=true",
]


def _texts(messages) -> list[str]:
    return [
        b.text
        for m in messages
        if not is_synthetic(m) and not is_summary_boundary(m)
        for b in m.content
        if isinstance(b, TextBlock)
    ]


@pytest.mark.parametrize("spec", SPECS)
async def test_every_output_is_protocol_complete_for_every_trigger(spec):
    for seed in range(30):
        rng = random.Random(seed)
        messages = random_conversation(rng)
        total = compaction_tokens(messages)
        for trigger in TRIGGERS:
            for fraction in (0.05, 0.3, 0.7, 1.1):
                budget = max(OVERHEAD + 1, int(total * fraction))
                where = (spec, seed, trigger, fraction)
                result = await make_strategy(spec).compact(_request(messages, budget, trigger), _env())
                out = result.messages
                assert protocol_problems(out, allow_trailing_uses=False) == [], where
                assert alternates_from_user(out), where
                # Text is never rewritten: every real text survives verbatim, in order.
                originals = _texts(messages)
                kept = _texts(out)
                it = iter(originals)
                assert all(t in it for t in kept), where
                # A message that did not change is the very same object.
                ids = {id(m) for m in messages}
                for m in out:
                    if m in messages:
                        assert id(m) in ids or is_synthetic(m), where
                if result.changed:
                    assert any(e.applied for e in result.events), where
                    assert result.events[-1].tokens_after == compaction_tokens(out) or result.failure, where
                else:
                    assert same_messages(out, messages), where
                if trigger == "prompt_too_long" and result.changed and result.failure is None:
                    assert compaction_tokens(out) <= budget, where


# -- ledger ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kinds"),
    [
        ("mask:keep=2", ["clear"]),
        ("window:last=6", ["clear"]),
        ("summarize:max_events=5", ["summary"]),
        ("amortized:max_tokens=1", ["clear"]),
        ("clear-tool-uses:trigger=1", ["clear"]),
        ("hybrid:keep=2,every=3", ["clear", "summary"]),
    ],
)
async def test_ledger_events_when_the_conversation_changes(spec, kinds):
    messages = _conversation(pairs=10)
    result = await make_strategy(spec).compact(_request(messages), _env())
    assert [e.kind for e in result.events] == kinds
    price = input_price_per_mtok(MODEL) / 1_000_000
    cached = compaction_tokens(messages)
    before = cached
    for event in result.events:
        assert event.applied and event.failed is None and event.trigger == "auto"
        assert event.strategy == spec.split(":")[0]
        assert event.tokens_before == before and event.tokens_after < event.tokens_before
        assert event.results_cleared > 0 or event.messages_summarized > 0
        unchanged = cached - event.cached_prefix_invalidated_tokens
        assert OVERHEAD <= unchanged < cached
        net = (
            CACHE_WRITE_MULTIPLIER * (event.tokens_after - unchanged) - CACHE_READ_MULTIPLIER * (cached - unchanged)
        ) * price
        assert event.estimated_next_call_net_cost_usd == pytest.approx(net, abs=1e-6)
        saving = CACHE_READ_MULTIPLIER * (event.tokens_before - event.tokens_after) * price
        assert event.estimated_saving_per_later_call_usd == pytest.approx(saving, abs=1e-6)
        before = event.tokens_after
    assert result.events[-1].tokens_after == compaction_tokens(result.messages)


async def test_prompt_too_long_drops_to_fit_or_summarizes_to_fit():
    messages = _conversation(pairs=15)
    budget = OVERHEAD + 4_000
    for spec in ("mask", "window", "amortized", "clear-tool-uses"):
        summarizer = FakeSummarizer()
        result = await make_strategy(spec).compact(_request(messages, budget, "prompt_too_long"), _env(summarizer))
        assert result.failure is None, spec
        assert compaction_tokens(result.messages) <= budget and summarizer.calls == [], spec
        assert result.messages[0] is messages[0]
    budget = OVERHEAD + 1_500  # below what masking alone reaches
    for spec in ("summarize", "hybrid"):
        summarizer = FakeSummarizer()
        result = await make_strategy(spec).compact(_request(messages, budget, "prompt_too_long"), _env(summarizer))
        assert result.failure is None and len(summarizer.calls) == 1, spec
        assert result.events[-1].kind == "prompt_too_long"
        assert compaction_tokens(result.messages) <= budget
    hopeless = await make_strategy("window").compact(_request(messages, OVERHEAD + 50, "prompt_too_long"), _env())
    assert hopeless.failure and same_messages(hopeless.messages, messages) and not hopeless.changed
