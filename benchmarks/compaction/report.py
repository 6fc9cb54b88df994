"""The benchmark's outputs: one JSON document and a markdown report (terminal tables:
`terminal.py`).

Trace labels, paths, errors and missed evidence items come from the traces, which
nobody vetted: every table cell is one line with its pipes escaped, and the whole
report is revealed (agents.visible), so no escape sequence or carriage return in a
trace reaches a terminal that shows the file.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import benchmarks.compaction as package
from agents.visible import markdown_cell, reveal

from .data import Inputs
from .live_report import ARM_COLUMNS, PAIR_COLUMNS, arm_rows, live_caption, pair_rows
from .metrics import RunMetrics
from .presets import PRESETS
from .pricing import PER_TRACE
from .provenance import provenance
from .runner import BenchConfig
from .stats import FrameworkRow, Interval, StrategySummary
from .token_check import FamilyTokens, TraceTokens, family_of

__all__ = [
    "SYNTHETIC_NOTE",
    "build_document",
    "fmt_interval",
    "markdown_report",
    "summary_cells",
    "verdict_lines",
    "verdict_report",
]

SYNTHETIC_NOTE = "SYNTHETIC data: generated trajectories, not recorded agent runs"
EXCEEDS = "⚠ "


def build_document(
    inputs: Inputs,
    config: BenchConfig,
    runs: Sequence[RunMetrics],
    summaries: Sequence[StrategySummary],
    *,
    wall_time_s: float,
    runtime: str,
    figures: dict[str, str] | None = None,
    frameworks: Sequence[FrameworkRow] = (),
    tokens: Sequence[TraceTokens] = (),
    families: Sequence[FamilyTokens] = (),
    origin: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`origin`: the provenance taken when the run started (commit, versions, hashes);
    taken now when not given."""
    summary = []
    for s in summaries:
        row = s.model_dump()
        row["exceeds_window"] = s.exceeds_window
        summary.append(row)
    return {
        "benchmark": "compaction",
        "synthetic": inputs.synthetic,
        "data": SYNTHETIC_NOTE if inputs.synthetic else inputs.description,
        "settings": config.model_dump(),
        "presets": {name: PRESETS[name].model_dump() for name in config.strategies if name in PRESETS},
        "runtime": runtime,
        "wall_time_s": round(wall_time_s, 2),
        "provenance": origin or provenance([] if inputs.synthetic else [t.path for _, t in inputs.traces]),
        "traces": [
            {
                "label": label,
                "source": t.source,
                "task_id": t.task_id,
                "model": t.model,
                "path": t.path,
                "calls": sum(m.role == "assistant" for m in t.messages),
            }
            for label, t in inputs.traces
        ],
        "skipped": [{"path": p, "reason": r} for p, r in inputs.skipped],
        "ignored": inputs.ignored,
        "summary": summary,
        "frameworks": [f.model_dump() for f in frameworks],
        "token_check": {"traces": [t.model_dump() for t in tokens], "families": [f.model_dump() for f in families]},
        "cached_share": _cached_share(inputs, runs, families),
        "runs": [r.model_dump() for r in runs],
        "figures": figures or {},
    }


def _cached_share(inputs: Inputs, runs: Sequence[RunMetrics], families: Sequence[FamilyTokens]) -> list[dict[str, Any]]:
    """Per trace family: the share of input tokens the per-trace cache model predicts is
    served from the cache on the raw replay, beside the share the provider billed (a check;
    nothing is calibrated to it)."""
    family = {label: family_of(t) for label, t in inputs.traces}
    totals: dict[str, list[int]] = {}
    for r in runs:
        if r.strategy == "raw" and r.error is None and r.pricing == PER_TRACE:
            t = totals.setdefault(family[r.trace], [0, 0])
            t[0] += r.cache_read_tokens
            t[1] += r.cache_read_tokens + r.cache_write_tokens + r.plain_input_tokens
    rule = {family[r.trace]: r.cache_rule for r in runs if r.strategy == "raw" and r.error is None}
    recorded = {f.family: f.recorded_cached_share for f in families}
    return [
        {
            "family": name,
            "cache_rule": rule.get(name, ""),
            "predicted": (t[0] / t[1]) if t[1] else None,
            "recorded": recorded.get(name),
        }
        for name, t in sorted(totals.items())
    ]


