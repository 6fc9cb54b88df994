"""Attacks on the Bash sandbox, one test per class, each asserting the attack fails.

Real bwrap, real processes, run as root (the hard case: root ignores file modes, so
only the unprivileged identity, the view, seccomp and the cgroup keep the host safe).
Limits are small (tests.support.sandbox_support.SMALL) so that the whole file runs in seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import select
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.sandbox_support import (
    SMALL,
    MiB,
    alive_with,
    exit_code,
    marker,
    plant_secrets,
    runner,
    sandboxed,
    unique_sleep,
    wait_for_host_pid,
)
from tools.sandbox import DEFAULT_SANDBOX_ID

PYTHON_CALL = "python -c 'import ctypes, os; c = ctypes.CDLL(None, use_errno=True); {}'"


def errno_of(code: str) -> str:
    """A shell command printing the errno of one libc call made from Python."""
    return PYTHON_CALL.format(f'r = {code}; print("rc", r, "errno", ctypes.get_errno())')


def ids(status: str, name: str) -> list[str]:
    return re.search(rf"^{name}:\s+(.*)$", status, re.M).group(1).split()


async def test_uid_never_maps_to_host_root(ws):
    duration = unique_sleep()
    call = asyncio.create_task(sandboxed(ws, f"sleep {duration}", timeout_s=20))
    try:
        pid = await wait_for_host_pid(["sleep", duration])
        expected = str(DEFAULT_SANDBOX_ID if os.geteuid() == 0 else os.getuid())
        # The command and every process that carries it (bwrap, its init, bash).
        for each in alive_with(f"sleep {duration}"):
            status = Path(f"/proc/{each}/status").read_text()
            assert set(ids(status, "Uid")) == {expected}, status  # real, effective, saved, fs
            assert "0" not in ids(status, "Gid"), status
        status = Path(f"/proc/{pid}/status").read_text()
        assert re.search(r"^CapEff:\s+0+$", status, re.M), status
        # Read from the host, the map's outside ids are host ids: root is never among them.
        lines = Path(f"/proc/{pid}/uid_map").read_text().splitlines()
        assert lines, "the command runs in a user namespace"
        for line in lines:
            _, outside, count = map(int, line.split())
            assert not outside <= 0 < outside + count, line
            assert count == 1 and str(outside) == expected, line
    finally:
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call


async def test_host_sysctl_cannot_be_changed(ws):
    knob = Path("/proc/sys/vm/swappiness")
    before = knob.read_text()
    value = "13" if before.strip() != "13" else "14"
    out = await sandboxed(ws, f"echo {value} > {knob} && echo WROTE; sysctl -w vm.swappiness={value} 2>&1; echo")
    assert "WROTE" not in out.content
    assert knob.read_text() == before


async def test_sysrq_trigger_is_out_of_reach(ws):
    out = await sandboxed(ws, "echo h > /proc/sysrq-trigger && echo WROTE")
    assert "WROTE" not in out.content
    # Covered read-only by bwrap; on a kernel without magic SysRq it does not exist at all.
    expected = "No such file" if not Path("/proc/sysrq-trigger").exists() else "Read-only file system|Permission denied"
    assert re.search(expected, out.content), out.content


async def test_sys_is_absent(ws):
    out = await sandboxed(ws, "test -e /sys || echo NO_SYS; echo 1 > /sys/kernel/mm/ksm/run && echo WROTE")
    assert "NO_SYS" in out.content
    assert "WROTE" not in out.content


async def test_root_only_files_are_unreadable(ws, outside_tmp):
    secret = outside_tmp / "tc" / "root-only.key"
    secret.parent.mkdir()
    secret.write_text("root-only-secret")
    secret.chmod(0o600)
    sandbox = runner(toolchains=(outside_tmp / "tc",))
    out = await sandboxed(ws, f"cat {secret}; cat /etc/shadow | head -1", sandbox=sandbox)
    assert "root-only-secret" not in out.content
    assert out.content.count("Permission denied") == 2, out.content


async def test_setuid_binary_gives_no_privilege(ws, outside_tmp):
    suid = outside_tmp / "tc" / "bin" / "suid-id"
    suid.parent.mkdir(parents=True)
    shutil.copy("/usr/bin/id", suid)
    os.chown(suid, 0, 0)
    suid.chmod(0o4755)
    sandbox = runner(toolchains=(outside_tmp / "tc",))
    out = await sandboxed(ws, f"{suid} -u; {suid} -un 2>/dev/null; su -c id root </dev/null; echo", sandbox=sandbox)
    euid = out.content.splitlines()[0]
    assert euid != "0" and euid.isdigit(), out.content
    assert "uid=0" not in out.content


async def test_new_user_namespace_is_refused(ws):
    out = await sandboxed(ws, f"unshare -U true; echo unshare=$?; {errno_of('c.unshare(0x10000000)')}")
    assert "unshare=1" in out.content, out.content
    assert "rc -1 errno 1" in out.content  # EPERM from the filter (and --disable-userns)


async def test_mount_is_refused(ws):
    fsopen = 'c.syscall(430, b"tmpfs", 0)'
    out = await sandboxed(ws, f"mkdir -p /tmp/m; mount -t tmpfs none /tmp/m; echo mount=$?; {errno_of(fsopen)}")
    assert "mount=32" in out.content or "mount=1" in out.content, out.content
    assert "rc -1 errno 1" in out.content, out.content  # the new mount API too
    assert not any(" /tmp/m " in line for line in Path("/proc/mounts").read_text().splitlines())


async def test_ptrace_of_another_process_is_refused(ws):
    attach = 'c.ptrace(16, int(os.environ["VICTIM"]), 0, 0)'  # PTRACE_ATTACH
    out = await sandboxed(ws, f"sleep 5 & VICTIM=$! {errno_of(attach)}; kill %1")
    assert "rc -1 errno 1" in out.content, out.content


async def test_kernel_keyring_is_refused(ws):
    add_key = 'c.syscall(248, b"user", b"stolen", b"x", 1, -3)'  # add_key into the session keyring
    out = await sandboxed(ws, errno_of(add_key))
    assert "rc -1 errno 1" in out.content, out.content


async def test_rare_socket_families_are_refused(ws):
    """The hypervisor (vsock), raw packets, the kernel's crypto sockets, IPsec keys, XDP
    and netlink beyond routing: the seccomp filter answers as a kernel without them."""
    families = {
        "AF_VSOCK": "socket.AF_VSOCK, socket.SOCK_STREAM",
        "AF_PACKET": "socket.AF_PACKET, socket.SOCK_RAW",
        "AF_ALG": "socket.AF_ALG, socket.SOCK_SEQPACKET",
        "AF_KEY": "15, socket.SOCK_RAW, 2",
        "AF_XDP": "44, socket.SOCK_RAW",
        "NETLINK_NETFILTER": "socket.AF_NETLINK, socket.SOCK_RAW, 12",
    }
    probe = "; ".join(
        f"python -c 'import errno, socket\ntry:\n    socket.socket({args})\nexcept OSError as e:\n"
        f'    print("{name}", errno.errorcode[e.errno])\''
        for name, args in families.items()
    )
    out = await sandboxed(ws, probe + "; python -c 'import socket; socket.socketpair(socket.AF_VSOCK)'")
    said = dict(line.split() for line in out.content.splitlines() if line.split()[0] in families)
    assert said == {**dict.fromkeys(families, "EAFNOSUPPORT"), "NETLINK_NETFILTER": "EPROTONOSUPPORT"}, out.content
    assert "[Errno 97] Address family not supported by protocol" in out.content  # socketpair too


async def test_host_unix_sockets_are_unreachable(ws):
    name = marker()
    paths = [Path("/tmp") / f"{name}.sock", Path("/run") / f"{name}.sock"]
    servers = []
    try:
        for path in paths:
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(str(path))
            server.listen(1)
            servers.append(server)
        abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        abstract.bind(f"\0{name}")
        abstract.listen(1)
        servers.append(abstract)
        targets = [str(p) for p in paths] + [f"\\0{name}"]
        probe = (
            "python -c 'import socket, sys\nfor t in sys.argv[1:]:\n    s = socket.socket(socket.AF_UNIX)\n"
            '    try:\n        s.connect(t.replace("\\\\0", "\\0")); print("CONNECTED", t)\n'
            '    except OSError as e:\n        print("refused", t, e.errno)\' ' + " ".join(targets)
        )
        out = await sandboxed(ws, probe)
        assert "CONNECTED" not in out.content, out.content
        assert out.content.count("refused") == 3
        assert select.select(servers, [], [], 0)[0] == []  # nothing reached the host
    finally:
        for server in servers:
            server.close()
        for path in paths:
            path.unlink(missing_ok=True)


async def test_network_is_unreachable(ws):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        out = await sandboxed(
            ws,
            f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED; "
            "timeout 2 bash -c 'exec 3<>/dev/tcp/1.1.1.1/53' && echo CONNECTED; getent hosts example.com; echo",
        )
        assert "CONNECTED" not in out.content
        assert "Connection refused" in out.content and "Network is unreachable" in out.content, out.content
        assert select.select([listener], [], [], 0)[0] == []


async def test_home_secrets_are_unreadable(ws, host_home):
    secrets = plant_secrets(host_home)
    out = await sandboxed(ws, f"ls {host_home}; " + "; ".join(f"cat {p}" for p in secrets))
    for text in secrets.values():
        assert text.split()[-1] not in out.content
    assert out.content.count("No such file or directory") == len(secrets) + 1, out.content


async def test_host_api_keys_do_not_reach_the_command(ws, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-env-secret")
    out = await sandboxed(ws, "env; cat /proc/1/environ | tr '\\0' '\\n'")
    for needle in ("ANTHROPIC_API_KEY", "sk-ant-secret", "AWS_SECRET", "aws-env-secret"):
        assert needle not in out.content


async def test_fork_bomb_hits_the_process_limit(ws):
    out = await sandboxed(ws, "bomb() { bomb | bomb & }; bomb; sleep 30", SMALL, timeout_s=30)
    assert out.is_error
    assert f"process limit of {SMALL.processes} reached" in out.content, out.content


async def test_memory_hog_hits_the_memory_limit(ws):
    out = await sandboxed(ws, "python -c 'b = bytearray(1024**3); print(\"ALLOCATED\")'", SMALL, timeout_s=30)
    assert out.is_error
    assert "memory limit of 128 MB reached" in out.content, out.content
    assert "ALLOCATED" not in out.content


async def test_cpu_burner_spread_over_children_hits_the_tree_limit(ws):
    burn = "for i in 1 2 3 4; do (while :; do :; done) & done; wait"
    out = await sandboxed(ws, burn, SMALL, timeout_s=30)  # the limit, named below, ended it, not the timeout
    assert out.is_error
    assert "CPU time limit of 1 s reached" in out.content, out.content


async def test_filling_tmp_hits_its_size_limit(ws):
    out = await sandboxed(ws, "head -c 64M /dev/zero > /tmp/fill; ls -l /tmp/fill", SMALL)
    assert out.is_error
    assert "/tmp size limit of 8 MB reached" in out.content, out.content
    assert "No space left on device" in out.content


@pytest.mark.parametrize(
    "grow",
    [
        "for i in $(seq 1 200); do head -c 1M /dev/zero > chunk$i; sleep 0.01; done",
        # Empty files exhaust inodes, not bytes: each counts as a block.
        'python -c \'import time\nfor i in range(200000):\n    open(f"chunk{i}", "w").close()\n    i % 1000 or time.sleep(0.01)\'',
    ],
    ids=["bytes", "empty-files"],
)
async def test_growing_the_workspace_past_its_cap_is_stopped(ws, grow):
    out = await sandboxed(ws, grow, SMALL.model_copy(update={"cpu_seconds": 30}), timeout_s=30)
    assert out.is_error
    assert "workspace growth limit of 16 MB reached" in out.content, out.content
    assert len(list(ws.glob("chunk*"))) < (100 if "head" in grow else 100_000)  # stopped while it ran


async def test_nothing_outlives_the_call(ws):
    a, b = unique_sleep(), unique_sleep()
    out = await sandboxed(ws, f"setsid nohup sleep {a} >/dev/null 2>&1 & (sleep {b} &) ; disown -a; echo started")
    assert "started" in out.content and exit_code(out) == 0
    deadline = time.monotonic() + 30
    while (alive_with(f"sleep {a}") or alive_with(f"sleep {b}")) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert alive_with(f"sleep {a}") == [] and alive_with(f"sleep {b}") == []


async def test_files_the_agent_creates_are_usable_by_the_host_user(outside_tmp):
    if os.geteuid() != 0:
        pytest.skip("needs root to own a workspace as another user")
    owner = 2345
    workspace = outside_tmp / "users-ws"
    workspace.mkdir(mode=0o700)
    os.chown(workspace, owner, owner)
    out = await sandboxed(workspace, "umask 077; echo data > made.txt; mkdir -p sub/deep; echo x > sub/deep/f; ls -ln")
    assert exit_code(out) == 0, out.content
    for path in (workspace / "made.txt", workspace / "sub", workspace / "sub" / "deep" / "f"):
        st = path.stat()
        assert (st.st_uid, st.st_gid) == (owner, owner), path
    as_owner = {"user": owner, "group": owner, "extra_groups": []}
    read = subprocess.run(["cat", str(workspace / "made.txt")], capture_output=True, text=True, **as_owner)
    assert read.stdout == "data\n"
    subprocess.run(["rm", "-r", str(workspace / "sub"), str(workspace / "made.txt")], check=True, **as_owner)
    assert list(workspace.iterdir()) == []


async def test_setuid_files_cannot_be_planted_in_the_workspace(ws):
    """What the command creates lands on disk owned by the workspace's owner (root here):
    a setuid bit would be a root shell for anyone who can reach the workspace."""
    plant = (
        "cp /usr/bin/id suid; chmod u+s suid; chmod 2755 suid; "
        "python -c 'import os; os.close(os.open(\"created\", os.O_CREAT | os.O_WRONLY, 0o4755))'; "
        "mkdir d; chmod g+s d; ls -l"
    )
    out = await sandboxed(ws, plant)
    assert out.content.count("Operation not permitted") >= 4, out.content
    for path in ws.rglob("*"):
        assert not path.lstat().st_mode & 0o6000, (path, oct(path.lstat().st_mode))


async def test_setuid_bits_never_land_even_without_the_filter(ws):
    """The filter refuses setuid modes; the merge strips them anyway, so the layer's
    write-back does not depend on it."""
    plant = "cp /usr/bin/id suid; chmod 4755 suid; mkdir d; chmod 2755 d; stat -c '%a %n' suid d"
    out = await sandboxed(ws, plant, sandbox=runner(seccomp=False))
    assert "4755 suid" in out.content and "2755 d" in out.content, out.content  # set, inside
    for path in (ws / "suid", ws / "d"):
        assert not path.lstat().st_mode & 0o6000, (path, oct(path.lstat().st_mode))


# --- the workspace layer: protected names, the growth cap, the merge ----------------------

GROWTH = SMALL.model_copy(update={"cpu_seconds": 30})
NAMED = f"workspace growth limit of {SMALL.workspace_growth_mb} MB reached"


def data_on_disk(path: Path) -> int:
    return path.lstat().st_blocks * 512


async def test_protected_names_cannot_be_made_where_they_did_not_exist(ws):
    """A `.workingset/config.toml` would be a host hook in a trusted workspace, a
    `.git/hooks/...` one for host git: absent, both are empty and read-only inside."""
    out = await sandboxed(
        ws,
        "mkdir -p .git/hooks; echo 'model = \"x\"' > .workingset/config.toml; "
        "printf '#!/bin/sh\\nid\\n' > .git/hooks/post-checkout; git init -q; rmdir .git; echo done",
    )
    assert "done" in out.content, out.content
    assert out.content.count("Read-only file system") >= 3, out.content
    assert not (ws / ".git").exists() and not (ws / ".git").is_symlink()
    assert not (ws / ".workingset").exists() and not (ws / ".workingset").is_symlink()


async def test_claude_code_files_cannot_be_made_where_they_did_not_exist(ws):
    """A `.mcp.json` or `.claude/settings.json` would start a host process or widen the
    rules of the next run in a trusted workspace: absent, they cannot be made either."""
    out = await sandboxed(
        ws,
        'echo \'{"mcpServers": {"x": {"command": "id"}}}\' > .mcp.json; mkdir -p .claude; '
        'echo \'{"permissions": {"allow": ["Bash"]}}\' > .claude/settings.json; echo done',
    )
    assert "done" in out.content, out.content
    assert not os.path.lexists(ws / ".mcp.json") and not os.path.lexists(ws / ".claude"), out.content


async def test_a_fast_writer_cannot_overshoot_the_growth_cap(ws):
    out = await sandboxed(ws, "head -c 64M /dev/zero > big; ls -l big", GROWTH, timeout_s=30)
    assert out.is_error and NAMED in out.content, out.content
    assert "No space left on device" in out.content
    assert data_on_disk(ws / "big") <= SMALL.workspace_growth_mb * MiB


async def test_one_fallocate_past_the_cap_is_refused_whole(ws):
    """The kernel undoes a refused fallocate, so nothing shows of it: it is the
    command's own error, and nothing of it lands."""
    out = await sandboxed(ws, "touch f; fallocate --keep-size -l 32M f; echo fallocate=$?", GROWTH)
    assert "No space left on device" in out.content and "fallocate=1" in out.content, out.content
    assert data_on_disk(ws / "f") == 0


