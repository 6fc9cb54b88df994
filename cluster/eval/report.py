"""The batch's figures: `summary.json` (for programs) and `report.md` (for people).

Computed from the latest result row of every task in the out directory, so an
interrupted batch reports what finished, a rerun's report covers the whole set, and the
rows of several task files run into one out directory are all reported (the report's
tasks grouped per task file; `task_files` in the summary). `selection` names the task
file, --filter and --slice of the run that wrote them; `stopped` says when the batch
cost cap (--batch-max-cost) stopped it starting tasks.

    pass_rate             passed / judged (finished rows less infra_error ones, which describe
                          the cluster, not the agent; `judged` in the summary)
    cost_per_task_usd     total cost / finished
    cost_per_solved_usd   total cost / passed (what one solved task costs, failures included)
    wall_s                p50 / p95 / mean / max of the per-task wall time (linear interpolation)
    infra_errors          tasks the infrastructure failed through every retry (status
                          infra_error, apart from the agent's `error`); a plain rerun runs them
    touching_tests        tasks whose patch changes test infrastructure (patch_touches_tests);
                          of them, passed_touching_tests passed: read those grades with care
    grades                how the graded rows were judged: per test by the grader's reporter,
                          per test by swebench's log parser, or by the test command's exit
                          code; for the first two, required tests passing of those required
                          (and per named group such as FAIL_TO_PASS); with_outcome_hooks
                          counts grades in which a plugin outside pytest implemented an
                          outcome hook

Everything in `report.md` that came from outside (task ids, errors, notes, file names,
the task file's name, filters) is one line with hidden characters revealed and pipes
escaped: it can neither act on a terminal that shows the file nor break a table.

Cost counts only calls of known price. A run of a scripted model or of a model whose
price is unknown shows as such ("scripted", "unknown price"), never as $0; when no
task was priced the cost figures are None ("–").
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from pathlib import Path

from agents.visible import markdown_cell, reveal
from cluster.eval.durable import write_atomic
from cluster.eval.results import STATUSES, ResultRow

__all__ = ["describe_cost", "percentile", "summarize", "write_report", "write_summary"]


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


_NO_FILE = "(task file not recorded)"


def _per_file(rows: list[ResultRow]) -> list[dict]:
    groups: dict[str, list[ResultRow]] = {}
    for row in rows:
        groups.setdefault(row.task_file or _NO_FILE, []).append(row)
    return [
        {"task_file": name, "finished": len(group), "passed": _passed(group), "pass_rate": _rate(group)}
        for name, group in sorted(groups.items())
    ]


def _passed(rows: list[ResultRow]) -> int:
    return sum(r.status == "passed" for r in rows)


def _rate(rows: list[ResultRow]) -> float | None:
    """passed / judged: an infra_error row says nothing of the agent."""
    judged = sum(r.status != "infra_error" for r in rows)
    return _round(_passed(rows) / judged if judged else 0.0, 4)


def _grades(rows: list[ResultRow]) -> dict:
    graded = [r.grade for r in rows if r.grade is not None]
    by_test = [g for g in graded if g.verdict != "exit-code"]
    groups: dict[str, dict[str, int]] = {}
    for grade in by_test:
        for name, counts in grade.groups.items():
            total = groups.setdefault(name, {"passing": 0, "total": 0})
            total["passing"] += counts["passing"]
            total["total"] += counts["total"]
    return {
        "per_test": sum(1 for g in graded if g.verdict == "per-test"),
        "log_parser": sum(1 for g in graded if g.verdict == "log-parser"),
        "exit_code": sum(1 for g in graded if g.verdict == "exit-code"),
        "required_tests": sum(len(g.required) for g in by_test),
        "required_passing": sum(g.required_passing for g in by_test),
        "groups": groups,
        "with_outcome_hooks": sum(1 for g in by_test if g.outcome_hooks),
    }


def summarize(
    rows: list[ResultRow],
    *,
    tasks_total: int,
    invalid: list[str],
    model: str,
    interrupted: bool = False,
    selection: dict | None = None,
    stopped: dict | None = None,
) -> dict:
    n = len(rows)
    statuses: Counter[str] = Counter(r.status for r in rows)
    passed = statuses["passed"]
    unpriced = [r for r in rows if r.unpriced_calls]
    # rows with no model call (an error before the agent) neither price nor unprice the batch
    priced_any = any(r.cost_usd or r.pricing in ("list", "configured", "mixed") for r in rows)
    cost = sum(r.cost_usd for r in rows) if priced_any or not unpriced else None
    tokens = {
        "input": sum(r.input_tokens for r in rows),
        "output": sum(r.output_tokens for r in rows),
        "cache_read": sum(r.cache_read_tokens for r in rows),
        "cache_creation": sum(r.cache_creation_tokens for r in rows),
    }
    tokens["total"] = sum(tokens.values())
    walls = [r.wall_s for r in rows]
    return {
        "model": model,
        "tasks": tasks_total,
        "finished": n,
        "pending": max(tasks_total - n, 0),
        "invalid_lines": len(invalid),
        "statuses": {s: statuses[s] for s in STATUSES},
        "judged": n - statuses["infra_error"],
        "pass_rate": _rate(rows),
        "cost_usd": _round(cost),
        "cost_per_task_usd": _round(cost / n if n and cost is not None else None),
        "cost_per_solved_usd": _round(cost / passed if passed and cost is not None else None),
        "unpriced_tasks": len(unpriced),
        "unpriced_kinds": sorted({r.pricing or "unknown" for r in unpriced}),
        "tokens": tokens,
        "tokens_per_task": _round(tokens["total"] / n if n else None, 1),
        "turns_per_task": _round(sum(r.turns for r in rows) / n if n else None, 2),
        "wall_s": {
            "p50": _round(percentile(walls, 0.5), 3),
            "p95": _round(percentile(walls, 0.95), 3),
            "mean": _round(sum(walls) / n if n else None, 3),
            "max": _round(max(walls) if walls else None, 3),
        },
        "touching_tests": sum(1 for r in rows if r.patch_touches_tests),
        "passed_touching_tests": sum(1 for r in rows if r.patch_touches_tests and r.status == "passed"),
        "grades": _grades(rows),
        "compactions": sum(r.compactions for r in rows),
        "retries": sum(r.retries for r in rows),
        "infra_errors": statuses["infra_error"],
        "actor_restarts": sum(r.actor_restarts for r in rows),
        "node_losses": sum(r.node_losses for r in rows),
        "nodes": dict(sorted(Counter(r.node[:12] for r in rows if r.node).items())),
        "interrupted": interrupted,
        "stopped": stopped,
        "selection": selection,
        "task_files": _per_file(rows),
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_summary(path: Path, summary: dict) -> None:
    write_atomic(path, json.dumps(summary, indent=2) + "\n")


def _money(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}"


_UNPRICED_LABEL = {"scripted": "scripted", "unknown": "unknown price", "mixed": "unpriced"}


def describe_cost(cost_usd: float, unpriced_calls: int, pricing: str | None) -> str:
    """A run's cost as people should read it: dollars only for what has a price."""
    if not unpriced_calls:
        return _money(cost_usd)
    label = _UNPRICED_LABEL.get(pricing or "unknown", "unpriced")
    if not cost_usd:
        return label
    return f"{_money(cost_usd)} + {unpriced_calls} {label} calls"


