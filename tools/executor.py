"""Run a tool call in this process, turning model-fixable failures into results."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel

from tools.base import Tool, ToolContext, ToolError, ToolOutput

__all__ = ["LocalToolExecutor", "ThreadedToolExecutor"]


class LocalToolExecutor:
    """Runs tools in the calling process (tests, `--local`, inside a worker actor).

    A ToolError is something the model can act on, so it becomes an `is_error`
    result. Any other exception is a bug in the harness and propagates: hiding it
    as a tool result would let the model paper over it.
    """

    async def execute(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        try:
            return await tool.run(args, ctx)
        except ToolError as err:
            return ToolOutput(content=str(err), is_error=True)


class ThreadedToolExecutor:
    """LocalToolExecutor on a few worker threads, each with its own event loop.

    The file tools do their disk work synchronously; on a loop that serves many
    sessions (a SessionActor) a Grep over a large tree would stall every other one.
    Here it stalls only its thread.
    """

    def __init__(self, threads: int = 4):
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="file-tools")
        self._local = LocalToolExecutor()
        self._loops = threading.local()

    async def execute(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._run, tool, args, ctx)

    def _run(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        loop = getattr(self._loops, "loop", None)
        if loop is None:
            loop = self._loops.loop = asyncio.new_event_loop()
        return loop.run_until_complete(self._local.execute(tool, args, ctx))

    def close(self) -> None:
        self._pool.shutdown(wait=False)
