"""A task's site on a Ray node: its directories on that node's own disk, its stages there.

    TaskNode      one actor per node (num_cpus=0): workspaces, bases, the node's
                  environment cache, setup commands; all under a directory private to
                  the node (`node_root`): nothing assumes a file system shared with the
                  driver or with other nodes
    grade_task    the grade as a Ray task with declared resources, pinned to the node
    RaySite       the driver's handle on one attempt's site: its lease (placement.py),
                  its node, the calls to the node, and the guard that turns the node's
                  loss into NodeLost, and the TaskNode's replacement (it stopped
                  answering its heartbeat) into Retry

The grade changes nothing outside its own grading copy, so a grade whose worker died
under it (cluster.faults) runs again, once (GRADE_TRIES); and it is bounded by the
task's own limits (its setup and test timeouts) plus a margin, so a stopped worker
cannot hold the task.

A source on the driver's disk travels as a git bundle through Ray's object store
(base_repo.Shipped); a git URL is cloned by the node itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import ray
from ray.exceptions import RayError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from agents.errors import WorkingsetError
from cluster.connection import ClusterError
from cluster.eval.base_repo import Shipped
from cluster.eval.cleanup import outlive
from cluster.eval.errors import TaskEnded, WorkspaceError
from cluster.eval.layout import OutDir
from cluster.eval.lost import NodeLost, Retry
from cluster.eval.patches import Patch
from cluster.eval.placement import Lease, NodeWatch
from cluster.eval.stages import EnvironmentOutcome, StageConfig, TaskStages
from cluster.eval.tasks import Task
from cluster.eval.workspaces import Workspace
from cluster.faults import is_lost_infrastructure
from cluster.heartbeat import Heartbeat, Whereabouts, whereabouts
from tools.files import remove_tree

__all__ = ["GRADE_TRIES", "RaySite", "TaskNode", "batch_key", "grade_task", "node_root"]

T = TypeVar("T")
GRADE_TRIES = 2
_GRADE_MARGIN_S = 120.0  # beyond the grade's setup and test limits: the copy, the patch, a worker's start


def batch_key(out: OutDir) -> str:
    """Names the batch's directories on every node (one out directory, one key)."""
    return hashlib.sha256(str(out.root).encode()).hexdigest()[:16]


def node_root(key: str, node: str) -> Path:
    """This node's directory for the batch: on its own disk, private to this user."""
    base = Path(tempfile.gettempdir()) / f"workingset-eval-{os.getuid()}"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    return base / key / node[:12]


class _NodeStages(TaskStages):
    """The stages over this node's own directory for the batch."""

    def __init__(self, config: StageConfig, key: str):
        node = ray.get_runtime_context().get_node_id()
        super().__init__(config, OutDir(node_root(key, node)), node=node)

    def where(self) -> tuple[str, str]:
        return self.node or "", str(self.out.root)

    def heartbeat(self) -> Whereabouts:
        """The driver's sign that this actor runs (cluster.heartbeat)."""
        return whereabouts()

    def tidy(self) -> None:
        """At the batch's end: this node's directory for the batch goes (its files came
        back to the out directory; environments are kept elsewhere), unless the batch keeps
        workspaces."""
        if not self.config.keep_workspaces:
            remove_tree(self.out.root, ignore_errors=True)
            with contextlib.suppress(OSError):  # the batch's directory, once no node of it is left
                self.out.root.parent.rmdir()


TaskNode = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)(_NodeStages)


@ray.remote(max_retries=0)
def grade_task(
    config: StageConfig, root: str, task: Task, ws: Workspace, patch: Patch, name: str, venv: Path | None
) -> tuple[bool | None, dict, dict[str, bytes]]:
    """The grade where the base is; its logs go back with the verdict."""
    node = ray.get_runtime_context().get_node_id()
    stages = TaskStages(config, OutDir(Path(root)), node=node)
    passed, row = asyncio.run(stages.grade(task, ws, patch, name, venv))
    return passed, row, stages.files(name)


async def _unwrapped(ref: Any) -> Any:
    """A call's result; our own errors raised there are raised here as themselves."""
    try:
        return await ref
    except RayTaskError as exc:
        if isinstance(exc.cause, WorkingsetError):
            raise exc.cause from None
        raise


