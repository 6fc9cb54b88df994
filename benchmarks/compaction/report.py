"""The benchmark's outputs: one JSON document, a markdown report, a terminal table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

import benchmarks.compaction as package

from .data import Inputs
from .metrics import RunMetrics
from .runner import BenchConfig
from .stats import Interval, StrategySummary

__all__ = ["build_document", "markdown_report", "print_live", "print_table"]

SYNTHETIC_NOTE = "SYNTHETIC data: generated trajectories, not recorded agent runs"


def build_document(
    inputs: Inputs, config: BenchConfig, runs: Sequence[RunMetrics], summaries: Sequence[StrategySummary],
    *, wall_time_s: float, runtime: str, figures: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "benchmark": "compaction",
        "synthetic": inputs.synthetic,
        "data": SYNTHETIC_NOTE if inputs.synthetic else inputs.description,
        "settings": config.model_dump(),
        "runtime": runtime,
        "wall_time_s": round(wall_time_s, 2),
        "traces": [
            {"label": label, "source": t.source, "task_id": t.task_id, "model": t.model, "path": t.path,
             "calls": sum(m.role == "assistant" for m in t.messages)}
            for label, t in inputs.traces
        ],
        "skipped": [{"path": p, "reason": r} for p, r in inputs.skipped],
        "ignored": inputs.ignored,
        "summary": [s.model_dump() for s in summaries],
        "runs": [r.model_dump() for r in runs],
        "figures": figures or {},
    }


def _iv(value: dict | Interval | None, digits: int = 2, pct: bool = False) -> str:
    if value is None:
        return "—"
    iv = value if isinstance(value, Interval) else Interval.model_validate(value)
    if pct:
        return f"{iv.value:.0%} [{iv.lo:.0%}–{iv.hi:.0%}]"
    if digits == 0:
        return f"{iv.value:,.0f} [{iv.lo:,.0f}–{iv.hi:,.0f}]"
    return f"{iv.value:.{digits}f} [{iv.lo:.{digits}f}–{iv.hi:.{digits}f}]"


def _compactions(kinds: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"


SUMMARY_COLUMNS = (
    "strategy", "traces", "tokens ÷ raw", "cost ÷ raw", "tokens ÷ base", "cost ÷ base", "peak tokens",
    "grounding recall", "recoverable recall", "oracle ratio", "summ. calls (cost share)", "compactions",
)


def _summary_row(s: dict) -> list[str]:
    failed = f" ({s['failed']} failed)" if s["failed"] else ""
    return [
        s["strategy"], f"{s['traces']}{failed}",
        _iv(s["vs_raw"]["cumulative_tokens"]), _iv(s["vs_raw"]["cost_usd"]),
        _iv(s["vs_baseline"]["cumulative_tokens"]), _iv(s["vs_baseline"]["cost_usd"]),
        _iv(s["peak_tokens"], 0), _iv(s["grounding_recall"], pct=True), _iv(s["recoverable_recall"], pct=True),
        _iv(s["oracle_ratio"], 1), f"{s['summarizer_calls']} ({s['summarizer_share']:.1%})", _compactions(s["compactions"]),
    ]


TERMINAL_COLUMNS = (
    "strategy", "traces", "tokens ÷ raw", "cost ÷ raw", "cost ÷ base", "peak tokens",
    "grounding recall", "recoverable recall", "summ. calls (share)", "compactions",
)


def _terminal_row(s: dict) -> list[str]:
    """Like the markdown row, fewer columns, each interval under its value."""
    two = lambda text: text.replace(" [", "\n[")  # noqa: E731
    row = _summary_row(s)
    return [row[0], row[1], two(row[2]), two(row[3]), two(row[5]), two(row[6]), two(row[7]), two(row[8]), row[10], row[11]]


def print_table(doc: dict[str, Any], console: Console) -> None:
    title = f"Compaction strategies — {len(doc['traces'])} traces, context window {doc['settings']['context_window']:,}"
    if doc["synthetic"]:
        title += f" — {SYNTHETIC_NOTE}"
    table = Table(title=title, title_justify="left")
    for name in TERMINAL_COLUMNS:
        table.add_column(name, overflow="fold", no_wrap=name != "compactions", min_width=12 if name == "compactions" else None)
    for s in doc["summary"]:
        table.add_row(*_terminal_row(s))
    console.print(table)
    console.print(f"ratios: median over traces [95% bootstrap]; recalls: mean [95% bootstrap]; "
                  f"base = {doc['settings']['baseline']}; wall time {doc['wall_time_s']:.1f} s ({doc['runtime']})")
    for item in doc["skipped"]:
        console.print(f"skipped {item['path']}: {item['reason']}")
    for r in doc["runs"]:
        if r["error"]:
            console.print(f"failed {r['trace']} under {r['strategy']}: {r['error']}")


LIVE_COLUMNS = ("strategy", "tasks", "passed", "pass rate", "gained vs base", "lost vs base", "both passed",
                "both not passed", "not comparable", "cost", "compactions")


def _live_rows(live: dict) -> list[list[str]]:
    rows = []
    for x in live["strategies"]:
        f = x["flips_vs_baseline"]
        rows.append([x["strategy"], str(x["tasks"]), str(x["passed"]), _iv(x["pass_rate"], pct=True), str(f["gained"]),
                     str(f["lost"]), str(f["both_passed"]), str(f["both_not_passed"]), str(f["not_comparable"]),
                     f"${x['cost_usd']:.4f}", str(x["compactions"])])
    return rows


def print_live(doc: dict[str, Any], console: Console) -> None:
    live = doc.get("live")
    if not live:
        return
    table = Table(title=f"Live: {live['tasks']} tasks from {live['tasks_file']} per strategy (base = {live['baseline']})",
                  title_justify="left")
    for name in LIVE_COLUMNS:
        table.add_column(name, no_wrap=True)
    for row in _live_rows(live):
        table.add_row(*row)
    console.print(table)


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return lines


def _definitions() -> str:
    doc = package.__doc__ or ""
    return doc[doc.index("## Metrics"):].strip() if "## Metrics" in doc else ""


def _run_row(r: dict) -> list[str]:
    if r["error"]:
        return [r["trace"], r["strategy"], "failed: " + r["error"], *[""] * 6]
    recall = lambda v: "—" if v is None else f"{v:.0%}"  # noqa: E731
    return [
        r["trace"], r["strategy"], str(r["calls"]), f"{r['cumulative_tokens']:,}", f"{r['peak_tokens']:,}",
        f"${r['cost_usd']:.4f}", recall(r["grounding_recall"]), recall(r["recoverable_recall"]), _compactions(r["compactions"]),
    ]


def markdown_report(doc: dict[str, Any]) -> str:
    s = doc["settings"]
    lines = ["# Compaction-strategy benchmark", ""]
    if doc["synthetic"]:
        lines += [f"> **{SYNTHETIC_NOTE}.** Run with `--traces PATH` to measure recorded trajectories.", ""]
    lines += [
        f"- data: {doc['data']}",
        f"- traces: {len(doc['traces'])} measured, {len(doc['skipped'])} skipped, {len(doc['ignored'])} non-trace files ignored",
        f"- strategies: {', '.join(s['strategies'])}; baseline: {s['baseline']}",
        f"- context window: {s['context_window']:,} tokens; summarizer: {s['summarizer']}; "
        f"pricing: {s['pricing_model']}; bootstrap: {s['resamples']} resamples, seed {s['seed']}",
        f"- wall time: {doc['wall_time_s']:.1f} s ({doc['runtime']})",
        "", "## Summary", "",
        "Ratios: median over traces of the per-trace ratio, [95% bootstrap interval]. "
        "Recalls: mean over traces [95% bootstrap interval].", "",
    ]
    lines += _md_table(SUMMARY_COLUMNS, [_summary_row(x) for x in doc["summary"]])
    pooled = lambda v: "—" if v is None else f"{v:.2f}"  # noqa: E731
    lines += ["", "Pooled over all traces (sum ÷ sum, so long traces weigh more than in the median):", ""]
    lines += _md_table(["strategy", "tokens ÷ raw", "cost ÷ raw"], [
        [x["strategy"], pooled(x["pooled_vs_raw"]["cumulative_tokens"]), pooled(x["pooled_vs_raw"]["cost_usd"])]
        for x in doc["summary"]])
    diffs = [(x["strategy"], x["grounding_recall_minus_baseline"]) for x in doc["summary"]]
    lines += ["", f"Grounding recall minus {s['baseline']} (mean paired difference): "
              + "; ".join(f"{name} {_iv(d)}" for name, d in diffs), ""]
    if doc["figures"]:
        lines += ["## Figures", ""] + [f"![{name}]({path})" for name, path in doc["figures"].items()] + [""]
    lines += ["## Per trace", ""]
    lines += _md_table(["trace", "strategy", "calls", "cumulative tokens", "peak", "cost", "grounding", "recoverable", "compactions"],
                       [_run_row(r) for r in doc["runs"]])
    if doc.get("live"):
        live = doc["live"]
        lines += ["", "## Live runs", "",
                  f"{live['tasks']} tasks from `{live['tasks_file']}`, each run once per strategy (model: "
                  f"{live['model'] or 'the tasks’ own'}). Pass rate: mean over tasks [95% bootstrap]; flips are paired "
                  f"per task against {live['baseline']} (errors are not comparable).", ""]
        lines += _md_table(LIVE_COLUMNS, _live_rows(live))
        lines += [f"- invalid task line: {text}" for text in live["invalid"]]
    if doc["skipped"]:
        lines += ["", "## Skipped inputs", ""] + [f"- `{x['path']}`: {x['reason']}" for x in doc["skipped"]]
    lines += ["", _definitions(), ""]
    return "\n".join(lines)
