import pytest

from tools import ToolContext, ToolError, WriteTool
from tools.files._write import WriteInput


async def test_write_creates_parent_directories(tmp_path):
    out = await WriteTool().run(WriteInput(path="a/b/c.txt", content="one\ntwo\n"), ToolContext(workspace=tmp_path))
    assert (tmp_path / "a" / "b" / "c.txt").read_text() == "one\ntwo\n"
    assert out.content == "Created a/b/c.txt (8 bytes, 2 lines)."


async def test_write_overwrites_existing_file(tmp_path):
    (tmp_path / "f.txt").write_text("old")
    out = await WriteTool().run(WriteInput(path="f.txt", content="new"), ToolContext(workspace=tmp_path))
    assert (tmp_path / "f.txt").read_text() == "new"
    assert out.content.startswith("Overwrote f.txt")


async def test_write_outside_workspace_is_refused(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(ToolError, match="outside the workspace"):
        await WriteTool().run(WriteInput(path="../evil.txt", content="x"), ToolContext(workspace=ws))
    assert not (tmp_path / "evil.txt").exists()


async def test_write_through_a_symlink_inside_writes_its_target_and_keeps_the_link(tmp_path, beneath_mode):
    (tmp_path / "AGENTS.md").write_text("old")
    (tmp_path / "CLAUDE.md").symlink_to("AGENTS.md")
    out = await WriteTool().run(WriteInput(path="CLAUDE.md", content="new"), ToolContext(workspace=tmp_path))
    assert out.content.startswith("Overwrote CLAUDE.md")
    assert (tmp_path / "AGENTS.md").read_text() == "new" and (tmp_path / "CLAUDE.md").is_symlink()


async def test_overwrite_keeps_the_file_mode(tmp_path):
    (tmp_path / "run.sh").write_text("echo old\n")
    (tmp_path / "run.sh").chmod(0o755)
    await WriteTool().run(WriteInput(path="run.sh", content="echo new\n"), ToolContext(workspace=tmp_path))
    assert (tmp_path / "run.sh").stat().st_mode & 0o777 == 0o755


async def test_write_naming_a_protected_directory_itself_is_done(tmp_path):
    # The permission layer asks for .git/ by name; the tool refuses only what a link reaches.
    (tmp_path / ".git").mkdir()
    await WriteTool().run(WriteInput(path=".git/info", content="x"), ToolContext(workspace=tmp_path))
    assert (tmp_path / ".git" / "info").read_text() == "x"


async def test_write_into_a_directory_linked_inside_creates_the_file_there(tmp_path, beneath_mode):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "alias").symlink_to("pkg")
    await WriteTool().run(WriteInput(path="alias/sub/m.py", content="x"), ToolContext(workspace=tmp_path))
    assert (tmp_path / "pkg" / "sub" / "m.py").read_text() == "x"
