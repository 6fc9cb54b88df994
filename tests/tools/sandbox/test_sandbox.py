"""The bubblewrap sandbox around Bash, with real bwrap and real processes: what a command
can use (its workspace, the toolchain, git), and the settings that shape it.

Every test runs BashTool through a ToolContext whose runner is a BubblewrapRunner, so
what is checked is what the model's Bash calls get. The tests run as root (as the
harness may): the command then runs as the dedicated sandbox uid on an idmapped
workspace. Attacks are in test_sandbox_attacks.py, refusals in test_sandbox_refusals.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.errors import ConfigError
from agents.opening._assembly import command_runner
from agents.settings._config import load_settings
from tests.support.sandbox_support import (
    MiB,
    alive_with,
    as_user,
    assert_secrets_hidden,
    exit_code,
    marker,
    plant_secrets,
    runner,
    sandboxed,
    unique_sleep,
    user_workspace,
)
from tools import BashTool, ToolContext
from tools.base import PlainCommandRunner
from tools.bash import BashInput
from tools.sandbox import DEFAULT_SANDBOX_ID, BubblewrapRunner, SandboxLimits
from tools.sandbox.view import harness_files

ALLOWED_ENV = {"PATH", "HOME", "LANG", "TERM", "PWD", "OLDPWD", "SHLVL", "_"}


def git(workspace: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(workspace), *args], check=True, capture_output=True, text=True).stdout


def git_repo(workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    git(workspace, "init", "-q")
    git(workspace, "add", "-A")
    git(workspace, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")


# --- the workspace ------------------------------------------------------------------


async def test_write_inside_workspace_persists(ws):
    out = await sandboxed(ws, "echo hello > made.txt && mkdir -p sub && echo deep > sub/file.txt")
    assert exit_code(out) == 0, out.content
    assert (ws / "made.txt").read_text() == "hello\n"
    assert (ws / "sub" / "file.txt").read_text() == "deep\n"


async def test_workspace_files_appear_owned_by_the_command(ws):
    (ws / "given.txt").write_text("x")
    out = await sandboxed(ws, "id -u; stat -c %u given.txt; test -w given.txt && echo WRITABLE")
    uid = str(DEFAULT_SANDBOX_ID if os.geteuid() == 0 else os.getuid())
    assert out.content.split()[:3] == [uid, uid, "WRITABLE"], out.content


@pytest.mark.parametrize("target", ["/etc", "/usr/local", "/root", "/var/tmp"])
async def test_write_outside_workspace_fails(ws, target):
    path = Path(target) / marker()
    try:
        out = await sandboxed(ws, f"echo pwned > {path} && echo WROTE")
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


async def test_only_system_dirs_toolchain_and_workspace_are_visible(ws):
    out = await sandboxed(ws, "ls /; test -e /var || echo NO_VAR; test -e /home || echo NO_HOME; ls /run | wc -l")
    top = set(out.content.split())
    assert {"usr", "etc", "tmp", "proc", "dev"} <= top
    # The toolchain is the harness's Python prefix: a virtualenv under /work (or /home) shows that
    # directory, holding only the way down to it.
    toolchain = {Path(prefix).parts[1] for prefix in (sys.prefix, sys.base_prefix)}
    assert {"NO_VAR", "NO_HOME"} - {f"NO_{d.upper()}" for d in toolchain} <= top
    assert not top & ({"var", "home", "sys", "srv", "opt", "mnt", "work"} - toolchain)


# --- git in the workspace ------------------------------------------------------------


async def test_git_reads_a_read_only_dot_git(ws):
    git_repo(ws)
    out = await sandboxed(ws, "echo two >> a.txt; git diff --stat; git status --short; git log --oneline | wc -l")
    assert "a.txt | 1 +" in out.content, out.content
    assert " M a.txt" in out.content
    assert exit_code(out) == 0


async def test_dot_git_and_dot_workingset_are_read_only(ws):
    git_repo(ws)
    (ws / ".workingset").mkdir()
    (ws / ".workingset" / "config.toml").write_text("model = 'x'\n")
    before = (ws / ".git" / "config").read_text()
    out = await sandboxed(
        ws,
        "echo '[core] fsmonitor = evil' >> .git/config; echo bad > .workingset/config.toml; "
        "git -c user.name=a -c user.email=a@a commit -qam change; echo done",
    )
    assert out.content.count("Read-only file system") >= 2, out.content
    assert (ws / ".git" / "config").read_text() == before
    assert (ws / ".workingset" / "config.toml").read_text() == "model = 'x'\n"
    assert git(ws, "log", "--oneline").count("\n") == 1  # no commit landed


async def test_allowing_writes_leaves_dot_git_writable(ws):
    git_repo(ws)
    sandbox = runner().allowing_writes(".git")
    out = await sandboxed(ws, "GIT_INDEX_FILE=.git/tmp.index git read-tree HEAD && ls .git/tmp.index", sandbox=sandbox)
    assert exit_code(out) == 0, out.content
    assert (ws / ".git" / "tmp.index").exists()


async def test_a_dot_git_symlink_is_not_bound(ws, host_home):
    """A `.git` the agent turned into a symlink would make bwrap bind its target."""
    (host_home / "secret").write_text("home-secret")
    (ws / ".git").symlink_to(host_home)
    out = await sandboxed(ws, "cat .git/secret; ls -la .git")
    assert "home-secret" not in out.content


# --- the toolchain ------------------------------------------------------------------------


async def test_harness_python_and_its_packages_are_available(ws):
    out = await sandboxed(ws, "python -c 'import sys, pytest; print(sys.prefix)'")
    assert out.content.splitlines()[0] == str(Path(sys.prefix).resolve()), out.content


async def test_harness_own_packages_are_masked(ws):
    inside_prefix = [p for p in harness_files() if p.is_relative_to(Path(sys.prefix).resolve())]
    assert inside_prefix, "the editable install puts a finder, a .pth and a dist-info into the prefix"
    out = await sandboxed(
        ws,
        "python -c 'import importlib.metadata as m; print(m.version(\"workingset\"))'; "
        "python -c 'import agents' ; " + "; ".join(f"wc -c < {p}" for p in inside_prefix if p.is_file()),
    )
    assert out.content.splitlines()[0] == "None", out.content  # its metadata is gone
    assert "No module named 'agents'" in out.content
    sizes = [line for line in out.content.splitlines() if line.strip().isdigit()]
    assert sizes and set(sizes) == {"0"}  # the .pth, the finder and the script are empty files inside


async def test_a_configured_toolchain_is_visible_read_only(ws, outside_tmp):
    tool = outside_tmp / "tc" / "bin" / "hello-tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho hello-from-toolchain\n")
    tool.chmod(0o755)
    sandbox = runner(toolchains=(outside_tmp / "tc",))
    out = await sandboxed(ws, f"hello-tool; echo x > {tool} && echo WROTE", sandbox=sandbox)
    assert "hello-from-toolchain" in out.content, out.content
    assert "WROTE" not in out.content


# --- network and processes --------------------------------------------------------


async def test_only_a_loopback_interface(ws):
    out = await sandboxed(ws, "tail -n +3 /proc/net/dev | cut -d: -f1")
    assert out.content.split() == ["lo", "exit", "code:", "0"]


async def test_unix_ip_and_routing_netlink_sockets_still_work(ws):
    """What builds and tests use: local sockets, TCP on loopback (v4 and v6), and the
    routing netlink glibc asks for the interfaces."""
    command = (
        'python -c \'import socket\na, b = socket.socketpair(); a.send(b"pair-ok"); print(b.recv(7).decode())\n'
        'for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):\n'
        "    server = socket.create_server((host, 0), family=family)\n"
        '    socket.create_connection(server.getsockname()[:2]).send(b"tcp-ok")\n'
        "    print(server.accept()[0].recv(6).decode(), family.name)\n"
        'print("interfaces", socket.if_nameindex())\''
    )
    out = await sandboxed(ws, command)
    assert out.content.splitlines()[:4] == ["pair-ok", "tcp-ok AF_INET", "tcp-ok AF_INET6", "interfaces [(1, 'lo')]"], (
        out.content
    )


async def test_new_pid_namespace(ws):
    out = await sandboxed(ws, "echo $$; ls /proc | grep -c '^[0-9]'")
    first, count = out.content.splitlines()[:2]
    assert int(first) <= 3  # bwrap's init is 1, the command right after it
    assert int(count) < 10


async def test_seccomp_keeps_threads_and_subprocesses_working(ws):
    """clone3 answers ENOSYS; libc falls back to clone, which the filter checks."""
    command = (
        'python -c \'import threading, subprocess; t = threading.Thread(target=print, args=("thread-ok",)); '
        't.start(); t.join(); print(subprocess.run(["echo", "spawn-ok"], capture_output=True, text=True).stdout)\''
    )
    out = await sandboxed(ws, command)
    assert "thread-ok" in out.content and "spawn-ok" in out.content, out.content


async def test_seccomp_refuses_x32_calls(ws):
    command = "python -c 'import ctypes; c = ctypes.CDLL(None, use_errno=True); print(c.syscall(0x40000000 | 39), ctypes.get_errno())'"
    out = await sandboxed(ws, command)
    assert out.content.splitlines()[0] == "-1 1", out.content  # EPERM, not ENOSYS: the filter answered


# --- environment ------------------------------------------------------------------


async def test_environment_is_an_allow_list(ws, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    out = await sandboxed(ws, "env")
    assert exit_code(out) == 0
    assert "ghp-secret" not in out.content
    names = {line.split("=", 1)[0] for line in out.content.splitlines()[:-1] if "=" in line}
    assert names <= ALLOWED_ENV, names - ALLOWED_ENV


async def test_pass_env_lets_a_named_variable_through(ws, monkeypatch):
    monkeypatch.setenv("MY_BUILD_FLAG", "fast")
    monkeypatch.setenv("OTHER_VAR", "hidden")
    out = await sandboxed(ws, "echo flag=$MY_BUILD_FLAG other=$OTHER_VAR", sandbox=runner(pass_env=("MY_BUILD_FLAG",)))
    assert out.content.splitlines()[0] == "flag=fast other="


async def test_workspace_at_home_does_not_expose_secrets(host_home):
    secrets = plant_secrets(host_home)
    out = await sandboxed(host_home, "echo ok > made.txt; " + "; ".join(f"cat {p}" for p in secrets))
    assert (host_home / "made.txt").read_text() == "ok\n"
    assert_secrets_hidden(out, secrets)
    for path, text in secrets.items():
        assert path.read_text() == text  # and the sandbox could not overwrite them


# --- limits -----------------------------------------------------------------------


async def test_file_size_limit(ws):
    command = 'dd if=/dev/zero of=big bs=1M count=5; echo "dd exit $?"'
    out = await sandboxed(ws, command, SandboxLimits(file_size_mb=1))
    assert "File size limit exceeded" in out.content
    assert "dd exit 153" in out.content  # 128 + SIGXFSZ
    assert (ws / "big").stat().st_size <= MiB


async def test_output_cap_applies(ws):
    out = await sandboxed(ws, "head -c 200000 /dev/zero | tr '\\0' x", bash_output_max_chars=1_000)
    assert len(out.content) < 1_200
    assert "chars of output removed" in out.content


async def test_wall_timeout_kills_everything(ws):
    duration = unique_sleep()
    started = time.monotonic()
    out = await sandboxed(ws, f"echo started; sleep {duration} & sleep {duration}", timeout_s=0.5)
    assert time.monotonic() - started < 20  # at its timeout, not after the 30 s sleeps
    assert out.is_error
    assert "timed out after 0.5 s" in out.content
    assert "started" in out.content
    deadline = time.monotonic() + 30
    while alive_with(f"sleep {duration}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive_with(f"sleep {duration}") == []


async def test_the_call_cgroup_is_removed_afterwards(ws):
    host = runner().host()
    assert host.cgroups is not None
    mine = f"call-{os.getpid()}-"  # other processes on this host may be running sandboxes of their own

    def calls() -> set:
        return {p for _, parent in host.cgroups.parents for p in parent.iterdir() if p.name.startswith(mine)}

    before = calls()
    await sandboxed(ws, "sleep 0.2 & echo started")
    assert calls() <= before


# --- settings and the opt-out -------------------------------------------------------


def test_no_sandbox_opt_out_uses_plain_runner(tmp_path):
    settings = load_settings(tmp_path, {"sandbox": {"enabled": False}})  # what --no-sandbox sets
    assert isinstance(command_runner(settings), PlainCommandRunner)


def test_settings_map_onto_the_runner(tmp_path):
    settings = load_settings(
        tmp_path,
        {
            "sandbox": {
                "cpu_seconds": 7,
                "memory_mb": 300,
                "file_size_mb": 2,
                "processes": 64,
                "tmp_size_mb": 9,
                "workspace_growth_mb": 11,
                "uid": 91000,
                "gid": 91001,
                "toolchains": [str(tmp_path)],
                "protected": [".git"],
                "pass_env": ["CC"],
                "cgroup": "v1",
            }
        },
    )
    sandbox = command_runner(settings)
    assert isinstance(sandbox, BubblewrapRunner)
    assert sandbox.limits == SandboxLimits(
        cpu_seconds=7, memory_mb=300, processes=64, file_size_mb=2, tmp_size_mb=9, workspace_growth_mb=11
    )
    assert (sandbox.uid, sandbox.gid, sandbox.toolchains) == (91000, 91001, (tmp_path.resolve(),))
    assert (sandbox.protected, sandbox.pass_env, sandbox.cgroup) == ((".git",), ("CC",), "v1")
    assert command_runner(settings, writable=(".git",)).protected == ()
    assert load_settings(tmp_path).sandbox.enabled is True


def test_a_protected_path_outside_the_workspace_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="not a path inside the workspace"):
        load_settings(tmp_path, {"sandbox": {"protected": ["../outside"]}})


def test_a_credential_in_pass_env_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY looks like a credential"):
        load_settings(tmp_path, {"sandbox": {"pass_env": ["CC", "ANTHROPIC_API_KEY"]}})


async def test_non_root_harness_maps_its_own_uid_and_states_its_weaker_limits(outside_tmp):
    """Run as an ordinary user: bwrap maps the caller's own uid; with no delegated cgroup
    the sandbox refuses unless weak limits are accepted, and then runs under them."""
    user = 4321
    script = (
        "import asyncio, sys\nfrom pathlib import Path\n"
        "from tools import BashTool, ToolContext\nfrom tools.bash import BashInput\n"
        "from tools.sandbox import BubblewrapRunner\n"
        "async def main(weak):\n"
        "    ctx = ToolContext(workspace=Path(sys.argv[1]), runner=BubblewrapRunner(weak_limits=weak))\n"
        "    print((await BashTool().run(BashInput(command='id -u; echo made > f'), ctx)).content)\n"
        "try:\n    asyncio.run(main(False))\nexcept Exception as exc:\n    print('REFUSED:', exc)\n"
        "asyncio.run(main(True))\n"
    )
    workspace = user_workspace(outside_tmp, user)
    text = as_user(user, script, str(workspace), scratch=outside_tmp)
    assert "REFUSED: no usable cgroup" in text and "sandbox.weak_limits = true" in text, text
    after = text.split("REFUSED")[1].splitlines()[1:]
    assert after[0] == str(user), text
    assert (workspace / "f").stat().st_uid == user


async def test_plain_runner_still_runs_commands(ws):
    out = await BashTool().run(BashInput(command="echo plain"), ToolContext(workspace=ws, runner=PlainCommandRunner()))
    assert out.content == "plain\nexit code: 0"
