"""Grep and Glob leave out what ignore files exclude, as git decides it.

The expectations come from git itself: random trees with random .gitignore files (and a
.git/info/exclude) are listed by `git ls-files --others --exclude-standard` and
`git check-ignore`, and Glob must list exactly the files git does not ignore.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from tools import GlobTool, GrepTool, ToolContext, ToolLimits
from tools.files._glob import GlobInput
from tools.files._grep import GrepInput

NAMES = [
    "a",
    "b",
    "src",
    "build",
    "node_modules",
    "x.py",
    "y.txt",
    "z.keep",
    "ab",
    "!bang",
    "#hash",
    "sp ace",
    "deep",
    "lib.o",
    "README",
    "[x]",
]
LINES = [
    "*.py",
    "*.o",
    "build/",
    "/build",
    "build",
    "node_modules/",
    "a/b",
    "/a",
    "**/deep",
    "deep/**",
    "a/**/x.py",
    "!x.py",
    "!*.keep",
    "!build/",
    "[ab]",
    "?b",
    "\\!bang",
    "\\#hash",
    "# comment",
    "",
    "sp ace",
    "sp ace   ",
    "src/*.txt",
    "*",
    "!src/",
    "!a",
    "y.txt/",
    "**/a/*.py",
    "README",
    "!README",
    "[!a]*.txt",
    "[[:alpha:]]b",
    "\\[x]",
    "[x]",
    "a/**",
    "/src/**/y.txt",
    "**",
    "*.keep",
    "deep/",
]


def git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1", "LANG": "C"}
    done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, env=env)
    assert done.returncode in (0, 1), done.stderr  # check-ignore exits 1 when nothing is ignored
    return done.stdout


def random_tree(root: Path, rng: random.Random) -> None:
    git(root, "init", "-q")
    files: list[Path] = []
    dirs = [root]
    for _ in range(60):
        parent = rng.choice(dirs)
        if len(parent.relative_to(root).parts) >= 4:
            continue
        child = parent / rng.choice(NAMES)
        if child.exists():
            continue
        if rng.random() < 0.45:
            child.mkdir()
            dirs.append(child)
        else:
            child.write_text("x\n")
            files.append(child)
    for directory in rng.sample(dirs, k=min(len(dirs), 4)):
        lines = rng.sample(LINES, k=rng.randint(1, 5))
        (directory / ".gitignore").write_text("\n".join(lines) + "\n")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("\n".join(rng.sample(LINES, k=2)) + "\n")


async def glob_all(workspace: Path, **kwargs) -> list[str]:
    ctx = ToolContext(workspace=workspace, limits=ToolLimits(glob_max_paths=100_000))
    out = await GlobTool().run(GlobInput(pattern="**", **kwargs), ctx)
    return [] if out.content.startswith("No files match") else out.content.splitlines()


@pytest.mark.parametrize("seed", range(40))
async def test_glob_lists_exactly_the_files_git_does_not_ignore(tmp_path, seed):
    random_tree(tmp_path, random.Random(seed))
    expected = sorted(git(tmp_path, "ls-files", "-z", "--others", "--exclude-standard").split("\0")[:-1])
    assert await glob_all(tmp_path) == expected


@pytest.mark.parametrize("seed", range(40, 60))
async def test_what_glob_leaves_out_is_what_git_check_ignore_reports(tmp_path, seed):
    random_tree(tmp_path, random.Random(seed))
    every = await glob_all(tmp_path, include_ignored=True)
    ignored = git(tmp_path, "check-ignore", "-z", "--no-index", "--stdin", stdin="\0".join(every) + "\0")
    left_out = sorted(set(every) - set(await glob_all(tmp_path)))
    assert left_out == sorted(ignored.split("\0")[:-1])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("node_modules/\n*.log\n")
    for rel in ["src/app.js", "node_modules/lib/index.js", "debug.log"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("needle\n")
    return tmp_path


async def grep(workspace: Path, **kwargs) -> str:
    return (await GrepTool().run(GrepInput(**kwargs), ToolContext(workspace=workspace))).content


async def test_grep_leaves_out_ignored_files(project):
    assert (await grep(project, pattern="needle")).splitlines() == ["src/app.js:1:needle"]


async def test_grep_searches_ignored_files_when_asked(project):
    found = (await grep(project, pattern="needle", include_ignored=True)).splitlines()
    assert found == ["debug.log:1:needle", "node_modules/lib/index.js:1:needle", "src/app.js:1:needle"]


async def test_grep_searches_a_directory_named_by_path_even_if_it_is_ignored(project):
    found = await grep(project, pattern="needle", path="node_modules/lib")
    assert found == "node_modules/lib/index.js:1:needle"


async def test_grep_never_searches_dot_git_even_with_include_ignored(project):
    (project / ".git" / "config").write_text("needle\n")
    assert ".git/" not in await grep(project, pattern="needle", include_ignored=True)


async def test_dot_ignore_re_includes_what_gitignore_excludes(project):
    (project / ".ignore").write_text("!*.log\n")
    assert "debug.log:1:needle" in await grep(project, pattern="needle")


async def test_gitignore_rules_stop_at_a_nested_repository(project):
    nested = project / "vendor" / "tool"
    (nested / ".git").mkdir(parents=True)
    (nested / "trace.log").write_text("needle\n")
    assert "vendor/tool/trace.log:1:needle" in await grep(project, pattern="needle")


async def test_a_gitignore_that_is_a_link_is_not_read(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "rules"
    outside.write_text("src/\n")
    (project / "src" / ".gitignore").symlink_to(outside)
    assert "src/app.js:1:needle" in await grep(project, pattern="needle")


async def test_glob_says_ignored_files_were_left_out_when_nothing_matches(project):
    out = await GlobTool().run(GlobInput(pattern="node_modules/**/*.js"), ToolContext(workspace=project))
    assert "include_ignored" in out.content


async def test_glob_lists_ignored_files_when_asked(project):
    out = await GlobTool().run(GlobInput(pattern="**/*.js", include_ignored=True), ToolContext(workspace=project))
    assert out.content.splitlines() == ["node_modules/lib/index.js", "src/app.js"]
