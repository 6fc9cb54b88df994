"""The batch: N workers take tasks from the list; each task runs (task_flow.py)

    base + workspace -> setup -> agent session -> patch -> grade in a fresh copy -> row

and its row is appended to results.jsonl the moment it ends. A task's failure is its
own row (status error and why); the batch goes on. Lost infrastructure (an actor that
did not come back) runs the task once more, with a fresh workspace, recorded in
`retries` and `notes`. Cancellation (Ctrl-C) stops the workers, closes their sessions,
removes their workspaces, writes summary, report and predictions for what finished,
and re-raises: the interrupted tasks have no row, so the same command resumes them.
"""

from __future__ import annotations

import asyncio
import os
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.config import WorkingsetSettings
from cluster.eval.environments import DEFAULT_HOSTS
from cluster.eval.grading import SandboxedShell
from cluster.eval.layout import OutDir, safe_name
from cluster.eval.progress import Reporter
from cluster.eval.report import summarize, write_report, write_summary
from cluster.eval.results import ResultRow, ResultsFile, plan_run, write_predictions
from cluster.eval.task_flow import Retry, TaskFlow, describe
from cluster.eval.tasks import Task
from cluster.eval.workspaces import Workspaces

__all__ = ["EvalOptions", "EvalRunner"]


@dataclass
class EvalOptions:
    out: Path
    concurrency: int = 4
    keep_workspaces: bool = False
    retry_failed: bool = False
    wall_s: float | None = None  # agent wall-clock budget for tasks that set none
    command_slots: int | None = None  # setup and test commands at once (default: 2 per core, at least 4)
    reject_test_changes: bool = False  # fail patches that change test infrastructure (unless the task says)
    invalid: list[str] = field(default_factory=list)  # task-file problems, for the report
    setup_network: bool = False  # building a task's environment may reach the registries (unless the task says)
    environment_cache: Path | None = None  # this node's environments (default: <out>/state/envs)
    egress_hosts: tuple[str, ...] = DEFAULT_HOSTS  # what a build with the network may reach


class EvalRunner:
    def __init__(self, settings: WorkingsetSettings, tasks: list[Task], options: EvalOptions, *,
                 host: Any, reporter: Reporter):
        self.out = OutDir(options.out)
        self.settings = settings.model_copy(update={"home": self.out.home})
        self.tasks = tasks
        self.options = options
        self.host = host
        self.reporter = reporter
        self.shell = SandboxedShell(self.settings)
        self.workspaces = Workspaces(self.out, keep=options.keep_workspaces)
        self.results = ResultsFile(self.out.results)
        self._attempts: dict[str, int] = {}
        # Setup and test commands are bounded apart from the sessions: they use CPU, the
        # sessions mostly wait on the model.
        commands = asyncio.Semaphore(options.command_slots or max(4, 2 * (os.cpu_count() or 1)))
        self.flow = TaskFlow(self.settings, self.out, host=host, reporter=reporter, workspaces=self.workspaces,
                             shell=self.shell, commands=commands, wall_s=options.wall_s,
                             keep_workspaces=options.keep_workspaces, reject_test_changes=options.reject_test_changes,
                             environment_cache=options.environment_cache, setup_network=options.setup_network,
                             egress_hosts=options.egress_hosts)

    # -- the batch ----------------------------------------------------------------------

    async def run(self) -> dict:
        """Run what is not finished yet; returns the summary (also written to the out dir)."""
        self.out.root.mkdir(parents=True, exist_ok=True)
        latest, self._attempts = self.results.latest()
        for text in self.results.problems:
            self.reporter.event("notice", text=text)
        to_run, skipped = plan_run(self.tasks, latest, retry_failed=self.options.retry_failed)
        self.reporter.event("eval_started", tasks=len(self.tasks), to_run=len(to_run), skipped=len(skipped),
                            concurrency=self.options.concurrency, runtime=self.host.name, out=str(self.out.root))
        for task in skipped:
            self.reporter.event("task_skipped", task_id=task.id, status=latest[task.id].status)
        interrupted = False
        try:
            if to_run:
                await self.host.start(self.settings)
                await self._run_all(to_run)
        except asyncio.CancelledError:
            interrupted = True
            raise
        finally:
            await self.host.shutdown()
            summary = self.finish(interrupted=interrupted)
            self.reporter.event("eval_finished", interrupted=interrupted, summary=summary)
        return summary

    async def _run_all(self, tasks: list[Task]) -> None:
        queue = deque(tasks)

        async def worker() -> None:
            while queue:
                await self._run_task(queue.popleft())

        workers = [asyncio.create_task(worker()) for _ in range(min(self.options.concurrency, len(tasks)))]
        try:
            # asyncio.wait, not gather: a cancelled gather cancels the workers itself, and a
            # second cancel would land in their cleanup (closing the session, removing the
            # workspace). Here each one is cancelled exactly once, then awaited.
            done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
            for w in done:
                w.result()
        finally:
            pending = [w for w in workers if not w.done()]
            for w in pending:
                w.cancel()
            if pending:
                await asyncio.wait(pending)

    def finish(self, *, interrupted: bool = False) -> dict:
        """summary.json, report.md and predictions.jsonl from the latest rows."""
        latest, _ = self.results.latest()
        rows = [latest[t.id] for t in self.tasks if t.id in latest]
        summary = summarize(rows, tasks_total=len(self.tasks), invalid=self.options.invalid,
                            model=self.settings.model, interrupted=interrupted)
        write_summary(self.out.summary, summary)
        write_report(self.out.report, summary, rows, self.options.invalid)
        write_predictions(self.out.predictions, rows, self.out.root)
        return summary

    # -- one task -----------------------------------------------------------------------

    async def _run_task(self, task: Task) -> None:
        attempt = self._attempts.get(task.id, 0) + 1
        self._attempts[task.id] = attempt
        self.reporter.event("task_started", task_id=task.id, attempt=attempt)
        try:
            try:
                row = await self.flow.attempt(task, attempt)
            except Retry as first:
                self.reporter.event("task_retry", task_id=task.id, reason=str(first))
                try:
                    notes = [f"run again after lost infrastructure: {first}"]
                    row = first.charge(await self.flow.attempt(task, attempt, retries=1, notes=notes))
                except Retry as second:
                    row = second.charge(first.charge(ResultRow(
                        task_id=task.id, status="error", attempt=attempt, retries=1, model=task.model or self.settings.model,
                        error=f"lost infrastructure twice: {second}", finished_at=time.time())))
        except Exception as exc:  # a harness bug: this task's error row, the batch goes on
            log = self.out.logs / safe_name(task.id) / "harness-error.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
            row = ResultRow(task_id=task.id, status="error", attempt=attempt, model=task.model or self.settings.model,
                            error=f"harness error: {describe(exc)} (log: {self.out.rel(log)})", finished_at=time.time())
        self.results.append(row)
        self.reporter.event("task_finished", task_id=task.id, status=row.status, result=row.model_dump(mode="json"))
