"""Telling a slow actor from a gone one, from the caller's side.

Ray notices an actor whose process died and restarts it (max_restarts=-1); the calls
waiting on it fail, and the callers' own recovery takes over. What Ray does not notice
is an actor whose process is alive but does nothing: stopped (SIGSTOP), deadlocked, on
a node swapped out. Every call to it waits for ever, and so would the batch.

A `Heartbeat` pings one actor (its `heartbeat` method, answered by the actor's event
loop: cheap, and only answered while that loop runs) every `period_s`. An answer says
where the actor runs (node, pid, process start time). A ping that fails says Ray knows
the actor is dead or restarting: its restart is the cure, nothing to do. A ping with no
answer for `timeout_s` says the actor stopped: the heartbeat kills its process — by
pid, on its node, through a task pinned there (SIGKILL ends a stopped process too; the
start time makes sure a reused pid is never hit) — and asks Ray to kill it as well
(`ray.kill(no_restart=False)`), so Ray restarts it. Every call that was waiting on it
then fails as for any dead actor, and is recovered as one (RemoteSession reopens its
session from the last snapshot; a task's stage is retried). Whoever listens is told
why, in the words a result row keeps: "the session's actor stopped answering (no
heartbeat for N s); replaced".
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import psutil
import ray
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

__all__ = ["Heartbeat", "Whereabouts", "whereabouts"]

Whereabouts = tuple[str, int, float]  # node id, pid, process start time
_KILL_WAIT_S = 30.0  # what the pinned kill task may take to run (a busy node starts a worker)


def whereabouts() -> Whereabouts:
    """The calling actor's answer to a ping: where it runs."""
    me = psutil.Process()
    return ray.get_runtime_context().get_node_id(), me.pid, me.create_time()


@ray.remote(num_cpus=0, max_retries=0)
def _kill_stopped(pid: int, started: float) -> bool:
    """SIGKILL `pid` on this node if it is still the process that started at `started`."""
    try:
        if abs(psutil.Process(pid).create_time() - started) > 0.01:
            return False  # that actor is gone already; the pid is someone else's now
        os.kill(pid, signal.SIGKILL)
    except (psutil.Error, ProcessLookupError):
        return False
    return True


class Heartbeat:
    """Pings one actor; kills and replaces it once it stops answering (module docstring)."""

    def __init__(self, actor: Any, *, what: str, period_s: float = 5.0, timeout_s: float = 60.0):
        self.actor = actor
        self.what = what  # "session's actor": how the notes name it
        self.period_s = period_s
        self.timeout_s = timeout_s
        self.where: Whereabouts | None = None  # from the last answer
        self.replacements = 0
        self.last_reason: str | None = None
        self._listeners: set[Callable[[str], None]] = set()
        self._task: asyncio.Task | None = None

    def ensure_running(self) -> None:
        """Start pinging from the running event loop (once; again after a stop)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._beat())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def listen(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """`callback(reason)` at each replacement; returns what stops it."""
        self._listeners.add(callback)
        return lambda: self._listeners.discard(callback)

    async def replaced(self) -> str:
        """Wait for the next replacement; its reason."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        def done(reason: str) -> None:
            if not future.done():
                future.set_result(reason)

        stop = self.listen(done)
        try:
            return await future
        finally:
            stop()

    async def _beat(self) -> None:
        while True:
            sent = time.monotonic()
            ref = self.actor.heartbeat.remote()
            try:
                self.where = await asyncio.wait_for(asyncio.wrap_future(ref.future()), self.timeout_s)
            except TimeoutError:
                # The answer may have come while this process's own loop was held up (a
                # prompt waiting for the user): Ray has it ready then, and nothing stopped.
                ready, _ = ray.wait([ref], timeout=0)
                if not ready:
                    await self.replace(time.monotonic() - sent)
            except RayError:
                pass  # dead or restarting, and Ray knows it: its restart is under way
            await asyncio.sleep(self.period_s)

    async def replace(self, silent_s: float) -> str:
        """Kill the stopped actor's process so that Ray restarts it; tell the listeners."""
        reason = f"the {self.what} stopped answering (no heartbeat for {silent_s:.0f} s); replaced"
        if self.where is not None:
            node, pid, started = self.where
            strategy = NodeAffinitySchedulingStrategy(node_id=node, soft=False)
            with contextlib.suppress(RayError, TimeoutError):  # its node went: Ray declares the actor dead anyway
                await asyncio.wait_for(
                    _kill_stopped.options(scheduling_strategy=strategy).remote(pid, started), _KILL_WAIT_S
                )
        with contextlib.suppress(RayError, ValueError):
            ray.kill(self.actor, no_restart=False)
        self.where = None
        self.replacements += 1
        self.last_reason = reason
        for listener in list(self._listeners):
            listener(reason)
        return reason
