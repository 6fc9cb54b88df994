"""The default strategy's goal table from a finished `bench compaction` run, on all its
traces or on a subset (held-out traces), overall and per trace family.

    python -m benchmarks.compaction.goal bench-results/compaction/results.json
    python -m benchmarks.compaction.goal RESULTS.json --exclude /work/shared/traces/openhands \
        --exclude /work/shared/traces/mini-swe-agent-pr816-deepseek --exclude /work/shared/traces/mini-swe-agent-pr854-deepseek

Per strategy: tool-evidence recall (mean), cost ÷ raw (median of per-trace ratios and
pooled), infeasible calls, tokens ÷ oracle (median), and `current`'s cost ÷ the
strategy's, paired per trace: median [95% bootstrap], Wilcoxon p (the same statistics as
the bench, `benchmarks.compaction.stats`; `--baseline current` on the bench gives the
reciprocal as its "cost ÷ base" column). Then the goal check per family (trace source):
is `current` feasible, within 1 point of the best feasible recall, the cheapest (pooled)
of the feasible strategies within 2 points of the best, and by how much cheaper than the
cheapest feasible peer preset. `--default SPEC` checks a variant of `current` run in the
same bench (e.g. `current:keep=1`) as if it were the default; the other variants of
`current` then leave the table, since they are candidates, not peers.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.compaction.significance import paired_test
from benchmarks.compaction.stats import bootstrap_interval

__all__ = ["goal_rows", "main"]

DEFAULT = "current"
_TIE = 0.001  # pooled costs this close count as equal (a strategy that never compacts there costs raw)


def _runs(doc: dict[str, Any], include: Sequence[str], exclude: Sequence[str]) -> list[dict[str, Any]]:
    paths = {t["label"]: t["path"] for t in doc["traces"]}

    def chosen(label: str) -> bool:
        path = paths.get(label, "")
        return (not include or any(path.startswith(p) for p in include)) and not any(path.startswith(p) for p in exclude)

    return [r for r in doc["runs"] if r["error"] is None and chosen(r["trace"])]


def _by_strategy(runs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    table: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for run in runs:
        table[run["strategy"]][run["trace"]] = run
    return table


def goal_rows(runs: list[dict[str, Any]], strategies: Sequence[str], default_name: str = DEFAULT) -> list[dict[str, Any]]:
    """One row per strategy over `runs` (all from one bench document)."""
    table = _by_strategy(runs)
    raw, default = table.get("raw", {}), table.get(default_name, {})
    rows = []
    for name in strategies:
        own = table.get(name, {})
        if not own:
            continue
        traces = sorted(own)
        ratios = [own[t]["cost_usd"] / raw[t]["cost_usd"] for t in traces if t in raw and raw[t]["cost_usd"] > 0]
        pooled = sum(own[t]["cost_usd"] for t in traces if t in raw) / max(sum(raw[t]["cost_usd"] for t in traces if t in raw), 1e-12)
        pairs = [(default[t]["cost_usd"], own[t]["cost_usd"]) for t in traces if t in default and own[t]["cost_usd"] > 0]
        vs = bootstrap_interval([a / b for a, b in pairs], label=f"goal/{name}") if name != default_name else None
        rows.append({
            "strategy": name,
            "traces": len(traces),
            "recall": sum(own[t]["tool_evidence_recall"] or 0 for t in traces) / len(traces),
            "cost_median": _median(ratios),
            "cost_pooled": pooled,
            "infeasible": sum(own[t]["infeasible_calls"] for t in traces),
            "infeasible_traces": sum(1 for t in traces if own[t]["infeasible_calls"]),
            "oracle": _median([own[t]["oracle_ratio"] for t in traces if own[t]["oracle_ratio"] is not None]),
            "vs_default": vs,
            "p": paired_test("cost_usd", pairs).p_value if name != default_name else None,
        })
    return rows


def _compared(doc: dict[str, Any], default_name: str) -> list[str]:
    """The strategies of the bench, less the variants of `current` other than the one checked."""
    names = [s["strategy"] for s in doc["summary"]]
    if default_name not in names:
        raise SystemExit(f"--default {default_name}: not in this bench run (it ran: {', '.join(names)})")
    return [n for n in names if n == default_name or not (n == DEFAULT or n.startswith(DEFAULT + ":"))]


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    n = len(ordered)
    return (ordered[(n - 1) // 2] + ordered[n // 2]) / 2


def _check(rows: list[dict[str, Any]], presets: set[str], default_name: str = DEFAULT) -> str:
    """The goal, as far as these rows decide it, for the default strategy."""
    feasible = [r for r in rows if r["infeasible"] == 0]
    default = next((r for r in rows if r["strategy"] == default_name), None)
    if default is None or not feasible:
        return "no feasible strategy" if default else f"{default_name} not run"
    best = max(r["recall"] for r in feasible)
    near = [r for r in feasible if r["recall"] >= best - 0.02]
    cheapest = min(near, key=lambda r: r["cost_pooled"])
    ok = default in near and default["cost_pooled"] <= cheapest["cost_pooled"] * (1 + _TIE)
    cheapest = default if ok else cheapest
    peers = [r for r in feasible if r["strategy"] in presets]
    parts = [
        "feasible" if default["infeasible"] == 0 else f"INFEASIBLE ({default['infeasible']} calls)",
        f"recall {default['recall']:.1%} vs best feasible {best:.1%} ({'ok' if default['recall'] >= best - 0.01 else 'MISS'})",
        f"cheapest near the best: {cheapest['strategy']} {cheapest['cost_pooled']:.3f}"
        + (" (ok)" if ok else f" vs {default['cost_pooled']:.3f} (MISS)"),
    ]
    if peers:
        peer = min(peers, key=lambda r: r["cost_pooled"])
        cut = 1 - default["cost_pooled"] / peer["cost_pooled"]
        parts.append(f"vs cheapest feasible peer {peer['strategy']}: {cut:+.0%} cheaper ({'ok' if cut >= 0.15 else 'MISS'})")
    else:
        parts.append("no feasible peer preset")
    return "; ".join(parts)


def _fmt(row: dict[str, Any]) -> str:
    vs = row["vs_default"]
    paired = "–" if vs is None else f"{vs.value:.3f} [{vs.lo:.3f}–{vs.hi:.3f}], p {row['p']:.1g}" if row["p"] else f"{vs.value:.3f}"
    infeasible = f"{row['infeasible']} ({row['infeasible_traces']})" if row["infeasible"] else "0"
    oracle = "–" if row["oracle"] is None else f"{row['oracle']:.2f}"
    return (f"| {row['strategy']} | {row['traces']} | {row['recall']:.1%} | {row['cost_median']:.3f} ({row['cost_pooled']:.3f}) "
            f"| {infeasible} | {oracle} | {paired} |")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="results.json of a bench compaction run")
    parser.add_argument("--include", action="append", default=[], help="only traces whose path starts so (repeatable)")
    parser.add_argument("--exclude", action="append", default=[], help="leave out traces whose path starts so (repeatable)")
    parser.add_argument("--no-families", action="store_true", help="the overall table only")
    parser.add_argument("--default", default=DEFAULT, help=f"the strategy checked as the default (default {DEFAULT}); "
                        "the other variants of current leave the table")
    args = parser.parse_args(argv)
    doc = json.loads(args.results.read_text())
    runs = _runs(doc, args.include, args.exclude)
    strategies = _compared(doc, args.default)
    presets = set(doc.get("presets") or [])
    window = doc["settings"]["context_window"]
    print(f"## {window:,} tokens, {len({r['trace'] for r in runs})} traces\n")
    print("| strategy | traces | tool-evidence recall | cost ÷ raw median (pooled) | infeasible calls (traces) "
          "| tokens ÷ oracle | current's cost ÷ its, paired |")
    print("|---|---|---|---|---|---|---|")
    rows = goal_rows(runs, strategies, args.default)
    for row in rows:
        print(_fmt(row))
    print(f"\ngoal, all traces ({args.default}): {_check(rows, presets, args.default)}")
    if args.no_families:
        return
    sources = {t["label"]: t["source"] for t in doc["traces"]}
    families: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        families[sources.get(run["trace"], "?")].append(run)
    for family, members in sorted(families.items()):
        print(f"goal, {family} ({len({r['trace'] for r in members})} traces): {_check(goal_rows(members, strategies, args.default), presets, args.default)}")


if __name__ == "__main__":
    main()
