"""Live mode (`--live TASKS.jsonl --model SPEC`): a pre-registered experiment that runs the
batch-eval tasks under every strategy (arm), `--repeats` times, through cluster/eval's
runner, and compares the default arm's solve rate with each other arm's.

Order of work: `prepare_live` loads the tasks and registers the plan (`live_plan.py`,
`<out>/plan.json`) before any task runs — the command calls it before the trace replays,
so a plan that differs from a stored one refuses at once. `LiveExperiment.run` then runs
repeat by repeat, and in each repeat arm by arm, so a run stopped early has the same
repeats under every arm.

Each (arm, repeat) is one eval batch in `<out>/live/<arm>/seed-<seed>/` with the eval
command's settings (headless permissions, the sandbox; `eval_settings`), the arm forced on
every task (a task's own `strategy` is overridden: the strategy is what is compared), and
`--model` as the default model (a task's own `model` still wins). The repeat's seed is the
same under every arm and task, and replaces `{seed}` in the model spec (`--model` and the
tasks' own), so a scripted or plugin model can vary by repeat and a rerun gets the same
one; providers that take no seed (the Anthropic API) are sampled afresh and the seed
names the repeat. A batch resumes like `workingset eval`: rerunning with the same --out
skips finished tasks.

The figures (`live_stats.py`, `live_usage.py`): per arm, solve rate with an interval
clustered by task, billed cost from the recorded usage, turns, tool and Recall calls;
per pair, McNemar's test, Holm-adjusted, the difference in solve rate and the verdict of
non-inferiority at the registered margin.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.errors import ConfigError
from cluster.eval import LoadedTasks, ResultRow

from .live_plan import LivePlan, PlannedTask, register_plan, seeds_for
from .live_stats import compare_pairs, solve_rate
from .live_usage import arm_usage
from .provenance import project_commit, trace_hashes

__all__ = ["LiveExperiment", "prepare_live"]

SEED_FIELD = "{seed}"


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


def _seeded(spec: str | None, seed: int) -> str | None:
    return None if spec is None else spec.replace(SEED_FIELD, str(seed))


def _settings(spec: str, out: Path, model: str | None, summarizer: str, local: bool, address: str | None):
    from cluster.eval import eval_settings

    args = argparse.Namespace(
        out=str(out),
        allow=[],
        deny=[],
        model=model,
        summarizer=summarizer,
        strategy=spec,
        max_turns=None,
        max_tokens=None,
        max_cost=None,
        address=address,
        no_sandbox=False,
        local=local,
    )
    return eval_settings(args)


def _dir_name(spec: str) -> str:
    from cluster.eval import safe_name

    return safe_name(spec)


@dataclass
class LiveExperiment:
    plan: LivePlan
    loaded: LoadedTasks
    out: Path

    async def _batch(
        self, arm: str, seed: int, *, summarizer, local, address, concurrency, progress
    ) -> dict[str, ResultRow]:
        from cluster.eval import EvalOptions, EvalRunner, LocalHost, RayHost, SessionHost

        where = self.out / "live" / _dir_name(arm) / f"seed-{seed}"
        settings = _settings(arm, where, _seeded(self.plan.model, seed), summarizer, local, address)
        host: SessionHost = LocalHost() if settings.runtime == "local" else RayHost(concurrency=concurrency)
        forced = [t.model_copy(update={"strategy": arm, "model": _seeded(t.model, seed)}) for t in self.loaded.tasks]
        runner = EvalRunner(
            settings, forced, EvalOptions(out=where, concurrency=concurrency), host=host, reporter=_Reporter(progress)
        )
        await runner.run()
        latest, _ = runner.results.latest()
        return {t.id: latest[t.id] for t in forced if t.id in latest}

    def run(
        self,
        *,
        summarizer: str = "extractive",
        local: bool = False,
        address: str | None = None,
        concurrency: int = 2,
        pricing: str = "per-trace",
        pricing_model: str = "claude-sonnet-4-5",
        progress: Callable[[str, str, str], None] | None = None,
        on_start: Callable[[int], None] | None = None,
    ) -> dict[str, Any]:
        """Run every task under every arm and repeat; returns the `live` section of the document."""
        plan = self.plan
        if on_start:
            on_start(len(self.loaded.tasks) * len(plan.arms) * plan.repeats)
        rows: dict[str, dict[tuple[str, int], ResultRow]] = {arm: {} for arm in plan.arms}
        for repeat, seed in enumerate(plan.seeds):
            for arm in plan.arms:
                label = f"{arm} · seed {seed}"
                report = (lambda task_id, status, label=label: progress(label, task_id, status)) if progress else None
                done = asyncio.run(
                    self._batch(
                        arm,
                        seed,
                        summarizer=summarizer,
                        local=local,
                        address=address,
                        concurrency=concurrency,
                        progress=report,
                    )
                )
                rows[arm].update({(task_id, repeat): row for task_id, row in done.items()})
        return self._document(rows, pricing=pricing, pricing_model=pricing_model)

    def _document(self, rows: dict[str, dict[tuple[str, int], ResultRow]], *, pricing: str, pricing_model: str) -> dict:
        plan = self.plan
        solved = {arm: {unit: row.status == "passed" for unit, row in mine.items()} for arm, mine in rows.items()}
        arms = []
        for arm in plan.arms:
            mine = rows[arm]
            rate = solve_rate(
                solved[arm],
                resamples=plan.resamples,
                seed=plan.seeds[0],
                confidence=1 - plan.alpha,
                label=f"live/{arm}",
            )
            statuses = sorted({r.status for r in mine.values()})
            arms.append(
                {
                    "arm": arm,
                    "runs": len(mine),
                    "solved": sum(solved[arm].values()),
                    "solve_rate": rate.model_dump() if rate else None,
                    "statuses": {s: sum(1 for r in mine.values() if r.status == s) for s in statuses},
                    "usage": arm_usage(list(mine.values()), pricing, pricing_model).model_dump(),
                    "out": str(self.out / "live" / _dir_name(arm)),
                }
            )
        others = [a for a in plan.arms if a != plan.default_arm]
        pairs = compare_pairs(
            solved,
            plan.default_arm,
            others,
            margin=plan.margin,
            alpha=plan.alpha,
            resamples=plan.resamples,
            seed=plan.seeds[0],
        )
        runs = [
            {
                "arm": arm,
                "task": task,
                "repeat": repeat,
                "seed": plan.seeds[repeat],
                "status": row.status,
                "turns": row.turns,
                "recall_calls": row.recall_calls,
                "compactions": row.compactions,
            }
            for arm in plan.arms
            for (task, repeat), row in sorted(rows[arm].items())
        ]
        return {
            "plan": str(self.out / "plan.json"),
            "tasks_file": plan.tasks_file,
            "tasks": len(plan.tasks),
            "invalid": self.loaded.problem_lines(),
            "model": plan.model,
            "default": plan.default_arm,
            "repeats": plan.repeats,
            "seeds": plan.seeds,
            "alpha": plan.alpha,
            "margin": plan.margin,
            "pricing": pricing,
            "arms": arms,
            "pairs": [p.model_dump() for p in pairs],
            "runs": runs,
        }


def prepare_live(
    tasks_path: Path,
    *,
    arms: Sequence[str],
    default: str,
    out: Path,
    model: str | None,
    repeats: int = 1,
    seed: int = 0,
    alpha: float = 0.05,
    margin: float = 0.05,
    resamples: int = 2_000,
    strict: bool = False,
    argv: Sequence[str] = (),
) -> LiveExperiment:
    """Load the tasks and register the plan in `out` (or continue the one stored there)."""
    from cluster.eval import absolute_spec, load_tasks

    if repeats < 1:
        raise ConfigError(f"--repeats {repeats}: give at least 1")
    if not 0 < alpha < 0.5 or not 0 <= margin < 1:
        raise ConfigError(f"--alpha {alpha} / --margin {margin}: alpha must be in (0, 0.5), margin in [0, 1)")
    loaded = load_tasks(tasks_path)
    invalid = loaded.problem_lines()
    if invalid and strict:
        raise ConfigError(f"--live {tasks_path}: {len(invalid)} invalid task line(s) (--strict): {invalid[0]}")
    if not loaded.tasks:
        raise ConfigError(f"--live {tasks_path}: no valid task" + (f" ({invalid[0]})" if invalid else ""))
    origin = project_commit()
    plan = LivePlan(
        arms=list(arms),
        default_arm=default,
        tasks_file=str(tasks_path.resolve()),
        tasks_file_sha256=trace_hashes([str(tasks_path)])[str(tasks_path)],
        tasks=[PlannedTask(id=t.id, digest=loaded.digests[t.id]) for t in loaded.tasks],
        model=absolute_spec(model, Path.cwd()),
        repeats=repeats,
        seeds=seeds_for(seed, repeats),
        alpha=alpha,
        margin=margin,
        resamples=resamples,
        commit=origin["commit"],
        dirty=origin["dirty"],
        command=list(argv),
        registered_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    return LiveExperiment(plan=register_plan(out, plan), loaded=loaded, out=out)
