"""The allow-list view of the host the command sees, as bwrap arguments, and its environment.

Only what a build needs is there; everything else is absent (not hidden: never mounted):
- system directories read-only (`SYSTEM_PATHS`; usr-merge symlinks stay symlinks);
- toolchains read-only (`sandbox.toolchains`; by default the prefix of the Python the
  harness runs on, since tasks run `python -m pytest`), minus the harness's own
  packages if they lie inside (its dist-info, editable finder, console script);
  virtualenvs on PATH under /tmp come along (the private /tmp would hide them);
- or, with `sandbox.virtualenv`, that environment and its base interpreter instead of
  the harness's Python (venv.py): the base's site-packages an empty directory, the
  environment's `bin` first on PATH, VIRTUAL_ENV set;
- the workspace read-write (in fact its layer over it, layer.py), except `.git` and
  `.workingset` inside it (`sandbox.protected`): bound read-only where they exist, an
  empty read-only tmpfs where they do not (git passes over an empty `.git`), so that
  neither can be made either; credential stores of a home directory that lies inside
  the workspace are blanked;
- a private, size-capped /tmp (HOME=/tmp/home), an empty read-only /run, a new /proc
  (bwrap covers /proc/sys and /proc/sysrq-trigger read-only), a minimal /dev; no /sys,
  no /var, no /home, nothing of $HOME unless configured as a toolchain.

Environment by allow-list: PATH (the caller's entries that exist in the view, with the
toolchains' bin directories), HOME, LANG, TERM=dumb, TZ, and the names in
`sandbox.pass_env`. Nothing else — no API keys or tokens.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import pwd
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tools.sandbox.venv import VirtualEnv

__all__ = [
    "SECRET_DIRS",
    "SECRET_FILES",
    "SYSTEM_PATHS",
    "View",
    "default_toolchains",
    "harness_files",
    "remove_stand_ins",
    "toolchains_under_tmp",
]

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
SECRET_DIRS = (
    ".ssh",
    ".aws",
    ".config",
    ".gnupg",
    ".docker",
    ".kube",
    ".azure",
    ".gcloud",
    ".anthropic",
    ".workingset",
)
SECRET_FILES = (".netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass", ".bash_history", ".python_history")
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
SANDBOX_HOME = "/tmp/home"
_RUN_SIZE = 4096


def default_toolchains() -> tuple[Path, ...]:
    """The prefix of the harness's Python (and its base, for a virtualenv)."""
    prefixes = []
    for prefix in (sys.prefix, sys.base_prefix):
        path = Path(prefix).resolve()
        if path not in prefixes:
            prefixes.append(path)
    return tuple(prefixes)


_harness_files: tuple[Path, ...] | None = None


def harness_files() -> tuple[Path, ...]:
    """What installing Workingset put into a Python prefix: top-level entries of its
    site-packages (packages, dist-info, .pth, editable finder and its bytecode) and its
    console script. The sandbox masks those that lie inside a toolchain."""
    global _harness_files
    if _harness_files is None:
        found: set[Path] = set()
        for dist in importlib.metadata.distributions():
            if dist.metadata["Name"] != "workingset":
                continue
            base = Path(str(dist.locate_file(""))).resolve()
            for entry in dist.files or []:
                parts = Path(str(entry)).parts
                if not parts:
                    continue
                # ../../../bin/workingset: the script itself; otherwise its top-level entry.
                found.add((base / entry).resolve() if parts[0] == ".." else base / parts[0])
                if parts[0] == "__pycache__":
                    found.discard(base / "__pycache__")
                    found.add(base / entry)
        _harness_files = tuple(sorted(found))
    return _harness_files


def toolchains_under_tmp() -> list[Path]:
    """PATH entries under /tmp (a virtualenv made there), which the private /tmp would
    otherwise hide; a `bin` folder brings its environment along."""
    roots: list[Path] = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        path = Path(entry).resolve() if entry else None
        if path is None or not path.is_dir() or not path.is_relative_to("/tmp"):
            continue
        root = path.parent if path.name == "bin" else path
        if root != Path("/tmp") and root not in roots:
            roots.append(root)
    return roots