def fmt_interval(value: dict | Interval | None, digits: int = 2, pct: bool = False) -> str:
    if value is None:
        return "—"
    iv = value if isinstance(value, Interval) else Interval.model_validate(value)
    if pct:
        return f"{iv.value:.0%} [{iv.lo:.0%}–{iv.hi:.0%}]"
    if digits == 0:
        return f"{iv.value:,.0f} [{iv.lo:,.0f}–{iv.hi:,.0f}]"
    return f"{iv.value:.{digits}f} [{iv.lo:.{digits}f}–{iv.hi:.{digits}f}]"


def _num(v: float | None, digits: int = 2) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _p(test: dict | None) -> str:
    if not test or test.get("p_holm") is None:
        return "—"
    p = test["p_holm"]
    return f"{p:.3f}" if p >= 0.001 else "<0.001"


def _pct_diff(iv: dict | None) -> str:
    if iv is None:
        return "—"
    return f"{iv['value']:+.0%} [{iv['lo']:+.0%}, {iv['hi']:+.0%}]"


def _compactions(kinds: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"


def strategy_label(s: dict) -> str:
    return (EXCEEDS if s["exceeds_window"] else "") + s["strategy"]


def _infeasible(s: dict) -> str:
    return f"{s['infeasible_calls']} ({s['traces_infeasible']} traces)" if s["infeasible_calls"] else "0"


SUMMARY_COLUMNS = (
    "strategy",
    "traces",
    "infeasible calls",
    "cost ÷ raw",
    "pooled cost ÷ raw",
    "cost ÷ base",
    "p cost (Holm)",
    "tokens ÷ raw",
    "peak tokens",
    "tool-evidence recall",
    "Δ vs base",
    "p recall (Holm)",
    "recoverable (tool ev.)",
    "grounding recall (legacy)",
    "cost ÷ raw (lcp, legacy)",
    "summ. calls (cost share)",
    "compactions",
)


def summary_cells(s: dict) -> list[str]:
    failed = f" ({s['failed']} failed)" if s["failed"] else ""
    return [
        strategy_label(s),
        f"{s['traces']}{failed}",
        _infeasible(s),
        fmt_interval(s["vs_raw"]["cost_usd"]),
        _num(s["pooled_vs_raw"]["cost_usd"]),
        fmt_interval(s["vs_baseline"]["cost_usd"]),
        _p(s["tests"].get("cost_usd")),
        fmt_interval(s["vs_raw"]["cumulative_tokens"]),
        fmt_interval(s["peak_tokens"], 0),
        fmt_interval(s["tool_evidence_recall"], pct=True),
        _pct_diff(s["tool_evidence_recall_minus_baseline"]),
        _p(s["tests"].get("tool_evidence_recall")),
        fmt_interval(s["tool_evidence_recoverable_recall"], pct=True),
        fmt_interval(s["grounding_recall"], pct=True),
        fmt_interval(s["vs_raw"]["cost_lcp_usd"]),
        f"{s['summarizer_calls']} ({s['summarizer_share']:.1%})",
        _compactions(s["compactions"]),
    ]


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(markdown_cell(str(c)) for c in row) + " |" for row in rows]
    return lines


def _definitions() -> str:
    doc = package.__doc__ or ""
    return doc[doc.index("## Metrics") :].strip() if "## Metrics" in doc else ""


def _run_row(r: dict) -> list[str]:
    if r["error"]:
        return [r["trace"], r["strategy"], "failed: " + r["error"], *[""] * 8]
    pct = lambda v: "—" if v is None else f"{v:.0%}"  # noqa: E731
    return [
        r["trace"],
        r["strategy"],
        str(r["calls"]),
        str(r["infeasible_calls"]),
        f"{r['cumulative_tokens']:,}",
        f"{r['peak_tokens']:,}",
        f"${r['cost_usd']:.4f}",
        f"${r['cost_lcp_usd']:.4f}",
        pct(r["tool_evidence_recall"]),
        pct(r["grounding_recall"]),
        _compactions(r["compactions"]),
    ]


def _write_multiplier(cache: dict[str, Any]) -> float:
    from .cache_model import write_multiplier_for

    return (
        cache["write_multiplier"] if cache.get("write_multiplier") is not None else write_multiplier_for(cache["ttl_s"])
    )


