"""`workingset bench compaction --sweep`: each peer family over its own grid beside the
default's tuning grid, one curve per family in the verdict and in `sweep.png`."""

from __future__ import annotations

import json

import pytest

from agents.errors import ConfigError
from benchmarks.compaction.figures.style import figure_style
from benchmarks.compaction.figures.sweep import sweep_figure
from benchmarks.compaction.presets import CURRENT_TUNING_GRID, FAMILIES, family_names
from benchmarks.traces.corpus import corpus_dir
from cluster.terminal._cli import main

# Two short real trajectories (5 and 12 calls); at 8,000 tokens raw does not fit the longer.
TRACES = corpus_dir() / "swe-agent" / "tests" / "test_data" / "trajectories"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> tuple:
    out = tmp_path_factory.mktemp("sweep")
    code = main(
        [
            "bench",
            "compaction",
            "--local",
            "--resamples",
            "100",
            "--traces",
            str(TRACES),
            "--sweep",
            "all",
            "--context-window",
            "8000",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert code == 0
    return out, json.loads((out / "results.json").read_text())


def test_a_sweep_runs_every_grid_point_and_the_defaults_tuning_grid(swept):
    _, doc = swept
    ran = {r["strategy"] for r in doc["runs"]}
    assert set(CURRENT_TUNING_GRID.points) <= ran
    assert all(p.name in ran for f in FAMILIES.values() for p in f.points)
    assert doc["tuning_grid"]["points"] == list(CURRENT_TUNING_GRID.points) and set(doc["families"]) == set(FAMILIES)


def test_a_sweep_gives_one_curve_per_family_under_each_pricing(swept):
    _, doc = swept
    verdict = doc["verdict"]
    for pricing in verdict["pricings"]:
        curves = [f for f in verdict["families"] if f["pricing"] == pricing]
        assert sorted(f["family"] for f in curves) == sorted(FAMILIES)
        for curve in curves:  # the default first, then the family's four grid points
            assert curve["points"][0]["name"] == "current" and len(curve["points"]) == 5


def test_a_sweep_draws_its_curves_and_the_report_states_each_aim(swept):
    out, doc = swept
    assert doc["figures"]["recall vs cost, each peer family swept"] == "sweep.png"
    assert (out / "sweep.png").read_bytes()[:8] == PNG and (out / "sweep.pdf").read_bytes()[:5] == b"%PDF-"
    report = (out / "report.md").read_text()
    assert "## Verdict" in report and "### Aim 3 per family" in report
    assert all(f"| 8,000 | {n}." in report for n in (1, 2, 3))


def test_the_sweep_figure_has_a_line_per_family_and_the_default_as_a_point(swept):
    _, doc = swept
    curves = [f for f in doc["verdict"]["families"] if f["pricing"] == "per-trace"]
    with figure_style():
        fig = sweep_figure(curves, [8000], "current", "test")
    labels = {t.get_text() for legend in fig.legends for t in legend.get_texts()}
    feasible = {f["family"] for f in curves if any(p["feasible"] and p["recall"] is not None for p in f["points"][1:])}
    assert feasible <= labels and "current (the default)" in labels


def test_an_unknown_family_is_one_clear_line():
    with pytest.raises(ConfigError, match="--sweep nonesuch: unknown family nonesuch; known: all, swe-agent-masking"):
        family_names("nonesuch")
