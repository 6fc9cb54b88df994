from pathlib import Path

import pytest

from tools import EditTool, ToolContext, ToolError
from tools.files._edit import EditInput


async def edit(workspace: Path, **kwargs) -> str:
    out = await EditTool().run(EditInput(**kwargs), ToolContext(workspace=workspace))
    return out.content


async def test_unique_occurrence_is_replaced(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\ny = 2\n")
    content = await edit(tmp_path, path="m.py", old_string="y = 2", new_string="y = 3")
    assert (tmp_path / "m.py").read_text() == "x = 1\ny = 3\n"
    assert content == "Edited m.py: 1 replacement."


async def test_absent_old_string_is_not_found_error(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    with pytest.raises(ToolError, match="not found.*Read the file first"):
        await edit(tmp_path, path="m.py", old_string="z = 9", new_string="z = 0")


async def test_ambiguous_old_string_reports_count(tmp_path):
    (tmp_path / "m.py").write_text("a\na\na\n")
    with pytest.raises(ToolError, match="occurs 3 times.*replace_all"):
        await edit(tmp_path, path="m.py", old_string="a", new_string="b")
    assert (tmp_path / "m.py").read_text() == "a\na\na\n"


async def test_replace_all_replaces_every_occurrence(tmp_path):
    (tmp_path / "m.py").write_text("a\na\na\n")
    content = await edit(tmp_path, path="m.py", old_string="a", new_string="b", replace_all=True)
    assert (tmp_path / "m.py").read_text() == "b\nb\nb\n"
    assert "3 replacements" in content


async def test_identical_strings_are_refused(tmp_path):
    (tmp_path / "m.py").write_text("a\n")
    with pytest.raises(ToolError, match="identical"):
        await edit(tmp_path, path="m.py", old_string="a", new_string="a")


async def test_missing_file_points_to_write(tmp_path):
    with pytest.raises(ToolError, match="Use Write"):
        await edit(tmp_path, path="new.py", old_string="a", new_string="b")


async def test_crlf_line_endings_survive(tmp_path):
    (tmp_path / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    await edit(tmp_path, path="w.txt", old_string="two", new_string="2")
    assert (tmp_path / "w.txt").read_bytes() == b"one\r\n2\r\n"


async def test_edit_keeps_the_file_mode(tmp_path):
    (tmp_path / "run.sh").write_text("echo a\n")
    (tmp_path / "run.sh").chmod(0o700)
    await edit(tmp_path, path="run.sh", old_string="a", new_string="b")
    assert (tmp_path / "run.sh").stat().st_mode & 0o777 == 0o700


async def test_edit_through_a_symlink_inside_edits_its_target(tmp_path, beneath_mode):
    (tmp_path / "real.py").write_text("x = 1\n")
    (tmp_path / "alias.py").symlink_to("real.py")
    assert await edit(tmp_path, path="alias.py", old_string="1", new_string="2") == "Edited alias.py: 1 replacement."
    assert (tmp_path / "real.py").read_text() == "x = 2\n" and (tmp_path / "alias.py").is_symlink()
