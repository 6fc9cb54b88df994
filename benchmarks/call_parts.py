"""What one model call of a Ray session costs, part by part, in CPU time.

    python -m benchmarks.call_parts [--calls 400] [--concurrency 50] [--parts ...]

Each part runs `--calls` times (`--concurrency` at once) and is reported as CPU ms per
operation of this process and every process under it (`benchmarks.cpu_tree`: the
driver, the raylet, the GCS, every worker), with the load average beside it:

- read in process: a Read of a small file through the in-process ToolExecutor;
- read from an actor: the same Read through RayToolExecutor from inside an actor
  (where a SessionActor makes it: as a Ray task, or in the actor for file-only tools);
- read as a Ray task: the same Read forced through a node-affine Ray task;
- bare task: a Ray task taking the same (tool, input, context) and doing nothing;
- bare call: a call of an actor method that takes nothing and does nothing, from this
  process (what every open, turn start or close of a session would cost on its own,
  before cluster.actor_link coalesced them);
- event batch: one streamed item of a model call's events (model_call, assistant_text,
  tool_call, permission_decided, tool_result), actor to caller, as SessionActor sends it;
- event call: the same events as the result of a plain actor call (for comparison);
- session open: opening and closing a session on a SessionPool, against in process;
- worker boot: CPU a new Ray worker process spends before its first task (what each
  restart of an idle-killed worker costs).

The per-turn snapshot is measured by `python -m benchmarks.snapshot_bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import psutil
import ray

from agents.events import AssistantText, ModelCall, PermissionDecided, ToolCall, ToolResult
from agents.opening import OpenSpec, SessionRuntime, open_or_resume
from agents.ports import Usage
from benchmarks.concurrency import batch_settings, workspaces
from benchmarks.cpu_tree import load_average, sample_tree
from cluster.connection import connect, current_node_id
from cluster.session_pool import SessionPool
from cluster.tool_tasks import RayToolExecutor, run_tool_task
from tools import ReadTool, ToolContext, ToolOutput
from tools.executor import LocalToolExecutor
from tools.files import ReadInput

PARTS = (
    "read-local",
    "read-actor",
    "read-task",
    "bare-task",
    "bare-call",
    "event-batch",
    "event-call",
    "open",
    "worker-boot",
)


async def cpu_ms_per_op(op: Callable[[], Awaitable[object]], calls: int, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await op()

    await asyncio.gather(*(one() for _ in range(min(calls, concurrency))))  # warm
    before = sample_tree()
    await asyncio.gather(*(one() for _ in range(calls)))
    return (sample_tree() - before).total * 1000 / calls


def turn_events(sid: str) -> list:
    usage = Usage(input_tokens=900, output_tokens=40)
    return [
        ModelCall(
            session_id=sid, turn=1, estimated_input_tokens=900, usage=usage, stop_reason="tool_use", duration_ms=2000.0
        ),
        AssistantText(session_id=sid, text="step 1"),
        ToolCall(session_id=sid, tool_use_id="toolu_1", name="Read", input={"path": "notes.txt"}),
        PermissionDecided(
            session_id=sid, tool_use_id="toolu_1", name="Read", effect="allow", source="mode", reason="read-only tool"
        ),
        ToolResult(
            session_id=sid,
            tool_use_id="toolu_1",
            name="Read",
            is_error=False,
            content="     1\tnotes of session 1\n" * 20,
            duration_ms=0.2,
        ),
    ]


@ray.remote(num_cpus=0)
class Caller:
    """Makes tool calls the way a SessionActor does: from an actor, on its event loop."""

    def __init__(self, workspace: str):
        self.node_id = ray.get_runtime_context().get_node_id()
        self.ctx = ToolContext(workspace=Path(workspace))
        self.args = ReadInput(path="notes.txt")

    async def reads(self, calls: int, concurrency: int, how: str) -> float:
        executor = RayToolExecutor(self.node_id)
        tool = ReadTool()
        strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=self.node_id, soft=False)

        async def op():
            if how == "actor":
                return await executor.execute(tool, self.args, self.ctx)
            fn = run_tool_task if how == "task" else _bare
            return await fn.options(scheduling_strategy=strategy, num_cpus=0.5).remote(tool, self.args, self.ctx)

        return await cpu_ms_per_op(op, calls, concurrency)

    async def stream(self, batches: int):
        events = turn_events("s-1")
        for _ in range(batches):
            yield events

    async def batch(self) -> list:
        return turn_events("s-1")

    async def nothing(self) -> None:
        return None


@ray.remote(max_retries=0)
def _bare(tool, args, ctx) -> ToolOutput:
    return ToolOutput(content="")


async def stream_cost(caller, calls: int, concurrency: int) -> float:
    async def one_stream() -> None:
        async for ref in caller.stream.remote(10):
            await ref

    return await cpu_ms_per_op(one_stream, max(calls // 10, 1), concurrency) / 10


async def open_cost(root: Path, calls: int, concurrency: int, where: str) -> float:
    settings = batch_settings(root, calls, 5, 0.0)
    dirs = iter(workspaces(root, calls + concurrency, where))
    if where == "local":

        async def op():
            session = await open_or_resume(OpenSpec(settings, next(dirs)), SessionRuntime())
            await session.aclose()

        return await cpu_ms_per_op(op, calls, concurrency)
    pool = SessionPool(settings, actors=2)
    await pool.ready()

    async def op_ray():
        await pool.close(await pool.open(next(dirs)))

    try:
        return await cpu_ms_per_op(op_ray, calls, concurrency)
    finally:
        pool.shutdown()


def worker_boot_ms() -> float:
    """CPU of fresh worker processes at their first task (imports included)."""
    before = sample_tree().workers
    ray.get([_boot_probe.remote() for _ in range(2)])
    fresh = sample_tree().workers - before
    times = [psutil.Process(pid).cpu_times() for pid in fresh]
    return sum(t.user + t.system for t in times) * 1000 / max(len(times), 1)


@ray.remote(num_cpus=0.01, runtime_env={"env_vars": {"CALL_PARTS_FRESH_WORKER": "1"}})
def _boot_probe() -> bool:
    import cluster.session_actor  # noqa: F401  (what a tool worker imports to run a call)

    return True


async def run(parts: list[str], calls: int, concurrency: int, root: Path) -> None:
    ws = workspaces(root, 1, "parts")[0]
    ctx, args, tool = ToolContext(workspace=ws), ReadInput(path="notes.txt"), ReadTool()
    here = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=current_node_id(), soft=False)
    caller = Caller.options(scheduling_strategy=here).remote(str(ws))  # type: ignore[attr-defined]  # added by @ray.remote
    measures = {
        "read-local": lambda: cpu_ms_per_op(lambda: LocalToolExecutor().execute(tool, args, ctx), calls, concurrency),
        "read-actor": lambda: caller.reads.remote(calls, concurrency, "actor"),
        "read-task": lambda: caller.reads.remote(calls, concurrency, "task"),
        "bare-task": lambda: caller.reads.remote(calls, concurrency, "bare"),
        "bare-call": lambda: cpu_ms_per_op(lambda: caller.nothing.remote(), calls, concurrency),
        "event-batch": lambda: stream_cost(caller, calls, concurrency),
        "event-call": lambda: cpu_ms_per_op(lambda: caller.batch.remote(), calls, concurrency),
        "open": lambda: _both_opens(root, calls, concurrency),
        "worker-boot": lambda: asyncio.to_thread(worker_boot_ms),
    }
    for part in parts:
        started = time.perf_counter()
        value = await measures[part]()
        shown = value if isinstance(value, str) else f"{value:8.2f}"
        print(f"{part:<12} {shown} CPU ms/op   ({time.perf_counter() - started:.1f} s, {load_average()})", flush=True)


async def _both_opens(root: Path, calls: int, concurrency: int) -> str:
    local = await open_cost(root / "l", calls, concurrency, "local")
    on_ray = await open_cost(root / "r", calls, concurrency, "ray")
    return f"{on_ray:8.2f} on Ray, {local:.2f} in process"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    args = parser.parse_args()
    connect()
    with tempfile.TemporaryDirectory(prefix="workingset-parts-") as tmp:
        (Path(tmp) / "l").mkdir()
        (Path(tmp) / "r").mkdir()
        asyncio.run(run(args.parts, args.calls, args.concurrency, Path(tmp)))


if __name__ == "__main__":
    main()
