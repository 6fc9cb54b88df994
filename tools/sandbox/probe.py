"""Can this host run the sandbox with every protection on? One line when it cannot.

Each missing piece is named with its fix and the opt-out; the sandbox never runs with
less than it was asked for:
- bubblewrap missing, or older than 0.8.0 (`--disable-userns`, `--size`);
- no unprivileged user namespaces (bwrap cannot create one);
- no seccomp (kernel without it, or an architecture without a filter here), unless
  `sandbox.seccomp = false`;
- no usable cgroup for the whole-tree limits, unless `sandbox.weak_limits = true`
  (then per-process rlimits apply instead: CPU seconds and address space per process,
  processes per uid — weaker, and said so);
- no kernel cap on the workspace's growth (overlayfs over a size-capped tmpfs, layer.py;
  found by the first real sandbox, runner.py), unless `sandbox.weak_growth_limit = true`
  (then the growth is checked every 0.1 s instead: a fast writer overshoots it);
- running as root with `sandbox.uid`/`gid` set to root or the overflow id;
- bubblewrap failing to build the sandbox for any other reason (its own message).

Not a refusal: a harness whose C launcher was not built (no compiler at install) or does
not run here starts commands through the Python build of the launcher (launcher.py): the
same steps, slower; it says so once per process, in the log (`launcher_fallback_note`),
and `Host.launcher` names the one that runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import tools.sandbox.launcher as launcher
import tools.sandbox.seccomp as seccomp
from tools.sandbox.cgroups import CgroupTree, CgroupUnavailable, CgroupVersion, locate, sweep
from tools.sandbox.errors import SandboxUnavailable
from tools.sandbox.identity import Identity, IdentityError, host_identity

__all__ = [
    "MIN_BWRAP",
    "Host",
    "LayerUnavailable",
    "SandboxUnavailable",
    "bubblewrap_path",
    "built_launcher",
    "check_host",
    "explain_bwrap_failure",
    "launcher_fallback_note",
    "layer_unavailable",
]

MIN_BWRAP = (0, 8, 0)
OPT_OUT = "or opt out with --no-sandbox"


@dataclass(frozen=True)
class Host:
    """What the probe found: everything a call needs that does not change per call."""

    bwrap: str
    identity: Identity
    cgroups: CgroupTree | None  # None: no cgroup, weak per-process limits accepted
    seccomp_program: bytes | None  # None: the user turned the filter off
    layered: bool = True  # False: no kernel cap on workspace growth, the polled one accepted
    launcher: tuple[str, ...] = ()  # the program (and its first arguments) that starts bwrap


class LayerUnavailable(SandboxUnavailable):
    """The kernel cannot cap the command's workspace writes; says why and the opt-outs."""


def layer_unavailable(detail: str, *, as_root: bool) -> LayerUnavailable:
    needs = (
        "overlayfs over a tmpfs with trusted xattrs"
        if as_root
        else ("overlayfs in a user namespace over a tmpfs with user xattrs (Linux 6.6 or later)")
    )
    return LayerUnavailable(
        f"the kernel cannot cap the command's writes to the workspace ({detail}): that needs {needs}; set "
        f"sandbox.weak_growth_limit = true to accept a growth limit checked every 0.1 s instead, {OPT_OUT}"
    )


def built_launcher() -> tuple[tuple[str, ...], str | None]:
    """The C launcher, or else the Python one and why (launcher.py)."""
    if os.access(launcher.BUILT, os.X_OK):
        return (launcher.BUILT,), None
    return launcher.python_launcher(), f"{launcher.BUILT} is missing"


def launcher_fallback_note(why: str, cgroup: CgroupVersion | None = None) -> str:
    """The one line a harness without the C launcher logs (once per process). On cgroup
    v2 the Python build moves itself into the call's cgroup through cgroup.procs, which
    waits for an RCU grace period unless the hierarchy favours dynamic moves (host
    configuration: suggested, never done here)."""
    v2 = (
        (
            "; on cgroup v2 each call also waits 10-20 ms to join its cgroup, unless the host mounts cgroup2 with "
            "favordynmods (mount -o remount,favordynmods /sys/fs/cgroup)"
        )
        if cgroup == "v2"
        else ""
    )
    return (
        f"the sandbox's C launcher cannot be used ({why}); Bash commands start through its Python build instead, "
        "with the same protections, 20-50 ms slower each: reinstall Workingset where a C compiler (cc) is present "
        f"(pip install ., or python setup.py build_ext --inplace in a checkout){v2}"
    )


