"""`workingset eval` on Ray (the session-scoped two-node `ray_cluster`): sessions on a
SessionPool, a session actor killed mid-task (the task goes on from its last saved tool
batch, recorded, with the unperturbed patch), and a wall-clock timeout whose turn really stops on the actor."""

import io
import json
from pathlib import Path

import ray

from agents.settings._config import WorkingsetSettings
from cluster.eval.progress import JsonReporter
from cluster.eval.ray_host import RayHost
from cluster.eval.runner import EvalOptions, EvalRunner
from cluster.eval.task_file import load_tasks
from tests.support.eval_support import calc_repo as _calc_repo
from tests.support.eval_support import script

GRADER = "python3 test_calc.py"


_EDIT = {"name": "Edit", "input": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}}


class KillingRayHost(RayHost):
    """Kills the SessionActor of the task whose workspace is named `victim`, once, right
    after that session's Edit was saved — mid-turn, while the model is still thinking."""

    def __init__(self, *, actors: int, victim: str):
        super().__init__(actors=actors)
        self.victim = victim
        self.killed = 0

    async def open(self, workspace, settings, emit, **where):
        holder: list = []
        edited: list = []

        def watch(event) -> None:
            emit(event)
            kind = getattr(event, "type", "")
            if kind == "tool_result" and event.name == "Edit":
                edited.append(event)
            if (
                workspace.name == self.victim
                and not self.killed
                and edited
                and kind == "snapshot"
                and event.reason == "tool_batch"
            ):
                self.killed += 1
                ray.kill(holder[0].actor, no_restart=False)  # it restarts, empty

        handle = await super().open(workspace, settings, watch, **where)
        holder.append(handle)
        return handle


async def test_eval_on_ray_survives_a_killed_session_actor_and_stops_a_timed_out_turn(ray_cluster, tmp_path):
    repo = _calc_repo(tmp_path)
    fix = script(
        tmp_path,
        "fix",
        [
            {"text": "Fixing.", "tool_calls": [_EDIT]},
            {"text": "Verifying.", "sleep_ms": 1500, "tool_calls": [{"name": "Bash", "input": {"command": GRADER}}]},
        ],
        final="Fixed.",
    )
    patient = script(
        tmp_path,
        "patient",
        [  # keeps the batch (and its actors) up past the late write
            {"text": "Fixing.", "tool_calls": [_EDIT]},
            {"text": "Verifying.", "sleep_ms": 5000, "tool_calls": [{"name": "Bash", "input": {"command": GRADER}}]},
        ],
        final="Fixed.",
    )
    late = script(
        tmp_path,
        "late",
        [
            {
                "text": "Thinking long.",
                "sleep_ms": 2000,
                "tool_calls": [
                    {"name": "Write", "input": {"path": "late.txt", "content": "written after the deadline"}}
                ],
            },
        ],
        final="Fixed.",
    )
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "".join(
            json.dumps(row) + "\n"
            for row in [
                {
                    "id": "plain",
                    "repo": str(repo),
                    "instruction": "fix add",
                    "test_command": GRADER,
                    "model": f"scripted:{patient}",
                },
                {"id": "victim", "repo": str(repo), "instruction": "fix add", "test_command": GRADER},
                {
                    "id": "slow",
                    "repo": str(repo),
                    "instruction": "fix add",
                    "test_command": GRADER,
                    "model": f"scripted:{late}",
                    "budgets": {"wall_s": 1},
                },
            ]
        )
    )
    settings = WorkingsetSettings(
        model=f"scripted:{fix}",
        home=tmp_path / "ignored",
        permissions={"mode": "accept-edits", "allow": ["Bash"], "headless": "deny-asks"},
    )
    host = KillingRayHost(actors=3, victim="victim")
    out = tmp_path / "out"
    stream = io.StringIO()
    runner = EvalRunner(
        settings,
        load_tasks(tasks).tasks,
        EvalOptions(out=out, concurrency=3, keep_workspaces=True),
        host=host,
        reporter=JsonReporter(stream),
    )
    summary = await runner.run()

    rows = {r["task_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert rows["plain"]["status"] == "passed" and rows["plain"]["retries"] == 0
    assert rows["plain"]["turns"] == 3 and rows["plain"]["patch_path"] == "patches/plain.diff"

    victim = rows["victim"]
    assert host.killed == 1
    # Killed in its one turn after its Edit was saved: the RemoteSession reopens it from
    # that version and the turn goes on after the Edit, saying so, so the Edit is made once
    # and the patch is the unperturbed one's — the batch does not need its own retry.
    assert (victim["status"], victim["retries"], victim["actor_restarts"]) == ("passed", 0, 1)
    events = [json.loads(line) for line in (out / victim["events_path"]).read_text().splitlines()]
    notices = [e["text"] for e in events if e["type"] == "notice"]
    assert any(t.startswith("the session's actor failed") for t in notices)
    assert any("the turn goes on from its last saved tool batch" in t for t in notices)
    assert [e["name"] for e in events if e["type"] == "tool_result"] == ["Edit", "Bash"]
    assert (out / victim["patch_path"]).read_bytes() == (out / rows["plain"]["patch_path"]).read_bytes()
    assert [e["type"] for e in map(json.loads, stream.getvalue().splitlines())].count("task_retry") == 0

    slow = rows["slow"]
    assert (slow["status"], slow["stop_reason"], slow["tests_passed"]) == ("timeout", "timeout", False)
    # closing the session stopped its turn on the actor: the Write, due 2 s after the session
    # opened, never happened, though the actors lived on for 5 s more (the patient task)
    assert slow["agent_wall_s"] < 4.5  # the turn was stopped at its budget, not waited for
    assert rows["plain"]["finished_at"] - slow["started_at"] > 5.0
    assert not (Path(slow["workspace"]) / "late.txt").exists() and (Path(slow["workspace"]) / "calc.py").exists()

    assert summary["statuses"] == {
        "passed": 2,
        "failed": 0,
        "error": 0,
        "timeout": 1,
        "budget": 0,
        "truncated": 0,
        "refused": 0,
        "infra_error": 0,
    }
    assert summary["retries"] == 0 and summary["actor_restarts"] == 1
    assert host.pool is None  # the batch's actors are gone
    assert (out / "home" / "snapshots").is_dir()  # sessions keep their snapshots with the results
