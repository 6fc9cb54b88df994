"""Infrastructure faults never become task outcomes (real Ray, real processes, real signals).

- The session's actor SIGKILLed mid-command (Bash runs in its process, cluster.tool_tasks):
  the actor restarts, the turn resumes from its snapshot without running the command
  again, the task is graded as it would have been. A tool worker SIGKILLed mid-call
  (found as the chaos batch finds it: a descendant of this process titled
  `ray::run_tool_task`): a read-only call simply runs again.
- The session's actor SIGSTOPped (a deadlock or a swapped-out node looks like this): its
  heartbeat goes silent, the driver kills and replaces it, the row says so, the batch ends.
- A driver killed with -9: every process it started goes with it; a process that did not
  is named by the next run.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import psutil
import pytest
from pydantic import BaseModel, Field

from agents.settings._config import WorkingsetSettings
from benchmarks.chaos_batch import victims
from cluster.eval.leftovers import MARK, batch_marked, find_leftovers
from cluster.eval.progress import JsonReporter
from cluster.eval.ray_host import RayHost
from cluster.eval.runner import EvalOptions, EvalRunner
from cluster.eval.task_file import load_tasks
from cluster.remote_session import RemoteSession
from cluster.tool_tasks import RayToolExecutor
from tests.support.eval_support import GRADER, ROOT, calc_repo, script, task, tasks_file
from tools.base import ExecutionDomain, ToolContext, ToolOutput

_HANG_BOUND_S = 600  # only catches a hang: nothing here is expected to come near it
_FIX = {"name": "Edit", "input": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}}


def _cluster_settings(home: Path, **cluster) -> WorkingsetSettings:
    return WorkingsetSettings.model_validate(
        {
            "home": home,
            "cluster": cluster,
            "permissions": {"mode": "accept-edits", "allow": ["Bash"], "headless": "deny-asks"},
        }
    )


def _events(out: Path, row: dict) -> list[dict]:
    return [json.loads(line) for line in (out / row["events_path"]).read_text().splitlines()]


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


async def _kill(running: asyncio.Future, kind: str, once=lambda: True) -> list[int]:
    """SIGKILL the processes of `kind` running now, found as the chaos batch finds them, as
    soon as there are any and `once()` holds (bounded only against a hang); their pids."""
    killed: list[int] = []

    def kill() -> bool:
        if once():
            for pid in victims(kind):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
        return bool(killed) or running.done()

    async with asyncio.timeout(_HANG_BOUND_S):
        while not await asyncio.to_thread(kill):
            await asyncio.sleep(0.2)
    return killed


def _sleeping() -> bool:
    """A `sleep` runs under this process (the Bash command of the test's batch)."""
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):  # gone since it was listed
            if process.name() == "sleep":
                return True
    return False


async def test_a_session_actor_killed_mid_command_gives_the_model_the_interrupted_result_and_the_task_its_grade(
    ray_cluster, tmp_path
):
    repo = calc_repo(tmp_path)
    model = script(
        tmp_path,
        "fix",
        [
            {"text": "Fixing.", "tool_calls": [_FIX]},
            {
                "text": "A long check.",
                "tool_calls": [{"name": "Bash", "input": {"command": "sleep 300; echo checked"}}],
            },
        ],
        "Fixed.",
    )
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task("t", repo, model=f"scripted:{model}")])
    out = tmp_path / "out"
    runner = EvalRunner(
        _cluster_settings(tmp_path / "home"),
        load_tasks(tasks).tasks,
        EvalOptions(out=out, concurrency=1),
        host=RayHost(actors=1),
        reporter=JsonReporter(io.StringIO()),
    )
    batch = asyncio.ensure_future(runner.run())
    killed = await _kill(batch, "session", once=_sleeping)
    async with asyncio.timeout(_HANG_BOUND_S):
        summary = await batch

    [row] = _rows(out)
    assert killed
    assert (row["status"], row["retries"], row["error"], row["actor_restarts"]) == ("passed", 0, None, 1)
    events = _events(out, row)
    # resumed from the snapshot, the command is not run again: its result says it was cut short
    assert not [e for e in events if e["type"] == "tool_result" and e["name"] == "Bash"]
    assert any(
        e["type"] == "notice"
        and e["text"].startswith("the call Bash was running when the session was lost; it is not run again")
        for e in events
    )
    assert summary["statuses"]["infra_error"] == 0 and summary["statuses"]["error"] == 0