async def test_fallocating_up_to_the_cap_hits_the_growth_limit(ws):
    """Blocks reserved past a file's end (--keep-size) count against the cap, and none
    of them is written back."""
    grab = PYTHON_CALL.format(
        'fd = os.open("f", os.O_CREAT | os.O_WRONLY)\n'
        "for i in range(8192):\n"
        '    if c.fallocate(fd, 1, i * 4096, 4096) != 0: print("errno", ctypes.get_errno(), "at", i); break'
    )
    out = await sandboxed(ws, grab, GROWTH, timeout_s=30)
    assert out.is_error and NAMED in out.content, out.content
    assert "errno 28" in out.content
    assert (ws / "f").stat().st_size == 0 and data_on_disk(ws / "f") == 0


async def test_a_sparse_file_cannot_hold_more_than_the_cap(ws):
    fill = (
        "truncate -s 60M sparse; for i in $(seq 0 2 58); do "
        "dd if=/dev/zero of=sparse bs=1M seek=$i count=1 conv=notrunc status=none || break; done"
    )
    out = await sandboxed(ws, fill, GROWTH, timeout_s=30)
    assert out.is_error and NAMED in out.content, out.content
    assert (ws / "sparse").stat().st_size == 60 * MiB
    assert data_on_disk(ws / "sparse") <= SMALL.workspace_growth_mb * MiB


