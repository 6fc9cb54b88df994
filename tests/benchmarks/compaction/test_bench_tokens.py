"""Measuring tokenizers and the estimator's error against recorded usage."""

from __future__ import annotations

import pytest

from agents.errors import ConfigError
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.tokens import CharRatioEstimator
from benchmarks.compaction.token_check import family_tokens, trace_tokens
from benchmarks.compaction.tokenizers import (
    ScaledCounter,
    TekkenCounter,
    check_tokenizer,
    context_estimates,
    make_counter,
    trace_scale,
    usage_scale,
)
from benchmarks.traces import CallRecord, Trace, find_trace_files, load_trace_file
from benchmarks.traces.corpus import corpus_dir


def _trace(recorded: tuple[int | None, int | None] = (100, 300)) -> Trace:
    use = ToolUseBlock(id="t1", name="bash", input={"command": "ls"})
    return Trace(
        source="hand",
        task_id="t",
        model="m",
        system="sys " * 50,
        path="<hand>",
        messages=[
            Message.user("Fix the bug " * 20),
            Message.assistant(TextBlock(text="look"), use),
            Message.tool_results([ToolResultBlock(tool_use_id="t1", content="src/app.py\n" * 40)]),
            Message.assistant(TextBlock(text="done")),
        ],
        calls=[
            CallRecord(input_tokens=recorded[0], output_tokens=5),
            CallRecord(input_tokens=recorded[1], output_tokens=5),
        ],
    )


def test_context_estimates_count_the_system_prompt_and_the_messages_before_each_call():
    trace, counter = _trace(), CharRatioEstimator()
    system = counter.count_text(trace.system)
    first = system + counter.count_message(trace.messages[0])
    assert context_estimates(trace, counter) == [
        first,
        first + sum(counter.count_message(m) for m in trace.messages[1:3]),
    ]


def test_usage_scale_is_recorded_over_estimated_tokens_pooled():
    trace = _trace()
    estimates = context_estimates(trace, CharRatioEstimator())
    assert usage_scale(trace) == pytest.approx(400 / sum(estimates))
    assert usage_scale(_trace((None, None))) is None


def test_the_usage_counter_scales_text_but_not_framing():
    trace = _trace()
    scale = trace_scale("usage", trace)
    assert scale == pytest.approx(usage_scale(trace))
    counter = make_counter("usage", scale)
    assert isinstance(counter, ScaledCounter)
    assert counter.count_text("x" * 400) == -(-100 * scale // 1)
    assert trace_scale("usage", _trace((None, None))) is None
    assert isinstance(make_counter("usage", None), CharRatioEstimator)  # nothing to scale by: the estimator


def test_tekken_counts_offline_and_denser_text_costs_more_tokens():
    tekken = TekkenCounter()
    assert tekken.count_text("") == 0
    assert 0 < tekken.count_text("def resolve_path(self, strict_mode):") < 20
    assert tekken.count_text("\u4e2d\u6587" * 50) > CharRatioEstimator().count_text("\u4e2d\u6587" * 50)


def test_an_unknown_tokenizer_or_a_missing_key_is_a_usage_error(monkeypatch):
    with pytest.raises(ConfigError, match="known: real, estimate, tekken, usage, anthropic"):
        check_tokenizer("words")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        check_tokenizer("anthropic")


def test_the_token_check_pools_a_family_sum_over_sum():
    rows = [trace_tokens("a", _trace((100, 300))), trace_tokens("b", _trace((200, 600)))]
    [family] = family_tokens(rows)
    assert (family.family, family.traces, family.calls) == ("hand · m", 2, 4)
    assert family.estimate_over_recorded == pytest.approx((rows[0].estimate + rows[1].estimate) / 1_200)
    assert family.estimate_over_tekken == pytest.approx(
        (rows[0].estimate_all + rows[1].estimate_all) / (rows[0].tekken_all + rows[1].tekken_all)
    )


def test_on_the_real_gemini_traces_the_estimator_undercounts_the_recorded_usage():
    paths = find_trace_files(corpus_dir() / "mini-swe-agent-gemini-3-pro")
    assert len(paths) == 26
    rows = [trace_tokens(p.name, load_trace_file(p)[0]) for p in paths[:4]]
    [family] = family_tokens(rows)
    assert family.calls > 100
    assert 0.7 < family.estimate_over_recorded < 1.0  # chars/4 counts fewer tokens than Gemini billed
