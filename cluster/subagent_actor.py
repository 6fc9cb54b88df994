"""Subagents on Ray: each Agent call runs in a SubagentActor, behind the same port.

The child is derived from the same blueprint as in-process (agents.subagents); only
the process differs. Its events and permission questions travel to the root's
SessionActor, its tool calls still go to node-affine tool tasks, and only its
SubagentResult comes back. Actors are reused from a small per-process pool (a
fresh actor costs a Python process start); one whose child failed is not reused.

Tree budgets: a child gets the room left in the tree when it starts and enforces
it itself; its usage is added to the parent's tree when it returns. Children that
run in parallel each see the same room, so a tree may overshoot by what they spend
concurrently.
"""

from __future__ import annotations

import asyncio

import ray
from ray.exceptions import RayError

from agents.blueprint import SessionBlueprint
from agents.budgets import Budget
from agents.events import PermissionRequested
from agents.ports import SubagentRequest, SubagentResult
from agents.subagents import run_child
from agents.tool_batch import PermissionAnswer
from tools.base import ExecutionDomain

__all__ = ["RaySpawner", "RemoteApprover", "RemoteEmitter", "SubagentActor", "SubagentPool"]


class RemoteEmitter:
    """EventSink that forwards a child's events to the root session's stream.

    Calls to an async actor may run out of order, and a result travels apart from
    the calls its actor made, so events go one at a time, each awaited, from one
    sender task; `flush` waits until all have reached the root (before the child's
    result returns or it asks the user)."""

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
            event = self._queue.pop(0)
            try:
                await self.root_actor.push_event.remote(self.root_session_id, event)
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


@ray.remote(num_cpus=0, max_restarts=0)
class SubagentActor:
    async def run(
        self, blueprint: SessionBlueprint, request: SubagentRequest, parent_id: str, child_id: str,
        room: tuple[int | None, float | None],
    ) -> SubagentResult:
        tree = Budget("tree (room left when this subagent started)", max_tokens=room[0], max_cost_usd=room[1])
        try:
            return await run_child(blueprint, request, parent_id=parent_id, child_id=child_id, parent_budget=tree)
        finally:
            if isinstance(blueprint.emit, RemoteEmitter):
                await blueprint.emit.flush()  # the child's events reach the root before its result

    def ready(self) -> bool:
        return True


class SubagentPool:
    """Idle SubagentActors kept for reuse (bounded); created on demand."""

    def __init__(self, keep_idle: int = 8):
        self.keep_idle = keep_idle
        self._idle: list = []

    def acquire(self):
        return self._idle.pop() if self._idle else SubagentActor.remote()  # type: ignore[attr-defined]  # added by @ray.remote, which mypy does not see

    def release(self, actor, *, healthy: bool) -> None:
        if healthy and len(self._idle) < self.keep_idle:
            self._idle.append(actor)
        else:
            ray.kill(actor)

    async def warm(self, count: int) -> None:
        actors = [SubagentActor.remote() for _ in range(count)]  # type: ignore[attr-defined]  # added by @ray.remote, which mypy does not see
        await asyncio.gather(*(a.ready.remote() for a in actors))
        for actor in actors:
            self.release(actor, healthy=True)


class RaySpawner:
    """The SubagentSpawner port on Ray."""

    def __init__(self, blueprint: SessionBlueprint, *, parent_id: str, parent_budget: Budget, pool: SubagentPool,
                 root_actor, root_session_id: str):
        self.blueprint = blueprint
        self.parent_id = parent_id
        self.parent_budget = parent_budget
        self.pool = pool
        self.root_actor = root_actor
        self.root_session_id = root_session_id
        self._count = 0

    async def spawn(self, request: SubagentRequest) -> SubagentResult:
        self._count += 1
        child_id = f"{self.parent_id}.{self._count}"
        actor = self.pool.acquire()
        healthy = True
        try:
            result = await actor.run.remote(self._shipped_blueprint(), request, self.parent_id, child_id,
                                            self.parent_budget.remaining())
        except RayError as exc:
            healthy = False
            result = SubagentResult(
                text=f"Subagent '{request.description}' was lost: its actor failed ({type(exc).__name__}). "
                "Tool calls it made may have taken effect; check before repeating the work.",
                is_error=True, reason="error", session_id=child_id,
            )
        finally:
            self.pool.release(actor, healthy=healthy)
        self.parent_budget.add(result.usage.input_tokens + result.usage.output_tokens
                               + result.usage.cache_read_input_tokens + result.usage.cache_creation_input_tokens,
                               result.cost_usd)
        return result

    def _shipped_blueprint(self) -> SessionBlueprint:
        """What the child's process gets: events and questions routed to the root actor,
        grandchildren spawned through actors too."""
        bp = self.blueprint
        shipped = SessionBlueprint(**{k: v for k, v in bp.__dict__.items() if not k.startswith("_")})
        shipped.emit = RemoteEmitter(self.root_actor, self.root_session_id)
        # MCP connections live in the root's process and cannot travel: children on Ray
        # get every other tool.
        shipped.tools = [t for t in bp.tools if t.execution_domain is not ExecutionDomain.REMOTE]
        if bp.child_approver is not None:
            shipped.child_approver = RemoteApprover(self.root_actor, self.root_session_id, shipped.emit)
        shipped.spawner_factory = ray_spawner_factory(self.pool, self.root_actor, self.root_session_id)
        return shipped


def ray_spawner_factory(pool: SubagentPool, root_actor, root_session_id: str):
    def factory(bp: SessionBlueprint, parent_id: str, budget: Budget) -> RaySpawner:
        return RaySpawner(bp, parent_id=parent_id, parent_budget=budget, pool=pool, root_actor=root_actor,
                          root_session_id=root_session_id)

    return factory
