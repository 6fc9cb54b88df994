"""The SubagentActors of one SessionActor, shared by the children of all its sessions.

A child spends its time waiting on the model, as a root session does, so one actor
runs several children at once (`per_actor`, each an asyncio task there, as sessions
are in a SessionActor): a fan-out of N children starts at most ceil(N / per_actor)
actors, and none once the pool is warm. Actors start when a fan-out needs them (an
interactive session starts its first one in the background when it opens, so the
first fan-out a person waits on seldom waits for a Python process to boot): an idle
Ray worker is not free — Ray's core wakes every worker process a hundred times a
second, about 1% of a core each (`python -m benchmarks.idle_workers`) — so a batch
whose sessions never fan out keeps none. Actors are placed on the SessionActor's node
(softly: near the workspace, whose tool tasks are pinned there anyway). Idle actors
stay, up to `keep_idle`, for later fan-outs of any session of this SessionActor; an
actor whose call failed is killed and never handed out again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from cluster.subagents._actor import SubagentActor

__all__ = ["SubagentPool"]


@dataclass
class _Pooled:
    actor: Any  # a SubagentActor handle
    load: int = 0  # children running in it now


class SubagentPool:
    def __init__(self, *, keep_idle: int = 8, per_actor: int = 8, node_id: str | None = None):
        self.keep_idle = keep_idle
        self.per_actor = per_actor
        self.node_id = node_id
        self._actors: list[_Pooled] = []
        self._warming: asyncio.Task | None = None

    def __getstate__(self) -> dict:
        # A child's copy (for its own subagents) starts empty in the child's process:
        # the actors and their counts belong to this one.
        return {"keep_idle": self.keep_idle, "per_actor": self.per_actor, "node_id": self.node_id}

    def __setstate__(self, state: dict) -> None:
        SubagentPool.__init__(self, **state)

    def acquire(self):
        """The least-loaded actor with room for one more child, or a new one."""
        room = [p for p in self._actors if p.load < self.per_actor]
        pooled = min(room, key=lambda p: p.load) if room else self._start()
        pooled.load += 1
        return pooled.actor

    def release(self, actor, *, healthy: bool) -> None:
        pooled = next((p for p in self._actors if p.actor is actor), None)
        if pooled is None:
            return
        pooled.load -= 1
        if not healthy:
            self._actors.remove(pooled)  # its other children fail on their own
            ray.kill(actor)
            return
        idle = [p for p in self._actors if p.load == 0]
        for extra in idle[self.keep_idle :]:
            self._actors.remove(extra)
            ray.kill(extra.actor)

    def warm_soon(self) -> None:
        """Start one actor in the background if the pool has none (called when a session
        that may fan out opens)."""
        if self._actors or (self._warming is not None and not self._warming.done()):
            return
        self._warming = asyncio.get_running_loop().create_task(self.warm(1))

    async def warm(self, count: int) -> None:
        """Start `count` more actors and wait until they answer."""
        started = [self._start() for _ in range(count)]
        await asyncio.gather(*(p.actor.ready.remote() for p in started), return_exceptions=True)

    @property
    def size(self) -> int:
        return len(self._actors)

    def _start(self) -> _Pooled:
        options = {}
        if self.node_id is not None:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=self.node_id, soft=True)
        pooled = _Pooled(SubagentActor.options(**options).remote())  # type: ignore[attr-defined]  # added by @ray.remote, which mypy does not see
        self._actors.append(pooled)
        return pooled