class RaySite:
    def __init__(
        self,
        lease: Lease,
        actor,
        root: str,
        config: StageConfig,
        watch: NodeWatch,
        *,
        shipped: Awaitable[Shipped | None],
        grade_resources: dict,
        heartbeat: Heartbeat | None = None,
    ):
        self.lease = lease
        self.node: str | None = lease.node
        self._node: str = lease.node
        self.actor = actor
        self.root = root
        self.config = config
        self.watch = watch
        self.phase = "workspace"
        self._shipped = shipped
        self._grade_resources = grade_resources
        self._grade_logs: dict[str, bytes] = {}
        self.heartbeat = heartbeat  # the TaskNode's

    @property
    def lost(self) -> bool:
        return self.watch.is_lost(self._node)

    async def prepare(self, task: Task, name: str) -> Workspace:
        try:
            shipped = await self._shipped  # a ref: the node fetches the bundle from the object store
        except (WorkspaceError, OSError) as exc:  # the source, read on this machine
            raise TaskEnded(f"workspace: {exc}") from None
        return await _unwrapped(self.actor.prepare.remote(task, name, shipped))

    async def environment(self, task: Task, ws: Workspace, name: str, network: bool) -> EnvironmentOutcome:
        return await _unwrapped(self.actor.environment.remote(task, ws, name, network))

    async def setup(self, task: Task, ws: Workspace, name: str, venv: Path | None) -> None:
        await _unwrapped(self.actor.setup.remote(task, ws, name, venv))

    async def apply(self, ws: Workspace, patch: bytes, timeout_s: float) -> None:
        await _unwrapped(self.actor.apply.remote(ws, patch, timeout_s))

    async def patch(self, ws: Workspace) -> Patch:
        return await _unwrapped(self.actor.patch.remote(ws))

    async def grade(
        self, task: Task, ws: Workspace, patch: Patch, name: str, venv: Path | None
    ) -> tuple[bool | None, dict]:
        strategy = NodeAffinitySchedulingStrategy(node_id=self._node, soft=False)
        limit = task.timeouts.setup_s + task.timeouts.test_s + _GRADE_MARGIN_S
        for tried in range(1, GRADE_TRIES + 1):
            ref = grade_task.options(scheduling_strategy=strategy, **self._grade_resources).remote(
                self.config, self.root, task, ws, patch, name, venv
            )
            try:
                passed, row, logs = await asyncio.wait_for(_unwrapped(ref), limit)
            except TimeoutError:
                ray.cancel(ref, force=True)
                raise ClusterError(f"the grade's worker gave no answer within {limit:g} s") from None
            except RayError as exc:
                if tried == GRADE_TRIES or not is_lost_infrastructure(exc) or self.lost:
                    raise
                continue
            self._grade_logs = logs
            return passed, row
        raise AssertionError("unreachable")

    async def discard(self, name: str) -> str | None:
        if self.lost:
            return None  # its disk went with it
        return await _unwrapped(self.actor.discard.remote(name))

    async def files(self, name: str) -> dict[str, bytes]:
        if self.lost:
            return {}
        return {**await _unwrapped(self.actor.files.remote(name)), **self._grade_logs}

    async def guard(self, work: Awaitable[T]) -> T:
        running = asyncio.ensure_future(work)
        lost = asyncio.ensure_future(self.watch.lost(self._node).wait())
        replaced: asyncio.Future = asyncio.ensure_future(
            self.heartbeat.replaced() if self.heartbeat else asyncio.Event().wait()
        )
        try:
            done, _ = await asyncio.wait({running, lost, replaced}, return_when=asyncio.FIRST_COMPLETED)
            if replaced in done and running not in done:
                # The node's task actor stopped answering and was killed: what ran on it is lost.
                running.cancel()
                await outlive([running])
                if not running.cancelled():
                    running.exception()
                raise Retry(str(replaced.result()))
            if running in done:
                try:
                    return running.result()
                except (RayError, ClusterError, Retry) as exc:
                    if isinstance(exc, NodeLost) or not await self.watch.confirm(self._node):
                        raise
                    raise NodeLost(self._node, self.phase) from exc
            # The node went: stop the stages (their clean-up skips the node), run again elsewhere.
            running.cancel()
            await outlive([running])
            if not running.cancelled():
                running.exception()  # retrieved: what the stages raised as they stopped is moot
            raise NodeLost(self._node, self.phase)
        finally:
            lost.cancel()
            replaced.cancel()
            if not running.done():
                running.cancel()
                await outlive([running])  # its clean-up runs on this node's actors: let it end first
