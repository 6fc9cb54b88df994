"""Where the batch's tasks run.

`LocalHost` (`--local`): every stage and each session in this process: the same loop,
no Ray. Its site is the batch's own out directory.

`RayHost` (ray_host.py, imported from there: it imports Ray): each attempt gets a node the cluster has room on (a placement
group with the task's declared resources), where its workspace is made, its session
runs on a SessionActor of that node, its tool calls and its grade run as Ray tasks
pinned there; only rows, patches, logs and events come back. A killed actor is handled
by RemoteSession (reopen from the last snapshot, re-run the interrupted turn); what it
cannot recover is `retryable`, and the runner retries the task once; a lost node is
`NodeLost`, and the task runs again elsewhere from its start.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from agents.events import EventSink
from agents.opening import OpenSpec, SessionRuntime, open_or_resume
from agents.session import SessionHandle
from agents.settings import WorkingsetSettings
from cluster.eval.base_repo import Shipped
from cluster.eval.layout import OutDir
from cluster.eval.patches import Patch
from cluster.eval.stages import EnvironmentOutcome, StageConfig, TaskStages
from cluster.eval.tasks import Task
from cluster.eval.workspaces import Workspace

__all__ = ["LocalHost", "LocalSite", "NotifyingHost", "SessionHost", "TaskSite", "WarmingHost", "default_actors"]

T = TypeVar("T")


class TaskSite(Protocol):
    """Where one attempt's files live and its stages run (stages.py has their meaning)."""

    phase: str  # the stage running now (set by the flow; named when the node is lost)

    @property
    def node(self) -> str | None:
        """The Ray node id, None in this process."""
        ...

    async def prepare(self, task: Task, name: str) -> Workspace: ...

    async def environment(self, task: Task, ws: Workspace, name: str, network: bool) -> EnvironmentOutcome: ...

    async def setup(self, task: Task, ws: Workspace, name: str, venv: Path | None) -> None: ...

    async def apply(self, ws: Workspace, patch: bytes, timeout_s: float) -> None: ...

    async def patch(self, ws: Workspace) -> Patch: ...

    async def grade(
        self, task: Task, ws: Workspace, patch: Patch, name: str, venv: Path | None
    ) -> tuple[bool | None, dict]: ...

    async def discard(self, name: str) -> str | None: ...

    async def files(self, name: str) -> dict[str, bytes]: ...

    async def guard(self, work: Awaitable[T]) -> T:
        """Run the attempt's stages; NodeLost when the site's node leaves the cluster."""
        ...


class SessionHost(Protocol):
    """Where the batch's sessions run: gives attempts their site, opens, closes and
    judges failures of sessions."""

    @property
    def name(self) -> str: ...  # "local" or "ray"

    async def start(self, settings: WorkingsetSettings) -> None: ...

    def site(
        self, config: StageConfig, out: OutDir, task: Task, name: str
    ) -> contextlib.AbstractAsyncContextManager[TaskSite]: ...

    async def open(
        self, workspace: Path, settings: WorkingsetSettings, emit: EventSink, *, node: str | None = None
    ) -> SessionHandle: ...

    async def close(self, handle: SessionHandle) -> None: ...

    def retryable(self, exc: BaseException) -> bool: ...

    async def shutdown(self) -> None: ...


@runtime_checkable
class NotifyingHost(Protocol):
    """A SessionHost that says what it retried or replaced (a session actor that failed to
    start); the runner points `notify` at the batch's progress."""

    notify: Callable[[str], None]


@runtime_checkable
class WarmingHost(Protocol):
    """A SessionHost that pays its one-time costs (actors, tool workers) before the
    batch's first task, so the first tasks do not wait on them."""

    async def warm(self, config: StageConfig, out: OutDir) -> None: ...


def default_actors(concurrency: int, node_cpus: float) -> int:
    """SessionActors for a node: one per 16 sessions (they mostly wait on models), never
    more than the node has CPUs (past that they only contend for them, and every Ray
    process costs CPU even idle: `python -m benchmarks.concurrency --actors N`)."""
    return max(1, min(8, int(node_cpus), math.ceil(concurrency / 16)))


class LocalSite:
    """The stages in this process, over the batch's own out directory."""

    node: str | None = None

    def __init__(self, stages: TaskStages):
        self.stages = stages
        self.phase = ""

    async def prepare(self, task: Task, name: str, shipped: Shipped | None = None) -> Workspace:
        return await self.stages.prepare(task, name, shipped)

    async def environment(self, task: Task, ws: Workspace, name: str, network: bool) -> EnvironmentOutcome:
        return await self.stages.environment(task, ws, name, network)

    async def setup(self, task: Task, ws: Workspace, name: str, venv: Path | None) -> None:
        await self.stages.setup(task, ws, name, venv)

    async def apply(self, ws: Workspace, patch: bytes, timeout_s: float) -> None:
        await self.stages.apply(ws, patch, timeout_s)

    async def patch(self, ws: Workspace) -> Patch:
        return await self.stages.patch(ws)

    async def grade(
        self, task: Task, ws: Workspace, patch: Patch, name: str, venv: Path | None
    ) -> tuple[bool | None, dict]:
        return await self.stages.grade(task, ws, patch, name, venv)

    async def discard(self, name: str) -> str | None:
        return await self.stages.discard(name)

    async def files(self, name: str) -> dict[str, bytes]:
        return {}  # already in the out directory

    async def guard(self, work: Awaitable[T]) -> T:
        return await work


class LocalHost:
    name = "local"

    def __init__(self) -> None:
        self._stages: TaskStages | None = None

    async def start(self, settings: WorkingsetSettings) -> None:
        return None

    @contextlib.asynccontextmanager
    async def site(self, config: StageConfig, out: OutDir, task: Task, name: str) -> AsyncIterator[TaskSite]:
        if self._stages is None:  # one for the batch: its command slots and caches are shared
            self._stages = TaskStages(config, out)
        yield LocalSite(self._stages)

    async def open(
        self, workspace: Path, settings: WorkingsetSettings, emit: EventSink, *, node: str | None = None
    ) -> SessionHandle:
        return await open_or_resume(OpenSpec(settings, workspace), SessionRuntime(emit=emit))

    async def close(self, handle: SessionHandle) -> None:
        await handle.aclose()

    def retryable(self, exc: BaseException) -> bool:
        return False

    async def shutdown(self) -> None:
        return None
