import pytest
from pydantic import BaseModel

from tools import (
    ExecutionDomain,
    LocalToolExecutor,
    ReadTool,
    ThreadedToolExecutor,
    ToolContext,
    ToolOutput,
)
from tools.files._read import ReadInput


class NoArgs(BaseModel):
    pass


class BuggyTool:
    name = "Buggy"
    description = "Always fails with a bug."
    input_model = NoArgs
    is_read_only = True
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    async def run(self, args, ctx) -> ToolOutput:
        raise RuntimeError("harness bug")


async def test_tool_error_becomes_error_result(tmp_path):
    out = await LocalToolExecutor().execute(ReadTool(), ReadInput(path="missing.txt"), ToolContext(workspace=tmp_path))
    assert out.is_error
    assert out.content == "File not found: missing.txt"


async def test_success_passes_through(tmp_path):
    (tmp_path / "a.txt").write_text("hi\n")
    out = await LocalToolExecutor().execute(ReadTool(), ReadInput(path="a.txt"), ToolContext(workspace=tmp_path))
    assert out == ToolOutput(content="     1\thi")


async def test_other_exceptions_propagate(tmp_path):
    with pytest.raises(RuntimeError, match="harness bug"):
        await LocalToolExecutor().execute(BuggyTool(), NoArgs(), ToolContext(workspace=tmp_path))


class SlowTool(BuggyTool):
    """Blocks its thread the way a long synchronous file walk does."""

    name = "Slow"
    description = "Sleeps without yielding."

    async def run(self, args, ctx) -> ToolOutput:
        import time

        time.sleep(0.3)
        return ToolOutput(content="slept")


async def test_threaded_executor_keeps_the_callers_loop_free_during_a_blocking_tool(tmp_path):
    import asyncio

    executor = ThreadedToolExecutor(threads=1)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.ensure_future(ticker())
    try:
        out = await executor.execute(SlowTool(), NoArgs(), ToolContext(workspace=tmp_path))
    finally:
        task.cancel()
        executor.close()
    assert out.content == "slept"
    assert ticks >= 10  # the loop went on while the tool blocked its own thread


async def test_threaded_executor_turns_a_tool_error_into_an_error_result(tmp_path):
    executor = ThreadedToolExecutor()
    try:
        out = await executor.execute(ReadTool(), ReadInput(path="missing.txt"), ToolContext(workspace=tmp_path))
    finally:
        executor.close()
    assert out.is_error and out.content == "File not found: missing.txt"
