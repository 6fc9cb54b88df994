"""BubblewrapRunner: the CommandRunner that puts every Bash command in the sandbox.

One call, in order: the host checks (once per process, with a smoke run, which also
finds out whether the kernel can give the workspace layer and whether the C launcher
runs here); the per-call cgroup; the stage (stage.py): in root mode the idmapped
workspace (identity.py) and the layer's tmpfs, made here; the view (view.py); the
seccomp filter on a pipe; then the launcher (launcher.py), spawned without a fork of
the harness, moves itself into the cgroup, builds its private stage (the overlay of
layer over workspace; as an ordinary user inside a user namespace of its own, making
the layer there and sending it back), sets its rlimits and drops to the sandbox uid
before it executes bwrap. The watch (watch.py) takes over from there, and merges the
layer back when the command has ended. The runner is a frozen model of its
configuration (config.py), so it pickles to Ray workers; what it learns about the host
is cached per process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import resource
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

from pydantic import Field

import tools.sandbox.launcher as launcher
from tools.base import CommandLaunch, ToolError
from tools.files import remove_tree
from tools.sandbox.cgroups import CallCgroup, CgroupUnavailable
from tools.sandbox.config import SandboxLimits, SandboxOptions
from tools.sandbox.identity import Identity, idmapped_tree, reachable
from tools.sandbox.launcher import Steps
from tools.sandbox.layer import WorkspaceLayer
from tools.sandbox.linux import describe
from tools.sandbox.probe import (
    OPT_OUT,
    Host,
    LayerUnavailable,
    SandboxUnavailable,
    bubblewrap_path,
    built_launcher,
    check_host,
    explain_bwrap_failure,
    launcher_fallback_note,
    layer_unavailable,
)
from tools.sandbox.stage import LAYER_STEP, LayerSpec, Stage, make_layer, stage_root
from tools.sandbox.venv import VirtualEnv
from tools.sandbox.view import View, environment, remove_stand_ins
from tools.sandbox.watch import GrowthMeter, SandboxWatch

__all__ = ["BubblewrapRunner"]

_BWRAP_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
_log = logging.getLogger(__name__)

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
        return (
            bubblewrap_path(self.bwrap),
            self.bwrap,
            self.uid,
            self.gid,
            self.seccomp,
            self.weak_limits,
            self.weak_growth_limit,
            self.cgroup,
            self.cgroup_parent,
            os.geteuid(),
            launcher.BUILT,
        )

    def host(self) -> Host:
        key = self._host_key()
        if key not in _hosts:
            host = check_host(
                bwrap=self.bwrap,
                uid=self.uid,
                gid=self.gid,
                use_seccomp=self.seccomp,
                weak_limits=self.weak_limits,
                cgroup=self.cgroup,
                cgroup_parent=self.cgroup_parent,
            )
            program, why_not = built_launcher()
            host = dataclasses.replace(host, launcher=program)
            probe = Path(tempfile.mkdtemp(prefix="workingset-sandbox-probe-")).resolve()
            try:
                try:
                    host = self._first_smoke(host, probe)
                except _LauncherDoesNotRun as exc:
                    why_not = f"{launcher.BUILT} does not run here: {describe(exc.error)}"
                    host = self._first_smoke(dataclasses.replace(host, launcher=launcher.python_launcher()), probe)
                if host.layered:
                    _layer_filesystems[(key, probe.stat().st_dev)] = None
            finally:
                remove_tree(probe, ignore_errors=True)
            if why_not is not None:
                _log.warning(launcher_fallback_note(why_not, host.cgroups.version if host.cgroups else None))
            _hosts[key] = host
        return _hosts[key]

    def _first_smoke(self, host: Host, probe: Path) -> Host:
        """The host as the first real sandbox finds it: layered, or (accepted) not."""
        try:
            self._smoke(host, probe, layered=True)
            return host
        except LayerUnavailable:
            if not self.weak_growth_limit:
                raise
        host = dataclasses.replace(host, layered=False)
        self._smoke(host, probe, layered=False)
        return host

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
                launch.argv,
                env=launch.env,
                pass_fds=launch.pass_fds,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                timeout=60,
            )
            failed = launch.watch.launch_failure()
        except OSError as exc:
            if host.launcher == (launcher.BUILT,):
                raise _LauncherDoesNotRun(exc) from None
            raise launch.failure(exc) from exc
        except subprocess.SubprocessError as exc:
            raise launch.failure(exc) from exc
        finally:
            launch.watch.close()  # unmerged: the layer is dropped
        if failed is not None:
            raise failed
        if done.returncode != 0:
            raise SandboxUnavailable(explain_bwrap_failure(done.stderr))

    # --- one call -------------------------------------------------------------------

    def launch(self, command: str, workspace: Path) -> CommandLaunch:
        host = self.host()
        ws = workspace.resolve()
        if ws == Path("/"):
            raise SandboxUnavailable(
                f"the workspace cannot be / (the whole host); choose a project directory, {OPT_OUT}"
            )
        try:
            device = ws.stat().st_dev
        except OSError as exc:
            raise ToolError(f"the workspace {ws} cannot be used ({describe(exc)})") from None
        return self._launch(host, command, ws, layered=self._layered(host, ws, device))

    def _launch(self, host: Host, command: str, ws: Path, *, layered: bool) -> CommandLaunch:
        limits = self.limits
        watch = SandboxWatch(
            cgroup=None,
            cpu_seconds=limits.cpu_seconds,
            memory_bytes=limits.memory_bytes,
            processes=limits.processes,
            tmp_bytes=limits.tmp_bytes,
        )
        try:
            stage = self._stage(host, ws, watch, layered=layered)
            if not layered:
                watch.growth = GrowthMeter(
                    ws, limits.workspace_growth_bytes, skip=tuple(ws / p for p in self.protected)
                )
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
            cap_bytes=self.limits.workspace_growth_bytes,
            upper_mode=stat.S_IMODE(st.st_mode),
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
            workspace=ws,
            workspace_source=stage.source if stage else str(ws),
            toolchains=toolchains,
            protected=self.protected,
            tmp_bytes=self.limits.tmp_bytes,
            source=source,
            empty_fd=empty_fd,
            venv=venv,
        )
        argv = [
            host.bwrap,
            "--unshare-user",
            "--disable-userns",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            *view.mounts(),
            "--chdir",
            str(ws),
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
        steps, error_read = self._steps(host, stage, watch)
        pass_fds += steps.fds
        watch.launch_failure = lambda: _launch_failure(error_read, as_root=identity.drops_root)
        return CommandLaunch(
            steps.command(host.launcher, argv),
            dict(_BWRAP_ENV),
            tuple(pass_fds),
            watch=watch,
            failure=lambda exc: _spawn_failure(exc, error_read, as_root=identity.drops_root),
        )

    def _steps(self, host: Host, stage: Stage | None, watch: SandboxWatch) -> tuple[Steps, int]:
        """What the launcher does before it executes bwrap: join the cgroup, build the
        stage, set the rlimits, drop to the sandbox uid; and where it reports a failed
        step (each names its step)."""
        steps = Steps()
        error_read, error_write = os.pipe2(os.O_CLOEXEC)
        watch.held_fds.append(error_read)
        watch.child_fds.append(error_write)
        steps.error_fd(error_write)
        cgroup = watch.cgroup
        if cgroup is not None:
            steps.step("joining the call's cgroup")
            if cgroup.tree.version == "v2":
                fd = cgroup.directory_fd()
                watch.child_fds.append(fd)
                steps.spawn_into(fd)
            else:
                for fd in cgroup.tasks_fds():
                    watch.child_fds.append(fd)
                    steps.join(fd)
        if stage is not None:
            stage.steps(steps)
        steps.step("setting resource limits")
        for which, value in _rlimits(self.limits, weak=host.cgroups is None):
            steps.rlimit(which, value)
        identity = host.identity
        if identity.drops_root:
            steps.step(f"dropping to uid {identity.uid}")
            steps.ids(identity.uid, identity.gid)
        return steps, error_read


class _LauncherDoesNotRun(Exception):
    """The built launcher could not be executed here (another architecture, a noexec mount)."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


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
        chosen += [
            (resource.RLIMIT_CPU, cpu),
            (resource.RLIMIT_AS, limits.memory_bytes),
            (resource.RLIMIT_NPROC, limits.processes),
        ]
    clamped = []
    for which, value in chosen:  # never above what the harness itself may use
        hard = resource.getrlimit(which)[1]
        clamped.append((which, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return clamped


def _launch_failure(error_read: int, *, as_root: bool) -> ToolError | None:
    """What the launcher reported before it exited, if it failed a step."""
    detail = ""
    with contextlib.suppress(OSError):
        os.set_blocking(error_read, False)
        detail = os.read(error_read, 4000).decode(errors="replace")
    if not detail:
        return None
    if detail.startswith(f"{LAYER_STEP}: "):
        return layer_unavailable(detail.removeprefix(f"{LAYER_STEP}: "), as_root=as_root)
    return SandboxUnavailable(f"the sandbox could not start the command ({detail}); {OPT_OUT}")


def _spawn_failure(exc: BaseException, error_read: int, *, as_root: bool) -> ToolError:
    """The launcher itself could not be started."""
    return _launch_failure(error_read, as_root=as_root) or SandboxUnavailable(
        f"the sandbox could not start the command ({exc}); {OPT_OUT}"
    )
