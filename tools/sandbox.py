"""The bubblewrap sandbox for Bash: a CommandRunner that wraps every command.

What the command sees:
- the host root read-only; the workspace the only writable bind; a private /tmp;
- no network (its own empty network namespace), its own PID, IPC and UTS namespaces,
  a new session (no terminal injection), and it dies with its parent;
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

__all__ = ["SECRET_DIRS", "SECRET_FILES", "BubblewrapRunner", "SandboxLimits", "SandboxUnavailable", "bubblewrap_path"]

_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"


class SandboxUnavailable(RuntimeError):
    """Bubblewrap is missing and the user did not opt out of the sandbox."""


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


def _homes() -> list[Path]:
    homes = {Path.home()}
    with contextlib.suppress(KeyError):  # an account without a passwd entry
        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir))
    return sorted(h.resolve() for h in homes if h.is_dir() and h != Path("/"))


def _hide_secrets(workspace: Path) -> list[str]:
    """Mount arguments that blank out credential stores (never the workspace itself)."""
    args: list[str] = []
    for home in _homes():
        for name in SECRET_DIRS:
            path = home / name
            if path.is_dir() and not workspace.is_relative_to(path):
                args += ["--tmpfs", str(path)]
        for name in SECRET_FILES:
            path = home / name
            if path.is_file():
                args += ["--ro-bind", "/dev/null", str(path)]
    return args


@dataclass(frozen=True)
class BubblewrapRunner:
    """CommandRunner that runs `bash -c CMD` inside bubblewrap with prlimit limits."""

    limits: SandboxLimits = SandboxLimits()
    bwrap: str | None = None

    def argv(self, command: str, workspace: Path) -> list[str]:
        bwrap = self.bwrap or bubblewrap_path()
        if bwrap is None:
            raise SandboxUnavailable(
                "Bash runs inside bubblewrap, which is not installed; install it "
                "(apt-get install bubblewrap) or opt out with --no-sandbox"
            )
        ws = str(workspace.resolve())
        argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        argv += _hide_secrets(workspace.resolve())
        argv += [
            "--bind", ws, ws,
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
