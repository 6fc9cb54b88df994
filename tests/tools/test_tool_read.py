from pathlib import Path

import pytest

from tools import ReadTool, ToolContext, ToolError, ToolLimits
from tools.files._read import ReadInput


def ctx(workspace: Path, **limits) -> ToolContext:
    return ToolContext(workspace=workspace, limits=ToolLimits(**limits))


async def read(workspace: Path, limits: dict | None = None, **kwargs) -> str:
    out = await ReadTool().run(ReadInput(**kwargs), ctx(workspace, **(limits or {})))
    assert not out.is_error
    return out.content


def write_lines(path: Path, n: int) -> None:
    path.write_text("".join(f"line {i}\n" for i in range(1, n + 1)))


async def test_lines_are_numbered_like_cat_n(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    assert await read(tmp_path, path="a.txt") == "     1\talpha\n     2\tbeta"


async def test_offset_and_limit_select_a_window(tmp_path):
    write_lines(tmp_path / "a.txt", 10)
    content = await read(tmp_path, path="a.txt", offset=4, limit=2)
    assert content.splitlines()[:2] == ["     4\tline 4", "     5\tline 5"]
    assert "line 6" not in content


async def test_continuation_note_says_how_to_read_on(tmp_path):
    write_lines(tmp_path / "a.txt", 10)
    content = await read(tmp_path, path="a.txt", offset=4, limit=2)
    assert content.endswith("[5 more lines in a.txt; call Read with offset=6 to continue]")


async def test_default_window_comes_from_limits(tmp_path):
    write_lines(tmp_path / "a.txt", 5)
    content = await read(tmp_path, {"read_default_lines": 3}, path="a.txt")
    assert "     3\tline 3" in content
    assert "offset=4" in content


async def test_no_note_when_the_window_reaches_the_end(tmp_path):
    write_lines(tmp_path / "a.txt", 3)
    content = await read(tmp_path, path="a.txt", offset=2)
    assert "offset=" not in content
    assert content.splitlines()[-1] == "     3\tline 3"


async def test_offset_past_end_is_an_error(tmp_path):
    write_lines(tmp_path / "a.txt", 3)
    with pytest.raises(ToolError, match="past the end"):
        await read(tmp_path, path="a.txt", offset=9)


async def test_binary_file_is_refused(tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"abc\0def")
    with pytest.raises(ToolError, match="binary"):
        await read(tmp_path, path="blob.bin")


async def test_huge_file_is_refused_with_grep_hint(tmp_path):
    write_lines(tmp_path / "big.txt", 100)
    with pytest.raises(ToolError, match="Grep"):
        await read(tmp_path, {"read_max_bytes": 100}, path="big.txt")


async def test_huge_file_can_still_be_read_in_a_window(tmp_path):
    write_lines(tmp_path / "big.txt", 100)
    content = await read(tmp_path, {"read_max_bytes": 100}, path="big.txt", offset=50, limit=1)
    assert content.startswith("    50\tline 50")


async def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ToolError, match="File not found: nope.txt"):
        await read(tmp_path, path="nope.txt")


async def test_directory_is_a_clear_error(tmp_path):
    (tmp_path / "src").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await read(tmp_path, path="src")


async def test_empty_file_says_so(tmp_path):
    (tmp_path / "e.txt").write_text("")
    assert "empty" in await read(tmp_path, path="e.txt")


async def test_a_symlink_inside_the_workspace_reads_its_target(tmp_path, beneath_mode):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("hello\n")
    (tmp_path / "GUIDE.md").symlink_to("docs/guide.md")
    assert await read(tmp_path, path="GUIDE.md") == "     1\thello"


async def test_a_path_through_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(ToolError, match="not a directory"):
        await read(tmp_path, path="a.txt/b")
