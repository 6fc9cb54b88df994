"""Subagents on Ray: each Agent call runs in a SubagentActor, behind the same port.

The child is derived from the same blueprint as in-process (agents.subagents._spawner); only
the process differs. Its events and permission questions travel to the root's
SessionActor, its tool calls still go to node-affine tool tasks, and only its
SubagentResult comes back. Actors come from the SessionActor's pool
(cluster.subagents._pool), each running several children at once.

Tree budgets are live: the spawner opens the child's scope in the tree's ledger
(the root's, in its SessionActor) and the child reserves and settles every model
call there through a RemoteLedger (cluster.subagents._tree_budget), so parallel children see
each other's spending as it happens.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import OrderedDict

import ray
from ray.exceptions import RayError

from agents.events import PermissionRequested
from agents.opening import SessionBlueprint
from agents.permissions import PermissionRuntime
from agents.ports import SubagentRequest, SubagentResult
from agents.session import PermissionAnswer
from agents.subagents import Budget, child_limits, run_child
from cluster.subagents._root_tools import proxied_tools
from cluster.subagents._tree_budget import RemoteLedger

__all__ = ["RaySpawner", "RemoteApprover", "RemoteEmitter", "SubagentActor", "ray_spawner_factory"]


class RemoteEmitter:
    """EventSink that forwards a child's events to the root session's stream.

    Calls to an async actor may run out of order, and a result travels apart from
    the calls its actor made, so events go from one sender task, each call awaited
    before the next; a call carries every event queued since the last one (a burst
    costs one round trip, not one per event). `flush` waits until all have reached
    the root (before the child's result returns or it asks the user)."""

    def __init__(self, root_actor, root_session_id: str):
        self.root_actor = root_actor
        self.root_session_id = root_session_id
        self._queue: list = []
        self._sender: asyncio.Task | None = None

    def __getstate__(self) -> dict:
        return {"root_actor": self.root_actor, "root_session_id": self.root_session_id}

    def __setstate__(self, state: dict) -> None:
        RemoteEmitter.__init__(self, state["root_actor"], state["root_session_id"])

    def __call__(self, event) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop to send from: best effort, unordered
            self.root_actor.push_event.remote(self.root_session_id, event)
            return
        self._queue.append(event)
        if self._sender is None or self._sender.done():
            self._sender = loop.create_task(self._send())

    async def _send(self) -> None:
        while self._queue:
            burst, self._queue = self._queue, []
            try:
                await self.root_actor.push_events.remote(self.root_session_id, burst)
            except RayError:
                self._queue.clear()  # the root is gone: nobody to show them to
                return

    async def flush(self) -> None:
        while self._sender is not None and not self._sender.done():
            await asyncio.shield(self._sender)


class RemoteApprover:
    """A child's permission question, asked of the root's user through the root actor."""

    def __init__(self, root_actor, root_session_id: str, emitter: RemoteEmitter | None = None):
        self.root_actor = root_actor
        self.root_session_id = root_session_id
        self.emitter = emitter

    async def __call__(self, request: PermissionRequested) -> PermissionAnswer:
        if self.emitter is not None:
            await self.emitter.flush()  # the events that led to the question come first
        return await self.root_actor.ask_user.remote(self.root_session_id, request)


_KEPT_BLUEPRINTS = 16


@ray.remote(num_cpus=0, max_restarts=0)
class SubagentActor:
    """Runs children. A parent's blueprint is put in the object store once and named by
    its ref in every call (inside a list, so Ray hands over the ref, not the object):
    the actor fetches and unpickles it once and its later children reuse it. Only the
    permission rules, which the root's user may change between fan-outs, come with
    each call."""

    def __init__(self) -> None:
        self._blueprints: OrderedDict[str, asyncio.Future] = OrderedDict()

    async def run(
        self,
        shipped: list,
        permissions: PermissionRuntime,
        request: SubagentRequest,
        parent_id: str,
        child_id: str,
        budget: Budget,
    ) -> SubagentResult:
        blueprint = _for_one_child(await self._blueprint(shipped[0]), permissions)
        try:
            return await run_child(blueprint, request, parent_id=parent_id, child_id=child_id, budget=budget)
        finally:
            if isinstance(blueprint.emit, RemoteEmitter):
                await blueprint.emit.flush()  # the child's events reach the root before its result

    async def _blueprint(self, ref: ray.ObjectRef) -> SessionBlueprint:
        key = ref.hex()
        fetched = self._blueprints.get(key)
        if fetched is None:
            fetched = self._blueprints[key] = asyncio.ensure_future(_fetched(ref))
            while len(self._blueprints) > _KEPT_BLUEPRINTS:
                self._blueprints.popitem(last=False)
        self._blueprints.move_to_end(key)
        try:
            return await asyncio.shield(fetched)
        except RayError:
            self._blueprints.pop(key, None)  # the next child tries again
            raise

    def ready(self) -> bool:
        return True


async def _fetched(ref: ray.ObjectRef) -> SessionBlueprint:
    return await ref


def _for_one_child(shared: SessionBlueprint, permissions: PermissionRuntime) -> SessionBlueprint:
    """A child's own copy of a kept blueprint: the rules of now, and an event sender of its
    own (a flush then waits for this child's events only, not for its busy siblings')."""
    if not isinstance(shared.emit, RemoteEmitter):
        return dataclasses.replace(shared, permissions=permissions)
    emit = RemoteEmitter(shared.emit.root_actor, shared.emit.root_session_id)
    approver = shared.child_approver
    if isinstance(approver, RemoteApprover):
        approver = RemoteApprover(approver.root_actor, approver.root_session_id, emit)
    return dataclasses.replace(shared, permissions=permissions, emit=emit, child_approver=approver)


class RaySpawner:
    """The SubagentSpawner port on Ray."""

    def __init__(
        self,
        blueprint: SessionBlueprint,
        *,
        parent_id: str,
        parent_budget: Budget,
        pool,
        root_actor,
        root_session_id: str,
    ):
        self.blueprint = blueprint
        self.parent_id = parent_id
        self.parent_budget = parent_budget
        self.pool = pool
        self.root_actor = root_actor
        self.root_session_id = root_session_id
        self._count = 0
        self._shipped: ray.ObjectRef | None = None

    async def spawn(self, request: SubagentRequest) -> SubagentResult:
        self._count += 1
        child_id = f"{self.parent_id}.{self._count}"
        limits = child_limits(self.blueprint, request)
        await self.parent_budget.child(child_id, limits)
        budget = Budget(RemoteLedger(self.root_actor, self.root_session_id), child_id, limits.label)
        actor = self.pool.acquire()
        healthy = True
        try:
            result = await actor.run.remote(
                [self._shipped_ref()], self.blueprint.permissions, request, self.parent_id, child_id, budget
            )
        except RayError as exc:
            healthy = False
            result = SubagentResult(
                text=f"Subagent '{request.description}' was lost: its actor failed ({type(exc).__name__}). "
                "Tool calls it made may have taken effect; check before repeating the work.",
                is_error=True,
                reason="error",
                session_id=child_id,
            )
        finally:
            self.pool.release(actor, healthy=healthy)
        return result

    def _shipped_ref(self) -> ray.ObjectRef:
        """The shipped blueprint, serialized once for all of this parent's children (it
        cost each child a pickling here and an unpickling in its actor)."""
        if self._shipped is None:
            self._shipped = ray.put(self._shipped_blueprint())
        return self._shipped

    def _shipped_blueprint(self) -> SessionBlueprint:
        """What the child's process gets: events and questions routed to the root actor,
        grandchildren spawned through actors too."""
        bp = self.blueprint
        shipped = SessionBlueprint(**{k: v for k, v in bp.__dict__.items() if not k.startswith("_")})
        shipped.emit = RemoteEmitter(self.root_actor, self.root_session_id)
        # MCP connections live in the root's process and cannot travel: children call
        # those tools through the root's actor (cluster.subagents._root_tools).
        shipped.tools = proxied_tools(bp.tools, self.root_actor, self.root_session_id)
        if bp.child_approver is not None:
            shipped.child_approver = RemoteApprover(self.root_actor, self.root_session_id, shipped.emit)
        shipped.spawner_factory = ray_spawner_factory(self.pool, self.root_actor, self.root_session_id)
        return shipped


def ray_spawner_factory(pool, root_actor, root_session_id: str):
    def factory(bp: SessionBlueprint, parent_id: str, budget: Budget) -> RaySpawner:
        return RaySpawner(
            bp,
            parent_id=parent_id,
            parent_budget=budget,
            pool=pool,
            root_actor=root_actor,
            root_session_id=root_session_id,
        )

    return factory
