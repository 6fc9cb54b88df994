import os
from pathlib import Path

import pytest

from tools import GlobTool, ReadTool, ToolContext, ToolError, ToolLimits
from tools.files._glob import GlobInput
from tools.files._read import ReadInput


async def glob(workspace: Path, limits: dict | None = None, **kwargs) -> str:
    limits_obj = ToolLimits(**(limits or {}))
    out = await GlobTool().run(GlobInput(**kwargs), ToolContext(workspace=workspace, limits=limits_obj))
    assert not out.is_error
    return out.content


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel in ["setup.py", "src/b.py", "src/a.py", "src/pkg/c.py", "src/notes.md", ".git/x.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    return tmp_path


async def test_double_star_matches_at_any_depth_sorted(tree):
    content = await glob(tree, pattern="**/*.py")
    assert content.splitlines() == ["setup.py", "src/a.py", "src/b.py", "src/pkg/c.py"]


async def test_single_star_stays_in_one_directory(tree):
    assert (await glob(tree, pattern="src/*.py")).splitlines() == ["src/a.py", "src/b.py"]


async def test_path_sets_search_root_but_results_stay_workspace_relative(tree):
    assert (await glob(tree, pattern="*.md", path="src")).splitlines() == ["src/notes.md"]


async def test_cap_adds_note(tree):
    content = await glob(tree, {"glob_max_paths": 2}, pattern="**/*.py")
    assert content.splitlines()[:2] == ["setup.py", "src/a.py"]
    assert "[2 more paths not shown" in content


async def test_no_match_says_so(tree):
    assert "No files match" in await glob(tree, pattern="**/*.rs")


async def test_absolute_pattern_is_refused(tree):
    with pytest.raises(ToolError, match="relative"):
        await glob(tree, pattern="/etc/*")


async def test_a_file_symlink_inside_is_listed_under_its_own_name(tree, beneath_mode):
    (tree / "src" / "alias.py").symlink_to("a.py")
    assert "src/alias.py" in (await glob(tree, pattern="src/*.py")).splitlines()


async def test_path_through_a_directory_link_inside_lists_the_real_paths(tree, beneath_mode):
    (tree / "code").symlink_to("src")
    assert (await glob(tree, pattern="*.md", path="code")).splitlines() == ["src/notes.md"]


async def test_many_double_stars_against_a_deep_tree_finish(tmp_path):
    # A backtracking matcher tries every way to split 100 directories among 5 "**".
    deep = tmp_path.joinpath(*["a"] * 100)
    deep.mkdir(parents=True)
    (deep / "y").write_text("")
    assert "No files match" in await glob(tmp_path, pattern="**/a/**/a/**/a/**/a/**/a/**/x")


async def test_many_stars_against_a_long_name_finish(tmp_path):
    (tmp_path / ("a" * 250)).write_text("")
    assert "No files match" in await glob(tmp_path, pattern="*a*a*a*a*a*a*a*a*a*b")


async def test_a_bracket_never_matches_a_slash(tree):
    assert "No files match" in await glob(tree, pattern="src[!x]a.py")


async def test_glob_past_its_time_limit_says_the_list_is_incomplete(tree):
    content = await glob(tree, {"search_timeout_s": 1e-9}, pattern="**/*.py")
    assert "[stopped at the time limit of 1e-09 s (tools.search_timeout_s)" in content


def _not_utf8_file(workspace: Path) -> Path:
    """`café.txt` with é as the single Latin-1 byte 0xE9, which is no UTF-8."""
    name = os.fsdecode(b"caf\xe9.txt")
    (workspace / name).write_text("brewed\n")
    return workspace / name


async def test_a_file_name_that_is_not_utf8_is_listed_with_its_byte_escaped(tmp_path):
    _not_utf8_file(tmp_path)
    content = await glob(tmp_path, pattern="*.txt")
    assert content == "caf\\xe9.txt"
    content.encode("utf-8")  # what every store and wire needs


async def test_the_listed_name_of_a_file_that_is_not_utf8_opens_it_with_read(tmp_path):
    _not_utf8_file(tmp_path)
    [listed] = (await glob(tmp_path, pattern="*.txt")).splitlines()
    out = await ReadTool().run(ReadInput(path=listed), ToolContext(workspace=tmp_path, limits=ToolLimits()))
    assert not out.is_error and "brewed" in out.content
