"""RayHost: the batch on a Ray cluster, each attempt on a node the cluster has room on.

    start     connect, the shared services (compactor pool, snapshot store), the node
              watch; every node that can take tasks gets its SessionActors and TaskNode
              up front (start-up failures are retried, each said in one line)
    site      a lease (placement.py) -> that node's services -> a RaySite (node_site.py);
              a source on this machine's disk is bundled once and shipped to the node
    open      the session on a SessionActor of the site's node, so its tool calls (pinned
              to the actor's node) and its workspace are on the same disk

Every await on the driver's side of a task is bounded, whatever the actors do: the
session's turn by the task's wall clock (task_flow.py), its open and close by limits
here, and each actor — SessionActors through their links, each node's TaskNode here —
has a heartbeat (cluster.heartbeat) that kills and replaces one that stops answering,
which fails every call still waiting on it: the task recovers or is retried, and the
batch goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray

from agents.events import EventSink
from agents.session import SessionHandle
from agents.settings import WorkingsetSettings
from cluster.connection import ClusterError, connect, node_cpus
from cluster.eval.base_repo import Shipped, TrustedBases, bundle
from cluster.eval.hosts import TaskSite, default_actors
from cluster.eval.layout import OutDir
from cluster.eval.lost import NodeLost, Retry
from cluster.eval.node_site import RaySite, TaskNode, batch_key
from cluster.eval.placement import (
    NodeWatch,
    Placer,
    cluster_has_sandbox_nodes,
    feasible_nodes,
    task_bundle,
)
from cluster.eval.stages import StageConfig
from cluster.eval.tasks import Task, is_url
from cluster.faults import is_lost_infrastructure
from cluster.heartbeat import Heartbeat
from cluster.session_actor import ClusterServices

if TYPE_CHECKING:
    from cluster.session_pool import SessionPool

__all__ = ["RayHost"]

_START_TRIES = 3


@dataclass
class _NodeServices:
    pool: SessionPool  # of this node
    actor: Any  # TaskNode
    root: str
    heartbeat: Heartbeat  # the TaskNode's


_TIDY_S = 60.0  # what the batch's end waits for the nodes to remove their directories
_START_S = 600.0  # what a node's actors and tool workers may take to start (Ray starts them slowly when busy)
_CLOSE_S = 30.0  # what closing a session waits for its actor (a stopped one is replaced meanwhile)
_OPEN_MARGIN_S = 30.0  # beyond an open's own wait for a restarting actor and a heartbeat's timeout


class RayHost:
    name = "ray"

    def __init__(
        self,
        *,
        actors: int | None = None,
        concurrency: int = 16,
        notify: Callable[[str], None] | None = None,
        pool_class: type | None = None,
    ):
        self.actors = actors  # SessionActors per node; None: `default_actors` for each node
        self.concurrency = concurrency
        self.actors_started: dict[str, int] = {}  # node -> the SessionActors started there
        self.pool_class = pool_class  # default: cluster.session_pool.SessionPool
        self.notify = notify or (lambda text: None)
        self.settings: WorkingsetSettings | None = None
        self.services: ClusterServices | None = None
        self.watch = NodeWatch()
        self.sandbox = False
        self.placer: Placer | None = None
        self._nodes: dict[str, _NodeServices] = {}
        self._starting: dict[str, asyncio.Task] = {}
        self._shipped: dict[tuple, asyncio.Task] = {}
        self._handles: dict[int, str] = {}  # id(handle) -> its node
        self._config: StageConfig | None = None
        self._key = ""

    @property
    def pool(self):
        """The first node's pool (None once shut down), for callers that want one."""
        return next((n.pool for n in self._nodes.values()), None)

    def _bundle(self) -> dict[str, float]:
        c = self.settings.cluster if self.settings else None
        return task_bundle(
            memory_mb=c.eval_task_memory_mb if c else 256, cpus=c.eval_task_cpus if c else 0.0, sandbox=self.sandbox
        )

    async def start(self, settings: WorkingsetSettings) -> None:
        """Connect (or start the embedded cluster) and the shared services. `settings` are
        the batch's: the shared services (compactor pool, snapshot store) follow them."""
        from cluster.ray_run import start_services

        if self.services is not None:
            return  # started already (a benchmark starts it before timing the batch)
        self.settings = settings
        info = connect(
            settings.cluster.address,
            dashboard=settings.cluster.dashboard,
            start_timeout_s=settings.cluster.start_timeout_s,
            notify=self.notify,
        )
        self.services = start_services(settings, info)
        self.sandbox = settings.sandbox.enabled and cluster_has_sandbox_nodes()
        if not feasible_nodes(self._bundle()):
            raise ClusterError(
                f"no node of the Ray cluster can hold a task ({self._describe_bundle()}); give the "
                "nodes more memory, lower cluster.eval_task_memory_mb / eval_task_cpus, or start a node "
                "with --resources='{\"workingset_sandbox\": 1}'"
            )
        self.placer = Placer(self._bundle())
        self.watch.start()

    def _describe_bundle(self) -> str:
        return ", ".join(f"{k} {v / 2**20:g} MB" if k == "memory" else f"{k} {v:g}" for k, v in self._bundle().items())

    async def warm(self, config: StageConfig, out: OutDir) -> None:
        """Bring every node that can take tasks up before the first task needs it."""
        self._configure(config, out)
        await asyncio.gather(*(self._node(node) for node in feasible_nodes(self._bundle())), return_exceptions=True)

    def _configure(self, config: StageConfig, out: OutDir) -> None:
        if self._config is None:
            self._config, self._key = config, batch_key(out)

    # -- nodes --------------------------------------------------------------------------

    async def _node(self, node: str) -> _NodeServices:
        if node in self._nodes:
            return self._nodes[node]
        if node not in self._starting:
            self._starting[node] = asyncio.ensure_future(self._start_node(node))
        try:
            return await asyncio.shield(self._starting[node])
        finally:
            if self._starting.get(node) is not None and self._starting[node].done():
                self._starting.pop(node, None)

    async def _start_node(self, node: str) -> _NodeServices:
        from cluster.session_pool import SessionPool

        assert self.settings is not None and self._config is not None
        pool_class = self.pool_class or SessionPool
        strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=node, soft=False)
        for tries in range(1, _START_TRIES + 1):
            pool = None
            actor: Any = None
            try:
                actors = self.actors or default_actors(self.concurrency, node_cpus(node))
                self.actors_started[node] = actors
                pool = pool_class(self.settings, actors=actors, services=self.services, node_id=node)
                actor = TaskNode.options(scheduling_strategy=strategy).remote(self._config, self._key)
                async with asyncio.timeout(_START_S):  # a node whose processes do not answer: tried again
                    _, root = await actor.where.remote()
                    await pool.ready()
                c = self.settings.cluster
                heartbeat = Heartbeat(
                    actor, what="node's task actor", period_s=c.heartbeat_s, timeout_s=c.heartbeat_timeout_s
                )
                heartbeat.ensure_running()
                self._nodes[node] = _NodeServices(pool, actor, root, heartbeat)
                return self._nodes[node]
            except Exception as exc:
                self._drop(pool, actor)
                if self.watch.is_lost(node) or tries == _START_TRIES:
                    raise ClusterError(
                        f"node {node[:12]} could not start its session actors ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else ''})"
                    ) from exc
                self.notify(
                    f"starting the session actors on node {node[:12]} failed ({type(exc).__name__}); "
                    f"trying again ({tries + 1} of {_START_TRIES})"
                )
        raise AssertionError("unreachable")

    @staticmethod
    def _drop(pool, actor) -> None:
        with contextlib.suppress(Exception):
            if pool is not None:
                pool.shutdown()
        with contextlib.suppress(Exception):
            if actor is not None:
                ray.kill(actor)

    def _forget(self, node: str) -> None:
        """A lost node's services: gone with it."""
        services = self._nodes.pop(node, None)
        if services is not None:
            services.heartbeat.stop()
            self._drop(services.pool, services.actor)

    # -- sites --------------------------------------------------------------------------

    def _ship(self, task: Task, out: OutDir) -> asyncio.Task:
        """The task's source as a bundle in the object store, made once per source."""
        key = (task.repo, task.ref, tuple(sorted(task.metadata.get("looked_for") or ())))
        if key not in self._shipped:
            self._shipped[key] = asyncio.ensure_future(self._make_shipped(task, out, len(self._shipped)))
        return self._shipped[key]

    async def _make_shipped(self, task: Task, out: OutDir, n: int):
        bases = TrustedBases(out.bases, out.repos)
        name = f"shipped-{n}"
        base = await bases.make(task, name)
        try:
            shipped: Shipped = await bundle(base, out.scratch, timeout_s=task.timeouts.setup_s)
        finally:
            await bases.remove(base.git_dir)
        return ray.put(shipped)

    async def _shipped_for(self, task: Task, out: OutDir):
        if is_url(task.repo):
            return None  # the node clones it
        return await asyncio.shield(self._ship(task, out))

    async def _services_for(self, node: str) -> _NodeServices:
        """The node's services; a node that could not start them is lost infrastructure."""
        try:
            return await self._node(node)
        except ClusterError as exc:
            if await self.watch.confirm(node, grace_s=1.0):
                raise NodeLost(node, "workspace") from exc
            raise Retry(str(exc)) from exc

    @contextlib.asynccontextmanager
    async def site(self, config: StageConfig, out: OutDir, task: Task, name: str) -> AsyncIterator[TaskSite]:
        assert self.settings is not None, "start the host first"
        self._configure(config, out)
        assert self.placer is not None
        held = await self.placer.lease()
        try:
            services = await self._services_for(held.node)
            c = self.settings.cluster
            grade: dict[str, Any] = {"num_cpus": c.eval_grade_cpus}
            if self.sandbox:
                grade["resources"] = {"workingset_sandbox": 0.001}
            site = RaySite(
                held,
                services.actor,
                services.root,
                config,
                self.watch,
                shipped=self._shipped_for(task, out),
                grade_resources=grade,
                heartbeat=services.heartbeat,
            )
            try:
                yield site
            finally:
                if self.watch.is_lost(held.node):
                    self._forget(held.node)
        finally:
            self.placer.release(held)

    # -- sessions -----------------------------------------------------------------------

    async def open(
        self, workspace: Path, settings: WorkingsetSettings, emit: EventSink, *, node: str | None = None
    ) -> SessionHandle:
        if node is None:
            node = ray.get_runtime_context().get_node_id()
        services = await self._node(node)
        c = settings.cluster
        limit = c.actor_restart_timeout_s + c.heartbeat_timeout_s + _OPEN_MARGIN_S
        try:
            handle = await asyncio.wait_for(services.pool.open(workspace, settings=settings, emit=emit), limit)
        except TimeoutError:
            raise ClusterError(f"opening a session on node {node[:12]} got no answer within {limit:g} s") from None
        self._handles[id(handle)] = node
        return handle

    async def close(self, handle: SessionHandle) -> None:
        from cluster.remote_session import RemoteSession

        assert isinstance(handle, RemoteSession)
        node = self._handles.pop(id(handle), None)
        services = self._nodes.get(node) if node else None
        if services is None or self.watch.is_lost(node):
            return  # its actor went with its node
        # Closing also stops a turn the caller gave up on (a wall-clock timeout). An actor
        # that does not answer holds the task no longer than _CLOSE_S: its heartbeat
        # replaces it, and the turn goes with it.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(services.pool.close(handle), _CLOSE_S)

    def retryable(self, exc: BaseException) -> bool:
        """Lost infrastructure (an actor that did not come back, a dead worker), not a
        model or task error raised inside the actor."""
        return is_lost_infrastructure(exc)

    async def shutdown(self) -> None:
        await self.watch.stop()
        tidied = [s.actor.tidy.remote() for n, s in self._nodes.items() if not self.watch.is_lost(n)]
        with contextlib.suppress(Exception):  # a node that went cannot be tidied, nor needs it
            await asyncio.wait_for(asyncio.gather(*tidied, return_exceptions=True), _TIDY_S)
        for node in list(self._nodes):
            self._forget(node)
        for task in self._starting.values():
            task.cancel()
        self._starting.clear()
        self._shipped.clear()
        self.services = None
