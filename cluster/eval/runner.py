"""The batch: N workers take tasks from the list; each task runs (task_flow.py)

    base + workspace -> setup -> agent session -> patch -> grade in a fresh copy -> row

and its row is appended to results.jsonl the moment it ends. A task's failure is its
own row (status error and why); the batch goes on. Lost infrastructure (an actor that
did not come back or stopped answering, a worker that died under a stage: cluster.faults)
runs the task again from its start, with a fresh workspace, recorded in `retries` and
`notes`, at most MAX_INFRA_RETRIES times. A lost node runs it again from its start on
another node, recorded in `node_losses` and `notes`, without using up those retries (at
most MAX_NODE_LOSSES times). A task the infrastructure fails every time ends as
`infra_error`, not the agent's `error`: a plain rerun of the command runs it again.
Cancellation (Ctrl-C) stops the workers, closes their sessions, removes their
workspaces, writes summary, report and predictions for what finished, and re-raises:
the interrupted tasks have no row, so the same command resumes them.

Before anything runs, the out directory is checked (and held: one batch at a time; an
earlier batch's processes still alive there are named in one line: leftovers.py): a
torn last line of results.jsonl is repaired; `--redo` moves the earlier rows aside;
rows that other settings produced refuse the run (provenance.py); a task id another
task file holds with other content is refused; a task whose row changed in the task
file runs again. `--batch-max-cost` stops starting tasks once the batch's spend reaches
it (spend.py). Then the host starts (Ray joined or started): one that cannot start
ends the command before the batch is announced, and no summary is written for a batch
that never ran. The summary and report cover every task with a row in the out
directory, whichever task file it came from.
"""

from __future__ import annotations

import asyncio
import os
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from agents.settings import WorkingsetSettings
from cluster.eval.cleanup import outlive
from cluster.eval.durable import write_atomic
from cluster.eval.environments import DEFAULT_HOSTS
from cluster.eval.hosts import NotifyingHost, SessionHost, WarmingHost
from cluster.eval.layout import OutDir, safe_name
from cluster.eval.leftovers import batch_marked
from cluster.eval.progress import Reporter
from cluster.eval.provenance import RunRecord, SettingsChanged, record_for
from cluster.eval.report import summarize, write_report, write_summary
from cluster.eval.results import Plan, ResultRow, ResultsFile, plan_run, write_predictions
from cluster.eval.selection import Selection
from cluster.eval.spend import SpendMeter, unpriced_models
from cluster.eval.stages import StageConfig
from cluster.eval.swebench import Prediction
from cluster.eval.task_flow import NodeLost, Retry, TaskFlow, describe
from cluster.eval.tasks import Task

__all__ = ["MAX_INFRA_RETRIES", "MAX_NODE_LOSSES", "EvalOptions", "EvalRunner"]

MAX_NODE_LOSSES = 3  # a task whose node goes this often is an infra_error row
MAX_INFRA_RETRIES = 2  # runs again after lost infrastructure; past that, an infra_error row


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
    redo: bool = False  # move the out directory's earlier rows aside and start over
    batch_max_cost: float | None = None  # stop starting tasks once the batch has spent this (USD)
    task_file: str | None = None  # where the tasks came from: each row names it
    digests: dict[str, str] = field(default_factory=dict)  # task id -> digest of its row in the task file
    selection: Selection | None = None  # --filter / --slice, for the report
    swebench_runner: str | None = None  # SWE-bench rows' test runner (it decides their grades)
    setup_network: bool = False  # building a task's environment may reach the registries (unless the task says)
    environment_cache: Path | None = None  # this node's environments (default: <out>/state/envs)
    egress_hosts: tuple[str, ...] = DEFAULT_HOSTS  # what a build with the network may reach
    predictions: dict[str, Prediction] | None = None  # task id -> a patch graded without an agent (--predictions)
    predictions_digest: str | None = None  # of the predictions file: part of the run's record


