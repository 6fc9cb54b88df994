"""The bubblewrap sandbox for Bash: a CommandRunner that wraps every command.

What the command sees:
- the host root read-only; the workspace the only writable bind; a private /tmp;
- no network (its own empty network namespace), its own PID, IPC and UTS namespaces,
  a new session (no terminal injection), and it dies with its parent;
- no capabilities, even when the harness runs as root (it could remount / read-write);
- /run replaced by an empty tmpfs, so service sockets there (docker, dbus) are out of
  reach; a Unix socket elsewhere on the host filesystem stays reachable (only a
  seccomp filter could stop that);
- a scrubbed environment: the caller's PATH (so installed toolchains are found),
  HOME=/tmp/home, LANG and TERM only — no API keys, tokens or other host variables;
- credential stores in the home directories (the caller's $HOME and the account's
  home) hidden: ~/.ssh, ~/.aws, ~/.config, ~/.gnupg, ~/.docker, ~/.kube and friends
  under empty tmpfs, ~/.netrc, ~/.git-credentials and similar files replaced by
  /dev/null. The rest of home stays readable, so toolchains installed there work;
- resource limits through prlimit: CPU seconds, address space, file size, processes.
  (The kernel never applies the process limit to uid 0; the PID namespace and the
  wall timeout still bound a fork bomb run as root.)
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
from dataclasses import dataclass
from pathlib import Path

from tools.base import ToolError

__all__ = ["SECRET_DIRS", "SECRET_FILES", "BubblewrapRunner", "SandboxLimits", "SandboxUnavailable", "bubblewrap_path"]

_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"


class SandboxUnavailable(ToolError, RuntimeError):
    """Bubblewrap is missing and the user did not opt out of the sandbox.

    A ToolError, so Bash reports it to the model as an error result instead of crashing.
    """


def bubblewrap_path() -> str | None:
    return shutil.which("bwrap")


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 300
    memory_bytes: int = 4 * 1024**3
    file_size_bytes: int = 1024**3
    processes: int = 512


SECRET_DIRS = (".ssh", ".aws", ".config", ".gnupg", ".docker", ".kube", ".azure", ".gcloud", ".anthropic", ".workingset")
SECRET_FILES = (".netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass", ".bash_history", ".python_history")


def _toolchains_under_tmp() -> list[str]:
    """Read-only binds for PATH entries under /tmp (a virtualenv made there), which the
    private /tmp would otherwise hide; a `bin` folder brings its environment along."""
    binds: list[str] = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        path = Path(entry).resolve() if entry else None
        if path is None or not path.is_dir() or not path.is_relative_to("/tmp"):
            continue
        root = path.parent if path.name == "bin" else path
        if root != Path("/tmp") and str(root) not in binds:
            binds += ["--ro-bind", str(root), str(root)]
    return binds


def _homes() -> list[Path]:
    homes = {Path.home()}
    with contextlib.suppress(KeyError):  # an account without a passwd entry
        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir))
    return sorted(h.resolve() for h in homes if h.is_dir() and h != Path("/"))


def _hide_secrets(workspace: Path) -> tuple[list[str], list[str]]:
    """Mount arguments that blank out credential stores: (before, after) the workspace bind.

    A store that holds the workspace (a workspace in ~/.config/nvim) is blanked before
    the workspace is bound, so the workspace reappears on top of the empty tmpfs. Every
    other store is blanked after it, so a workspace that holds a store (a workspace at
    $HOME) does not bring the real ~/.ssh back with its bind.
    """
    before: list[str] = []
    after: list[str] = []
    for home in _homes():
        for name in SECRET_DIRS:
            path = home / name
            if path.is_dir():
                (before if workspace.is_relative_to(path) else after).extend(["--tmpfs", str(path)])
        for name in SECRET_FILES:
            path = home / name
            if path.is_file():
                after += ["--ro-bind", "/dev/null", str(path)]
    return before, after


@dataclass(frozen=True)
class BubblewrapRunner:
    """CommandRunner that runs `bash -c CMD` inside bubblewrap with prlimit limits."""

    limits: SandboxLimits = SandboxLimits()
    bwrap: str | None = None

    def argv(self, command: str, workspace: Path) -> list[str]:
        # An explicit path must exist too: a bad one would crash the call (FileNotFoundError).
        bwrap = shutil.which(self.bwrap) if self.bwrap else bubblewrap_path()
        if bwrap is None:
            where = f" at {self.bwrap}" if self.bwrap else ""
            raise SandboxUnavailable(
                f"Bash runs inside bubblewrap, which is not installed{where}; install it "
                "(apt-get install bubblewrap) or opt out with --no-sandbox"
            )
        ws = str(workspace.resolve())
        hide_before, hide_after = _hide_secrets(workspace.resolve())
        argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        # Service sockets (docker, dbus, ...) live under /run; a read-only bind would
        # still let a command connect to them.
        if Path("/run").is_dir() and not workspace.resolve().is_relative_to("/run"):
            argv += ["--tmpfs", "/run"]
        argv += _toolchains_under_tmp()
        argv += [*hide_before, "--bind", ws, ws, *hide_after]
        argv += [
            # Run as root, bwrap keeps every capability: the command could remount / rw.
            "--cap-drop", "ALL",
            "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--die-with-parent", "--new-session",
            "--chdir", ws,
            "--clearenv",
            "--setenv", "PATH", os.environ.get("PATH") or _SAFE_PATH,
            "--setenv", "HOME", "/tmp/home",
            "--setenv", "LANG", "C.UTF-8",
            "--setenv", "TERM", "dumb",
            "--",
        ]
        limits = self.limits
        argv += [
            "prlimit",
            f"--cpu={limits.cpu_seconds}",
            f"--as={limits.memory_bytes}",
            f"--fsize={limits.file_size_bytes}",
            f"--nproc={limits.processes}",
            "--",
            "bash", "-c", f"mkdir -p /tmp/home; {command}",
        ]
        return argv

    def env(self, workspace: Path) -> dict[str, str]:
        # bwrap itself needs a PATH to find prlimit; the command gets a cleared env.
        return {"PATH": os.environ.get("PATH") or _SAFE_PATH}
