import pytest

from tools import ToolContext, ToolError, WriteTool
from tools.write import WriteInput


async def test_write_creates_parent_directories(tmp_path):
    out = await WriteTool().run(
        WriteInput(path="a/b/c.txt", content="one\ntwo\n"), ToolContext(workspace=tmp_path)
    )
    assert (tmp_path / "a" / "b" / "c.txt").read_text() == "one\ntwo\n"
    assert out.content == "Created a/b/c.txt (8 bytes, 2 lines)."


async def test_write_overwrites_existing_file(tmp_path):
    (tmp_path / "f.txt").write_text("old")
    out = await WriteTool().run(
        WriteInput(path="f.txt", content="new"), ToolContext(workspace=tmp_path)
    )
    assert (tmp_path / "f.txt").read_text() == "new"
    assert out.content.startswith("Overwrote f.txt")


async def test_write_outside_workspace_is_refused(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(ToolError, match="outside the workspace"):
        await WriteTool().run(
            WriteInput(path="../evil.txt", content="x"), ToolContext(workspace=ws)
        )
    assert not (tmp_path / "evil.txt").exists()