class EvalRunner:
    def __init__(
        self,
        settings: WorkingsetSettings,
        tasks: list[Task],
        options: EvalOptions,
        *,
        host: SessionHost,
        reporter: Reporter,
    ):
        self.out = OutDir(options.out)
        self.settings = settings.model_copy(update={"home": self.out.home})
        self.tasks = tasks
        self.options = options
        self.host = host
        self.reporter = SpendMeter(reporter, spent_before=0.0, cap_usd=options.batch_max_cost)
        self.record = record_for(
            settings,
            wall_s=options.wall_s,
            reject_test_changes=options.reject_test_changes,
            swebench_runner=options.swebench_runner,
            setup_network=options.setup_network,
            egress_hosts=options.egress_hosts,
            predictions=options.predictions_digest,
        )
        self.changed: set[str] = set()
        self.stopped: dict | None = None  # why the batch stopped starting tasks (the cost cap)
        self.results = ResultsFile(self.out.results)
        self._attempts: dict[str, int] = {}
        self._latest: dict[str, ResultRow] = {}
        # Setup and test commands are bounded apart from the sessions: they use CPU, the
        # sessions mostly wait on the model.
        self.config = StageConfig(
            self.settings,
            keep_workspaces=options.keep_workspaces,
            reject_test_changes=options.reject_test_changes,
            environment_cache=options.environment_cache,
            egress_hosts=options.egress_hosts,
            batch_out=self.out.root,
            batch_fingerprint=self.record.fingerprint,
            command_slots=options.command_slots or max(4, 2 * (os.cpu_count() or 1)),
        )
        self.flow = TaskFlow(
            self.settings,
            self.out,
            host=host,
            reporter=self.reporter,
            config=self.config,
            wall_s=options.wall_s,
            setup_network=options.setup_network,
            predictions=options.predictions,
        )
        if isinstance(host, NotifyingHost):  # a host that can say what it retried
            host.notify = lambda text: self.reporter.event("notice", text=text)

    # -- the batch ----------------------------------------------------------------------

    async def run(self) -> dict:
        """Run what is not finished yet; returns the summary (also written to the out dir).
        Raises ConfigError, before anything runs, when the out directory refuses the batch."""
        self.out.root.mkdir(parents=True, exist_ok=True)
        self.out.lock()
        try:
            with batch_marked(self.out.processes) as leftovers:
                if leftovers:
                    self.reporter.event("notice", text=leftovers)
                return await self._run()
        finally:
            self.out.unlock()

    async def _run(self) -> dict:
        plan = self._prepare()
        starts = bool(plan.run) and not self.reporter.reached()
        if starts:
            await self._start_host()
        self.reporter.event(
            "eval_started",
            tasks=len(self.tasks),
            to_run=len(plan.run),
            skipped=len(plan.skipped),
            changed=len(plan.changed),
            concurrency=self.options.concurrency,
            runtime=self.host.name,
            out=str(self.out.root),
            selection=self._selection_text(),
        )
        for task in plan.skipped:
            self.reporter.event("task_skipped", task_id=task.id, status=self._latest[task.id].status)
        interrupted = False
        try:
            if plan.run and not starts:
                self._stop(len(plan.run))
            elif plan.run:
                if isinstance(self.host, WarmingHost):
                    await self.host.warm(self.config, self.out)
                await self._run_all(plan.run)
        except asyncio.CancelledError:
            interrupted = True
            raise
        finally:
            await self.host.shutdown()
            summary = self.finish(interrupted=interrupted)
            self.reporter.event("eval_finished", interrupted=interrupted, summary=summary)
        return summary

    async def _start_host(self) -> None:
        """Start the host (join or start Ray) before the batch says or writes anything
        more: a cluster that cannot be had is one line, and no summary of a batch that
        never ran."""
        try:
            await self.host.start(self.settings)
        except BaseException:
            await self.host.shutdown()
            raise

    def _prepare(self) -> Plan:
        """Repair, --redo, the settings check and the plan; nothing has run yet."""
        self.out.sweep_temps()
        notice = self.results.repair()
        if notice:
            self.reporter.event("notice", text=notice)
        if self.options.redo:
            moved = self.out.move_aside()
            if moved is not None:
                self.reporter.event("notice", text=f"--redo: the earlier rows and reports are now in {moved}")
        self._latest, self._attempts = self.results.latest()
        self._check_record()
        plan = plan_run(
            self.tasks,
            self._latest,
            retry_failed=self.options.retry_failed,
            digests=self.options.digests,
            task_file=self.options.task_file,
        )
        self.changed = plan.changed
        for task_id in sorted(plan.changed):
            self.reporter.event("task_changed", task_id=task_id)
        self.reporter.spent_before = sum(r.cost_usd for r in self.results.rows())
        unpriced = unpriced_models(self.settings, plan.run) if self.options.batch_max_cost else []
        if unpriced:
            shown = ", ".join(unpriced[:3]) + (f" and {len(unpriced) - 3} more" if len(unpriced) > 3 else "")
            self.reporter.event(
                "notice",
                text=f"--batch-max-cost cannot cap {shown}: no price is known, so its calls "
                "count $0 (give it prices in the `models` setting to cap it)",
            )
        return plan

    def _check_record(self) -> None:
        """Refuse rows that other settings produced; record the settings when new."""
        rows = len(self._latest)
        old = RunRecord.read(self.out.run_record)
        ways_out = (
            f"rerun with --redo to start over (the old rows move to {self.out.previous}/<time>/), "
            "or use a different --out"
        )
        if rows and old is None:
            if {r.run for r in self._latest.values()} == {self.record.fingerprint}:
                old = self.record  # run.json was lost; the rows say they match
            else:
                raise SettingsChanged(
                    f"{self.out.root} has rows of {rows} tasks but no run.json saying which settings "
                    f"produced them (an older Workingset, or the file was removed); {ways_out}"
                )
        if rows and old is not None:
            differences = old.differences(self.record)
            if differences:
                raise SettingsChanged(
                    f"{self.out.root} was produced with other settings: {'; '.join(differences)}; {ways_out}"
                )
        if not rows or not self.out.run_record.exists():
            write_atomic(self.out.run_record, self.record.to_json())

    def _selection_text(self) -> str | None:
        return self.options.selection.describe() if self.options.selection else None

    def _stop(self, not_started: int) -> None:
        """The cost cap is reached: no task starts from here on."""
        if self.stopped is not None:
            return
        cap = self.options.batch_max_cost
        self.stopped = {
            "reason": "batch_max_cost",
            "cap_usd": cap,
            "spent_usd": round(self.reporter.spent, 6),
            "not_started": not_started,
        }
        self.reporter.event("batch_stopped", **self.stopped)

    async def _run_all(self, tasks: list[Task]) -> None:
        queue = deque(tasks)

        async def worker() -> None:
            while queue:
                if self.reporter.reached():
                    self._stop(len(queue))
                    return
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
            await outlive(pending)

    def finish(self, *, interrupted: bool = False) -> dict:
        """summary.json, report.md and predictions.jsonl from the latest rows of every
        task in the out directory, whichever task file it came from."""
        latest, _ = self.results.latest()
        rows = list(latest.values())
        tasks_total = len(latest.keys() | {t.id for t in self.tasks})
        selection = self.options.selection.to_json() if self.options.selection else None
        summary = summarize(
            rows,
            tasks_total=tasks_total,
            invalid=self.options.invalid,
            model=self.settings.model,
            interrupted=interrupted,
            selection=selection,
            stopped=self.stopped,
        )
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
            row = await self._ride_out(task, attempt)
        except Exception as exc:  # a harness bug: this task's error row, the batch goes on
            log = self.out.logs / safe_name(task.id) / "harness-error.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
            row = ResultRow(
                task_id=task.id,
                status="error",
                attempt=attempt,
                model=task.model or self.settings.model,
                error=f"harness error: {describe(exc)} (log: {self.out.rel(log)})",
                finished_at=time.time(),
            )
        row = self._stamp(row, task)
        self.results.append(row)
        self.reporter.finished(task.id, row.cost_usd)
        self.reporter.event("task_finished", task_id=task.id, status=row.status, result=row.model_dump(mode="json"))

    async def _ride_out(self, task: Task, attempt: int) -> ResultRow:
        """The attempt, run again after lost infrastructure (up to MAX_INFRA_RETRIES) and
        after lost nodes (up to MAX_NODE_LOSSES, not counted as retries); what lost runs
        spent is charged."""
        lost: list[Retry] = []
        notes: list[str] = []
        retries = losses = 0
        while True:
            try:
                row = await self.flow.attempt(task, attempt, retries=retries, notes=notes, node_losses=losses)
                break
            except NodeLost as exc:
                lost.append(exc)
                losses += 1
                if losses >= MAX_NODE_LOSSES:
                    row = self._lost_row(
                        task, attempt, retries, losses, f"lost {losses} nodes: {exc}", [*notes, *exc.notes]
                    )
                    break
                self.reporter.event("task_retry", task_id=task.id, reason=str(exc), node_lost=True)
                notes = [*notes, *exc.notes, f"{exc}: run again from its start on another node"]
            except Retry as exc:
                lost.append(exc)
                if retries >= MAX_INFRA_RETRIES:
                    row = self._lost_row(
                        task,
                        attempt,
                        retries,
                        losses,
                        f"lost infrastructure {retries + 1} times; the last: {exc}",
                        [*notes, *exc.notes],
                    )
                    break
                self.reporter.event("task_retry", task_id=task.id, reason=str(exc))
                retries += 1
                notes = [*notes, *exc.notes, f"run again after lost infrastructure: {exc}"]
        for charge in lost:
            row = charge.charge(row)
        return row

    def _lost_row(self, task: Task, attempt: int, retries: int, losses: int, error: str, notes: list[str]) -> ResultRow:
        return ResultRow(
            task_id=task.id,
            status="infra_error",
            attempt=attempt,
            retries=retries,
            node_losses=losses,
            model=task.model or self.settings.model,
            error=error,
            finished_at=time.time(),
            notes=list(notes),
        )

    def _stamp(self, row: ResultRow, task: Task) -> ResultRow:
        """What produced the row: the settings' fingerprint, the task's row and file."""
        notes = row.notes
        if task.id in self.changed:
            notes = ["its row in the task file changed since its last result: run again", *notes]
        return row.model_copy(
            update={
                "run": self.record.fingerprint,
                "task_digest": self.options.digests.get(task.id),
                "task_file": self.options.task_file,
                "notes": notes,
            }
        )
