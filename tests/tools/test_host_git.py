"""tools.host_git: the environment a host-side git gets, its timeout, and HEAD read without git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tools.host_git import (
    GitHead,
    git_command,
    git_environment,
    read_head,
    repository_head,
    run_git,
)


def _repo(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
        cwd=path,
        check=True,
    )
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True).stdout.strip()


def test_the_environment_carries_nothing_of_the_hosts(monkeypatch):
    monkeypatch.setenv("PATH", f"relative/bin:.:{os.environ['PATH']}")
    for name in ("GIT_DIR", "GIT_CONFIG_PARAMETERS", "GITHUB_TOKEN", "SSH_AUTH_SOCK"):
        monkeypatch.setenv(name, "from-the-host")
    env = git_environment({"GIT_INDEX_FILE": "x"})
    assert "from-the-host" not in env.values() and env["GIT_INDEX_FILE"] == "x"
    assert all(p.startswith("/") for p in env["PATH"].split(":"))
    assert env["GIT_CONFIG_GLOBAL"] == "/dev/null" and env["GIT_CONFIG_NOSYSTEM"] == "1" and env["LC_ALL"] == "C"
    assert os.listdir(env["HOME"]) == []


def test_the_command_switches_off_what_a_repository_can_name():
    argv = git_command("status")
    assert argv[:3] == ["git", "--no-pager", "--no-optional-locks"] and argv[-1] == "status"
    settings = {argv[i + 1] for i, part in enumerate(argv) if part == "-c"}
    assert {
        "core.fsmonitor=false",
        "core.hooksPath=/dev/null",
        "credential.helper=",
        "protocol.ext.allow=never",
    } <= settings


def test_a_repository_config_that_blocks_git_is_cut_at_the_timeout(tmp_path):
    _repo(tmp_path / "r")
    os.mkfifo(tmp_path / "r" / ".git" / "blocker")  # reading its config would wait for a writer forever
    with (tmp_path / "r" / ".git" / "config").open("a") as config:
        config.write("[include]\n\tpath = blocker\n")
    done = run_git(tmp_path / "r", "rev-parse", "HEAD", timeout_s=1)
    assert done.returncode == -9 and "timed out after 1 s" in done.stderr


def test_a_missing_git_is_a_result_not_an_exception(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    done = run_git(tmp_path, "status")
    assert done.returncode == 127 and not done.ok


def test_head_gives_branch_and_commit_loose_packed_and_detached(tmp_path):
    repo = tmp_path / "r"
    commit = _repo(repo)
    assert read_head(repo) == GitHead("main", commit)
    subprocess.run(["git", "pack-refs", "--all"], cwd=repo, check=True)
    assert read_head(repo) == GitHead("main", commit)
    subprocess.run(["git", "checkout", "-q", "--detach"], cwd=repo, check=True)
    assert read_head(repo) == GitHead(None, commit)


def test_a_linked_worktree_is_read_with_neutralised_git(tmp_path):
    commit = _repo(tmp_path / "r")
    subprocess.run(["git", "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt")], cwd=tmp_path / "r", check=True)
    head = repository_head(tmp_path / "wt")
    assert head is not None and (head.branch, head.commit) == ("side", commit)


@pytest.mark.parametrize(
    "ref",
    [
        "refs/heads/../../config",
        "refs/heads/.hidden",
        "heads/main",
        "refs/heads/x.lock",
        "refs/heads/a b",
        "/etc/passwd",
        "refs/heads/a\\b",
    ],
)
def test_head_naming_a_ref_git_would_refuse_is_not_followed(tmp_path, ref):
    repo = tmp_path / "r"
    _repo(repo)
    (repo / ".git" / "HEAD").write_text(f"ref: {ref}\n")
    assert read_head(repo) is None