def _settings_lines(doc: dict[str, Any]) -> list[str]:
    s = doc["settings"]
    cache = s["cache"]
    other = s["pricing_model"] if s.get("pricing", PER_TRACE) == PER_TRACE else PER_TRACE
    return [
        reveal(f"- data: {doc['data']}", one_line=True),
        f"- traces: {len(doc['traces'])} measured, {len(doc.get('skipped', []))} skipped, "
        f"{len(doc.get('ignored', []))} non-trace files ignored",
        f"- strategies: {', '.join(s['strategies'])}; baseline: {s['baseline']}",
        f"- context window: {s['context_window']:,} tokens (a call over {s['context_window'] - 4096:,} = window − 4,096 "
        f"output reserve is infeasible); summarizer: {s['summarizer']}; tokens measured by: {s['tokenizer']}; the harness compacts by: "
        f"{s.get('harness_count', 'estimate')} count",
        f"- pricing: {s.get('pricing', PER_TRACE)} in the tables (also computed: {other}; a trace of unknown model is "
        f"priced as {s['pricing_model']}); output at each model's own output price",
        f"- explicit cache (Anthropic): breakpoints {', '.join(cache['breakpoints'])}; lookback {cache['lookback_blocks']} "
        f"blocks; minimum cacheable {cache['min_cacheable_tokens'] or 'by model family'}; TTL {cache['ttl_s']:.0f} s "
        f"(gap without timestamps: {cache['default_gap_s'] or 'none'}); read ×{cache['read_multiplier']}, write "
        f"×{_write_multiplier(cache)} ({cache['output_tokens']} output tokens); automatic caches: "
        f"`pricing.AUTO_CACHE_RULES`" + (f", overridden: {cache['auto']}" if cache.get("auto") else ""),
        f"- statistics: bootstrap {s['resamples']} resamples of {s['cluster']} clusters, seed {s['seed']}; "
        "Wilcoxon signed-rank vs the baseline, Holm-adjusted per metric",
        f"- wall time: {doc['wall_time_s']:.1f} s ({doc['runtime']})",
    ]


def _rerun_lines(doc: dict[str, Any]) -> list[str]:
    prov = doc["provenance"]
    project = prov["project"]
    argv = prov["argv"]
    command = (
        "workingset bench compaction " + shlex.join(argv[argv.index("compaction") + 1 :])
        if "compaction" in argv
        else "workingset bench compaction"
    )
    dirty = " (uncommitted changes were present)" if project.get("dirty") else ""
    versions = ", ".join(f"{k} {v}" for k, v in prov["packages"].items() if v)
    return [
        "## How to rerun",
        "",
        f"1. Check out commit `{project.get('commit') or 'unknown'}`{dirty} and install it: `pip install -e '.[dev]'`.",
        f"2. Recorded with Python {prov['python']} on {prov['platform']}; {versions}.",
        f"3. Check the inputs: `results.json` → `provenance.trace_sha256` has the SHA-256 of each of the "
        f"{len(prov['trace_sha256'])} trace files (`sha256sum FILE`).",
        f"4. Run `{command}`. The same inputs and seed give the same tables (wall times aside).",
    ]


def _tests_lines(doc: dict[str, Any]) -> list[str]:
    rows = []
    for s in doc["summary"]:
        for metric, t in s["tests"].items():
            effect = (
                "—"
                if t["median_effect"] != t["median_effect"]
                else (f"×{t['median_effect']:.3f}" if t["comparison"] == "log-ratio" else f"{t['median_effect']:+.3f}")
            )
            p = "—" if t["p_value"] is None else f"{t['p_value']:.4f}"
            rows.append([s["strategy"], metric, t["comparison"], str(t["n"]), effect, p, _p(t)])
    return [
        "## Paired tests against the baseline",
        "",
        f"Wilcoxon signed-rank, two-sided, per trace pair with {doc['settings']['baseline']}; costs and tokens on "
        "the log of the per-trace ratio (effect: median ratio), recalls on the difference (effect: median "
        "difference); p adjusted with Holm across the strategies of each metric.",
        "",
        *_md_table(["strategy", "metric", "compared as", "pairs", "median effect", "p", "p (Holm)"], rows),
    ]


def _frameworks_lines(doc: dict[str, Any]) -> list[str]:
    rows = [
        [
            f["framework"],
            f["strategy"],
            str(f["traces"]),
            _num(f["cost_vs_raw_median"]),
            _num(f["cost_vs_raw_pooled"]),
            "—" if f["tool_evidence_recall_mean"] is None else f"{f['tool_evidence_recall_mean']:.0%}",
            str(f["infeasible_calls"]),
        ]
        for f in doc["frameworks"]
    ]
    return [
        "## Per framework",
        "",
        *_md_table(
            [
                "framework",
                "strategy",
                "traces",
                "cost ÷ raw (median)",
                "cost ÷ raw (pooled)",
                "tool-evidence recall (mean)",
                "infeasible calls",
            ],
            rows,
        ),
    ]


