"""The benchmark's figures, checked by their structure rather than their pixels: built from
a small real run through the functions the benchmark uses, then the matplotlib objects are
inspected (panels, axis titles, legends, labels and their boxes, error bars, limits), and
the files are checked for being valid, fixed-size and byte-for-byte reproducible."""

from __future__ import annotations

import itertools
import json
import re
import struct
from pathlib import Path

import pytest
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text

from benchmarks.compaction.figures import build_figures, pareto_front, write_plots
from benchmarks.compaction.figures.data import (
    Estimate,
    RunFacts,
    StrategyPoint,
    StrategyTokens,
    TokenSeries,
    run_facts,
)
from benchmarks.compaction.figures.key import KeyEntry
from benchmarks.compaction.figures.labels import Box, number_ranges, place_labels
from benchmarks.compaction.figures.pareto import pareto_figure
from benchmarks.compaction.figures.style import DPI, figure_style
from benchmarks.compaction.figures.tokens import tokens_figure
from benchmarks.traces.corpus import corpus_dir
from cluster.terminal._cli import main

# Two short real trajectories (5 and 12 calls) of two task instances, so the bootstrap has
# two clusters; a 12,000-token window puts some strategies over it.
TRACES = corpus_dir() / "swe-agent" / "tests" / "test_data" / "trajectories"
STRATEGIES = "mask,mask:keep=0,window,truncate,hybrid,swe-agent-last5,current,amortized"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, dict]:
    if not TRACES.is_dir():
        pytest.fail(f"trace corpus not found: {TRACES} (these tests need ../shared/traces)", pytrace=False)
    out = tmp_path_factory.mktemp("bench")
    code = main(
        [
            "bench",
            "compaction",
            "--local",
            "--resamples",
            "200",
            "--traces",
            str(TRACES),
            "--strategies",
            STRATEGIES,
            "--context-window",
            "12000",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert code == 0
    return out, json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def figures(run) -> dict[str, Figure]:
    with figure_style():
        return build_figures(run[1])


def _panel(fig: Figure, label: str) -> Axes:
    [ax] = [ax for ax in fig.axes if ax.get_label() == label]
    return ax


def _legend_texts(fig: Figure, gid: str) -> list[str]:
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    for sub in fig.subfigs:
        legends += sub.legends
    [legend] = [lg for lg in legends if lg.get_gid() == gid]
    return [t.get_text() for t in legend.get_texts()]


def _numbers(label: str) -> set[int]:
    """'1, 3–5' -> {1, 3, 4, 5}."""
    out: set[int] = set()
    for part in label.split(", "):
        lo, _, hi = part.partition("–")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _point_labels(ax: Axes) -> list[Annotation]:
    return [t for t in ax.texts if isinstance(t, Annotation) and t.get_gid() == "point-label"]


def _text_boxes(fig: Figure, labels: list[Annotation]) -> list:
    """Where each label's text is drawn (the text alone, not its leader line)."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    boxes = []
    for label in labels:
        label.update_positions(renderer)
        boxes.append(Text.get_window_extent(label, renderer))
    return boxes


def _assert_no_text_overlaps(fig: Figure) -> None:
    """Titles, axis titles, legends, keys and labels: none covers another, none is cut off
    by the figure's edge (tick labels are matplotlib's own layout and left out)."""
    ticks = {id(t) for ax in fig.axes for t in [*ax.get_xticklabels(), *ax.get_yticklabels()]}
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in ticks]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    for t in texts:
        if isinstance(t, Annotation):
            t.update_positions(renderer)
    boxes = [(t.get_text(), Text.get_window_extent(t, renderer)) for t in texts]
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), (a, b)
    assert all(
        box.x0 >= 0 and box.x1 <= fig.bbox.width and box.y0 >= 0 and box.y1 <= fig.bbox.height for _, box in boxes
    )


def _assert_apart_and_inside(fig: Figure, ax: Axes) -> None:
    boxes = _text_boxes(fig, _point_labels(ax))
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b), (a, b)
    frame = ax.get_window_extent(fig.canvas.get_renderer())  # type: ignore[attr-defined]
    assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1 for b in boxes)


# -- label placement, pure geometry ------------------------------------------------------------


def test_labels_in_a_crowd_cover_neither_each_other_nor_a_marker():
    anchors = [(200.0 + i % 3, 300.0 + 2 * i) for i in range(12)]  # twelve points within a few pixels
    markers = [Box.around(x, y, 10, 10) for x, y in anchors]
    area = Box(0, 0, 600, 600)
    boxes = place_labels(anchors, [(30.0, 16.0)] * 12, area, markers, step=7)
    for a, b in itertools.combinations(boxes, 2):
        assert a.overlap(b) == 0
    assert all(b.overlap(m) == 0 for b in boxes for m in markers)
    assert all(b.outside(area) == 0 for b in boxes)


def test_a_label_sits_nearer_its_own_point_than_any_other():
    anchors = [(100.0, 100.0), (140.0, 100.0), (180.0, 100.0), (140.0, 140.0)]
    boxes = place_labels(anchors, [(20.0, 14.0)] * 4, Box(0, 0, 400, 400), step=6)
    for box, own in zip(boxes, anchors, strict=True):
        assert all(box.distance(own) < box.distance(other) for other in anchors if other != own)


def test_label_placement_is_deterministic():
    anchors = [(50.0 + 3 * i, 80.0 + (i % 4)) for i in range(9)]
    place = lambda: place_labels(anchors, [(24.0, 12.0)] * 9, Box(0, 0, 300, 200), step=5)  # noqa: E731
    assert place() == place()


def test_strategies_on_one_point_share_one_label_of_number_ranges():
    assert number_ranges([8, 1, 3, 4, 5]) == "1, 3–5, 8"
    assert number_ranges([2, 1]) == "1, 2"
    assert number_ranges([7]) == "7"


def test_the_front_joins_undominated_points_only():
    points = [("a", 0.5, 0.9), ("b", 0.4, 0.6), ("c", 0.6, 0.7), ("d", 1.0, 1.0)]
    assert [p[0] for p in pareto_front(points)] == ["b", "a", "d"]


# -- pareto.png from a real run ----------------------------------------------------------------


def test_the_benchmark_writes_both_figures_as_fixed_size_png_and_pdf(run):
    out, doc = run
    # swe-agent-last5 is a point of a peer family, so the family's curve against current is drawn too.
    assert doc["figures"] == {
        "cost vs tool-evidence recall": "pareto.png",
        "tokens per step": "tokens_per_step.png",
        "recall vs cost, each peer family swept": "sweep.png",
    }
    for name in ("pareto", "tokens_per_step", "sweep"):
        png = (out / f"{name}.png").read_bytes()
        assert png[:8] == PNG and png[12:16] == b"IHDR"
        width, height = struct.unpack(">II", png[16:24])
        assert width == 11 * DPI and height > 4 * DPI  # 11 inches wide at 200 dpi, whatever the data
        assert (out / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"


def test_the_same_results_give_byte_identical_files(run, tmp_path):
    out, doc = run
    write_plots(doc, tmp_path)  # again, in this process, from the saved results
    for name in ("pareto.png", "pareto.pdf", "tokens_per_step.png", "tokens_per_step.pdf"):
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name


def test_every_strategy_has_a_number_in_both_panels_and_a_name_in_the_key(run, figures):
    doc, fig = run[1], figures["pareto.png"]
    numbers = set(range(1, len(doc["summary"]) + 1))
    for panel in ("pareto-median", "pareto-pooled"):
        labels = [t.get_text() for t in _point_labels(_panel(fig, panel))]
        assert set().union(*map(_numbers, labels)) == numbers
        assert sum(len(_numbers(lab)) for lab in labels) == len(numbers)  # each number once
    key = _legend_texts(fig, "key")
    for n, s in enumerate(doc["summary"], start=1):
        entry = key[n - 1].replace("\n      ", "")  # a long spec wraps onto indented lines
        assert re.fullmatch(rf"\s*{n}  {'⚠ ' if s['exceeds_window'] else ''}{re.escape(s['strategy'])}", entry)


def test_no_two_point_labels_overlap_and_none_leaves_its_panel(figures):
    fig = figures["pareto.png"]
    for panel in ("pareto-median", "pareto-pooled"):
        _assert_apart_and_inside(fig, _panel(fig, panel))


def test_no_text_of_either_figure_covers_another_or_is_cut_off(figures):
    for fig in figures.values():
        _assert_no_text_overlaps(fig)


def _bars(ax: Axes) -> ErrorbarContainer:
    [bars] = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    return bars


def _spans(bars: ErrorbarContainer, axis: int) -> set[tuple[float, float]]:
    """(low end, high end) of each bar along `axis` (0: x, 1: y)."""
    collections = bars.lines[2]
    segments = collections[0 if axis == 0 or not bars.has_xerr else 1].get_segments()
    return {(round(float(s[0][axis]), 9), round(float(s[1][axis]), 9)) for s in segments}


def test_the_bars_are_the_benchmarks_own_95_percent_intervals(run, figures):
    doc, fig = run[1], figures["pareto.png"]
    median, pooled = _bars(_panel(fig, "pareto-median")), _bars(_panel(fig, "pareto-pooled"))
    assert median.has_xerr and median.has_yerr
    assert pooled.has_yerr and not pooled.has_xerr  # a pooled ratio is one sum ÷ sum: no interval to draw
    cost = {(round(s["vs_raw"]["cost_usd"]["lo"], 9), round(s["vs_raw"]["cost_usd"]["hi"], 9)) for s in doc["summary"]}
    recall = {
        (round(s["tool_evidence_recall"]["lo"], 9), round(s["tool_evidence_recall"]["hi"], 9)) for s in doc["summary"]
    }
    assert _spans(median, 0) == cost
    assert _spans(median, 1) == _spans(pooled, 1) == recall
    assert any(lo < hi for lo, hi in cost)  # two task clusters: real intervals, not points


def test_the_pareto_axes_hold_every_point_and_interval_end(run, figures):
    doc, fig = run[1], figures["pareto.png"]
    for panel, cost in (
        ("pareto-median", lambda s: s["vs_raw"]["cost_usd"]),
        ("pareto-pooled", lambda s: {"value": s["pooled_vs_raw"]["cost_usd"]}),
    ):
        ax = _panel(fig, panel)
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        for s in doc["summary"]:
            c, r = cost(s), s["tool_evidence_recall"]
            assert all(x0 < c[k] < x1 for k in ("value", "lo", "hi") if k in c)
            assert all(y0 < r[k] < y1 for k in ("value", "lo", "hi"))


def test_every_mark_is_explained_and_every_axis_says_what_it_counts(run, figures):
    doc, fig = run[1], figures["pareto.png"]
    marks = _legend_texts(fig, "marks")
    assert any(m.startswith("feasible, on the Pareto front") for m in marks)
    assert any("exceeds the window" in m and "off the front" in m for m in marks)  # the hollow red marks
    assert any(m.startswith("cost of raw (ratio 1)") for m in marks)  # the vertical line at 1
    assert any(m.startswith("95% interval: percentile bootstrap, 200 resamples of task clusters") for m in marks)
    assert any(m.startswith("Pareto front over the feasible") for m in marks)
    for panel in ("pareto-median", "pareto-pooled"):
        ax = _panel(fig, panel)
        assert set(ax.get_legend_handles_labels()[1]) <= set(marks)  # nothing drawn goes unexplained
        assert ax.get_ylabel().startswith("tool-evidence recall") and "mean over traces" in ax.get_ylabel()
    assert "median over traces" in _panel(fig, "pareto-median").get_xlabel()
    assert "pooled, sum ÷ sum" in _panel(fig, "pareto-pooled").get_xlabel()
    title = fig.get_suptitle()
    assert "window 12,000 tokens" in title and "tokenizer: real" in title and "pricing: per-trace" in title
    assert f"{len(doc['traces'])} traces" in title


NAMES = (
    "anthropic-clear-tool-uses",
    "complexity-trap-summary",
    "hybrid:keep=10,every=31,last=20,count_kept=true",
    "openhands-summarizing",
)


def _crowd(n: int) -> list[StrategyPoint]:
    """n strategies with names as long as real ones, most at cost ÷ raw ≈ 1 and recall
    90–100%, a few elsewhere."""
    points = []
    for i in range(n):
        cost = 1.0 + 0.002 * (i % 5) if i < n - 4 else 1.3 + 0.2 * (i % 4)
        recall = 0.9 + 0.1 * ((i * 7) % n) / n if i < n - 4 else 0.7 + 0.03 * (i % 4)
        points.append(
            StrategyPoint(
                i + 1,
                f"{NAMES[i % 4]}-{i + 1}",
                Estimate(cost, cost - 0.01, cost + 0.05),
                Estimate(recall, recall - 0.02, recall + 0.01),
                infeasible=i % 3 == 0,
            )
        )
    return points


FACTS = RunFacts(
    window=32_000,
    limit=27_904,
    budget=22_323,
    tokenizer="estimate",
    pricing_model="claude-sonnet-4-5",
    cache_ttl_s=300,
    traces=50,
    clusters=40,
    cluster="task",
    resamples=2000,
    synthetic=False,
)


def test_twenty_strategies_crowded_at_cost_one_keep_readable_labels():
    points = _crowd(20)
    key = [KeyEntry(p.number, p.strategy, p.infeasible) for p in points]
    with figure_style():
        fig = pareto_figure(points, points, key, FACTS)
    for panel in ("pareto-median", "pareto-pooled"):
        ax = _panel(fig, panel)
        assert set().union(*(_numbers(t.get_text()) for t in _point_labels(ax))) == set(range(1, 21))
        _assert_apart_and_inside(fig, ax)
    _assert_no_text_overlaps(fig)


# -- tokens_per_step.png -----------------------------------------------------------------------


def _strategy_panels(fig: Figure) -> list[Axes]:
    return [ax for ax in fig.axes if ax.get_label().startswith("tokens-")]


def test_one_panel_per_distinct_series_and_a_counts_strip_nothing_empty(run, figures):
    doc, fig = run[1], figures["tokens_per_step.png"]
    panels = _strategy_panels(fig)
    series = {
        json.dumps([r["tokens_per_call"] for r in doc["runs"] if r["strategy"] == s["strategy"]])
        for s in doc["summary"]
    }
    assert len(panels) == len(series) and len(fig.axes) == len(panels) + 1  # + the counts strip
    assert all(ax.axison and ax.get_lines() for ax in fig.axes)
    titled = set().union(*(_numbers(ax.get_title(loc="left").split(".")[0]) for ax in panels))
    assert titled == set(range(1, len(doc["summary"]) + 1))  # every strategy is in some panel's title


def test_no_token_panel_clips_its_data(figures):
    for ax in _strategy_panels(figures["tokens_per_step.png"]):
        low, high = ax.get_ylim()
        values = [float(y) for line in ax.get_lines() for y in line.get_ydata()]
        assert low <= min(values) and max(values) < high


def test_window_and_budget_lines_are_labelled_with_their_values_and_axes_with_units(run, figures):
    facts, fig = run_facts(run[1]), figures["tokens_per_step.png"]
    lines = _legend_texts(fig, "lines")
    assert any(t.startswith(f"window − output reserve: {facts.limit:,} tokens") for t in lines)
    assert any(t.startswith(f"compact budget: {facts.budget:,} tokens") for t in lines)
    assert any(t.startswith("mean over the traces") for t in lines) and any(
        t.startswith("longest trace") for t in lines
    )
    panels = _strategy_panels(fig)
    assert panels[0].get_ylabel() == "input tokens per call"
    assert all(ax.get_xlabel() == "model call" for ax in panels[-min(4, len(panels)) :])
    assert "window 12,000 tokens" in fig.get_suptitle()


def test_the_counts_strip_gives_the_traces_behind_each_mean(run, figures):
    doc, fig = run[1], figures["tokens_per_step.png"]
    strip = _panel(fig, "trace-counts")
    # One line per distinct series: a replay the harness refused ends early (raw never does).
    lines = strip.get_lines()
    calls = sorted((r["calls"] for r in doc["runs"] if r["strategy"] == "raw"), reverse=True)
    expected = [sum(1 for c in calls if c > k) for k in range(calls[0])]
    assert expected in [list(line.get_ydata()) for line in lines]
    notes = [t.get_text() for t in strip.texts if t.get_gid() == "count-label"]
    assert notes[0] == f"{len(calls)} traces" and notes[-1].startswith("1 trace from call")
    assert strip.get_ylabel() == "traces" and strip.get_xlabel().startswith("model call")


def _tokens(number: int, name: str, mean: list[float]) -> StrategyTokens:
    return StrategyTokens(number, name, mean, [2] * len(mean), [int(m) for m in mean], 0, 0)


def test_a_panel_shared_by_many_strategies_sends_the_names_to_a_key():
    same = [500.0, 900.0, 1400.0]
    series = TokenSeries(
        "t",
        3,
        [_tokens(n, f"a-rather-long-strategy-name-{n}", same) for n in range(1, 8)]
        + [_tokens(8, "window", [400.0, 500.0, 600.0])],
    )
    with figure_style():
        fig = tokens_figure(series, FACTS)
    assert len(_strategy_panels(fig)) == 2
    assert _panel(fig, "tokens-a-rather-long-strategy-name-1").get_title(loc="left").startswith("1–7. ")
    assert len(_legend_texts(fig, "key")) == 8
    _assert_no_text_overlaps(fig)


def test_no_successful_replay_gives_a_figure_that_says_so():
    with figure_style():
        fig = tokens_figure(TokenSeries(None, 0, []), FACTS)
    assert not fig.axes and "no replay succeeded" in fig.get_suptitle()
