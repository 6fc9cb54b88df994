"""The live experiment's tables, as cells: one row per arm, one per pair (the default arm
against each other arm). The markdown report and the terminal show the same cells.

Arm labels and task-file paths come from the user; every cell is revealed (agents.visible)
by the caller that prints it, and markdown cells are escaped by report.markdown_cell.
"""

from __future__ import annotations

from typing import Any

from .stats import Interval

__all__ = ["ARM_COLUMNS", "PAIR_COLUMNS", "arm_rows", "live_caption", "pair_rows"]

ARM_COLUMNS = (
    "arm",
    "runs",
    "solved",
    "solve rate",
    "errors",
    "billed $",
    "$ / run",
    "input",
    "cache read",
    "cache write",
    "output",
    "turns / run",
    "Recall calls (runs)",
    "compactions",
)
PAIR_COLUMNS = (
    "pair",
    "pairs",
    "A only",
    "B only",
    "both",
    "neither",
    "McNemar p",
    "p (Holm)",
    "p (by task)",
    "Δ solve rate",
    "non-inferior",
)


def _interval(value: dict | None, *, signed: bool = False) -> str:
    if value is None:
        return "—"
    iv = Interval.model_validate(value)
    if signed:
        return f"{iv.value:+.0%} [{iv.lo:+.0%}, {iv.hi:+.0%}]"
    return f"{iv.value:.0%} [{iv.lo:.0%}–{iv.hi:.0%}]"


def _p(value: float | None) -> str:
    return "—" if value is None else (f"{value:.2g}" if value < 0.01 else f"{value:.3f}")


def arm_rows(live: dict[str, Any]) -> list[list[str]]:
    rows = []
    for a in live["arms"]:
        u = a["usage"]
        per_run = "—" if u["billed_usd_per_run"] is None else f"{u['billed_usd_per_run']:.4f}"
        turns = "—" if u["turns_per_run"] is None else f"{u['turns_per_run']:.1f}"
        rows.append(
            [
                a["arm"],
                str(a["runs"]),
                str(a["solved"]),
                _interval(a["solve_rate"]),
                str(a["statuses"].get("error", 0)),
                f"{u['billed_usd']:.4f}",
                per_run,
                f"{u['input_tokens']:,}",
                f"{u['cache_read_tokens']:,}",
                f"{u['cache_write_tokens']:,}",
                f"{u['output_tokens']:,}",
                turns,
                f"{u['recall_calls']} ({u['runs_using_recall']})",
                str(u["compactions"]),
            ]
        )
    return rows


def pair_rows(live: dict[str, Any]) -> list[list[str]]:
    rows = []
    for p in live["pairs"]:
        t = p["test"]
        verdict = "—" if p["noninferior"] is None else ("yes" if p["noninferior"] else "no")
        rows.append(
            [
                f"A = {p['arm']} · B = {p['other']}",
                str(p["pairs"]),
                str(t["b"]),
                str(t["c"]),
                str(p["both_solved"]),
                str(p["neither"]),
                f"{_p(t['p_value'])} ({t['method']})",
                _p(p["p_holm"]),
                _p(p["p_clustered"]),
                _interval(p["difference"], signed=True),
                verdict,
            ]
        )
    return rows


def live_caption(live: dict[str, Any]) -> list[str]:
    """The sentences above the tables: what ran, and how to read the figures."""
    level = f"{1 - live['alpha']:.0%}"
    priced = sorted({name for a in live["arms"] for name in a["usage"]["priced_as"]})
    fixed = sum(a["usage"]["runs_priced_as_fixed"] for a in live["arms"])
    unknown = f" ({fixed} runs of models no table prices, at the fixed model's prices)" if fixed else ""
    return [
        f"{live['tasks']} tasks from `{live['tasks_file']}` × {live['repeats']} repeat(s) (seeds "
        f"{', '.join(map(str, live['seeds']))}) per arm; model: {live['model'] or 'the tasks’ own'}; plan registered "
        f"in `{live['plan']}` before the first task ran.",
        f"Solved: status `passed` (any other status counts as not solved). Solve rate: mean over runs [{level} "
        f"bootstrap, clustered by task]. Pairs: the default arm A = {live['default']} against each other arm B on the "
        f"same (task, repeat); McNemar's test of the discordant counts (exact binomial below 25), Holm across the "
        f"pairs; p (by task): Durkalski's clustered McNemar over tasks (asymptotic; not adjusted); Δ = A − B [{level}, clustered by task]; non-inferior when Δ's lower end is above −{live['margin']:.0%}.",
        f"Billed $: the recorded usage (input, cache read, cache write, output) at list prices, priced as "
        f"{', '.join(priced) or '—'}{unknown}. Recall calls: how often the model read back a cleared or clipped result "
        "(runs that did).",
    ]