def _tokens_lines(doc: dict[str, Any]) -> list[str]:
    rows = [
        [
            f["family"],
            str(f["traces"]),
            str(f["calls"]),
            _num(f["estimate_over_recorded"], 3),
            _num(f["tekken_over_recorded"], 3),
            _num(f["estimate_over_tekken"], 3),
        ]
        for f in doc["token_check"]["families"]
    ]
    return [
        "## Token counts: the estimator against real counts",
        "",
        "Per trace family, pooled over the calls whose usage the trace records: the harness's estimate "
        "(chars/4) and the Tekken BPE count of the context as loaded, over the input tokens the recorded "
        "model's API billed for its own rendering of that context (1.000 = exact; below 1 the estimator "
        "undercounts). The last column needs no recorded usage.",
        "",
        *_md_table(
            ["family", "traces", "calls with usage", "estimate ÷ recorded", "Tekken ÷ recorded", "estimate ÷ Tekken"],
            rows,
        ),
    ]


def _presets_lines(doc: dict[str, Any]) -> list[str]:
    if not doc["presets"]:
        return []
    lines = ["## Peer presets", ""]
    for name, p in doc["presets"].items():
        lines.append(
            f"- `{name}` = `{p['spec']}` — {p['peer']}. Source: {p['source']}."
            + ("" if p["exact"] else " Approximate.")
            + (f" {p['gap']}" if p["gap"] else "")
        )
    return [*lines, ""]


_AIMS = {1: "never infeasible", 2: "no harm where raw fits", 3: "never dominated where compaction is needed"}


def _met(value: bool | None) -> str:
    return "NOT DECIDED" if value is None else ("MET" if value else "MISSED")


def verdict_lines(doc: dict[str, Any]) -> list[str]:
    """The verdict section: per pricing and window, each aim MET or MISSED with its numbers."""
    verdict = doc.get("verdict")
    if not verdict:
        return []
    lines = [
        "## Verdict",
        "",
        f"The default strategy `{verdict['default']}`, judged on three aims per window and per pricing "
        "(definitions below the tables).",
        "",
    ]
    for pricing in verdict["pricings"]:
        lines += [f"### Pricing: {pricing}", ""]
        rows = [
            [f"{a['window']:,}", f"{a['aim']}. {_AIMS[a['aim']]}", _met(a["met"]), a["text"]]
            for a in verdict["aims"]
            if a["pricing"] == pricing
        ]
        lines += [*_md_table(["window", "aim", "verdict", "figures"], rows), ""]
    fam = [f for f in verdict["families"]]
    if fam:
        rows = [
            [
                f["pricing"],
                f"{f['window']:,}",
                f["family"],
                ", ".join(
                    f"{p['name']} {p['cost']:.3f}/{'—' if p['recall'] is None else format(p['recall'], '.1%')}"
                    + ("" if p["feasible"] else " ⚠")
                    for p in f["points"]
                ),
                "—" if f["ratio"] is None else f"{f['ratio']:.3f} [{f['ratio_lo']:.3f}–{f['ratio_hi']:.3f}]",
                f"{f['p_holm']:.3g}",
                ", ".join(f["dominated_by"]) or "none",
            ]
            for f in fam
        ]
        lines += [
            "### Aim 3 per family",
            "",
            "Points: name cost÷raw/recall on the traces raw does not fit (the default first; ⚠: a call over the "
            "window, off the curve).",
            "",
            *_md_table(
                [
                    "pricing",
                    "window",
                    "family",
                    "points",
                    "default ÷ family at matched recall",
                    "p (Holm)",
                    "dominated by",
                ],
                rows,
            ),
            "",
        ]
    grid = doc.get("tuning_grid")
    if grid:
        lines += [
            f"The default's tuning grid ({len(grid['points'])} points, the size of every family's grid): "
            f"{', '.join(grid['points'])}. {grid['source']}",
            "",
        ]
    lines += [
        "<details><summary>How the verdict is computed</summary>",
        "",
        verdict["definitions"].strip(),
        "",
        "</details>",
        "",
    ]
    return lines


def _cached_share_lines(doc: dict[str, Any]) -> list[str]:
    rows = [
        [
            c["family"],
            c["cache_rule"],
            "—" if c["predicted"] is None else f"{c['predicted']:.1%}",
            "—" if c["recorded"] is None else f"{c['recorded']:.1%}",
        ]
        for c in doc.get("cached_share", [])
    ]
    if not rows:
        return []
    return [
        "## Cache model check: predicted against recorded cached share",
        "",
        "Per trace family, raw replay under per-trace pricing: cache-read ÷ input tokens as the model predicts, "
        "beside what the provider's recorded usage billed as cached (nothing is calibrated to it).",
        "",
        *_md_table(["family", "cache rule", "predicted cached share", "recorded cached share"], rows),
        "",
    ]