def _homes() -> list[Path]:
    homes = {Path.home()}
    with contextlib.suppress(KeyError):  # an account without a passwd entry
        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir))
    return sorted(h.resolve() for h in homes if h.is_dir() and h != Path("/"))


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


@dataclass(frozen=True)
class _Layout:
    """The parts of the view that depend only on the host (system dirs, toolchains, the
    caller's PATH), computed once per process for each set of toolchains."""

    system: tuple[tuple[str, str], ...]  # ("dir", path) or (symlink target, path)
    system_dirs: tuple[Path, ...]
    read_only_roots: tuple[Path, ...]
    masks: tuple[tuple[str, Path], ...]  # ("dir" or "file", path)
    path_entries: tuple[tuple[str, Path], ...]  # the caller's PATH: (entry, resolved)
    bins: tuple[str, ...]  # toolchain bin directories to add
    first_bin: str | None  # the virtualenv's: before everything else on PATH

    @classmethod
    def of(cls, toolchains: tuple[Path, ...], venv: VirtualEnv | None = None) -> _Layout:
        if venv is not None:
            toolchains = (venv.root, venv.base, *toolchains)
        hidden = venv.hidden() if venv is not None else ()
        system: list[tuple[str, str]] = []
        for name in SYSTEM_PATHS:
            path = Path(name)
            if path.is_symlink():
                system.append((os.readlink(path), name))
            elif path.is_dir():
                system.append(("dir", name))
        system_dirs = tuple(Path(name) for kind, name in system if kind == "dir")
        roots: list[Path] = []
        # Virtualenvs on the caller's PATH are the harness's Python: not with one of the task's own.
        for path in (*toolchains, *(toolchains_under_tmp() if venv is None else ())):
            path = path.resolve()
            if path.exists() and not _under(path, system_dirs) and path not in roots:
                roots.append(path)
        masks: list[tuple[str, Path]] = [("dir", path) for path in hidden]
        for path in harness_files():
            if _under(path, hidden) or not _under(path, [*system_dirs, *roots]):
                continue
            if path.exists() or path.is_symlink():
                masks.append(("dir" if path.is_dir() and not path.is_symlink() else "file", path))
        entries: list[tuple[str, Path]] = []
        for entry in (os.environ.get("PATH") or _SAFE_PATH).split(os.pathsep):
            if entry and Path(entry).is_absolute() and entry not in [e for e, _ in entries]:
                entries.append((entry, Path(entry).resolve()))
        # With a virtualenv, its base interpreter's bin is not on PATH: its console scripts
        # would run that interpreter, whose packages are hidden.
        skip = {venv.root, venv.base} if venv is not None else set()
        bins = tuple(str(r / "bin") for r in roots if r not in skip and (r / "bin").is_dir())
        first = str(venv.bin) if venv is not None else None
        return cls(tuple(system), system_dirs, tuple(roots), tuple(masks), tuple(entries), bins, first)


_layouts: dict[tuple, _Layout] = {}


def _layout(toolchains: tuple[Path, ...], venv: VirtualEnv | None = None) -> _Layout:
    key = (toolchains, venv, os.environ.get("PATH"))
    if key not in _layouts:
        _layouts[key] = _Layout.of(toolchains, venv)
    return _layouts[key]