async def test_a_stopped_session_actor_is_replaced_its_row_says_so_and_the_batch_ends(ray_cluster, tmp_path):
    repo = calc_repo(tmp_path)
    model = script(
        tmp_path,
        "fix",
        [
            {"text": "Fixing.", "tool_calls": [_FIX]},
            {"text": "Testing.", "tool_calls": [{"name": "Bash", "input": {"command": GRADER}}]},
        ],
        "Fixed.",
    )
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task("t", repo, model=f"scripted:{model}")])
    out = tmp_path / "out"
    stopped: list[int] = []

    class StoppingHost(RayHost):
        """SIGSTOPs the session's actor once its Edit was saved: mid-turn, as a deadlock would."""

        async def open(self, workspace, settings, emit, **where):
            holder: list = []

            def watch(event) -> None:
                emit(event)
                if not stopped and holder and getattr(event, "type", "") == "snapshot" and event.reason == "tool_batch":
                    stopped.append(holder[0])
                    os.kill(holder[0], signal.SIGSTOP)

            handle = await super().open(workspace, settings, watch, **where)
            assert isinstance(handle, RemoteSession)
            _, pid, _ = await handle.actor.heartbeat.remote()
            holder.append(pid)
            return handle

    settings = _cluster_settings(tmp_path / "home", heartbeat_s=1.0, heartbeat_timeout_s=10.0)
    runner = EvalRunner(
        settings,
        load_tasks(tasks).tasks,
        EvalOptions(out=out, concurrency=1, wall_s=30),
        host=StoppingHost(actors=1),
        reporter=JsonReporter(io.StringIO()),
    )
    try:
        async with asyncio.timeout(_HANG_BOUND_S):
            summary = await runner.run()
    finally:
        for pid in stopped:  # should the test fail, leave no stopped process behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    [row] = _rows(out)
    assert stopped
    assert not psutil.pid_exists(stopped[0]) or psutil.Process(stopped[0]).status() == psutil.STATUS_ZOMBIE
    assert any(
        note.startswith("the session's actor stopped answering (no heartbeat for ") and note.endswith("s); replaced")
        for note in row["notes"]
    ), row["notes"]
    # replaced, the actor came back, the session reopened from its snapshot and went on
    assert row["status"] in ("passed", "timeout"), row
    assert summary["finished"] == 1


class _LookInput(BaseModel):
    name: str = Field(description="The file to look at.")


class _FirstCallHangs:
    """A read-only tool whose first call in a workspace leaves a mark and hangs (its worker
    is killed there); a later call answers."""

    name: ClassVar[str] = "Look"
    description: ClassVar[str] = "Look at a file."
    input_model: ClassVar[type[_LookInput]] = _LookInput
    is_read_only: ClassVar[bool] = True
    execution_domain: ClassVar[ExecutionDomain] = ExecutionDomain.LOCAL
    root_only: ClassVar[bool] = False

    async def run(self, args: _LookInput, ctx: ToolContext) -> ToolOutput:
        mark = ctx.workspace / "started"
        if not mark.exists():
            mark.write_text("1")
            await asyncio.sleep(_HANG_BOUND_S)
        return ToolOutput(content=f"{args.name} looked at")


async def test_a_read_only_call_whose_worker_was_killed_simply_runs_again(ray_cluster, tmp_path):
    call = asyncio.ensure_future(
        RayToolExecutor(ray_cluster.head_node_id).execute(
            _FirstCallHangs(), _LookInput(name="calc.py"), ToolContext(workspace=tmp_path)
        )
    )
    killed = await _kill(call, "tool", once=(tmp_path / "started").exists)
    async with asyncio.timeout(_HANG_BOUND_S):
        out = await call
    assert killed and (out.is_error, out.content) == (False, "calc.py looked at")


class _FirstCallHangsAndWrites(_FirstCallHangs):
    """The same, as a tool that may change the workspace: it must never run twice."""

    is_read_only: ClassVar[bool] = False


async def test_a_call_that_may_write_whose_worker_was_killed_is_not_run_again_and_says_so(ray_cluster, tmp_path):
    call = asyncio.ensure_future(
        RayToolExecutor(ray_cluster.head_node_id).execute(
            _FirstCallHangsAndWrites(), _LookInput(name="calc.py"), ToolContext(workspace=tmp_path)
        )
    )
    killed = await _kill(call, "tool", once=(tmp_path / "started").exists)
    async with asyncio.timeout(_HANG_BOUND_S):
        out = await call
    assert killed and out.is_error
    assert out.content.startswith("This call was interrupted when its worker died (WorkerCrashedError")
    assert "it may or may not have taken effect. Check before repeating it." in out.content