def verdict_report(top: dict[str, Any]) -> str:
    """The report of a run over several windows: settings, verdict, where each window's report is."""
    lines = ["# Compaction-strategy benchmark: verdict over several windows", ""]
    if top["synthetic"]:
        lines += [f"> **{SYNTHETIC_NOTE}.** Run with `--traces PATH` to measure recorded trajectories.", ""]
    settings = dict(top["settings"], context_window=top["windows"][0])
    lines += [
        *_settings_lines({**top, "settings": settings}),
        f"- windows: {', '.join(f'{w:,}' for w in top['windows'])}",
        "",
        *verdict_lines(top),
        *_cached_share_lines(top),
    ]
    if top.get("figures"):
        lines += ["## Figures", ""] + [f"![{name}]({path})" for name, path in top["figures"].items()] + [""]
    lines += ["## Each window", ""] + [
        f"- {int(w):,} tokens: [`{p.replace('results.json', 'report.md')}`]({p.replace('results.json', 'report.md')})"
        for w, p in top["per_window"].items()
    ]
    lines += ["", *_rerun_lines(top), ""]
    return reveal("\n".join(lines))


def _missed_lines(doc: dict[str, Any], limit: int = 3) -> list[str]:
    lines = [
        "## Drill-down: tool evidence missed, per call",
        "",
        f"The first {limit} calls with missed items of each run (all of them in `results.json`, `runs[].missed`).",
        "",
    ]
    for r in doc["runs"]:
        if r["error"] or not r["missed"]:
            continue
        shown = "; ".join(
            f"call {m['call']}: "
            + ", ".join(f"`{i}`" for i in m["items"][:6])
            + (f" (+{len(m['items']) - 6})" if len(m["items"]) > 6 else "")
            for m in r["missed"][:limit]
        )
        lines.append(reveal(f"- {r['trace']} · {r['strategy']} ({len(r['missed'])} calls): {shown}", one_line=True))
    return lines


def markdown_report(doc: dict[str, Any]) -> str:
    lines = ["# Compaction-strategy benchmark", ""]
    if doc["synthetic"]:
        lines += [f"> **{SYNTHETIC_NOTE}.** Run with `--traces PATH` to measure recorded trajectories.", ""]
    exceed = [s["strategy"] for s in doc["summary"] if s["exceeds_window"]]
    lines += _settings_lines(doc)
    lines += [
        "",
        *verdict_lines(doc),
        "## Summary",
        "",
        "Ratios: median over traces of the per-trace ratio [95% cluster-bootstrap interval]; pooled = sum ÷ sum. "
        "Recalls: mean over traces [95% interval]; Δ vs base: mean paired difference [95% interval]. "
        f"{EXCEEDS}marks a strategy that sent at least one request over the window (infeasible calls); "
        "it is left off the Pareto front.",
        "",
    ]
    if exceed:
        lines += [f"**Exceed the window:** {', '.join(exceed)}.", ""]
    lines += _md_table(SUMMARY_COLUMNS, [summary_cells(x) for x in doc["summary"]])
    lines += [
        "",
        *_tests_lines(doc),
        "",
        *_frameworks_lines(doc),
        "",
        *_tokens_lines(doc),
        "",
        *_cached_share_lines(doc),
        *_presets_lines(doc),
    ]
    if doc["figures"]:
        lines += ["## Figures", ""] + [f"![{name}]({path})" for name, path in doc["figures"].items()] + [""]
    lines += ["## Per trace", ""]
    lines += _md_table(
        [
            "trace",
            "strategy",
            "calls",
            "infeasible",
            "cumulative tokens",
            "peak",
            "cost",
            "cost (lcp)",
            "tool evidence",
            "grounding (legacy)",
            "compactions",
        ],
        [_run_row(r) for r in doc["runs"]],
    )
    lines += ["", *_missed_lines(doc)]
    if doc.get("live"):
        live = doc["live"]
        lines += [
            "",
            "## Live runs",
            "",
            *live_caption(live),
            "",
            *_md_table(ARM_COLUMNS, arm_rows(live)),
            "",
            *_md_table(PAIR_COLUMNS, pair_rows(live)),
        ]
        lines += [reveal(f"- invalid task line: {text}", one_line=True) for text in live["invalid"]]
    if doc["skipped"]:
        lines += ["", "## Skipped inputs", ""] + [
            reveal(f"- `{x['path']}`: {x['reason']}", one_line=True) for x in doc["skipped"]
        ]
    lines += ["", *_rerun_lines(doc), "", _definitions(), ""]
    return reveal("\n".join(lines))
