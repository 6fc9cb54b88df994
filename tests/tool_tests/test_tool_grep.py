from pathlib import Path

import pytest

from tools import GrepTool, ToolContext, ToolError, ToolLimits
from tools.grep import GrepInput


async def grep(workspace: Path, limits: dict | None = None, **kwargs) -> str:
    limits_obj = ToolLimits(**(limits or {}))
    out = await GrepTool().run(
        GrepInput(**kwargs), ToolContext(workspace=workspace, limits=limits_obj)
    )
    assert not out.is_error
    return out.content


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def foo():\n    return 1\n")
    (tmp_path / "src" / "b.txt").write_text("foo bar\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("foo in git\n")
    (tmp_path / "blob.bin").write_bytes(b"foo\0")
    return tmp_path


async def test_regex_matches_are_listed_as_path_line_text(tree):
    content = await grep(tree, pattern=r"def \w+")
    assert content == "src/a.py:1:def foo():"


async def test_git_and_binary_files_are_skipped(tree):
    content = await grep(tree, pattern="foo")
    assert content.splitlines() == ["src/a.py:1:def foo():", "src/b.txt:1:foo bar"]


async def test_glob_filters_file_names(tree):
    content = await grep(tree, pattern="foo", glob="*.txt")
    assert content == "src/b.txt:1:foo bar"


async def test_path_limits_the_search(tree):
    content = await grep(tree, pattern="foo", path="src/b.txt")
    assert content == "src/b.txt:1:foo bar"


async def test_case_insensitive(tree):
    assert "src/b.txt:1:foo bar" in await grep(tree, pattern="FOO", case_insensitive=True)


async def test_cap_adds_note_with_count_of_cut_matches(tmp_path):
    (tmp_path / "many.txt").write_text("hit\n" * 10)
    content = await grep(tmp_path, {"grep_max_matches": 3}, pattern="hit")
    assert content.splitlines()[:3] == ["many.txt:1:hit", "many.txt:2:hit", "many.txt:3:hit"]
    assert "[7 more matches not shown" in content


async def test_max_results_cannot_exceed_limit(tmp_path):
    (tmp_path / "many.txt").write_text("hit\n" * 10)
    content = await grep(tmp_path, {"grep_max_matches": 2}, pattern="hit", max_results=50)
    assert "[8 more matches not shown" in content


async def test_invalid_regex_names_the_error(tmp_path):
    with pytest.raises(ToolError, match=r"Invalid regex '\(unclosed'.*missing \)"):
        await grep(tmp_path, pattern="(unclosed")


async def test_no_matches_is_not_an_error(tree):
    assert "No matches" in await grep(tree, pattern="zzz")


async def test_symlink_to_outside_file_is_not_searched(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("password\n")
    (ws / "link.txt").symlink_to(tmp_path / "secret.txt")
    assert "No matches" in await grep(ws, pattern="password")


async def test_missing_path_says_path_not_found(tree):
    with pytest.raises(ToolError, match="Path not found: nope"):
        await grep(tree, pattern="foo", path="nope")


async def test_a_file_symlink_inside_is_searched_under_its_own_name(tree, beneath_mode):
    (tree / "alias.txt").symlink_to("src/b.txt")
    assert "alias.txt:1:foo bar" in (await grep(tree, pattern="foo bar")).splitlines()
