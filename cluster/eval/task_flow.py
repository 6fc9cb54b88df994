"""One task's flow, from workspace to result row:

    site (where the task's files live) -> base + workspace -> [environment] -> setup
    -> agent session (on the site's node) -> patch -> grade in a fresh copy -> row

The host gives each attempt a site (hosts.py): this process (`--local`), or on Ray a
node the cluster had room on, where the workspace is made, the session and its tool
calls run and the grade runs (node_site.py); the stages themselves are stages.py. Only
the row, the patch, the logs and the session's events come back here.

A task with an `environment` gets it from the node's cache (environments/), building
it there if it is missing; from then on every command of the task — the setup, the
agent's Bash, the grader — runs with that virtualenv, read-only, and never with the
network (only the build may have it).

Each stage that fails ends the task with an error row saying why (`TaskEnded`); a lost
session actor or runtime, or a worker that died under any stage (cluster.faults), raises
`Retry` for the batch to run the task again; a lost node raises `NodeLost` (the batch
runs the task again from its start elsewhere, without counting it as a retry). The agent's workspace is removed as soon as its patch is taken,
the base and the grading copy when the task ends, whatever happens (the directories stay
with --keep-workspaces), and a cancelled task (Ctrl-C) closes its session first.

With `--predictions`, a task's prediction (someone else's patch) is applied to the fresh
workspace instead of running an agent (stop reason `prediction`), and graded the same way.

Status: passed / failed from the grader when the agent ended its turn; `timeout` when
the agent passed its wall-clock budget; `budget` when it hit its turn, token or cost
budget; `truncated` when its replies were cut off at the output limit; `refused` when
the provider refused to go on (all still graded: `tests_passed` says how it stood);
`error` otherwise.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agents.errors import ConfigError
from agents.session import SessionHandle
from agents.settings import WorkingsetSettings
from cluster.eval.errors import EnvironmentFailed, PatchNotGradable, TaskEnded
from cluster.eval.hosts import SessionHost, TaskSite
from cluster.eval.layout import OutDir, safe_name
from cluster.eval.lost import NodeLost, Retry
from cluster.eval.patches import Patch
from cluster.eval.progress import Reporter
from cluster.eval.results import ResultRow
from cluster.eval.settings import task_settings, with_environment
from cluster.eval.stages import StageConfig
from cluster.eval.stats import TaskStats
from cluster.eval.swebench import Prediction
from cluster.eval.tasks import Task
from cluster.eval.workspaces import Workspace, WorkspaceError
from cluster.faults import what_was_lost

__all__ = ["NodeLost", "Retry", "TaskEnded", "TaskFlow", "describe", "status_for"]

_BUDGET_REASONS = ("turn_limit", "budget")
_STATUS_OF_REASON = {"truncated": "truncated", "refusal": "refused"}


def status_for(reason: str, *, passed: bool | None) -> str:
    """A graded task's status from how the agent's turn ended (module docstring)."""
    if reason == "timeout":
        return "timeout"
    if reason in _BUDGET_REASONS:
        return "budget"
    if reason in _STATUS_OF_REASON:
        return _STATUS_OF_REASON[reason]
    return "passed" if passed else "failed"


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


class TaskFlow:
    """Runs one attempt of a task; shared by the batch's workers."""

    def __init__(
        self,
        settings: WorkingsetSettings,
        out: OutDir,
        *,
        host: SessionHost,
        reporter: Reporter,
        config: StageConfig,
        wall_s: float | None,
        setup_network: bool = False,
        predictions: dict[str, Prediction] | None = None,
    ):
        self.settings = settings
        self.out = out
        self.host = host
        self.reporter = reporter
        self.config = config
        self.wall_s = wall_s
        self.setup_network = setup_network
        self.predictions = predictions or {}  # task id -> someone else's patch, graded instead of an agent's

    async def attempt(
        self, task: Task, attempt: int, *, retries: int = 0, notes: list[str] | None = None, node_losses: int = 0
    ) -> ResultRow:
        started, clock = time.time(), time.monotonic()
        name = safe_name(task.id)
        row: dict[str, Any] = {
            "task_id": task.id,
            "attempt": attempt,
            "retries": retries,
            "notes": list(notes or []),
            "started_at": started,
            "model": task.model or self.settings.model,
            "node_losses": node_losses,
        }
        try:
            settings = task_settings(self.settings, task)
        except ConfigError as exc:
            return ResultRow(**row, status="error", error=str(exc), finished_at=time.time())
        row.update(model=settings.model, strategy=settings.compact.strategy)
        events = self.out.events / f"{name}.jsonl"
        stats = TaskStats(
            settings.model, events, on_change=lambda s: self.reporter.usage(task.id, s.tokens, s.cost_usd)
        )
        row["events_path"] = self.out.rel(events)
        try:
            async with self.host.site(self.config, self.out, task, name) as site:
                row["node"] = site.node
                await site.guard(self._on_site(site, task, name, settings, stats, row))
        except TaskEnded as exc:
            row.update(status="error", error=str(exc))
        except NodeLost as lost:
            raise NodeLost(lost.node, lost.phase, stats) from None
        except Retry as exc:
            if exc.charged:
                raise
            raise Retry(str(exc), stats) from exc
        except Exception as exc:
            if not self.host.retryable(exc):
                raise  # a harness bug: the runner's error row names it
            raise Retry(f"the {stats.phase} phase lost its worker ({what_was_lost(exc)})", stats) from exc
        finally:
            stats.close()
        u = stats.usage
        row.update(
            turns=stats.turns,
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_tokens=u.cache_read_input_tokens,
            cache_creation_tokens=u.cache_creation_input_tokens,
            cost_usd=round(stats.cost_usd, 6),
            unpriced_calls=stats.unpriced_calls,
            pricing=stats.pricing,
            compactions=sum(stats.compactions.values()),
            compaction_kinds=dict(stats.compactions),
            tool_calls=stats.tool_calls,
            recall_calls=stats.recall_calls,
            actor_restarts=stats.actor_failures,
            session_id=stats.session_id,
            wall_s=round(time.monotonic() - clock, 3),
            finished_at=time.time(),
        )
        row["notes"].extend(stats.notes)
        return ResultRow(**row)

    async def _on_site(
        self, site: TaskSite, task: Task, name: str, settings: WorkingsetSettings, stats: TaskStats, row: dict
    ) -> None:
        try:
            await self._stages(site, task, name, settings, stats, row)
        finally:
            row["workspace"] = await site.discard(name)
            for rel, data in (await site.files(name)).items():
                path = self.out.root / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)

    def _phase(self, site: TaskSite, task: Task, stats: TaskStats, phase: str) -> None:
        site.phase = stats.phase = phase
        self.reporter.event("task_phase", task_id=task.id, phase=phase, node=site.node)
        stats.note("eval_phase", task_id=task.id, phase=phase, ts=time.time(), node=site.node)

    async def _stages(
        self, site: TaskSite, task: Task, name: str, settings: WorkingsetSettings, stats: TaskStats, row: dict
    ) -> None:
        self._phase(site, task, stats, "workspace")
        ws = await site.prepare(task, name)
        row["base_commit"] = ws.base_commit
        venv = None
        if task.environment is not None:
            self._phase(site, task, stats, "environment")
            network = task.environment.network if task.environment.network is not None else self.setup_network
            try:
                env = await site.environment(task, ws, name, network)
            except EnvironmentFailed as exc:
                row["environment"] = exc.key
                raise
            row.update(environment=env.key, environment_reused=env.reused, environment_s=env.seconds)
            venv = env.venv
            settings = with_environment(settings, venv)
        prediction = self.predictions.get(task.id)
        if prediction is not None:
            self._phase(site, task, stats, "prediction")
            row["model"] = prediction.model
            reason = "prediction"
            try:
                await site.apply(ws, prediction.patch.encode(), task.timeouts.setup_s)
            except PatchNotGradable as exc:
                row.update(
                    status="failed",
                    stop_reason=reason,
                    error=f"the prediction does not apply to the base: {str(exc).partition(': ')[2]}",
                )
                return
        else:
            if task.setup_command:
                self._phase(site, task, stats, "setup")
                await site.setup(task, ws, name, venv)
            self._phase(site, task, stats, "agent")
            reason = await self._agent(site, task, ws, settings, stats, row)
        row["stop_reason"] = reason
        self._phase(site, task, stats, "patch")
        patch = await self._patch(site, ws, name, row)
        self._phase(site, task, stats, "grade")
        passed = None
        if patch is not None:
            passed, fields = await site.grade(task, ws, patch, name, venv)
            row.update(fields)
        row["status"] = status_for(reason, passed=passed)  # passed None: not graded, `error` says why

    async def _agent(
        self, site: TaskSite, task: Task, ws: Workspace, settings: WorkingsetSettings, stats: TaskStats, row: dict
    ) -> str:
        """The session's turn on the instruction; returns how it ended ("timeout" when the
        wall-clock budget ran out)."""
        wall = task.budgets.wall_s or self.wall_s
        clock = time.monotonic()
        handle: SessionHandle | None = None
        timer = None
        try:
            handle = await self.host.open(ws.path, settings, stats, node=site.node)
            stats.session_id = handle.session_id
            handle.announce_start()
            timer = asyncio.timeout(wall)  # the turn's wall clock, not the session's start
            async with timer:
                outcome = await handle.run_turn(task.instruction)
            handle.announce_end(outcome.reason, outcome.final_text, error=outcome.detail)
            return outcome.reason
        except TimeoutError as exc:
            if timer is None or not timer.expired():
                raise TaskEnded(f"the agent failed: {describe(exc)}") from exc
            assert handle is not None  # the timer starts only once the session is open
            handle.announce_end("budget", "", error=f"wall-clock budget of {wall:g} s reached")
            row["notes"].append(f"stopped at the wall-clock budget of {wall:g} s")
            return "timeout"
        except NodeLost:
            raise  # the host knows the node went: the batch runs the task elsewhere
        except Exception as exc:
            # The actor failed and the session could not be resumed (e.g. killed during the
            # first turn: no snapshot yet), or the runtime itself is gone: run it once more.
            if self.host.retryable(exc) or stats.actor_failures:
                raise Retry(describe(exc), stats) from exc
            raise TaskEnded(f"the agent failed: {describe(exc)}") from exc
        finally:
            row["agent_wall_s"] = round(time.monotonic() - clock, 3)
            if handle is not None:
                await self.host.close(handle)

    async def _patch(self, site: TaskSite, ws: Workspace, name: str, row: dict) -> Patch | None:
        """The agent's patch, kept in the out dir; None when it cannot be graded (`error`)."""
        path = self.out.patches / f"{name}.diff"
        try:
            patch = await site.patch(ws)
        except PatchNotGradable as exc:
            path.unlink(missing_ok=True)
            row["error"] = str(exc)
            return None
        except (WorkspaceError, OSError) as exc:
            raise TaskEnded(f"the patch could not be taken: {exc}") from None
        row["notes"].extend(patch.notes)
        if patch.data.strip():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(patch.data)
            row["patch_path"] = self.out.rel(path)
        else:
            path.unlink(missing_ok=True)  # an earlier attempt's patch is not this one's
        return patch
