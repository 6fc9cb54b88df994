"""Helpers shared by the sandbox tests: run Bash through a real BubblewrapRunner, read
results, find host processes. The fixtures (ws, outside_tmp, host_home) are in conftest."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from tools import BashTool, ToolContext, ToolLimits
from tools.base import ToolOutput
from tools.bash import BashInput
from tools.sandbox import BubblewrapRunner, SandboxLimits

BWRAP = "/usr/bin/bwrap"
MiB = 1024**2

# Small limits, so that an attack on them is over in well under a second.
SMALL = SandboxLimits(cpu_seconds=1, memory_mb=128, processes=64, file_size_mb=64, tmp_size_mb=8, workspace_growth_mb=16)


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
