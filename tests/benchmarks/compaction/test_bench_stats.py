"""Paired statistics and the synthetic generator: correct, and the same for the same inputs."""

from __future__ import annotations

import statistics

import pytest

from agents.messages import is_protocol_complete
from benchmarks.compaction.evidence import trace_evidence
from benchmarks.compaction.metrics import RunMetrics
from benchmarks.compaction.stats import bootstrap_interval, paired_ratios, summarize_strategies
from benchmarks.compaction.synthetic import synthetic_traces

VALUES = [0.31, 0.42, 0.38, 0.55, 0.29, 0.47, 0.36, 0.51, 0.33, 0.40]


def test_bootstrap_is_deterministic_for_the_same_inputs():
    a = bootstrap_interval(VALUES, seed=3, label="x")
    b = bootstrap_interval(list(VALUES), seed=3, label="x")
    assert a == b
    mean = bootstrap_interval(VALUES, statistic="mean", seed=3, label="x")
    assert bootstrap_interval(VALUES, statistic="mean", seed=4, label="x") != mean  # the seed matters
    assert bootstrap_interval(VALUES, statistic="mean", seed=3, label="y") != mean  # one stream per statistic


def test_bootstrap_median_and_interval():
    iv = bootstrap_interval(VALUES, resamples=2_000, seed=0)
    assert iv.value == pytest.approx(statistics.median(VALUES)) and iv.n == len(VALUES)
    assert min(VALUES) <= iv.lo <= iv.value <= iv.hi <= max(VALUES)
    mean = bootstrap_interval(VALUES, statistic="mean", seed=0)
    assert mean.value == pytest.approx(statistics.fmean(VALUES)) and mean.lo < mean.value < mean.hi


def test_bootstrap_edge_cases():
    assert bootstrap_interval([]) is None
    assert bootstrap_interval([None, None]) is None
    one = bootstrap_interval([0.7])
    assert (one.value, one.lo, one.hi, one.n) == (0.7, 0.7, 0.7, 1)
    same = bootstrap_interval([2.0] * 5)
    assert (same.lo, same.hi) == (2.0, 2.0)


def _run(trace: str, strategy: str, tokens: int, cost: float, recall: float | None = 1.0, error: str | None = None):
    return RunMetrics(
        trace=trace,
        strategy=strategy,
        cumulative_tokens=tokens,
        cost_usd=cost,
        peak_tokens=tokens // 10,
        grounding_recall=recall,
        recoverable_recall=recall,
        error=error,
    )


RUNS = [
    _run("t1", "raw", 1000, 1.0),
    _run("t1", "cts", 400, 0.5, 0.9),
    _run("t1", "win", 200, 0.8, 0.6),
    _run("t2", "raw", 2000, 2.0),
    _run("t2", "cts", 500, 0.8, 0.95),
    _run("t2", "win", 300, 1.2, 0.7),
    _run("t3", "raw", 4000, 4.0),
    _run("t3", "cts", 1000, 1.0, 0.85),
    _run("t3", "win", 0, 0.0, None, error="boom"),
]


def test_paired_ratios_pair_by_trace_and_skip_failures():
    assert paired_ratios(RUNS, "cts", "raw", "cumulative_tokens") == [0.4, 0.25, 0.25]
    assert paired_ratios(RUNS, "win", "cts", "cost_usd") == pytest.approx([1.6, 1.5])  # t3 failed


def test_strategy_summaries_against_raw_and_the_baseline():
    summaries = {
        s.strategy: s for s in summarize_strategies(RUNS, ["raw", "cts", "win"], baseline="cts", resamples=500)
    }
    assert summaries["raw"].vs_raw["cumulative_tokens"].value == 1.0
    assert summaries["cts"].vs_raw["cumulative_tokens"].value == 0.25
    assert summaries["cts"].vs_baseline["cost_usd"].value == 1.0
    win = summaries["win"]
    assert (win.traces, win.failed) == (2, 1)
    assert win.vs_baseline["cost_usd"].value == pytest.approx(1.55)
    assert win.grounding_recall.value == pytest.approx(0.65) and win.grounding_recall.statistic == "mean"
    assert win.grounding_recall_minus_baseline.value == pytest.approx(-0.275)
    again = summarize_strategies(RUNS, ["raw", "cts", "win"], baseline="cts", resamples=500)
    assert [s.model_dump() for s in again] == [s.model_dump() for s in summaries.values()]


def test_the_synthetic_generator_is_deterministic():
    a, b = synthetic_traces(3, seed=7), synthetic_traces(3, seed=7)
    assert [(t.task_id, t.system, t.messages) for t in a] == [(t.task_id, t.system, t.messages) for t in b]
    assert [t.messages for t in synthetic_traces(3, seed=8)] != [t.messages for t in a]
    assert synthetic_traces(2, seed=7)[1].messages == a[1].messages  # trace i does not depend on count


