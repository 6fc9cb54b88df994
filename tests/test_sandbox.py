"""The bubblewrap sandbox around Bash, with real bwrap and real processes.

Every test runs BashTool through a ToolContext whose runner is a BubblewrapRunner,
so what is checked is what the model's Bash calls get. The tests run as root (as
the harness may), which is the hard case: root ignores file permissions, so only
the mounts, the namespaces and the dropped capabilities keep the host safe.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.assembly import command_runner
from agents.config import load_settings
from tools import BashTool, ToolContext, ToolLimits
from tools.base import PlainCommandRunner, ToolError, ToolOutput
from tools.bash import BashInput
from tools.executor import LocalToolExecutor
from tools.sandbox import BubblewrapRunner, SandboxLimits, SandboxUnavailable

BWRAP = "/usr/bin/bwrap"
MiB = 1024**2

# Names bash itself adds to the environment the sandbox sets (PATH, HOME, LANG, TERM).
ALLOWED_ENV = {"PATH", "HOME", "LANG", "TERM", "PWD", "OLDPWD", "SHLVL", "_"}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A host directory outside /tmp, which the sandbox sees through its read-only root
    (everything under /tmp is behind the sandbox's private tmpfs)."""
    path = Path(tempfile.mkdtemp(prefix="workingset-sandbox-test-", dir="/var/tmp"))
    try:
        yield path.resolve()
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def host_home(outside_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$HOME outside /tmp, so hiding its secrets is the sandbox's doing, not the tmpfs's."""
    home = outside_tmp / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


async def sandboxed(
    workspace: Path,
    command: str,
    limits: SandboxLimits | None = None,
    timeout_s: float | None = None,
    **tool_limits,
) -> ToolOutput:
    runner = BubblewrapRunner(limits or SandboxLimits(), bwrap=BWRAP)
    ctx = ToolContext(workspace=workspace, limits=ToolLimits(**tool_limits), runner=runner)
    return await BashTool().run(BashInput(command=command, timeout_s=timeout_s), ctx)


def exit_code(out: ToolOutput) -> int:
    match = re.search(r"exit code: (-?\d+)$", out.content)
    assert match, out.content
    return int(match.group(1))


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


def marker() -> str:
    return f"workingset-sandbox-{uuid.uuid4().hex}"


# --- filesystem ---------------------------------------------------------------


async def test_write_inside_workspace_persists(ws):
    out = await sandboxed(ws, "echo hello > made.txt && mkdir -p sub && echo deep > sub/file.txt")
    assert exit_code(out) == 0, out.content
    assert (ws / "made.txt").read_text() == "hello\n"
    assert (ws / "sub" / "file.txt").read_text() == "deep\n"


@pytest.mark.parametrize("target", ["/etc", "/root", "/usr/local", "/var/tmp"])
async def test_write_outside_workspace_fails(ws, target):
    path = Path(target) / marker()
    try:
        out = await sandboxed(ws, f"echo pwned > {path} && echo WROTE")
        assert "Read-only file system" in out.content
        assert "WROTE" not in out.content
        assert not path.exists()
    finally:
        path.unlink(missing_ok=True)


async def test_write_to_workspace_parent_fails(outside_tmp):
    workspace = outside_tmp / "ws"
    workspace.mkdir()
    out = await sandboxed(workspace, "echo pwned > ../escaped && echo WROTE")
    assert "Read-only file system" in out.content
    assert "WROTE" not in out.content
    assert not (outside_tmp / "escaped").exists()


async def test_write_to_workspace_parent_under_tmp_never_reaches_host(ws):
    # Under /tmp the parent is part of the private tmpfs: the write may land there, never on the host.
    await sandboxed(ws, "echo pwned > ../escaped; echo pwned > ../../escaped")
    assert not (ws.parent / "escaped").exists()
    assert not (ws.parent.parent / "escaped").exists()


async def test_root_cannot_remount_root_read_write(ws):
    """Run as root, bwrap keeps every capability unless told otherwise; the command
    could then `mount -o remount,rw /` and write to the host."""
    path = Path("/etc") / marker()
    try:
        out = await sandboxed(
            ws,
            f"grep CapEff /proc/self/status; mount -o remount,rw / ; echo pwned > {path} && echo WROTE",
        )
        assert re.search(r"CapEff:\s*0+\n", out.content), out.content
        assert "WROTE" not in out.content
        assert not path.exists()
    finally:
        path.unlink(missing_ok=True)


async def test_tmp_is_private(ws):
    host_file = Path("/tmp") / marker()
    host_file.write_text("host-only")
    sandbox_file = Path("/tmp") / marker()
    try:
        out = await sandboxed(ws, f"cat {host_file}; echo inside > {sandbox_file} && cat {sandbox_file}")
        assert "host-only" not in out.content
        assert "No such file or directory" in out.content
        assert "inside" in out.content  # /tmp is writable inside ...
        assert not sandbox_file.exists()  # ... but nothing written there reaches the host
    finally:
        host_file.unlink(missing_ok=True)
        sandbox_file.unlink(missing_ok=True)


# --- network and processes --------------------------------------------------------


async def test_cannot_connect_to_host_loopback(ws):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        command = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED"
        out = await sandboxed(ws, command)
        assert "CONNECTED" not in out.content
        assert "Connection refused" in out.content
        assert select.select([listener], [], [], 0)[0] == []  # nothing reached the host
        # Control: the same command outside the sandbox does connect.
        ctx = ToolContext(workspace=ws, runner=PlainCommandRunner())
        plain = await BashTool().run(BashInput(command=command), ctx)
        assert "CONNECTED" in plain.content


async def test_only_a_loopback_interface(ws):
    out = await sandboxed(ws, "tail -n +3 /proc/net/dev | cut -d: -f1")
    assert out.content.split() == ["lo", "exit", "code:", "0"]


async def test_new_pid_namespace(ws):
    out = await sandboxed(ws, "echo $$; for p in /proc/[0-9]*; do echo \"${p#/proc/} $(tr '\\0' ' ' < $p/cmdline)\"; done")
    lines = out.content.splitlines()
    assert int(lines[0]) <= 3  # bwrap's init is 1, the command right after it
    pids = [int(line.split()[0]) for line in lines[1:-1] if line.split()]
    assert pids and max(pids) < 20
    # The test process (and every other host process) is invisible.
    own = Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode()
    assert all(line.split(" ", 1)[-1] != own for line in lines[1:-1])
    assert os.getpid() not in pids or os.getpid() < 20


# --- environment and secrets ------------------------------------------------------


async def test_environment_is_scrubbed(ws, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-env-secret")
    out = await sandboxed(ws, "env")
    assert exit_code(out) == 0
    for needle in ("ANTHROPIC_API_KEY", "sk-secret", "GITHUB_TOKEN", "ghp-secret", "AWS_SECRET", "aws-env-secret"):
        assert needle not in out.content
    names = {line.split("=", 1)[0] for line in out.content.splitlines()[:-1] if "=" in line}
    assert names <= ALLOWED_ENV, names - ALLOWED_ENV


async def test_home_secrets_unreadable(ws):
    secrets = plant_secrets(Path(os.environ["HOME"]))  # conftest's tmp HOME
    out = await sandboxed(ws, "; ".join(f"cat {path}" for path in secrets))
    assert_secrets_hidden(out, secrets)


async def test_home_secrets_hidden_but_rest_of_home_readable(ws, host_home):
    secrets = plant_secrets(host_home)
    (host_home / "notes.txt").write_text("plain-notes")
    out = await sandboxed(ws, f"cat {host_home}/notes.txt; " + "; ".join(f"cat {p}" for p in secrets))
    assert "plain-notes" in out.content  # control: home is visible, only the stores are hidden
    assert_secrets_hidden(out, secrets)


async def test_workspace_at_home_does_not_expose_secrets(host_home):
    secrets = plant_secrets(host_home)
    out = await sandboxed(host_home, "echo ok > made.txt; " + "; ".join(f"cat {p}" for p in secrets))
    assert (host_home / "made.txt").read_text() == "ok\n"
    assert_secrets_hidden(out, secrets)
    for path, text in secrets.items():
        assert path.read_text() == text  # and the sandbox could not overwrite them


async def test_workspace_inside_config_dir_keeps_other_config_hidden(host_home):
    secrets = plant_secrets(host_home)
    workspace = host_home / ".config" / "nvim"
    workspace.mkdir()
    out = await sandboxed(workspace, f"echo ok > init.lua; cat {host_home}/.config/gh/hosts.yml")
    assert (workspace / "init.lua").read_text() == "ok\n"
    assert_secrets_hidden(out, secrets)


# --- limits -----------------------------------------------------------------------


async def test_file_size_limit(ws):
    command = 'dd if=/dev/zero of=big bs=1M count=5; echo "dd exit $?"'
    out = await sandboxed(ws, command, SandboxLimits(file_size_bytes=MiB))
    assert "File size limit exceeded" in out.content
    assert "dd exit 153" in out.content  # 128 + SIGXFSZ
    assert (ws / "big").stat().st_size <= MiB


async def test_cpu_limit_kills_busy_loop(ws):
    started = time.monotonic()
    out = await sandboxed(ws, "while :; do :; done", SandboxLimits(cpu_seconds=1), timeout_s=20)
    assert time.monotonic() - started < 6
    assert not out.is_error  # killed by the CPU limit, not by the wall timeout
    # bwrap reports a signalled command as 128 + signal: SIGXCPU (24) or SIGKILL (9).
    assert exit_code(out) in (128 + 24, 128 + 9), out.content


async def test_memory_limit(ws):
    command = f"{sys.executable} -c 'b = bytearray(1024**3); print(\"ALLOCATED\")'"
    out = await sandboxed(ws, command, SandboxLimits(memory_bytes=256 * MiB))
    assert "MemoryError" in out.content
    assert "ALLOCATED" not in out.content
    assert exit_code(out) != 0


async def test_output_cap_applies(ws):
    out = await sandboxed(ws, "head -c 200000 /dev/zero | tr '\\0' x", bash_output_max_chars=1_000)
    assert len(out.content) < 1_200
    assert "chars of output removed" in out.content


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


async def test_wall_timeout_kills_everything(ws):
    duration = f"{30 + uuid.uuid4().int % 1000 / 1000:.3f}"  # a unique command line to look for
    started = time.monotonic()
    out = await sandboxed(ws, f"echo started; sleep {duration} & sleep {duration}", timeout_s=0.5)
    assert time.monotonic() - started < 5
    assert out.is_error
    assert "timed out after 0.5 s" in out.content
    assert "started" in out.content
    deadline = time.monotonic() + 3
    while alive_with(f"sleep {duration}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive_with(f"sleep {duration}") == []


# --- bubblewrap missing, and the explicit opt-out -----------------------------------


async def test_missing_bubblewrap_refuses_bash(ws, tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    ctx = ToolContext(workspace=ws, runner=BubblewrapRunner())
    args = BashInput(command="touch ran")
    out = await LocalToolExecutor().execute(BashTool(), args, ctx)
    assert out.is_error
    assert "bubblewrap" in out.content
    assert "--no-sandbox" in out.content
    assert not (ws / "ran").exists()
    with pytest.raises(ToolError):  # a model-fixable error, never a crash
        await BashTool().run(args, ctx)


async def test_bogus_bubblewrap_path_refuses_bash(ws):
    ctx = ToolContext(workspace=ws, runner=BubblewrapRunner(bwrap="/nonexistent/bwrap"))
    out = await LocalToolExecutor().execute(BashTool(), BashInput(command="touch ran"), ctx)
    assert out.is_error
    assert "bubblewrap" in out.content
    assert "/nonexistent/bwrap" in out.content
    assert "--no-sandbox" in out.content
    assert not (ws / "ran").exists()
    assert issubclass(SandboxUnavailable, ToolError)


def test_no_sandbox_opt_out_uses_plain_runner(tmp_path):
    settings = load_settings(tmp_path, {"sandbox": {"enabled": False}})  # what --no-sandbox sets
    assert isinstance(command_runner(settings), PlainCommandRunner)


def test_sandbox_is_the_default_runner(tmp_path):
    settings = load_settings(
        tmp_path, {"sandbox": {"cpu_seconds": 7, "memory_mb": 300, "file_size_mb": 2, "processes": 64}}
    )
    runner = command_runner(settings)
    assert isinstance(runner, BubblewrapRunner)
    assert runner.limits == SandboxLimits(
        cpu_seconds=7, memory_bytes=300 * MiB, file_size_bytes=2 * MiB, processes=64
    )
    assert load_settings(tmp_path).sandbox.enabled is True


async def test_service_sockets_under_run_are_out_of_reach(tmp_path):
    import socket

    run_dir = Path("/run/workingset-test")
    run_dir.mkdir(exist_ok=True)
    path = run_dir / "service.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        server.listen(1)
        ws = tmp_path / "ws"
        ws.mkdir()
        ctx = ToolContext(workspace=ws, runner=BubblewrapRunner())
        command = f"python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{path}'); print('CONNECTED')\""
        out = await BashTool().run(BashInput(command=command), ctx)
        assert "CONNECTED" not in out.content
    finally:
        server.close()
        path.unlink(missing_ok=True)
        run_dir.rmdir()