@dataclass
class View:
    """The mounts for one workspace. `source` maps a host path to where bwrap reads it
    from (a staged copy when the sandbox uid cannot reach it)."""

    workspace: Path
    workspace_source: str
    toolchains: tuple[Path, ...]
    protected: tuple[str, ...]
    tmp_bytes: int
    source: Callable[[Path], str]
    empty_fd: Callable[[], int]  # a fresh fd reading as empty (bwrap copies it into a file)
    venv: VirtualEnv | None = None
    stand_ins: list[str] = field(default_factory=list)  # protected names absent, covered by `mounts`

    def mounts(self) -> list[str]:
        layout = _layout(self.toolchains, self.venv)
        args: list[str] = []
        for kind, name in layout.system:
            args += ["--ro-bind", self.source(Path(name)), name] if kind == "dir" else ["--symlink", kind, name]
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--perms", "1777", "--size", str(self.tmp_bytes), "--tmpfs", "/tmp", "--dir", SANDBOX_HOME]
        args += ["--size", str(_RUN_SIZE), "--tmpfs", "/run"]
        for root in layout.read_only_roots:
            if not root.is_relative_to(self.workspace):  # the workspace's own bind covers it, writable
                args += ["--ro-bind", self.source(root), str(root)]
        for kind, path in layout.masks:
            if kind == "dir":
                args += ["--size", str(_RUN_SIZE), "--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                args += ["--ro-bind-data", str(self.empty_fd()), str(path)]
        ws = str(self.workspace)
        args += ["--bind", self.workspace_source, ws]
        for name in self.protected:
            kind = self._protected_entry(name)
            target = str(self.workspace / name)
            if kind == "real":
                args += ["--ro-bind", f"{self.workspace_source}/{name}", target]
            elif kind == "absent":
                args += ["--size", str(_RUN_SIZE), "--tmpfs", target, "--remount-ro", target]
                self.stand_ins.append(name)
        args += self._blank_secrets_in_workspace()
        args += ["--remount-ro", "/run", "--remount-ro", "/"]
        return args

    def _protected_entry(self, name: str) -> str:
        """ "real": a directory or file at `name`, reached without a symlink (one the agent
        planted could point bwrap at a host path); "absent": nothing there, in a real
        directory; "other": neither (left as it is: the layer's merge skips it anyway)."""
        path = self.workspace
        for part in Path(name).parts:
            if path.is_symlink() or not path.is_dir():
                return "other"
            path = path / part
        if path.is_symlink():
            return "other"
        if path.is_dir() or path.is_file():
            return "real"
        return "absent" if not path.exists() else "other"

    def _blank_secrets_in_workspace(self) -> list[str]:
        args: list[str] = []
        for home in _homes():
            if not home.is_relative_to(self.workspace):
                continue
            for name in SECRET_DIRS:
                if (home / name).is_dir():
                    args += ["--tmpfs", str(home / name)]
            for name in SECRET_FILES:
                if (home / name).is_file():
                    args += ["--ro-bind-data", str(self.empty_fd()), str(home / name)]
        return args

    def path_variable(self) -> str:
        """The caller's PATH entries that exist in the view, with each toolchain's bin
        directory before the first system entry (so `python` is the harness's)."""
        layout = _layout(self.toolchains, self.venv)
        visible = [*layout.system_dirs, *layout.read_only_roots, self.workspace]
        # A virtualenv's base prefix is visible, but nothing of it goes on PATH.
        hidden = [self.venv.base] if self.venv is not None else []
        entries = [
            entry
            for entry, resolved in layout.path_entries
            if _under(resolved, visible) and not _under(resolved, hidden)
        ]
        if layout.first_bin is not None:
            entries = [layout.first_bin, *(e for e in entries if e != layout.first_bin)]
        bins = [b for b in layout.bins if b not in entries]
        system = [Path(p) for p in SYSTEM_PATHS]
        first_system = next((i for i, e in enumerate(entries) if _under(Path(e), system)), len(entries))
        ordered = entries[:first_system] + bins + entries[first_system:]
        # The system's own directories always come last, whatever the caller's PATH lacked.
        ordered += [e for e in _SAFE_PATH.split(os.pathsep) if e not in ordered]
        return os.pathsep.join(ordered)


def remove_stand_ins(workspace: Path, names: Iterable[str]) -> None:
    """Remove the mount points bwrap made in the workspace for absent protected names, if
    still empty directories (only without a layer, where the workspace is bound itself).
    Reached through directory fds, following no link."""
    for name in names:
        *parents, last = Path(name).parts
        with contextlib.suppress(OSError):
            fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                for part in parents:
                    below = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                    os.close(fd)
                    fd = below
                os.rmdir(last, dir_fd=fd)
            finally:
                os.close(fd)


def environment(path: str, pass_env: Iterable[str], venv: VirtualEnv | None = None) -> list[str]:
    """bwrap arguments for the command's environment (after --clearenv)."""
    env = {"PATH": path, "HOME": SANDBOX_HOME, "LANG": os.environ.get("LANG") or "C.UTF-8", "TERM": "dumb"}
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv.root)
    for name in ("TZ", *pass_env):
        if name in os.environ:
            env[name] = os.environ[name]
    args = ["--clearenv"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    return args
