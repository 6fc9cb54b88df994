"""What a finished run writes into `--out`: per window the results document, report and
figures, and the verdict (`verdict.py`) over every window and both pricings.

One window: `results.json`, `report.md` and the figures in `--out`, the verdict inside
them. Several windows (`--windows`): each window's files in `--out/window-N/`, and in
`--out` itself a `results.json` and `report.md` holding the verdict, the settings, the
provenance and where each window's files are, plus `sweep.png` when families ran.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .data import Inputs
from .figures import write_plots, write_sweep_plot
from .presets import CURRENT_TUNING_GRID, FAMILIES, family_members
from .report import build_document, markdown_report, verdict_report
from .runner import BenchConfig, Measured
from .stats import framework_breakdown, summarize_strategies
from .token_check import family_tokens
from .verdict import Verdict, compute_verdict

__all__ = ["write_outputs"]


def _clusters(inputs: Inputs, config: BenchConfig) -> dict[str, str] | None:
    if config.cluster == "run":
        return None
    return {label: (t.task_id if config.cluster == "instance" else t.source) for label, t in inputs.traces}


def _window_doc(
    inputs: Inputs,
    config: BenchConfig,
    measured: Measured,
    window: int,
    *,
    wall: float,
    runtime: str,
    origin: dict[str, Any],
) -> dict[str, Any]:
    runs = [r for r in measured.runs if r.context_window == window]
    mine = config.model_copy(update={"context_window": window, "windows": []})
    summaries = summarize_strategies(
        runs,
        config.strategies,
        baseline=config.baseline,
        resamples=config.resamples,
        seed=config.seed,
        clusters=_clusters(inputs, config),
    )
    frameworks = {label: t.source for label, t in inputs.traces}
    return build_document(
        inputs,
        mine,
        runs,
        summaries,
        wall_time_s=wall,
        runtime=runtime,
        frameworks=framework_breakdown(runs, config.strategies, frameworks),
        tokens=measured.tokens,
        families=family_tokens(measured.tokens),
        origin=origin,
    )


def _verdict(inputs: Inputs, config: BenchConfig, measured: Measured, default: str) -> Verdict:
    clusters = _clusters(inputs, config) or {label: label for label, _ in inputs.traces}
    pricings = (
        list(dict.fromkeys(measured.runs[0].costs)) if measured.runs and measured.runs[0].costs else [config.pricing]
    )
    return compute_verdict(
        [r.model_dump() for r in measured.runs],
        windows=config.all_windows,
        pricings=pricings,
        families=family_members(config.strategies),
        clusters=clusters,
        default=default,
        resamples=config.resamples,
        seed=config.seed,
    )


def _verdict_fields(verdict: Verdict, config: BenchConfig) -> dict[str, Any]:
    return {
        "verdict": verdict.model_dump(),
        "tuning_grid": CURRENT_TUNING_GRID.model_dump(),
        "families": {name: FAMILIES[name].model_dump() for name in family_members(config.strategies)},
    }


def _subtitle(config: BenchConfig, inputs: Inputs) -> str:
    return (
        f"tokens: {config.tokenizer} · pricing: {config.pricing} · {len(inputs.traces)} traces · "
        f"95% bootstrap of {config.cluster} clusters"
    )


def write_outputs(
    out: Path,
    inputs: Inputs,
    config: BenchConfig,
    measured: Measured,
    *,
    started: float,
    runtime: str,
    origin: dict[str, Any],
    default: str,
    live: Callable[[], dict] | None = None,
) -> dict[str, Any]:
    """Write every file; returns the top document (the one window's, or the summary of several)."""
    verdict = _verdict(inputs, config, measured, default)
    windows = config.all_windows
    wall = time.perf_counter() - started
    docs = {w: _window_doc(inputs, config, measured, w, wall=wall, runtime=runtime, origin=origin) for w in windows}
    if live is not None:
        docs[windows[0]]["live"] = live()
    out.mkdir(parents=True, exist_ok=True)
    if len(windows) == 1:
        doc = docs[windows[0]] | _verdict_fields(verdict, config)
        doc["wall_time_s"] = round(time.perf_counter() - started, 2)
        doc["figures"] = write_plots(doc, out) | write_sweep_plot(doc, out, _subtitle(config, inputs))
        _write(out, doc, markdown_report(doc))
        return doc
    for window, doc in docs.items():
        where = out / f"window-{window}"
        where.mkdir(parents=True, exist_ok=True)
        doc["figures"] = write_plots(doc, where)
        _write(where, doc, markdown_report(doc))
    top = {
        "benchmark": "compaction",
        "synthetic": inputs.synthetic,
        "data": next(iter(docs.values()))["data"],
        "settings": config.model_dump(),
        "runtime": runtime,
        "provenance": origin,
        "traces": next(iter(docs.values()))["traces"],
        "windows": windows,
        "per_window": {str(w): f"window-{w}/results.json" for w in windows},
        "token_check": next(iter(docs.values()))["token_check"],
        "cached_share": next(iter(docs.values())).get("cached_share", []),
        **_verdict_fields(verdict, config),
        "wall_time_s": round(time.perf_counter() - started, 2),
    }
    top["figures"] = write_sweep_plot(top, out, _subtitle(config, inputs))
    _write(out, top, verdict_report(top))
    return top


def _write(where: Path, doc: dict[str, Any], report: str) -> None:
    (where / "results.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    (where / "report.md").write_text(report, encoding="utf-8")
