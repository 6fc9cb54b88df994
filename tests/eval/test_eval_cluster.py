"""`workingset eval` across the nodes of a real multi-node Ray cluster (the shared
`ray_cluster`, plus a node a test adds): tasks go where the cluster has room and a
node that declares it can sandbox, each workspace is made on the node that runs the
task and its session runs there; a node lost mid-batch has its tasks run again from
their start elsewhere, each task ending with exactly one row; a node whose start-up
fails is tried again, said in one line."""

import asyncio
import io
import json
from pathlib import Path

import ray
from ray.exceptions import WorkerCrashedError

from agents.settings._config import WorkingsetSettings
from cluster.eval.progress import JsonReporter
from cluster.eval.ray_host import RayHost
from cluster.eval.runner import EvalOptions, EvalRunner
from cluster.eval.task_file import load_tasks
from cluster.session_pool import SessionPool
from tests.support.eval_support import calc_repo, fix_turns, result_rows, script, task, tasks_file

_OBJECT_STORE = 80 * 1024**2


class NodeRecordingHost(RayHost):
    """Records, for each session, the node its SessionActor really runs on."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.session_nodes: dict[str, str] = {}

    async def open(self, workspace, settings, emit, **where):
        handle = await super().open(workspace, settings, emit, **where)
        self.session_nodes[Path(workspace).name] = await handle.actor.ping.remote()
        return handle


def _eval_settings(tmp_path: Path, model: Path) -> WorkingsetSettings:
    return WorkingsetSettings(
        model=f"scripted:{model}",
        home=tmp_path / "ignored",
        permissions={"mode": "accept-edits", "allow": ["Bash"], "headless": "deny-asks"},
    )


def _runner(tmp_path: Path, ids: list[str], host, reporter, **options) -> EvalRunner:
    repo = calc_repo(tmp_path)
    model = script(tmp_path, "fix", fix_turns(sleep_ms=1500))
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task(i, repo) for i in ids])
    return EvalRunner(
        _eval_settings(tmp_path, model),
        load_tasks(tasks).tasks,
        EvalOptions(out=tmp_path / "out", concurrency=len(ids), **options),
        host=host,
        reporter=reporter,
    )


async def test_tasks_land_on_every_node_that_can_sandbox_and_each_workspace_is_on_its_node(ray_cluster, tmp_path):
    plain = ray_cluster.add_node(num_cpus=2, object_store_memory=_OBJECT_STORE)  # no workingset_sandbox
    try:
        host = NodeRecordingHost(concurrency=64)  # SessionActors per node: as many as it has CPUs, up to 64 / 16
        ids = [f"t{i}" for i in range(6)]
        summary = await _runner(tmp_path, ids, host, JsonReporter(io.StringIO()), keep_workspaces=True).run()
    finally:
        ray_cluster.cluster.remove_node(plain)

    rows = result_rows(tmp_path / "out")
    assert sorted(r["task_id"] for r in rows) == ids and {r["status"] for r in rows} == {"passed"}
    assert {r["node"] for r in rows} == {ray_cluster.head_node_id, ray_cluster.other_node_id}
    for row in rows:
        # made on its node (the node's own directory), the session there too
        assert f"/{row['node'][:12]}/workspaces/{row['task_id']}" in row["workspace"]
        assert host.session_nodes[row["task_id"]] == row["node"]
        assert (tmp_path / "out" / row["patch_path"]).read_bytes()  # the patch came back
        assert (tmp_path / "out" / row["grade_log"]).read_text().rstrip().endswith("[exit code: 0]")  # and the log
    assert sum(summary["nodes"].values()) == 6 and len(summary["nodes"]) == 2
    assert host.actors_started == {ray_cluster.head_node_id: 2, ray_cluster.other_node_id: 1}


class RemovingReporter(JsonReporter):
    """Removes `node` from the cluster once a task's agent has run on it for a moment."""

    def __init__(self, cluster, node):
        super().__init__(io.StringIO())
        self.cluster, self.node = cluster, node
        self.removal: asyncio.Task | None = None

    def event(self, kind, **fields):
        super().event(kind, **fields)
        if (
            kind == "task_phase"
            and fields["phase"] == "agent"
            and fields["node"] == self.node.node_id
            and self.removal is None
        ):
            self.removal = asyncio.ensure_future(self._remove())

    async def _remove(self) -> None:
        await asyncio.sleep(1.0)
        await asyncio.to_thread(self.cluster.remove_node, self.node)


async def test_a_node_lost_mid_batch_has_its_tasks_run_again_elsewhere_with_one_row_each(ray_cluster, tmp_path):
    doomed = ray_cluster.add_node(num_cpus=2, resources={"workingset_sandbox": 1}, object_store_memory=_OBJECT_STORE)
    reporter = RemovingReporter(ray_cluster.cluster, doomed)
    ids = [f"t{i}" for i in range(6)]
    summary = await _runner(tmp_path, ids, RayHost(actors=1), reporter).run()
    assert reporter.removal is not None and reporter.removal.done()

    rows = result_rows(tmp_path / "out")
    assert sorted(r["task_id"] for r in rows) == ids  # exactly one row each
    assert {r["status"] for r in rows} == {"passed"}
    moved = [r for r in rows if r["node_losses"]]
    assert moved and all(r["node_losses"] == 1 and r["retries"] == 0 for r in moved)
    assert all(r["node"] != doomed.node_id for r in rows)
    for row in moved:
        assert any(
            n.startswith(f"node {doomed.node_id[:12]} was lost during the ") and "another node" in n
            for n in row["notes"]
        )
    retried = [json.loads(line) for line in reporter.stream.getvalue().splitlines()]
    assert sum(1 for e in retried if e["type"] == "task_retry" and e.get("node_lost")) == len(moved)
    assert summary["node_losses"] == len(moved) and summary["retries"] == 0
    assert doomed.node_id not in {n["NodeID"] for n in ray.nodes() if n["Alive"]}


class FirstStartFails(SessionPool):
    """A pool whose first start-up fails as a tool worker killed during warm-up would."""

    failed = False

    async def ready(self) -> None:
        if not FirstStartFails.failed:
            FirstStartFails.failed = True
            raise WorkerCrashedError()
        await super().ready()


async def test_a_failed_start_up_of_a_node_is_tried_again_and_said_in_one_line(ray_cluster, tmp_path):
    reporter = JsonReporter(io.StringIO())
    await _runner(tmp_path, ["a"], RayHost(actors=1, pool_class=FirstStartFails), reporter).run()
    (row,) = result_rows(tmp_path / "out")
    assert row["status"] == "passed"
    notices = [e["text"] for e in map(json.loads, reporter.stream.getvalue().splitlines()) if e["type"] == "notice"]
    assert len(notices) == 1 and notices[0].startswith("starting the session actors on node ")
    assert notices[0].endswith("failed (WorkerCrashedError); trying again (2 of 3)")


async def test_a_missing_repository_is_the_tasks_error_row_on_ray_too(ray_cluster, tmp_path):
    model = script(tmp_path, "fix", fix_turns())
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task("gone", tmp_path / "no-such-repo")])
    runner = EvalRunner(
        _eval_settings(tmp_path, model),
        load_tasks(tasks).tasks,
        EvalOptions(out=tmp_path / "out"),
        host=RayHost(actors=1),
        reporter=JsonReporter(io.StringIO()),
    )
    await runner.run()
    (row,) = result_rows(tmp_path / "out")
    assert row["status"] == "error"
    assert row["error"] == f"workspace: repository {tmp_path / 'no-such-repo'} does not exist or is not a directory"