def test_a_plain_rerun_runs_the_infra_error_tasks_again_and_only_those(tmp_path):
    from cluster.eval.results import ResultRow, plan_run
    from cluster.eval.tasks import Task

    tasks = [Task.model_validate(task(name, "repo")) for name in ("a", "b", "c")]
    latest = {
        "a": ResultRow(task_id="a", status="infra_error"),
        "b": ResultRow(task_id="b", status="error"),
        "c": ResultRow(task_id="c", status="passed"),
    }
    plan = plan_run(tasks, latest, retry_failed=False)
    assert [t.id for t in plan.run] == ["a"] and [t.id for t in plan.skipped] == ["b", "c"]


def test_a_process_an_earlier_batch_left_running_is_named_in_one_line(tmp_path):
    marker = tmp_path / "state" / "processes.json"
    with batch_marked(marker) as earlier:
        assert earlier is None  # nothing before this batch
        left = subprocess.Popen(["sleep", "600"])  # started by the batch: it carries the batch's mark
        as_left = marker.read_text()  # what a batch killed now would leave
    try:
        marker.write_text(as_left)
        line = find_leftovers(marker)
        assert line is not None and "\n" not in line
        assert line.startswith("1 process of an earlier batch on this --out is still running (")
        assert f"{left.pid} sleep" in line and line.endswith(f"kill -9 {left.pid}")
    finally:
        left.kill()
        left.wait()
    assert find_leftovers(marker) is None
    assert MARK not in os.environ  # the mark goes with the batch


@pytest.mark.own_ray_cluster
def test_a_driver_killed_with_sigkill_leaves_no_process_of_its_batch_running(tmp_path):
    """The driver starts its own embedded cluster; killed with -9 once a task started,
    every process it had started (Ray's, its workers', the sandboxes') goes too."""
    repo = calc_repo(tmp_path)
    model = script(
        tmp_path,
        "slow",
        [
            {"text": "Fixing.", "tool_calls": [_FIX]},
            {"text": "A long check.", "tool_calls": [{"name": "Bash", "input": {"command": "sleep 300"}}]},
        ],
        "Fixed.",
    )
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task("t", repo, model=f"scripted:{model}")])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKINGSET_RUNTIME": "ray"}
    driver = subprocess.Popen(
        [sys.executable, "-m", "cluster.terminal._cli", "eval", str(tasks), "--out", str(tmp_path / "out"), "--json"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert driver.stdout is not None
    family: dict[int, psutil.Process] = {}
    try:
        for line in driver.stdout:
            for p in psutil.Process(driver.pid).children(recursive=True):
                family.setdefault(p.pid, p)
            event = json.loads(line)
            if event.get("type") == "task_phase" and event.get("phase") == "agent":
                break
        for p in psutil.Process(driver.pid).children(recursive=True):  # as it stands at the kill
            family.setdefault(p.pid, p)
        assert any(p.name() == "raylet" for p in family.values() if p.is_running())  # its own cluster
        driver.kill()
        driver.wait()
        # Ray's own agents, left alone, outlive a killed driver by over a minute (they wait
        # 60 s on the GCS that died with it): this bound tells a batch whose processes go
        # with its driver (2-3 s measured, under load) from one that leaves them running.
        _, alive = psutil.wait_procs(list(family.values()), timeout=45)
        assert [f"{p.pid} {p.name()}" for p in alive if p.status() != psutil.STATUS_ZOMBIE] == []
    finally:
        for p in family.values():
            with contextlib.suppress(psutil.Error):
                p.kill()
        driver.stdout.close()


def test_a_process_the_batch_started_in_a_session_of_its_own_dies_when_its_driver_is_killed(tmp_path):
    """Out of the driver's process group and not its child's child by PDEATHSIG: the
    batch's mark and its keeper still end it."""
    driver_code = (
        "import subprocess, sys, time; from pathlib import Path; from cluster.eval.leftovers import batch_marked\n"
        f"with batch_marked(Path({str(tmp_path / 'processes.json')!r})):\n"
        "    p = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        "    print(p.pid, flush=True); time.sleep(600)\n"
    )
    driver = subprocess.Popen(
        [sys.executable, "-c", driver_code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert driver.stdout is not None
    started = psutil.Process(int(driver.stdout.readline()))
    try:
        driver.kill()
        driver.wait()
        _, alive = psutil.wait_procs([started], timeout=120)  # a bound against a hang only
        assert alive == []
    finally:
        with contextlib.suppress(psutil.Error):
            started.kill()
        driver.stdout.close()
