"""Helpers shared by the sandbox tests: run Bash through a real BubblewrapRunner, read
results, find host processes. The fixtures: ws in tests/conftest.py,
outside_tmp and host_home in tests/tools/sandbox/conftest.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tools import BashTool, ToolContext, ToolLimits
from tools.base import ToolOutput
from tools.bash import BashInput
from tools.sandbox import BubblewrapRunner, SandboxLimits

BWRAP = "/usr/bin/bwrap"
MiB = 1024**2

# Small limits, so that an attack on them is over in well under a second.
SMALL = SandboxLimits(
    cpu_seconds=1, memory_mb=128, processes=64, file_size_mb=64, tmp_size_mb=8, workspace_growth_mb=16
)


def runner(limits: SandboxLimits | None = None, **options) -> BubblewrapRunner:
    return BubblewrapRunner(limits=limits or SandboxLimits(), bwrap=options.pop("bwrap", BWRAP), **options)


async def sandboxed(
    workspace: Path,
    command: str,
    limits: SandboxLimits | None = None,
    timeout_s: float | None = None,
    *,
    sandbox: BubblewrapRunner | None = None,
    **tool_limits,
) -> ToolOutput:
    """One Bash call, exactly as the model's calls run."""
    ctx = ToolContext(workspace=workspace, limits=ToolLimits(**tool_limits), runner=sandbox or runner(limits))
    return await BashTool().run(BashInput(command=command, timeout_s=timeout_s), ctx)


def exit_code(out: ToolOutput) -> int:
    match = re.search(r"exit code: (-?\d+)$", out.content)
    assert match, out.content
    return int(match.group(1))


def marker() -> str:
    return f"workingset-sandbox-{uuid.uuid4().hex}"


def unique_sleep() -> str:
    """A `sleep` argument no other process on the host uses, to find it in /proc."""
    return f"{30 + uuid.uuid4().int % 1000 / 1000:.3f}"


def alive_with(text: str) -> list[int]:
    """Host pids of live (non-zombie) processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if text in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def argv_of(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]


async def wait_for_host_pid(argv: list[str], timeout_s: float = 10.0) -> int:
    """The host pid of the process running exactly `argv`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid in alive_with(" ".join(argv)):
            with contextlib.suppress(OSError):
                if argv_of(pid) == argv:
                    return pid
        await asyncio.sleep(0.02)
    raise AssertionError(f"no process {argv} appeared")


def plant_secrets(home: Path) -> dict[Path, str]:
    secrets = {
        home / ".ssh" / "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY----- ssh-secret",
        home / ".aws" / "credentials": "[default]\naws_secret_access_key = aws-secret",
        home / ".config" / "gh" / "hosts.yml": "github.com:\n  oauth_token: gh-secret",
        home / ".netrc": "machine example.com login me password netrc-secret",
    }
    for path, text in secrets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return secrets


def assert_secrets_hidden(out: ToolOutput, secrets: dict[Path, str]) -> None:
    for text in secrets.values():
        assert text.split()[-1] not in out.content


def user_workspace(scratch: Path, user: int) -> Path:
    """A fresh workspace in `scratch` owned by uid/gid `user`."""
    workspace = scratch / "user-ws"
    workspace.mkdir()
    os.chown(workspace, user, user)
    return workspace


def as_user(user: int, script: str, *args: str, setup: str = "", scratch: Path) -> str:
    """Run the Python `script` (written to `scratch`) with the harness's Python as uid/gid
    `user`, in a private mount namespace where `setup` (shell, as root) runs first; its
    output. Skips the test where that cannot be done (not root, no setpriv). The harness's
    Python may live under /root (0700): those trees are lent out over an empty /root."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to become another user")
    path = scratch / "as_user.py"
    path.write_text(script)
    lent = sorted(
        {p for p in (Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()) if p.is_relative_to("/root")}
    )
    stashes = [scratch / f"stash{n}" for n in range(len(lent))]
    for stash in stashes:
        stash.mkdir()
    keep = "".join(f"mount --bind {p} {s} && " for p, s in zip(lent, stashes, strict=True))
    give = "".join(f"mkdir -p {p} && mount --move {s} {p} && " for p, s in zip(lent, stashes, strict=True))
    tmpfs = "mount -t tmpfs -o mode=0755 none /root && " if lent else ""
    quoted = " ".join(f"'{a}'" for a in (str(path), *args))
    command = (
        f"{setup}{keep}{tmpfs}{give}exec setpriv --reuid {user} --regid {user} --clear-groups "
        f"env HOME=/tmp PYTHONPATH={os.getcwd()} {Path(sys.prefix)}/bin/python3 {quoted}"
    )
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", command], capture_output=True, text=True, timeout=120
    )
    return done.stdout + done.stderr
