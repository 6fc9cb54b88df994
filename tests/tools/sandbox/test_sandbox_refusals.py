"""A sandbox that cannot start with its protections refuses, in one line that names what
is missing and the opt-out, and runs nothing. Each missing piece is simulated for real:
an absent or fake bubblewrap, a cgroup that does not exist, a settings switch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.support.sandbox_support import as_user, runner, sandboxed
from tools import BashTool, ToolContext
from tools.base import ToolError, ToolOutput
from tools.bash import BashInput
from tools.executor import LocalToolExecutor
from tools.sandbox import BubblewrapRunner, SandboxUnavailable
from tools.sandbox.seccomp import SeccompUnsupported, filter_program


def fake_bwrap(directory: Path, version: str, fails_with: str | None = None, fails_when: str = "") -> str:
    """A `bwrap` that reports `version` and, when its arguments contain `fails_when`,
    exits 1 printing `fails_with` the way bubblewrap does; otherwise runs real bwrap."""
    directory.mkdir(exist_ok=True)
    path = directory / f"bwrap-{len(list(directory.iterdir()))}"
    failure = f'case "$*" in *"{fails_when}"*) echo "bwrap: {fails_with}" >&2; exit 1;; esac' if fails_with else ""
    path.write_text(
        f'#!/bin/sh\nif [ "$1" = --version ]; then echo "bubblewrap {version}"; exit 0; fi\n{failure}\n'
        'exec /usr/bin/bwrap "$@"\n'
    )
    path.chmod(0o755)
    return str(path)


async def refusal(workspace: Path, sandbox: BubblewrapRunner) -> str:
    """The error result of one Bash call that must not run."""
    out: ToolOutput = await LocalToolExecutor().execute(
        BashTool(), BashInput(command="touch ran"), ToolContext(workspace=workspace, runner=sandbox)
    )
    assert out.is_error, out.content
    assert not (workspace / "ran").exists()  # nothing ran with less protection
    assert "\n" not in out.content  # one line
    assert "--no-sandbox" in out.content
    return out.content


async def test_missing_bubblewrap_refuses(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    text = await refusal(ws, BubblewrapRunner())
    assert "bubblewrap" in text and "not installed" in text
    with pytest.raises(ToolError):  # a model-visible error, never a crash
        await BashTool().run(BashInput(command="touch ran"), ToolContext(workspace=ws, runner=BubblewrapRunner()))
    assert issubclass(SandboxUnavailable, ToolError)


async def test_bogus_bubblewrap_path_refuses(ws):
    text = await refusal(ws, BubblewrapRunner(bwrap="/nonexistent/bwrap"))
    assert "/nonexistent/bwrap" in text and "not installed" in text


async def test_too_old_bubblewrap_refuses(ws, outside_tmp):
    text = await refusal(ws, runner(bwrap=fake_bwrap(outside_tmp / "bin", "0.4.1")))
    assert "bubblewrap 0.4.1" in text and "too old" in text and "0.8.0" in text


async def test_no_user_namespaces_refuses(ws, outside_tmp):
    bwrap = fake_bwrap(
        outside_tmp / "bin",
        "0.8.0",
        fails_when="--unshare-user",
        fails_with="No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.",
    )
    text = await refusal(ws, runner(bwrap=bwrap))
    assert "user namespaces are not available" in text and "unprivileged_userns_clone" in text


async def test_seccomp_that_cannot_load_refuses(ws, outside_tmp):
    bwrap = fake_bwrap(
        outside_tmp / "bin", "0.8.0", fails_when="--seccomp", fails_with="prctl(PR_SET_SECCOMP): Invalid argument"
    )
    text = await refusal(ws, runner(bwrap=bwrap))
    assert "seccomp filter cannot be loaded" in text and "sandbox.seccomp = false" in text


def test_an_architecture_without_a_filter_is_named():
    with pytest.raises(SeccompUnsupported, match="riscv64"):
        filter_program("riscv64")


async def test_missing_cgroup_parent_refuses(ws):
    text = await refusal(ws, runner(cgroup_parent="/workingset-does-not-exist"))
    assert "/workingset-does-not-exist does not exist" in text and "sandbox.weak_limits = true" in text


async def test_cgroup_v2_without_controllers_refuses(ws):
    v2 = Path("/sys/fs/cgroup/unified/cgroup.controllers")
    if not v2.exists() or "memory" in v2.read_text():
        pytest.skip("this host's cgroup v2 has the controllers (the refusal is for hybrid hosts)")
    text = await refusal(ws, runner(cgroup="v2"))
    assert "cgroup v2" in text and "no memory or pids controller" in text


async def test_weak_limits_run_where_no_cgroup_is_usable(ws):
    out = await sandboxed(
        ws,
        "ulimit -t; ulimit -u; echo ran",
        sandbox=runner(cgroup_parent="/workingset-does-not-exist", weak_limits=True),
    )
    assert out.content.split()[:3] == ["300", "512", "ran"], out.content  # per-process CPU, per-uid processes


async def test_overflow_sandbox_uid_refuses(ws):
    if os.geteuid() != 0:
        pytest.skip("the dedicated uid applies when the harness is root")
    text = await refusal(ws, runner(uid=65534))
    assert "sandbox.uid 65534" in text


def test_root_as_sandbox_uid_is_refused_when_configured():
    with pytest.raises(ValidationError, match="uid"):
        runner(uid=0)


async def test_the_whole_host_as_workspace_refuses():
    out = await LocalToolExecutor().execute(
        BashTool(), BashInput(command="true"), ToolContext(workspace=Path("/"), runner=runner())
    )
    assert out.is_error and "cannot be /" in out.content and "--no-sandbox" in out.content


async def test_a_kernel_that_cannot_cap_workspace_writes_refuses_unless_accepted(outside_tmp):
    """As an ordinary user the layer is an overlayfs made in a user namespace; on a
    workspace already two overlayfs deep the kernel stacks no third (its limit is 2).
    Bash refuses, naming the opt-out; with it, the growth is polled instead, and the
    protected names still cannot be made."""
    user = 4323
    stack = outside_tmp / "stack"
    for name in ("l1", "u1", "w1", "m1", "u2", "w2", "m2"):
        (stack / name).mkdir(parents=True)
    overlay = "mount -t overlay overlay -o lowerdir={},upperdir={},workdir={} {} && "
    setup = (
        overlay.format(stack / "l1", stack / "u1", stack / "w1", stack / "m1")
        + overlay.format(stack / "m1", stack / "u2", stack / "w2", stack / "m2")
        + f"mkdir {stack}/m2/ws && chown {user}:{user} {stack}/m2/ws && "
    )
    script = (
        "import asyncio, sys\nfrom pathlib import Path\n"
        "from tests.support.sandbox_support import runner, sandboxed\n"
        "ws = Path(sys.argv[1])\n"
        "for weak in (False, True):\n"
        "    try:\n"
        "        out = asyncio.run(sandboxed(ws, 'echo made > f; mkdir -p .workingset/x; echo done',"
        " sandbox=runner(weak_limits=True, weak_growth_limit=weak)))\n"
        "        print(out.content)\n"
        "    except Exception as exc:\n"
        "        print('REFUSED:', exc)\n"
        "print('landed:', (ws / 'f').read_text().strip(), 'protected made:', (ws / '.workingset').exists())\n"
    )
    text = as_user(user, script, str(stack / "m2" / "ws"), setup=setup, scratch=outside_tmp)
    refused = next(line for line in text.splitlines() if line.startswith("REFUSED:"))
    assert "the kernel cannot cap the command's writes to the workspace" in refused, text
    assert "sandbox.weak_growth_limit = true" in refused and "--no-sandbox" in refused
    assert "Read-only file system" in text and "done" in text, text
    assert "landed: made protected made: False" in text, text
