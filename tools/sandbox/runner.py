"""BubblewrapRunner: the CommandRunner that puts every Bash command in the sandbox.

One call, in order: the host checks (once per process, with a smoke run); the
per-call cgroup; in root mode the idmapped workspace (identity.py); the view
(view.py); the seccomp filter on a pipe; then the child, between fork and exec, moves
itself into the cgroup, builds its private stage (root mode), sets its rlimits and
drops to the sandbox uid before it executes bwrap. The watch (watch.py) takes over
from there. The runner is a frozen model of its configuration (config.py), so it
pickles to Ray workers; what it learns about the host is cached per process.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import tempfile
from pathlib import Path

from pydantic import Field

from tools.base import CommandLaunch, ToolError
from tools.remove_tree import remove_tree
from tools.sandbox.cgroups import CallCgroup, CgroupUnavailable
from tools.sandbox.config import SandboxLimits, SandboxOptions
from tools.sandbox.identity import Identity, Stage, reachable
from tools.sandbox.linux import describe
from tools.sandbox.probe import (
    OPT_OUT,
    Host,
    SandboxUnavailable,
    bubblewrap_path,
    check_host,
    explain_bwrap_failure,
)
from tools.sandbox.venv import VirtualEnv
from tools.sandbox.view import View, environment
from tools.sandbox.watch import GrowthMeter, SandboxWatch

__all__ = ["BubblewrapRunner"]

_BWRAP_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}

_hosts: dict[tuple, Host] = {}


class BubblewrapRunner(SandboxOptions):
    """Runs `bash -c CMD` inside bubblewrap: unprivileged, filtered, limited, allow-listed."""

    limits: SandboxLimits = Field(default_factory=SandboxLimits)

    @classmethod
    def configured(cls, config: SandboxLimits | SandboxOptions) -> BubblewrapRunner:
        """The runner for a model holding the limits' and the options' fields (the
        settings' `[sandbox]`); toolchain paths are resolved here (`~/.cargo`)."""
        values = config.model_dump()
        runner = cls(
            limits=SandboxLimits(**{name: values[name] for name in SandboxLimits.model_fields}),
            **{name: values[name] for name in SandboxOptions.model_fields},
        )
        update: dict[str, object] = {}
        if runner.toolchains is not None:
            update["toolchains"] = tuple(p.expanduser().resolve() for p in runner.toolchains)
        if runner.virtualenv is not None:
            update["virtualenv"] = runner.virtualenv.expanduser().resolve()
        return runner.model_copy(update=update) if update else runner

    def allowing_writes(self, *names: str) -> BubblewrapRunner:
        """A copy that leaves these protected workspace entries writable (grading's git index)."""
        return self.model_copy(update={"protected": tuple(p for p in self.protected if p not in names)})

    # --- the host, once per process -------------------------------------------------

    def host(self) -> Host:
        # Where bwrap is found is looked up every call: it may have been removed since.
        key = (bubblewrap_path(self.bwrap), self.bwrap, self.uid, self.gid, self.seccomp, self.weak_limits,
               self.cgroup, self.cgroup_parent, os.geteuid())
        if key not in _hosts:
            host = check_host(
                bwrap=self.bwrap, uid=self.uid, gid=self.gid, use_seccomp=self.seccomp,
                weak_limits=self.weak_limits, cgroup=self.cgroup, cgroup_parent=self.cgroup_parent,
            )
            self._smoke(host)
            _hosts[key] = host
        return _hosts[key]

    def _smoke(self, host: Host) -> None:
        """Build one real sandbox around `true`: whatever this host lacks shows up here."""
        workspace = Path(tempfile.mkdtemp(prefix="workingset-sandbox-probe-"))
        try:
            launch = self._launch(host, "true", workspace)
            assert isinstance(launch.watch, SandboxWatch)
            launch.watch.run_unwatched()
            try:
                done = subprocess.run(
                    launch.argv, env=launch.env, pass_fds=launch.pass_fds, preexec_fn=launch.preexec_fn,
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                    text=True, timeout=60,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                raise launch.failure(exc) from exc
            finally:
                launch.watch.close()
            if done.returncode != 0:
                raise SandboxUnavailable(explain_bwrap_failure(done.stderr))
        finally:
            remove_tree(workspace, ignore_errors=True)

    # --- one call -------------------------------------------------------------------

    def launch(self, command: str, workspace: Path) -> CommandLaunch:
        return self._launch(self.host(), command, workspace)

    def _launch(self, host: Host, command: str, workspace: Path) -> CommandLaunch:
        ws = workspace.resolve()
        if ws == Path("/"):
            raise SandboxUnavailable(f"the workspace cannot be / (the whole host); choose a project directory, {OPT_OUT}")
        limits = self.limits
        watch = SandboxWatch(
            cgroup=None, cpu_seconds=limits.cpu_seconds, memory_bytes=limits.memory_bytes,
            processes=limits.processes, tmp_bytes=limits.tmp_bytes,
            growth=GrowthMeter(ws, limits.workspace_growth_bytes, skip=tuple(ws / p for p in self.protected)),
        )
        stage = _stage(ws, host.identity)
        if stage is not None:
            watch.on_close.append(stage.close)
        try:
            if host.cgroups is not None:
                watch.cgroup = CallCgroup.create(host.cgroups, memory_bytes=limits.memory_bytes, processes=limits.processes)
            return self._assemble(host, command, ws, stage, watch)
        except BaseException as exc:
            watch.close()
            if isinstance(exc, CgroupUnavailable):
                raise SandboxUnavailable(f"{exc}; {OPT_OUT}") from None
            raise

    def _assemble(self, host: Host, command: str, ws: Path, stage: Stage | None, watch: SandboxWatch) -> CommandLaunch:
        identity = host.identity

        def source(path: Path) -> str:
            if stage is not None and not reachable(path, identity.uid, identity.gid):
                return stage.add(path)
            return str(path)

        pass_fds: list[int] = []

        def empty_fd() -> int:
            fd = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
            watch.child_fds.append(fd)
            pass_fds.append(fd)
            return fd

        venv = VirtualEnv.of(self.virtualenv) if self.virtualenv is not None else None
        toolchains = self.effective_toolchains()
        view = View(
            workspace=ws, workspace_source=stage.workspace if stage else str(ws), toolchains=toolchains,
            protected=self.protected, tmp_bytes=self.limits.tmp_bytes, source=source, empty_fd=empty_fd, venv=venv,
        )
        argv = [
            host.bwrap,
            "--unshare-user", "--disable-userns",
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            *view.mounts(),
            "--chdir", str(ws),
            *environment(view.path_variable(), self.pass_env, venv),
        ]
        if host.seccomp_program is not None:
            read_end = _pipe_with(host.seccomp_program, watch)
            argv += ["--seccomp", str(read_end)]
            pass_fds.append(read_end)
        info_read, info_write = os.pipe2(os.O_CLOEXEC)
        block_read, block_write = os.pipe2(os.O_CLOEXEC)
        watch.held_fds += [info_read, block_write]
        watch.child_fds += [info_write, block_read]
        watch.handshake = (info_read, block_write)
        argv += ["--info-fd", str(info_write), "--block-fd", str(block_read)]
        pass_fds += [info_write, block_read]
        argv += ["--", "bash", "-c", command]
        cgroup_fds = watch.cgroup.procs_fds() if watch.cgroup else []
        watch.child_fds += cgroup_fds
        error_read, error_write = os.pipe2(os.O_CLOEXEC)
        watch.held_fds.append(error_read)
        watch.child_fds.append(error_write)
        child = _ChildSetup(cgroup_fds, stage, _rlimits(self.limits, weak=host.cgroups is None), identity, error_write)
        return CommandLaunch(
            argv, dict(_BWRAP_ENV), tuple(pass_fds), preexec_fn=child, watch=watch,
            failure=lambda exc: _spawn_failure(exc, error_read),
        )


def _stage(ws: Path, identity: Identity) -> Stage | None:
    if not identity.drops_root:
        return None
    try:
        return Stage.prepare(ws, identity)
    except OSError as exc:
        raise SandboxUnavailable(
            f"cannot make an idmapped mount of the workspace {ws} ({describe(exc)}); its filesystem may not "
            f"support idmapped mounts: move it to one that does (ext4, xfs, btrfs, tmpfs) or run the harness "
            f"as a non-root user, {OPT_OUT}"
        ) from None


def _pipe_with(data: bytes, watch: SandboxWatch) -> int:
    """A pipe already holding `data` (small: it fits the pipe buffer); returns the read end."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    os.write(write_end, data)
    os.close(write_end)
    watch.child_fds.append(read_end)
    return read_end


def _rlimits(limits: SandboxLimits, *, weak: bool) -> list[tuple[int, int]]:
    chosen = [(resource.RLIMIT_FSIZE, limits.file_size_bytes), (resource.RLIMIT_CORE, 0)]
    if weak:  # no cgroup: per process (CPU, address space) and per uid (processes) instead
        cpu = max(1, int(limits.cpu_seconds))
        chosen += [(resource.RLIMIT_CPU, cpu), (resource.RLIMIT_AS, limits.memory_bytes),
                   (resource.RLIMIT_NPROC, limits.processes)]
    clamped = []
    for which, value in chosen:  # never above what the harness itself may use
        hard = resource.getrlimit(which)[1]
        clamped.append((which, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return clamped


class _ChildSetup:
    """Runs in the forked child before it executes bwrap. Plain syscalls only; a
    failure is written to the error pipe for the parent to report."""

    def __init__(self, cgroup_fds: list[int], stage: Stage | None, rlimits: list[tuple[int, int]],
                 identity: Identity, error_fd: int):
        self.cgroup_fds = cgroup_fds
        self.stage = stage
        self.rlimits = rlimits
        self.identity = identity
        self.error_fd = error_fd

    def __call__(self) -> None:
        step = "joining the call's cgroup"
        try:
            for fd in self.cgroup_fds:
                os.write(fd, b"0")
            if self.stage is not None:
                step = "staging the workspace in a private mount namespace"
                self.stage.enter()
            step = "setting resource limits"
            for which, value in self.rlimits:
                resource.setrlimit(which, (value, value))
            if self.identity.drops_root:
                step = f"dropping to uid {self.identity.uid}"
                os.setgroups([])
                os.setresgid(self.identity.gid, self.identity.gid, self.identity.gid)
                os.setresuid(self.identity.uid, self.identity.uid, self.identity.uid)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.write(self.error_fd, f"{step}: {exc}".encode()[:4000])
            raise


def _spawn_failure(exc: BaseException, error_read: int) -> ToolError:
    detail = ""
    with contextlib.suppress(OSError):
        os.set_blocking(error_read, False)
        detail = os.read(error_read, 4000).decode(errors="replace")
    return SandboxUnavailable(f"the sandbox could not start the command ({detail or exc}); {OPT_OUT}")
