"""Host-side git on a repository the agent could write: it can run nothing on the host.

A workspace's `.git/` is written from the sandbox, so its config may name programs git
would run on the host: `core.fsmonitor`, hooks (and `core.hooksPath`), `core.pager` and
`pager.*`, `gpg.program`, credential helpers, `core.sshCommand`, the `ext::` transport.
Every git process the host starts takes its argv from `git_command` and its environment
from `git_environment` (or goes through `run_git`, which adds a timeout that ends the
whole process group):

- no system or global config (`GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_GLOBAL=/dev/null`), and
  an environment built from nothing: PATH (absolute entries only), `LC_ALL=C`, HOME an
  empty directory, no terminal prompts, editors and pagers that are `true` and `cat`;
  nothing else of the host's reaches git (no GIT_DIR, GIT_CONFIG_*, tokens or agents);
- `-c` settings, which win over the repository's own: fsmonitor off, hooks from
  /dev/null, no signing programs, credential helpers reset, no `ext::`, no automatic gc
  or maintenance, no submodule recursion; plus `--no-pager` and `--no-optional-locks`.

What no setting can switch off (git 2.39): a filter driver that `.gitattributes` names
(`filter.<x>.clean`, `smudge`, `process` from `.git/config`) runs whenever git hashes or
writes work-tree content — `status` (on racily clean files), `add`, `diff` against the
work tree, `commit -a`, `checkout`, `stash`, `apply` — and diff drivers
(`diff.<x>.textconv`, `diff.<x>.command`, `diff.external`) run for `diff` and `log -p`
unless given `--no-textconv --no-ext-diff`; merge drivers run on merges. Run those in
the sandbox, never here. `read_head` answers what the host itself needs — the branch and
the commit — without starting any process.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.files import real_dir

__all__ = [
    "GitHead",
    "GitResult",
    "find_repository",
    "git_command",
    "git_environment",
    "read_head",
    "repository_head",
    "run_git",
]

_NEUTRAL_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=true",
    "sequence.editor=true",
    "core.askPass=true",
    "core.sshCommand=ssh",
    "credential.helper=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "protocol.ext.allow=never",
    "submodule.recurse=false",
    "gc.auto=0",
    "maintenance.auto=false",
)
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f ~^:?*\[\\]|\.\.|@\{|//")
_PACKED_REFS_MAX = 64 * 1024**2


def git_command(*args: str) -> list[str]:
    """argv for `git ARGS...` with the repository's configurable programs switched off."""
    neutral = [part for setting in _NEUTRAL_CONFIG for part in ("-c", setting)]
    return ["git", "--no-pager", "--no-optional-locks", *neutral, *args]


@functools.cache
def _empty_home() -> str:
    """An empty, read-only directory for HOME (made on first use, removed at exit)."""
    path = tempfile.mkdtemp(prefix="workingset-git-home-")
    os.chmod(path, 0o500)
    atexit.register(shutil.rmtree, path, True)
    return path


def git_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a host-side git: nothing inherited but an absolute PATH.
    `extra` adds variables (e.g. GIT_INDEX_FILE); it cannot bring the host's back."""
    path = ":".join(p for p in os.environ.get("PATH", "").split(":") if p.startswith("/")) or _DEFAULT_PATH
    env = {
        "PATH": path,
        "LC_ALL": "C",
        "HOME": _empty_home(),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "true",
        "SSH_ASKPASS": "true",
        "GIT_EDITOR": "true",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_OPTIONAL_LOCKS": "0",
    }
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_git(cwd: Path, *args: str, timeout_s: float = 10.0, env: Mapping[str, str] | None = None) -> GitResult:
    """Run `git ARGS...` in `cwd`, neutralised (see the module docstring). Never raises for
    git's own failures: a missing git is returncode 127, a timeout -9 (the process group
    is killed), both with the reason in `stderr`."""
    try:
        proc = subprocess.Popen(
            git_command(*args),
            cwd=cwd,
            env=git_environment(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        return GitResult(127, "", f"git could not start: {exc}")
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return GitResult(-9, "", f"git {args[0] if args else ''} timed out after {timeout_s:g} s")
    return GitResult(proc.returncode, out, err)


# -- HEAD without a process -----------------------------------------------------------------


@dataclass(frozen=True)
class GitHead:
    """What HEAD names: a branch (None when detached) and the commit (None when unborn)."""

    branch: str | None
    commit: str | None


def find_repository(cwd: Path) -> Path | None:
    """The nearest directory from `cwd` upwards holding `.git` (a directory or a file)."""
    # On strings, not Paths: every snapshot asks (the same walk as `cwd.parents`).
    directory = os.fspath(cwd)
    while True:
        if os.path.lexists(os.path.join(directory, ".git")):
            return Path(directory) if directory else Path(".")
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def read_head(top: Path) -> GitHead | None:
    """HEAD of the repository whose work tree is `top`, read from `.git/` through Beneath
    (no link out of it is followed; HEAD and refs that do not look like git's own are
    refused). None when `.git` is not a plain directory (a worktree or submodule link, a
    symlink) or HEAD is unreadable; the caller may then use `run_git`."""
    beneath = real_dir(top / ".git")
    if beneath is None:
        return None
    with beneath:
        head = (beneath.read_text_if_regular("HEAD", 4096) or "").strip()
        if _SHA.match(head):
            return GitHead(None, head)
        if not head.startswith("ref: "):
            return None
        ref = head[5:].strip()
        if not _is_ref_name(ref):
            return None
        branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
        loose = (beneath.read_text_if_regular(ref, 4096) or "").strip()
        if _SHA.match(loose):
            return GitHead(branch, loose)
        packed = beneath.read_text_if_regular("packed-refs", _PACKED_REFS_MAX) or ""
        for line in packed.splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and _SHA.match(sha):
                return GitHead(branch, sha)
        return GitHead(branch, None)


def repository_head(cwd: Path) -> GitHead | None:
    """HEAD of the repository holding `cwd` (None outside one). `.git` a plain directory:
    `read_head`, no process. `.git` a file (a linked worktree, a submodule): `git
    rev-parse`, neutralised. `.git` a symlink, or HEAD unreadable: GitHead(None, None)."""
    top = find_repository(cwd)
    if top is None:
        return None
    dot_git = top / ".git"
    if dot_git.is_symlink():
        return GitHead(None, None)
    if dot_git.is_dir():
        return read_head(top) or GitHead(None, None)
    done = run_git(cwd, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD", timeout_s=5)
    commit, _, name = done.stdout.strip().partition("\n")
    if not done.ok or not _SHA.match(commit):
        return GitHead(None, None)
    return GitHead(name.removeprefix("refs/heads/") if name.startswith("refs/heads/") else None, commit)


def _is_ref_name(ref: str) -> bool:
    """A ref under refs/ in git's own format: no '..', no component starting with '.',
    nothing git itself refuses; `ref: ../../etc/passwd` is not one."""
    if not ref.startswith("refs/") or ref.endswith(("/", ".", ".lock")) or _REF_FORBIDDEN.search(ref):
        return False
    return all(part and not part.startswith(".") and not part.endswith(".lock") for part in ref.split("/"))