def test_synthetic_trajectories_are_long_labelled_and_need_old_evidence():
    for trace in synthetic_traces(3):
        assert trace.source == "synthetic" and trace.task_id.startswith("synthetic-")
        assert is_protocol_complete(trace.messages)
        calls = sum(m.role == "assistant" for m in trace.messages)
        chars = sum(len(r.content) for m in trace.messages for r in m.tool_results_in)
        assert calls >= 40 and chars >= 100_000
        evidence = trace_evidence(trace)
        assert evidence.needed_items >= calls
        # Some actions use evidence from results far back (not just the previous step).
        far = [
            c for c in evidence.calls.values() for p in c.producers if p and int(p[0][-3:]) < (c.message_index // 2) - 5
        ]
        assert far


# -- paired tests, clusters, frameworks -------------------------------------------------------


def test_holm_multiplies_by_the_remaining_count_and_stays_monotone():
    from benchmarks.compaction.significance import holm

    adjusted = holm([0.01, 0.04, 0.03, None])
    assert (
        adjusted[0] == pytest.approx(0.03) and adjusted[2] == pytest.approx(0.06) and adjusted[1] == pytest.approx(0.06)
    )
    assert adjusted[3] is None
    assert holm([0.5, 0.9]) == [1.0, 1.0]


def test_wilcoxon_on_log_ratios_matches_scipy_and_needs_enough_pairs():
    import math

    from scipy.stats import wilcoxon

    from benchmarks.compaction.significance import MIN_PAIRS, paired_test

    pairs = [(0.5, 1.0), (0.6, 1.0), (0.45, 1.0), (0.7, 1.0), (1.1, 1.0), (0.55, 1.0), (0.4, 1.0)]
    test = paired_test("cost_usd", pairs)
    expected = wilcoxon([math.log(a / b) for a, b in pairs], zero_method="zsplit").pvalue
    assert test.p_value == pytest.approx(expected) and test.n == 7
    assert test.median_effect == pytest.approx(0.55)  # the median ratio
    assert paired_test("cost_usd", pairs[: MIN_PAIRS - 1]).p_value is None
    same = paired_test("tool_evidence_recall", [(0.5, 0.5)] * 6)
    assert same.p_value == 1.0 and same.median_effect == 0.0


def test_summaries_test_against_the_baseline_and_correct_across_strategies():
    runs = []
    for t in range(8):
        runs += [
            _run(f"t{t}", "raw", 1000, 1.0),
            _run(f"t{t}", "cts", 500, 0.5 + t / 100, 0.9),
            _run(f"t{t}", "win", 300, 0.3 + t / 50, 0.6 - t / 100),
        ]
    summaries = {
        s.strategy: s for s in summarize_strategies(runs, ["raw", "cts", "win"], baseline="cts", resamples=200)
    }
    win = summaries["win"].tests["cost_usd"]
    assert win.n == 8 and win.p_value < 0.05 and win.p_holm >= win.p_value
    assert summaries["cts"].tests["cost_usd"].p_holm is None  # the baseline is not in the family


def test_the_cluster_bootstrap_draws_whole_instances():
    from benchmarks.compaction.stats import bootstrap_interval

    # Two runs of one instance at 0 and 10 runs of others at 1: resampling runs would let
    # the pair split; resampling instances keeps the two zeros together.
    values = [0.0, 0.0] + [1.0] * 10
    clusters = ["a", "a"] + [f"b{i}" for i in range(10)]
    by_instance = bootstrap_interval(values, statistic="mean", seed=1, clusters=clusters, resamples=500)
    by_run = bootstrap_interval(values, statistic="mean", seed=1, resamples=500)
    assert by_instance.value == by_run.value == pytest.approx(10 / 12)
    assert by_instance.lo <= by_run.lo  # a cluster of two moves the mean more than one run
    assert bootstrap_interval(values, seed=1, clusters=clusters) == bootstrap_interval(
        values, seed=1, clusters=clusters
    )


def test_infeasible_calls_are_summed_and_flag_the_strategy():
    runs = [
        RunMetrics(trace="t1", strategy="raw", cost_usd=1.0, infeasible_calls=3),
        RunMetrics(trace="t2", strategy="raw", cost_usd=1.0, infeasible_calls=0),
        RunMetrics(trace="t1", strategy="cts", cost_usd=0.5),
        RunMetrics(trace="t2", strategy="cts", cost_usd=0.5),
    ]
    summaries = {s.strategy: s for s in summarize_strategies(runs, ["raw", "cts"], baseline="cts", resamples=50)}
    assert (summaries["raw"].infeasible_calls, summaries["raw"].traces_infeasible, summaries["raw"].exceeds_window) == (
        3,
        1,
        True,
    )
    assert not summaries["cts"].exceeds_window


def test_the_framework_breakdown_keeps_frameworks_apart():
    from benchmarks.compaction.stats import framework_breakdown

    runs = [
        _run("a1", "raw", 1000, 1.0),
        _run("a1", "cts", 500, 0.5, 0.8),
        _run("b1", "raw", 1000, 2.0),
        _run("b1", "cts", 500, 1.8, 0.4),
    ]
    rows = {(r.framework, r.strategy): r for r in framework_breakdown(runs, ["raw", "cts"], {"a1": "A", "b1": "B"})}
    assert rows[("A", "cts")].cost_vs_raw_median == pytest.approx(0.5)
    assert rows[("B", "cts")].cost_vs_raw_median == pytest.approx(0.9)
    assert rows[("B", "cts")].tool_evidence_recall_mean is None  # _run sets only the legacy recalls
