import asyncio
import os
from pathlib import Path

import pytest

from tools import GrepTool, LocalToolExecutor, ToolContext, ToolError, ToolLimits
from tools.files._grep import GrepInput


async def grep(workspace: Path, limits: dict | None = None, **kwargs) -> str:
    limits_obj = ToolLimits(**(limits or {}))
    out = await GrepTool().run(GrepInput(**kwargs), ToolContext(workspace=workspace, limits=limits_obj))
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


async def grep_result(workspace: Path, limits: dict | None = None, **kwargs):
    """The tool result the model sees (a ToolError becomes an is_error result)."""
    ctx = ToolContext(workspace=workspace, limits=ToolLimits(**(limits or {})))
    return await LocalToolExecutor().execute(GrepTool(), GrepInput(**kwargs), ctx)


async def test_a_backtracking_pattern_on_a_long_line_finishes(tmp_path):
    # Python's re takes exponential time here; RE2 is linear in the line.
    (tmp_path / "long.txt").write_text("a" * 100_000 + "b\n")
    assert "No matches" in await grep(tmp_path, pattern="(a+)+$")


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"foo(?=bar)", "lookahead (?=...)"),
        (r"(?<!x)foo", "negative lookbehind (?<!...)"),
        (r"(\w)\1", r"backreference \1"),
        (r"(?P<q>')x(?P=q)", "named backreference (?P=name)"),
        (r"a++", "possessive quantifier ++"),
        (r"(?>a|ab)c", "atomic group (?>...)"),
    ],
)
async def test_a_construct_re2_lacks_is_one_error_naming_it(tmp_path, pattern, construct):
    out = await grep_result(tmp_path, pattern=pattern)
    assert out.is_error and f"RE2 syntax, which has no {construct} " in out.content
    assert "grep -P through Bash" in out.content


async def test_a_pattern_never_matches_across_a_newline(tmp_path):
    (tmp_path / "two.txt").write_text("foo\nbar\n")
    assert "No matches" in await grep(tmp_path, pattern=r"foo\s*bar")


async def test_line_anchors_match_at_every_line_and_crlf_endings(tmp_path):
    (tmp_path / "crlf.txt").write_bytes(b"one end\r\ntwo\r\nthree end\r\n")
    assert (await grep(tmp_path, pattern="end$")).splitlines() == ["crlf.txt:1:one end", "crlf.txt:3:three end"]


async def test_an_empty_match_reports_each_line_once(tmp_path):
    (tmp_path / "three.txt").write_text("a\n\nc\n")
    assert (await grep(tmp_path, pattern="^")).splitlines() == ["three.txt:1:a", "three.txt:2:", "three.txt:3:c"]


async def test_a_file_name_that_is_not_utf8_is_searched_and_shown(tmp_path):
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_text("needle\n")
    assert "needle" in await grep(tmp_path, pattern="needle", glob="*.txt")


async def test_grep_past_its_time_limit_says_the_results_are_incomplete(tmp_path):
    (tmp_path / "a.txt").write_text("needle\n")
    content = await grep(tmp_path, {"search_timeout_s": 1e-9}, pattern="needle")
    assert "[stopped at the time limit of 1e-09 s (tools.search_timeout_s) after 0 files" in content


async def test_other_coroutines_run_while_a_large_grep_searches(tmp_path):
    for i in range(300):
        (tmp_path / f"f{i:03}.txt").write_text("no match on this line at all\n" * 7_000)
    search = asyncio.create_task(grep(tmp_path, pattern=r"(x+x+)+y"))
    await asyncio.sleep(0)  # the Grep task takes its first step: a search on the loop would end here
    assert not search.done()  # it searches in its worker thread while this coroutine runs
    assert "No matches" in await search


async def test_a_file_name_that_is_not_utf8_is_named_with_its_byte_escaped(tmp_path):
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_text("brewed\n")
    content = await grep(tmp_path, pattern="brewed")
    assert content == "caf\\xe9.txt:1:brewed"
    content.encode("utf-8")


async def test_grep_searches_a_file_named_by_its_escaped_name(tmp_path):
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_text("brewed\n")
    assert await grep(tmp_path, pattern="brewed", path="caf\\xe9.txt") == "caf\\xe9.txt:1:brewed"