async def test_writing_below_a_path_deeper_than_path_max_hits_the_cap(ws):
    name, depth = "d" * 60, 100  # 6,100 characters: past PATH_MAX (4,096)
    deep = (
        f'python -c \'import os\nfor _ in range({depth}):\n    os.mkdir("{name}"); os.chdir("{name}")\n'
        'open("big", "wb").write(bytes(32 << 20))\''
    )
    out = await sandboxed(ws, deep, GROWTH, timeout_s=30)
    assert out.is_error and NAMED in out.content, out.content
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            below = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = below
        written = os.stat("big", dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(fd)
    assert 0 < written.st_blocks * 512 <= SMALL.workspace_growth_mb * MiB


async def test_a_planted_symlink_is_replaced_never_followed(ws, outside_tmp):
    """Links the command left in the workspace in an earlier call point out of it; the
    merge replaces them as entries and never writes through them."""
    victim = outside_tmp / "victim"
    victim.mkdir()
    (victim / "file").write_text("host")
    await sandboxed(ws, f"ln -s {victim} dir; ln -s {victim}/file file")
    out = await sandboxed(ws, "rm dir file; mkdir dir; echo pwned > dir/file; echo pwned > file")
    assert exit_code(out) == 0, out.content
    assert sorted(p.name for p in victim.iterdir()) == ["file"]
    assert (victim / "file").read_text() == "host"
    assert not (ws / "dir").is_symlink() and (ws / "dir" / "file").read_text() == "pwned\n"
    assert not (ws / "file").is_symlink() and (ws / "file").read_text() == "pwned\n"


async def test_hard_links_cannot_multiply_what_lands(ws):
    out = await sandboxed(ws, "head -c 12M /dev/zero > f; for i in $(seq 1 50); do ln f l$i; done", GROWTH)
    assert exit_code(out) == 0, out.content
    inodes = {p.stat().st_ino for p in ws.iterdir()}
    assert len(inodes) == 1 and (ws / "f").stat().st_nlink == 51


async def test_hard_links_too_deep_to_reach_are_copied_within_the_cap(ws):
    """Past the depth the merge walks to link, a second name is a copy: the copies stop
    at the cap, and the limit is named."""
    deep = (
        'python -c \'import os\nfor _ in range(70):\n    os.mkdir("d"); os.chdir("d")\n'
        'open("f", "wb").write(b"x" * (6 << 20))\nfor i in range(3):\n    os.link("f", f"l{i}")\''
    )
    out = await sandboxed(ws, deep, GROWTH, timeout_s=30)
    assert out.is_error and f"{NAMED} while writing the command's changes back" in out.content, out.content
    landed = sum(data_on_disk(p) for p in ws.rglob("*") if p.is_file())
    assert landed <= SMALL.workspace_growth_mb * MiB


async def test_a_call_leaves_no_fd_or_mount_behind(ws):
    await sandboxed(ws, "true")  # the host checks, once per process
    fds = set(os.listdir("/proc/self/fd"))
    mounts = Path("/proc/self/mountinfo").read_text()
    await sandboxed(ws, "echo x > f; head -c 1M /dev/zero > g")
    assert set(os.listdir("/proc/self/fd")) <= fds
    assert Path("/proc/self/mountinfo").read_text() == mounts
