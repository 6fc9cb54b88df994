"""Live mode (`--live TASKS.jsonl --model SPEC`): run the batch-eval tasks once per strategy
through cluster/eval's runner and compare how many pass.

Each strategy is one eval batch in `<out>/live/<strategy>/` with the eval command's
settings (headless permissions, the sandbox; `eval_settings`), the strategy forced on
every task (a task's own `strategy` field is overridden: the strategy is what is being
compared), and `--model` as the default model (a task's own `model` still wins). A batch
resumes like `workingset eval`: rerunning with the same --out skips finished tasks.

Per strategy: pass rate (passed / tasks with a result; mean over tasks with a seeded
95% bootstrap interval), cost and tokens as the eval rows report them. Paired per task
against the baseline: gained (baseline did not pass, strategy passed), lost (the
reverse), both passed, both not passed; tasks where either run ended in `error` are
counted apart, as not comparable.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents.errors import ConfigError

from .stats import bootstrap_interval

__all__ = ["flip_table", "run_live"]


class _Reporter:
    """The eval Reporter shape; forwards each finished task to a callback."""

    def __init__(self, on_finished: Callable[[str, str], None] | None):
        self.on_finished = on_finished
        self.notices: list[str] = []

    def event(self, kind: str, **fields: Any) -> None:
        if kind == "task_finished" and self.on_finished:
            self.on_finished(fields["task_id"], fields["status"])
        elif kind == "notice":
            self.notices.append(str(fields.get("text", "")))

    def usage(self, task_id: str, tokens: int, cost_usd: float) -> None:
        return None

    def close(self) -> None:
        return None


def flip_table(base: dict[str, str], other: dict[str, str]) -> dict[str, int]:
    """Paired outcomes per task id present in both: statuses `passed` / anything else."""
    table = {"gained": 0, "lost": 0, "both_passed": 0, "both_not_passed": 0, "not_comparable": 0}
    for task_id in sorted(base.keys() & other.keys()):
        a, b = base[task_id], other[task_id]
        if "error" in (a, b):
            table["not_comparable"] += 1
        elif a == "passed" and b == "passed":
            table["both_passed"] += 1
        elif a == "passed":
            table["lost"] += 1
        elif b == "passed":
            table["gained"] += 1
        else:
            table["both_not_passed"] += 1
    return table


def _settings(spec: str, out: Path, model: str | None, summarizer: str, local: bool, address: str | None):
    from cluster.eval.settings import eval_settings

    args = argparse.Namespace(
        out=str(out), allow=[], deny=[], model=model, summarizer=summarizer, strategy=spec, max_turns=None,
        max_tokens=None, max_cost=None, address=address, no_sandbox=False, local=local,
    )
    return eval_settings(args)


def _dir_name(spec: str) -> str:
    from cluster.eval.workspaces import safe_name

    return safe_name(spec)


async def _batch(spec: str, tasks: list, out: Path, *, model, summarizer, local, address, concurrency, progress) -> dict:
    from cluster.eval.hosts import LocalHost, SessionHost
    from cluster.eval.ray_host import RayHost
    from cluster.eval.runner import EvalOptions, EvalRunner

    settings = _settings(spec, out, model, summarizer, local, address)
    host: SessionHost = LocalHost() if settings.runtime == "local" else RayHost(concurrency=concurrency)
    forced = [t.model_copy(update={"strategy": spec}) for t in tasks]
    reporter = _Reporter(progress)
    runner = EvalRunner(settings, forced, EvalOptions(out=out, concurrency=concurrency), host=host, reporter=reporter)
    summary = await runner.run()
    latest, _ = runner.results.latest()
    rows = {t.id: latest[t.id] for t in forced if t.id in latest}
    return {"summary": summary, "rows": rows, "out": str(runner.out.root)}


def run_live(
    tasks_path: Path, *, strategies: Sequence[str], baseline: str, out: Path, model: str | None,
    summarizer: str = "extractive", local: bool = False, address: str | None = None, concurrency: int = 2,
    strict: bool = False, resamples: int = 2_000, seed: int = 0,
    progress: Callable[[str, str, str], None] | None = None, on_start: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Run every task under every strategy; returns the `live` section of the document."""
    from cluster.eval.task_file import load_tasks
    from cluster.eval.tasks import absolute_spec

    loaded = load_tasks(tasks_path)
    invalid = loaded.problem_lines()
    if invalid and strict:
        raise ConfigError(f"--live {tasks_path}: {len(invalid)} invalid task line(s) (--strict): {invalid[0]}")
    if not loaded.tasks:
        raise ConfigError(f"--live {tasks_path}: no valid task" + (f" ({invalid[0]})" if invalid else ""))
    model = absolute_spec(model, Path.cwd())
    if on_start:
        on_start(len(loaded.tasks) * len(strategies))
    batches: dict[str, dict] = {}
    for spec in strategies:
        report = functools.partial(progress, spec) if progress else None
        batches[spec] = asyncio.run(_batch(
            spec, loaded.tasks, out / "live" / _dir_name(spec), model=model, summarizer=summarizer, local=local,
            address=address, concurrency=concurrency, progress=report,
        ))
    statuses = {spec: {tid: row.status for tid, row in b["rows"].items()} for spec, b in batches.items()}
    rows = []
    for spec in strategies:
        mine = batches[spec]["rows"]
        passed = [1.0 if r.status == "passed" else 0.0 for r in mine.values()]
        iv = bootstrap_interval(passed, statistic="mean", resamples=resamples, seed=seed, label=f"live/{spec}")
        rows.append({
            "strategy": spec,
            "tasks": len(mine),
            "passed": int(sum(passed)),
            "pass_rate": iv.model_dump() if iv else None,
            "statuses": {s: sum(1 for r in mine.values() if r.status == s) for s in sorted({r.status for r in mine.values()})},
            "cost_usd": round(sum(r.cost_usd for r in mine.values()), 6),
            "tokens": sum(r.tokens for r in mine.values()),
            "compactions": sum(r.compactions for r in mine.values()),
            "flips_vs_baseline": flip_table(statuses.get(baseline, {}), statuses[spec]),
            "flips_vs_raw": flip_table(statuses.get("raw", {}), statuses[spec]),
            "out": batches[spec]["out"],
        })
    return {"tasks_file": str(tasks_path), "tasks": len(loaded.tasks), "invalid": invalid, "model": model,
            "baseline": baseline, "strategies": rows}
