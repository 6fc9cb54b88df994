"""The sandbox launcher (tools/sandbox/launcher.py, launcher.c): both builds carry out
the same steps the same way, a failed step is one line naming it, and a harness without
the C build still runs Bash with every protection, through the Python one, and says so.

The launcher is run for real: its steps make real cgroups, mounts and limits."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.sandbox_support import SMALL, runner, sandboxed
from tools.sandbox import launcher
from tools.sandbox.probe import launcher_fallback_note


@pytest.fixture(params=["c", "python"])
def build(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """The launcher's command: the C build (made by the install) or the Python one."""
    if request.param == "python":
        return launcher.python_launcher()
    if not os.access(launcher.BUILT, os.X_OK):
        if shutil.which("cc") is None:
            pytest.skip("no C compiler here, so no C launcher was built (the Python one is tested)")
        pytest.fail(f"{launcher.BUILT} was not built: run pip install -e . (or python setup.py build_ext --inplace)")
    return (launcher.BUILT,)


def launch(build: tuple[str, ...], *words: str, fds: tuple[int, ...] = ()) -> tuple[subprocess.CompletedProcess, str]:
    """Run the launcher with `words` (steps, then -- PROGRAM...); its result and what it
    wrote to its error fd."""
    error_read, error_write = os.pipe2(os.O_CLOEXEC)
    try:
        argv = [*build, "error-fd", str(error_write), *words]
        done = subprocess.run(argv, pass_fds=(error_write, *fds), capture_output=True, text=True, timeout=60)
        os.close(error_write)
        error_write = -1
        with os.fdopen(error_read, "rb") as errors:
            error_read = -1
            return done, errors.read().decode()
    finally:
        for fd in (error_read, error_write):
            if fd >= 0:
                os.close(fd)


def test_a_failed_step_exits_127_with_one_line_naming_the_step(build, tmp_path):
    done, error = launch(build, "step", "making the stage", "mkdir", str(tmp_path / "missing" / "x"), "--", "/bin/true")
    assert done.returncode == 127
    assert error.startswith("making the stage: [Errno 2] ") and str(tmp_path / "missing" / "x") in error
    assert "\n" not in error


def test_the_program_runs_after_the_steps_with_their_limits_and_no_fd_of_theirs(build):
    done, error = launch(build, "rlimit", "7", "64", "--", "/bin/sh", "-c", "ulimit -n; ls /proc/self/fd | wc -l")
    assert (done.returncode, error) == (0, "")
    limit, fds = done.stdout.split()
    assert limit == "64"
    assert int(fds) == 4  # stdin, stdout, stderr and ls's own: the error fd did not reach the program


def test_the_program_gets_default_handling_of_sigpipe(build):
    # Python ignores SIGPIPE; an ignored signal would stay ignored in every command.
    done, _ = launch(build, "--", "/bin/sh", "-c", "grep SigIgn /proc/self/status")
    ignored = int(done.stdout.split()[1], 16)
    assert not ignored & (1 << (13 - 1))


@pytest.fixture
def v2_cgroup() -> Iterator[Path]:
    """A new cgroup v2 below this process's own, on the host's cgroup2 mount."""
    mounts = [
        line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines() if line.split()[2] == "cgroup2"
    ]
    own = next(
        (line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::")), None
    )
    if not mounts or own is None:
        pytest.skip("no cgroup2 hierarchy on this host")
    directory = Path(mounts[0]) / own.lstrip("/") / f"launcher-test-{uuid.uuid4().hex[:8]}"
    try:
        directory.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot make a cgroup2 cgroup here ({exc})")
    try:
        yield directory
    finally:
        directory.rmdir()


def _in_cgroup(build: tuple[str, ...], cgroup: Path, script: str) -> subprocess.CompletedProcess:
    fd = os.open(cgroup, os.O_RDONLY | os.O_DIRECTORY)
    try:
        done, error = launch(build, "spawn-into", str(fd), "--", "/bin/sh", "-c", script, fds=(fd,))
    finally:
        os.close(fd)
    assert error == ""
    return done


def test_spawn_into_runs_the_program_inside_the_cgroup_and_ends_as_it_ended(build, v2_cgroup):
    done = _in_cgroup(build, v2_cgroup, "grep '^0::' /proc/self/cgroup; exit 3")
    assert done.stdout.strip().endswith(f"/{v2_cgroup.name}")
    assert done.returncode == 3


def test_spawn_into_ends_by_the_signal_that_ended_the_program(build, v2_cgroup):
    assert _in_cgroup(build, v2_cgroup, "kill -TERM $$").returncode == -15


async def test_without_the_c_launcher_bash_runs_through_python_with_every_protection(ws, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(launcher, "BUILT", str(tmp_path / "not-built"))
    sandbox = runner(SMALL)
    with caplog.at_level(logging.WARNING):
        out = await sandboxed(
            ws, "grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status; id -u; echo x > made", sandbox=sandbox
        )
    host = sandbox.host()
    assert host.launcher == launcher.python_launcher()
    cgroup = host.cgroups.version if host.cgroups else None
    assert launcher_fallback_note(f"{tmp_path / 'not-built'} is missing", cgroup) in caplog.messages
    fields = dict(line.split(":\t") for line in out.content.splitlines() if ":\t" in line)
    assert fields == {"Seccomp": "2", "NoNewPrivs": "1", "CapEff": "0000000000000000"}, out.content
    assert out.content.splitlines()[3] != "0"  # not root
    assert (ws / "made").read_text() == "x\n"  # through the layer, merged back
    hog = await sandboxed(ws, "python -c 'b = bytearray(1024**3)'", sandbox=sandbox, timeout_s=30)
    assert f"memory limit of {SMALL.memory_mb} MB reached" in hog.content  # the call's cgroup


async def test_a_c_launcher_that_does_not_run_here_falls_back_to_python_and_says_why(ws, tmp_path, monkeypatch, caplog):
    foreign = tmp_path / "sandbox-launcher"
    foreign.write_bytes(b"\x7fELF not for this machine")
    foreign.chmod(0o755)
    monkeypatch.setattr(launcher, "BUILT", str(foreign))
    sandbox = runner()
    with caplog.at_level(logging.WARNING):
        out = await sandboxed(ws, "echo ran", sandbox=sandbox)
    assert out.content.startswith("ran"), out.content
    assert sandbox.host().launcher == launcher.python_launcher()
    assert [m for m in caplog.messages if f"{foreign} does not run here: ENOEXEC" in m]