def _cost_line(s: dict) -> str:
    money = (
        f"{_money(s['cost_usd'])} total · {_money(s['cost_per_task_usd'])} per task · "
        f"{_money(s['cost_per_solved_usd'])} per solved task"
    )
    if s.get("unpriced_tasks"):
        kinds = ", ".join(_UNPRICED_LABEL.get(k, k) for k in s.get("unpriced_kinds", []))
        money += f" · {s['unpriced_tasks']} tasks not priced ({kinds})"
    return money


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} s"


def _cell(text: str | None, limit: int = 120) -> str:
    """Task ids, errors, notes and file names come from task files, agents and tools:
    one line, hidden characters revealed, pipes escaped (agents.visible.markdown_cell)."""
    text = " ".join((text or "").split())
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return markdown_cell(text)


def _one_line(text: str) -> str:
    """The same outside a table (in a code span, where a backslash would show): one line, revealed."""
    return reveal(" ".join(text.split()), one_line=True)


def _row_note(row: ResultRow) -> str:
    parts = [row.error] if row.error else []
    if row.grade is not None and not row.grade.passed:
        parts += row.grade.reasons[:2]
    if row.grade is not None and row.grade.outcome_hooks:
        parts.append(f"outcome hooks outside pytest: {', '.join(row.grade.outcome_hooks[:3])}")
    if row.patch_touches_tests:
        parts.append(f"patch touches tests: {', '.join(row.patch_touches_tests)}")
    if row.status in ("timeout", "budget", "truncated", "refused") and row.tests_passed is not None:
        parts.append(f"tests {'passed' if row.tests_passed else 'failed'} anyway")
    parts += row.notes
    return _cell("; ".join(p for p in parts if p))


def _required(row: ResultRow) -> str:
    grade = row.grade
    if grade is None:
        return "–"
    if grade.verdict == "exit-code":
        return f"exit code {grade.exit_code}"
    return f"{grade.required_passing} / {len(grade.required)}"