def bubblewrap_path(configured: str | None = None) -> str | None:
    return shutil.which(configured) if configured else shutil.which("bwrap")


def _bwrap_version(bwrap: str) -> tuple[int, ...]:
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"bubblewrap at {bwrap} does not run ({exc}); reinstall it {OPT_OUT}") from None
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out.stdout + out.stderr)
    if out.returncode != 0 or match is None:
        said = (out.stdout + out.stderr).strip().splitlines()
        raise SandboxUnavailable(
            f"cannot tell the version of bubblewrap at {bwrap} (it printed {said[-1] if said else 'nothing'!r}); "
            f"reinstall it {OPT_OUT}"
        )
    return tuple(int(part or 0) for part in match.groups())


def check_host(
    *,
    bwrap: str | None,
    uid: int,
    gid: int,
    use_seccomp: bool,
    weak_limits: bool,
    cgroup: CgroupVersion,
    cgroup_parent: str | None,
) -> Host:
    """The static checks (no sandbox started yet); raises SandboxUnavailable."""
    path = bubblewrap_path(bwrap)
    if path is None:
        where = f" at {bwrap}" if bwrap else ""
        raise SandboxUnavailable(
            f"Bash runs inside bubblewrap, which is not installed{where}; install it "
            f"(apt-get install bubblewrap) {OPT_OUT}"
        )
    version = _bwrap_version(path)
    if version < MIN_BWRAP:
        raise SandboxUnavailable(
            f"bubblewrap {'.'.join(map(str, version))} at {path} is too old: the sandbox needs "
            f"{'.'.join(map(str, MIN_BWRAP))} or later (--disable-userns, --size); upgrade it {OPT_OUT}"
        )
    try:
        identity = host_identity(uid, gid)
    except IdentityError as exc:
        raise SandboxUnavailable(f"{exc}, {OPT_OUT}") from None
    return Host(path, identity, _cgroups(weak_limits, cgroup, cgroup_parent), _seccomp(use_seccomp))


def _seccomp(use_seccomp: bool) -> bytes | None:
    if not use_seccomp:
        return None
    status = Path("/proc/self/status").read_text()
    if "Seccomp:" not in status:
        raise SandboxUnavailable(
            "the kernel has no seccomp (CONFIG_SECCOMP); set sandbox.seccomp = false to run without "
            f"the syscall filter, {OPT_OUT}"
        )
    try:
        return seccomp.filter_program()
    except seccomp.SeccompUnsupported as exc:
        raise SandboxUnavailable(f"{exc}; set sandbox.seccomp = false to run without it, {OPT_OUT}") from None


def _cgroups(weak_limits: bool, version: CgroupVersion, parent: str | None) -> CgroupTree | None:
    try:
        tree = locate(version, parent)
    except CgroupUnavailable as exc:
        if weak_limits:
            return None
        raise SandboxUnavailable(
            f"no usable cgroup for the limits on the whole command: {exc}; set sandbox.weak_limits = true "
            "to accept per-process limits instead (CPU time and address space per process, processes "
            f"per uid), {OPT_OUT}"
        ) from None
    sweep(tree)
    return tree


_USERNS = ("user namespace", "new namespace", "uid map", "unshare user", "max_user_namespaces", "setting up uid")


def explain_bwrap_failure(stderr: str) -> str:
    """The one line for a sandbox that bwrap could not build, from what bwrap said."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    said = lines[-1] if lines else "no message"
    lowered = said.lower()
    if any(word in lowered for word in _USERNS):
        return (
            f"user namespaces are not available to the sandbox ({said}); allow unprivileged user namespaces "
            "(sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone = 1, or "
            f"kernel.apparmor_restrict_unprivileged_userns = 0) {OPT_OUT}"
        )
    if "seccomp" in lowered:
        return f"the seccomp filter cannot be loaded ({said}); set sandbox.seccomp = false to run without it, {OPT_OUT}"
    return f"bubblewrap cannot build the sandbox on this host ({said}); {OPT_OUT}"
