"""Where a tool call runs: in the session's process, or as a Ray task on the workspace's node.

Tools that talk to another runtime (DELEGATED_RUNTIME: subagents; REMOTE: MCP
connections held by the session) run where the session is. Tools whose effects are
local to the workspace (LOCAL, SANDBOX) run on the workspace's node: as a Ray task
pinned there by node affinity when the session is elsewhere, and in the session's own
process when the workspace is on its node, as below. Foreign Ray failures become an
error result the model sees.

Bash (SANDBOX) on the session's node runs here, as `workingset run --local` runs it:
the command is a child process in its sandbox (bubblewrap, its cgroup and limits), so
the session's process runs none of the agent's code and a runaway command cannot take
it down; a Ray task around it added no isolation, only its cost (a task's lease, its
worker, its result: 3.4x a call in process against 1.4x without,
`python -m benchmarks.per_call --loops workingset ray`). Ray's CPU accounting no longer
holds such calls back, so they share the node's tool slots (cluster.tool_slots): as
many at once as Ray would have run as tasks of `cluster.tool_task_cpus`. A call cut
short by the session's process dying is the session's loss, and its resumed turn tells
the model so (agents.session._tool_calls.interrupted_text); it never runs the call again.

A task is never retried by Ray (max_retries=0): a Bash command must not run twice
behind the model's back. When its worker dies under it (killed, OOM-killed by Ray's
memory monitor or the kernel, its node lost: cluster.faults), a read-only tool's call
simply runs again, once; any other call comes back as the result a call cut short by
a lost session gets (agents.session._tool_calls.interrupted_text): it may or may not have
taken effect, check before repeating it. The model decides; the task goes on.

The file tools (tools.FILE_TOOLS: Read, Write, Edit, Glob, Grep) run no code of the
agent's and open every path beneath the workspace through tools.files._beneath, in whatever
process runs them; a Ray task adds no isolation to that, only its cost (measured at
about five times the Read itself: `python -m benchmarks.call_parts`). So when the
workspace is on this process's own node they run here, on a few threads of their own
(a long Grep stalls no other session); on another node they go there as a task.
"""

from __future__ import annotations

import asyncio
import sys

import ray
from pydantic import BaseModel
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from agents.session import interrupted_text
from cluster.connection import current_node_id, node_cpus
from cluster.faults import is_lost_infrastructure, what_was_lost
from cluster.tool_slots import NodeSlots, node_slots
from tools.base import ExecutionDomain, Tool, ToolContext, ToolError, ToolOutput
from tools.executor import LocalToolExecutor, ThreadedToolExecutor
from tools.registry import FILE_TOOLS

__all__ = ["RayToolExecutor", "run_tool_task", "warm_tool_workers"]

_IN_SESSION = (ExecutionDomain.DELEGATED_RUNTIME, ExecutionDomain.REMOTE)
_READ_ONLY_TRIES = 2  # a read-only call whose worker died runs once more: it changed nothing


_worker_loop: asyncio.AbstractEventLoop | None = None


@ray.remote(max_retries=0)
def run_tool_task(tool: Tool, args: BaseModel, ctx: ToolContext) -> ToolOutput:
    """One tool call in a Ray worker; retries are off so a side effect never runs twice.
    The worker keeps one event loop for all its calls (a new loop per call costs more
    than a small tool call itself)."""
    global _worker_loop
    if _worker_loop is None or _worker_loop.is_closed():
        _worker_loop = asyncio.new_event_loop()
    return _worker_loop.run_until_complete(LocalToolExecutor().execute(tool, args, ctx))


_OWN_PACKAGES = ("tools", "agents", "cluster", "benchmarks")
_by_value: set[str] = set()


def _ship_by_value(tool: Tool) -> None:
    """A plugin's tool class lives in a module only this process can import (its
    directory was put on sys.path here); send its code along with the call."""
    for obj in (tool, getattr(tool, "inner", None)):
        module = type(obj).__module__ if obj is not None else ""
        if module and module.split(".")[0] not in _OWN_PACKAGES and module not in _by_value:
            mod = sys.modules.get(module)
            file = getattr(mod, "__file__", None) if mod is not None else None
            if mod is not None and file and "site-packages" not in file:
                ray.cloudpickle.register_pickle_by_value(mod)
                _by_value.add(module)


@ray.remote(max_retries=0)
def _warm() -> bool:
    return True


async def warm_tool_workers(node_id: str, *, num_cpus: float, count: int) -> None:
    """Start the worker processes tool tasks will use, so the first calls of a batch
    do not each wait for a Python process to boot."""
    strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
    await asyncio.gather(
        *(_warm.options(scheduling_strategy=strategy, num_cpus=num_cpus).remote() for _ in range(count))
    )


_file_threads: ThreadedToolExecutor | None = None


def _file_executor() -> ThreadedToolExecutor:
    """One set of file-tool threads per process, shared by every session it hosts."""
    global _file_threads
    if _file_threads is None:
        _file_threads = ThreadedToolExecutor()
    return _file_threads


_slot_counts: dict[tuple[str, float], int] = {}


class RayToolExecutor:
    """The ToolExecutor port on Ray. Picklable: it travels in a subagent's blueprint and
    decides in the process that uses it what runs there."""

    def __init__(self, node_id: str, *, num_cpus: float = 0.5):
        self.node_id = node_id
        self.num_cpus = num_cpus
        self._local = LocalToolExecutor()

    def runs_here(self, tool: Tool) -> bool:
        """True when `tool` runs in this process; False: as a Ray task on the workspace's node."""
        if tool.execution_domain in _IN_SESSION:
            return True
        here = type(tool) in FILE_TOOLS or tool.execution_domain is ExecutionDomain.SANDBOX
        return here and self.node_id == current_node_id()

    def _slots(self) -> NodeSlots:
        key = (self.node_id, self.num_cpus)
        if key not in _slot_counts:  # asked of the GCS once per process
            _slot_counts[key] = int(node_cpus(self.node_id) / self.num_cpus)
        return node_slots(self.node_id, _slot_counts[key])

    async def execute(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        if tool.execution_domain in _IN_SESSION:
            return await self._local.execute(tool, args, ctx)
        if self.runs_here(tool):
            if tool.execution_domain is ExecutionDomain.SANDBOX:
                try:
                    slots = self._slots()
                except ToolError as exc:
                    return ToolOutput(content=str(exc), is_error=True)
                async with slots.hold():
                    return await self._local.execute(tool, args, ctx)
            return await _file_executor().execute(tool, args, ctx)
        _ship_by_value(tool)
        tries = _READ_ONLY_TRIES if tool.is_read_only else 1
        for tried in range(1, tries + 1):
            try:
                return await self._in_task(tool, args, ctx)
            except ToolError as exc:
                return ToolOutput(content=str(exc), is_error=True)
            except RayError as exc:
                if not is_lost_infrastructure(exc):
                    return ToolOutput(
                        content=f"The {tool.name} call failed in its worker ({what_was_lost(exc)}).", is_error=True
                    )
                if tried == tries:
                    return ToolOutput(
                        content=interrupted_text(by=f"its worker died ({what_was_lost(exc)})", started=True),
                        is_error=True,
                    )
        raise AssertionError("unreachable")

    async def _in_task(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        strategy = NodeAffinitySchedulingStrategy(node_id=self.node_id, soft=False)
        ref = run_tool_task.options(scheduling_strategy=strategy, num_cpus=self.num_cpus).remote(tool, args, ctx)
        try:
            return await ref
        except asyncio.CancelledError:
            ray.cancel(ref, force=True)  # the turn was abandoned: stop the command too
            raise
