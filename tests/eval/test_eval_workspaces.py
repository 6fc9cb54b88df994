"""Eval workspaces: a trusted base and a fresh git workspace per task at the ref, the
source repository never touched, plain directories committed, the patch taken on the
host against the base, hidden tests computed from the base, clear errors."""

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from cluster.eval.errors import PatchNotGradable
from cluster.eval.hidden_tests import HiddenFile, place_hidden
from cluster.eval.layout import OutDir
from cluster.eval.tasks import Task
from cluster.eval.workspaces import WorkspaceError, Workspaces, safe_name
from tests.support.eval_support import git
from tests.support.fakes import deep_tree


def _repo(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q", "-b", "main")
    (src / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git(src, "add", ".")
    git(src, "commit", "-qm", "v1")
    git(src, "tag", "v1")
    (src / "calc.py").write_text("def add(a, b):\n    return a - b  # v2\n")
    git(src, "commit", "-qam", "v2")
    git(src, "branch", "feature")
    return src


def _tree_digest(root: Path) -> str:
    """Every file under root, .git included, with its bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _task(repo: Path | str, **fields) -> Task:
    return Task(id="t", repo=str(repo), instruction="i", test_command="true", **fields)


@pytest.fixture
def spaces(tmp_path) -> Workspaces:
    return Workspaces(OutDir(tmp_path / "out"))


async def test_workspace_is_a_fresh_clone_at_the_ref_and_the_source_is_untouched(tmp_path, spaces):
    src = _repo(tmp_path)
    (src / "calc.py").write_text("uncommitted change\n")  # not taken: the committed state is
    (src / "scratch.txt").write_text("untracked\n")
    before = _tree_digest(src)

    head = await spaces.prepare(_task(src), "head")
    at_tag = await spaces.prepare(_task(src, ref="v1"), "tag")
    at_branch = await spaces.prepare(_task(src, ref="feature"), "branch")
    (head.path / "calc.py").write_text("edited in the workspace\n")
    (head.path / "new.py").write_text("x = 1\n")

    assert head.path == tmp_path / "out" / "workspaces" / "head"
    assert head.base_commit == git(src, "rev-parse", "main") == at_branch.base_commit
    assert at_tag.base_commit == git(src, "rev-parse", "v1")
    assert (at_tag.path / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert not (head.path / "scratch.txt").exists()
    assert git(head.path, "remote") == ""  # nothing points back at the source
    assert _tree_digest(src) == before
    assert git(src, "worktree", "list").count("\n") == 0


async def test_the_patch_has_changes_and_new_files_but_not_build_junk_or_the_index(tmp_path, spaces):
    ws = await spaces.prepare(_task(_repo(tmp_path)), "w")
    (ws.path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (ws.path / "pkg").mkdir()
    (ws.path / "pkg" / "new.py").write_text("y = 2\n")
    (ws.path / "pkg" / "__pycache__").mkdir()
    (ws.path / "pkg" / "__pycache__" / "new.cpython-311.pyc").write_bytes(b"\0junk")
    (ws.path / ".pytest_cache").mkdir()
    (ws.path / ".pytest_cache" / "README.md").write_text("junk\n")
    git(ws.path, "add", "calc.py")  # the agent's own staging does not matter

    patch = await spaces.diff(ws)
    text = patch.data.decode()
    assert "diff --git a/calc.py b/calc.py" in text and "+    return a + b" in text
    assert "diff --git a/pkg/new.py b/pkg/new.py" in text and "new file mode" in text
    assert "__pycache__" not in text and ".pytest_cache" not in text
    assert patch.files == ["calc.py", "pkg/new.py"]
    assert git(ws.path, "diff", "--cached", "--name-only") == "calc.py"  # its index is as it left it


async def test_a_committing_agent_still_gets_its_whole_change_in_the_patch(tmp_path, spaces):
    ws = await spaces.prepare(_task(_repo(tmp_path)), "w")
    (ws.path / "calc.py").write_text("committed fix\n")
    git(ws.path, "commit", "-qam", "agent commit")
    assert b"+committed fix" in (await spaces.diff(ws)).data


async def test_a_plain_directory_is_copied_and_gets_a_base_commit(tmp_path, spaces):
    src = tmp_path / "plain"
    (src / "__pycache__").mkdir(parents=True)
    (src / "__pycache__" / "m.pyc").write_bytes(b"junk")
    (src / "m.py").write_text("x = 1\n")
    before = _tree_digest(src)
    ws = await spaces.prepare(_task(src), "p")
    assert (ws.path / "m.py").read_text() == "x = 1\n" and not (ws.path / "__pycache__").exists()
    assert git(ws.path, "rev-parse", "HEAD") == ws.base_commit
    assert (await spaces.diff(ws)).data == b""
    assert _tree_digest(src) == before and not (src / ".git").exists()


async def test_a_directory_inside_another_repository_is_copied_not_cloned(tmp_path, spaces):
    outer = _repo(tmp_path)
    (outer / "sample").mkdir()
    (outer / "sample" / "s.py").write_text("s = 1\n")
    ws = await spaces.prepare(_task(outer / "sample"), "inner")
    assert sorted(p.name for p in ws.path.iterdir()) == [".git", "s.py"]


async def test_hidden_tests_come_from_the_base_and_a_test_patch_that_does_not_apply_is_a_clear_error(tmp_path, spaces):
    ws = await spaces.prepare(_task(_repo(tmp_path)), "w")
    test_patch = (
        "diff --git a/test_hidden.py b/test_hidden.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/test_hidden.py\n@@ -0,0 +1 @@\n+assert True\n"
    )
    (ws.path / "test_hidden.py").write_text("the agent's version\n")  # not the base: does not matter
    hidden = await spaces.hidden_tests(ws, test_patch, timeout_s=30)
    assert [(h.path, h.mode, h.data) for h in hidden] == [("test_hidden.py", 0o100644, b"assert True\n")]
    place_hidden(ws.path, hidden)
    assert (ws.path / "test_hidden.py").read_text() == "assert True\n"
    stale = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-not the base's line\n+x\n"
    with pytest.raises(WorkspaceError, match="the test patch does not apply to the base commit: .*calc.py"):
        await spaces.hidden_tests(ws, stale, timeout_s=30)


async def test_bad_ref_missing_repo_and_unreachable_url_are_workspace_errors(tmp_path, spaces):
    src = _repo(tmp_path)
    with pytest.raises(WorkspaceError, match=r"ref 'nope' is not a commit, branch or tag of .*src"):
        await spaces.prepare(_task(src, ref="nope"), "a")
    with pytest.raises(WorkspaceError, match=r"repository .*missing does not exist"):
        await spaces.prepare(_task(tmp_path / "missing"), "b")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorkspaceError, match="ref 'v1' given, but .*plain is not the top of a git repository"):
        await spaces.prepare(_task(plain, ref="v1"), "c")
    with pytest.raises(WorkspaceError, match="cannot clone file:///nonexistent/repo.git: git clone failed"):
        await spaces.prepare(_task("file:///nonexistent/repo.git"), "d")


async def test_a_url_is_cloned_once_and_shared(tmp_path, spaces):
    src = _repo(tmp_path)
    url = f"file://{src}"
    first = await spaces.prepare(_task(url, ref="v1"), "u1")
    second = await spaces.prepare(_task(url), "u2")
    assert first.base_commit == git(src, "rev-parse", "v1")
    assert second.base_commit == git(src, "rev-parse", "main")
    assert len(list((tmp_path / "out" / "repos").iterdir())) == 1


def test_safe_names_are_readable_and_distinct():
    assert safe_name("sqlfluff__sqlfluff-1625") == "sqlfluff__sqlfluff-1625"
    assert safe_name("a/b") != safe_name("a:b")
    assert safe_name("a/b").startswith("a_b-") and "/" not in safe_name("../../etc")


async def test_a_patch_over_the_cap_is_not_graded_and_says_so(tmp_path):
    spaces = Workspaces(OutDir(tmp_path / "out"), max_patch_bytes=4096)
    ws = await spaces.prepare(_task(_repo(tmp_path)), "w")
    (ws.path / "big.txt").write_text("line\n" * 5000)
    with pytest.raises(PatchNotGradable, match="the patch is over the cap of 0.00390625 MB; it was not graded"):
        await spaces.diff(ws)


async def test_hidden_tests_replace_links_files_and_directories_in_their_way(tmp_path, spaces):
    ws = await spaces.prepare(_task(_repo(tmp_path)), "w")
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws.path / "tests").symlink_to(outside)  # a link where a directory belongs
    (ws.path / "data").write_text("a file where a directory belongs\n")
    (ws.path / "t.py").mkdir()  # a directory where the file belongs
    (ws.path / "t.py" / "inner").write_text("x\n")
    os.mkfifo(ws.path / "pipe.py")
    os.mkfifo(ws.path / "fixtures")  # a FIFO where a directory belongs: never opened
    hidden = [
        HiddenFile("tests/test_a.py", 0o100644, b"a\n"),
        HiddenFile("data/x.json", 0o100644, b"{}"),
        HiddenFile("fixtures/f.txt", 0o100644, b"f\n"),
        HiddenFile("t.py", 0o100755, b"t\n"),
        HiddenFile("pipe.py", 0o100644, b"p\n"),
        HiddenFile("calc.py", None),
    ]
    place_hidden(ws.path, hidden)
    assert list(outside.iterdir()) == []
    assert (ws.path / "tests").is_dir() and not (ws.path / "tests").is_symlink()
    assert (ws.path / "tests" / "test_a.py").read_text() == "a\n" and (ws.path / "data" / "x.json").read_text() == "{}"
    assert (ws.path / "t.py").read_text() == "t\n" and os.access(ws.path / "t.py", os.X_OK)
    assert (ws.path / "pipe.py").read_text() == "p\n" and not (ws.path / "calc.py").exists()
    assert (ws.path / "fixtures" / "f.txt").read_text() == "f\n"


async def test_the_users_global_git_config_and_attributes_never_apply(tmp_path, spaces, monkeypatch):
    src = _repo(tmp_path)  # before HOME changes: the test's own git would read it
    home = tmp_path / "home"
    marker = tmp_path / "ran"
    (home / ".config" / "git").mkdir(parents=True)
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    evil.chmod(0o755)
    (home / ".gitconfig").write_text(
        f'[core]\n\tfsmonitor = {evil}\n[filter "x"]\n\tclean = {evil}\n\tsmudge = {evil}\n'
    )
    (home / ".config" / "git" / "attributes").write_text("* filter=x\n")
    monkeypatch.setenv("HOME", str(home))
    ws = await spaces.prepare(_task(src), "w")
    (ws.path / "calc.py").write_text("changed\n")
    assert b"+changed" in (await spaces.diff(ws)).data
    assert not marker.exists()
    subprocess.run(["git", "status"], cwd=ws.path, capture_output=True)
    assert marker.exists()  # the trap was armed: the user's own git would spring it


async def test_a_workspace_the_agent_made_5000_directories_deep_and_locked_is_removed(tmp_path, spaces):
    ws = await spaces.prepare(_task(_repo(tmp_path)), "w")
    deep_tree(ws.path / "deep", 5_000)
    (ws.path / "deep").chmod(0o000)
    await spaces.remove(ws.path)
    assert not ws.path.exists()