def _grades_line(s: dict) -> str:
    g = s.get("grades") or {}
    if not g:
        return "–"
    parsed = f" + {g['log_parser']} from swebench's log parser" if g.get("log_parser") else ""
    text = (
        f"{g['per_test']} per test{parsed} ({g['required_passing']:,} of {g['required_tests']:,} required tests passing"
    )
    text += "".join(f"; {name} {c['passing']:,} / {c['total']:,}" for name, c in sorted(g["groups"].items()))
    text += f") · {g['exit_code']} by exit code"
    if g["with_outcome_hooks"]:
        text += f" · {g['with_outcome_hooks']} with outcome hooks outside pytest"
    return text


def _task_line(row: ResultRow) -> str:
    cost = describe_cost(row.cost_usd, row.unpriced_calls, row.pricing)
    return (
        f"| {_cell(row.task_id, 60)} | {row.status} | {_required(row)} | {row.turns} | {row.tokens:,} | {cost} | "
        f"{_seconds(row.wall_s)} | {row.compactions} | {_cell(row.patch_path or '–', 300)} | {_row_note(row)} |"
    )


def _task_tables(summary: dict, rows: list[ResultRow]) -> list[str]:
    lines = ["## Tasks"]
    for group in summary.get("task_files") or []:
        name = group["task_file"]
        lines += [
            "",
            f"### {_cell(name, 300)}",
            "",
            f"{group['finished']} tasks · {group['passed']} passed ({group['pass_rate'] * 100:.1f} %)",
            "",
            "| task | status | required tests passing | turns | tokens | cost | wall | compactions | patch | note |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|---|",
        ]
        lines += [_task_line(r) for r in sorted(rows, key=lambda r: r.task_id) if (r.task_file or _NO_FILE) == name]
    return lines


def _run_lines(s: dict) -> list[str]:
    """What selection produced the report, and whether the cost cap stopped it."""
    lines = []
    if s.get("selection"):
        sel = s["selection"]
        parts = [f"`{_one_line(sel['task_file'])}`", *(f"--filter `{_one_line(p)}`" for p in sel["filters"])]
        if sel["slice"] is not None:
            parts.append(f"--slice `{_one_line(sel['slice'])}`")
        lines += ["", f"Selection of the last run: {', '.join(parts)}: {sel['selected']} of {sel['in_file']} tasks"]
    stopped = s.get("stopped")
    if stopped:
        lines += [
            "",
            f"**Stopped by the batch cost cap** (--batch-max-cost {_money(stopped['cap_usd'])}): "
            f"{_money(stopped['spent_usd'])} spent, {stopped['not_started']} tasks not started; raise the cap "
            "and run the same command again to go on",
        ]
    return lines


def write_report(path: Path, summary: dict, rows: list[ResultRow], invalid: list[str]) -> None:
    s = summary
    st = s["statuses"]
    t = s["tokens"]
    state = " (interrupted: rerun the same command to finish)" if s["interrupted"] else ""
    files = len(s.get("task_files") or [])
    in_files = f" in {files} task files" if files > 1 else ""
    lines = [
        "# Evaluation report",
        "",
        f"Model `{_one_line(s['model'])}` · {s['tasks']} tasks{in_files}: {s['finished']} finished, {s['pending']} pending, "
        f"{s['invalid_lines']} invalid lines{state} · {s['generated_at']}",
        *_run_lines(s),
        "",
        "| | |",
        "|---|---|",
        f"| pass rate | {s['pass_rate'] * 100:.1f} % ({st['passed']} / {s.get('judged', s['finished'])}) |",
        f"| {' / '.join(STATUSES)} | {' / '.join(str(st[k]) for k in STATUSES)} |",
        f"| cost | {_cost_line(s)} |",
        f"| tokens | {t['total']:,} (in {t['input']:,} · out {t['output']:,} · cache read {t['cache_read']:,} · "
        f"cache write {t['cache_creation']:,}) |",
        f"| wall per task | p50 {_seconds(s['wall_s']['p50'])} · p95 {_seconds(s['wall_s']['p95'])} · "
        f"max {_seconds(s['wall_s']['max'])} |",
        f"| grades | {_grades_line(s)} |",
        f"| patches touching tests | {s['touching_tests']} ({s['passed_touching_tests']} of them passed) |",
        f"| compactions | {s['compactions']} |",
        f"| retries · actor restarts · node losses | {s['retries']} · {s['actor_restarts']} · {s['node_losses']} |",
        *(
            [
                f"| infrastructure errors | {s['infra_errors']} (the infrastructure failed, not the agent: run the same "
                "command again to run them) |"
            ]
            if s.get("infra_errors")
            else []
        ),
        *(
            [f"| tasks per node | {_cell(', '.join(f'{n}: {k}' for n, k in s['nodes'].items()), 1000)} |"]
            if s["nodes"]
            else []
        ),
        "",
        *_task_tables(s, rows),
    ]
    if invalid:
        lines += ["", "## Lines of the task file that were not run", ""]
        lines += [f"- {_cell(text, 300)}" for text in invalid]
    write_atomic(path, reveal("\n".join(lines) + "\n"))  # the lines outside tables too
