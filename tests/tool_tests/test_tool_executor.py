import pytest
from pydantic import BaseModel

from tools import ExecutionDomain, LocalToolExecutor, ReadTool, ToolContext, ToolOutput
from tools.read import ReadInput


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
    out = await LocalToolExecutor().execute(
        ReadTool(), ReadInput(path="missing.txt"), ToolContext(workspace=tmp_path)
    )
    assert out.is_error
    assert out.content == "File not found: missing.txt"


async def test_success_passes_through(tmp_path):
    (tmp_path / "a.txt").write_text("hi\n")
    out = await LocalToolExecutor().execute(
        ReadTool(), ReadInput(path="a.txt"), ToolContext(workspace=tmp_path)
    )
    assert out == ToolOutput(content="     1\thi")


async def test_other_exceptions_propagate(tmp_path):
    with pytest.raises(RuntimeError, match="harness bug"):
        await LocalToolExecutor().execute(BuggyTool(), NoArgs(), ToolContext(workspace=tmp_path))
