"""BubblewrapRunner: the CommandRunner that puts every Bash command in the sandbox.

One call, in order: the host checks (once per process, with a smoke run, which also
finds out whether the kernel can give the workspace layer); the per-call cgroup; the
stage (stage.py): in root mode the idmapped workspace (identity.py) and the layer's
tmpfs, made here; the view (view.py); the seccomp filter on a pipe; then the child,
between fork and exec, moves itself into the cgroup, builds its private stage (the
overlay of layer over workspace; as an ordinary user inside a user namespace of its
own, making the layer there and sending it back), sets its rlimits and drops to the
sandbox uid before it executes bwrap. The watch (watch.py) takes over from there, and
merges the layer back when the command has ended. The runner is a frozen model of its
configuration (config.py), so it pickles to Ray workers; what it learns about the host
is cached per process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

from pydantic import Field

from tools.base import CommandLaunch, ToolError
from tools.remove_tree import remove_tree
from tools.sandbox.cgroups import CallCgroup, CgroupUnavailable
from tools.sandbox.config import SandboxLimits, SandboxOptions
from tools.sandbox.identity import Identity, idmapped_tree, reachable
from tools.sandbox.layer import WorkspaceLayer
from tools.sandbox.linux import describe
from tools.sandbox.probe import (
    OPT_OUT,
    Host,
    LayerUnavailable,
    SandboxUnavailable,
    bubblewrap_path,
    check_host,
    explain_bwrap_failure,
    layer_unavailable,
)
from tools.sandbox.stage import LAYER_STEP, LayerSpec, Stage, make_layer, stage_root
from tools.sandbox.venv import VirtualEnv
from tools.sandbox.view import View, environment, remove_stand_ins
from tools.sandbox.watch import GrowthMeter, SandboxWatch

__all__ = ["BubblewrapRunner"]

_BWRAP_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}

_hosts: dict[tuple, Host] = {}
_layer_filesystems: dict[tuple, str | None] = {}  # (host key, st_dev): None, or why no layer there


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

    def _host_key(self) -> tuple:
        # Where bwrap is found is looked up every call: it may have been removed since.
        return (bubblewrap_path(self.bwrap), self.bwrap, self.uid, self.gid, self.seccomp, self.weak_limits,
                self.weak_growth_limit, self.cgroup, self.cgroup_parent, os.geteuid())

    def host(self) -> Host:
        key = self._host_key()
        if key not in _hosts:
            host = check_host(
                bwrap=self.bwrap, uid=self.uid, gid=self.gid, use_seccomp=self.seccomp,
                weak_limits=self.weak_limits, cgroup=self.cgroup, cgroup_parent=self.cgroup_parent,
            )
            probe = Path(tempfile.mkdtemp(prefix="workingset-sandbox-probe-")).resolve()
            try:
                try:
                    self._smoke(host, probe, layered=True)
                    _layer_filesystems[(key, probe.stat().st_dev)] = None
                except LayerUnavailable:
                    if not self.weak_growth_limit:
                        raise
                    host = dataclasses.replace(host, layered=False)
                    self._smoke(host, probe, layered=False)
            finally:
                remove_tree(probe, ignore_errors=True)
            _hosts[key] = host
        return _hosts[key]

    def _layered(self, host: Host, ws: Path, device: int) -> bool:
        """Whether this call's writes go to a layer: the kernel can make one, and it can
        lie over the workspace's filesystem (overlayfs refuses some as its lower layer, a
        third stacked overlayfs for one). Found once per filesystem, by a smoke run in
        the workspace itself (`true`: its layer is dropped, the workspace untouched)."""
        if not host.layered:
            return False
        key = (self._host_key(), device)
        if key not in _layer_filesystems:
            try:
                self._smoke(host, ws, layered=True)
                _layer_filesystems[key] = None
            except LayerUnavailable as exc:
                _layer_filesystems[key] = str(exc)
        refusal = _layer_filesystems[key]
        if refusal is not None and not self.weak_growth_limit:
            raise LayerUnavailable(refusal)
        return refusal is None

    def _smoke(self, host: Host, workspace: Path, *, layered: bool) -> None:
        """Build one real sandbox around `true`: whatever this host lacks shows up here."""
        launch = self._launch(host, "true", workspace, layered=layered)
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
            launch.watch.close()  # unmerged: the layer is dropped
        if done.returncode != 0:
            raise SandboxUnavailable(explain_bwrap_failure(done.stderr))

    # --- one call -------------------------------------------------------------------

    def launch(self, command: str, workspace: Path) -> CommandLaunch:
        host = self.host()
        ws = workspace.resolve()
        if ws == Path("/"):
            raise SandboxUnavailable(f"the workspace cannot be / (the whole host); choose a project directory, {OPT_OUT}")
        try:
            device = ws.stat().st_dev
        except OSError as exc:
            raise ToolError(f"the workspace {ws} cannot be used ({describe(exc)})") from None
        return self._launch(host, command, ws, layered=self._layered(host, ws, device))

    def _launch(self, host: Host, command: str, ws: Path, *, layered: bool) -> CommandLaunch:
        limits = self.limits
        watch = SandboxWatch(
            cgroup=None, cpu_seconds=limits.cpu_seconds, memory_bytes=limits.memory_bytes,
            processes=limits.processes, tmp_bytes=limits.tmp_bytes,
        )
        try:
            stage = self._stage(host, ws, watch, layered=layered)
            if not layered:
                watch.growth = GrowthMeter(ws, limits.workspace_growth_bytes, skip=tuple(ws / p for p in self.protected))
            if host.cgroups is not None:
                # The layer's pages are charged to the call too: they get room of their own.
                memory = limits.memory_bytes + (limits.workspace_growth_bytes if layered else 0)
                watch.cgroup = CallCgroup.create(host.cgroups, memory_bytes=memory, processes=limits.processes)
            return self._assemble(host, command, ws, stage, watch)
        except BaseException as exc:
            watch.close()
            if isinstance(exc, CgroupUnavailable):
                raise SandboxUnavailable(f"{exc}; {OPT_OUT}") from None
            raise

    def _stage(self, host: Host, ws: Path, watch: SandboxWatch, *, layered: bool) -> Stage | None:
        """The call's stage, and its layer (watch.layer); None: bwrap binds the workspace itself."""
        identity = host.identity
        if not identity.drops_root and not layered:
            return None
        stage = Stage(stage_root(), ws)
        watch.on_close.append(stage.close)
        st = ws.stat()
        if identity.drops_root:
            stage.tree_fd = _idmapped(ws, identity)
        if not layered:
            return stage
        spec = LayerSpec(
            cap_bytes=self.limits.workspace_growth_bytes, upper_mode=stat.S_IMODE(st.st_mode),
            upper_times_ns=(st.st_atime_ns, st.st_mtime_ns),
            upper_ids=(identity.uid, identity.gid) if identity.drops_root else None,
            user_xattrs=not identity.drops_root,
        )
        owner = (st.st_uid, st.st_gid) if identity.drops_root else None
        watch.layer = layer = WorkspaceLayer(spec, ws, self.protected, owner)
        stage.layer = spec
        if identity.drops_root:
            try:
                layer.fd = stage.layer_fd = make_layer(spec)
            except OSError as exc:
                raise layer_unavailable(describe(exc), as_root=True) from None
        else:  # the child makes it, in a user namespace of its own, and sends it here
            stage.own_ids = (identity.uid, identity.gid)
            layer.receiver, stage.layer_sender = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        return stage

    def _assemble(self, host: Host, command: str, ws: Path, stage: Stage | None, watch: SandboxWatch) -> CommandLaunch:
        identity = host.identity

        def source(path: Path) -> str:
            if stage is not None and identity.drops_root and not reachable(path, identity.uid, identity.gid):
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
            workspace=ws, workspace_source=stage.source if stage else str(ws), toolchains=toolchains,
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
        if view.stand_ins and watch.layer is None:  # bwrap made their mount points in the workspace itself
            watch.on_close.append(lambda: remove_stand_ins(ws, view.stand_ins))
        cgroup_fds = watch.cgroup.procs_fds() if watch.cgroup else []
        watch.child_fds += cgroup_fds
        error_read, error_write = os.pipe2(os.O_CLOEXEC)
        watch.held_fds.append(error_read)
        watch.child_fds.append(error_write)
        child = _ChildSetup(cgroup_fds, stage, _rlimits(self.limits, weak=host.cgroups is None), identity, error_write)
        return CommandLaunch(
            argv, dict(_BWRAP_ENV), tuple(pass_fds), preexec_fn=child, watch=watch,
            failure=lambda exc: _spawn_failure(exc, error_read, as_root=identity.drops_root),
        )


def _idmapped(ws: Path, identity: Identity) -> int:
    try:
        return idmapped_tree(ws, identity)
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
                # As an ordinary user the namespace itself is there for the layer only.
                step = LAYER_STEP if self.stage.own_ids else "staging the workspace in a private mount namespace"
                self.stage.enter()
                if self.stage.layer is not None:
                    step = LAYER_STEP
                self.stage.mount_workspace()
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


def _spawn_failure(exc: BaseException, error_read: int, *, as_root: bool) -> ToolError:
    detail = ""
    with contextlib.suppress(OSError):
        os.set_blocking(error_read, False)
        detail = os.read(error_read, 4000).decode(errors="replace")
    if detail.startswith(f"{LAYER_STEP}: "):
        return layer_unavailable(detail.removeprefix(f"{LAYER_STEP}: "), as_root=as_root)
    return SandboxUnavailable(f"the sandbox could not start the command ({detail or exc}); {OPT_OUT}")
