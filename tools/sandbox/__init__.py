"""The Bash sandbox: bubblewrap, an unprivileged identity, seccomp, cgroups, an allow-list view.

What a command run through `BubblewrapRunner` gets, and which module does it:

    identity.py  never a uid that maps to host root; as root, a dedicated uid and an
                 idmapped workspace (files land on disk owned by the workspace's owner)
    stage.py     the private mount namespace the child builds before bwrap: the
                 workspace as an overlayfs whose upper layer takes every write
    layer.py     that layer: a tmpfs capped at the workspace growth (the kernel refuses
                 what is past it), held by the harness, merged back after the call
    merge.py     the merge: fd-relative, following nothing, protected paths untouched
    launcher.py  the command's first process, spawned without a fork of the harness: it
                 joins the call's cgroup, builds the stage, sets the rlimits, drops to the
                 sandbox uid, then becomes bwrap (launcher.c, compiled at install; this
                 Python build of it where that was not)
    seccomp.py   the syscall filter (new user namespaces, mounts, ptrace, keyring, bpf,
                 kexec/modules, clock, swap, reboot, x32/foreign ABIs, ...)
    cgroups.py   memory, processes and CPU time of the whole process tree (v1 and v2)
    view.py      what it sees: system dirs and toolchains read-only, the workspace
                 read-write except .git/.workingset (present or not), a private capped
                 /tmp, no $HOME
    watch.py     which limit a call hit (named in the result), killing the tree, the merge
    probe.py     refusing, in one line naming the missing piece and the opt-out
    runner.py    the CommandRunner tying them together
    config.py    its limits and options, each defined once (the [sandbox] settings)
    errors.py    SandboxUnavailable, and the probes' kinds of it

Plus bwrap's own: new PID, network, IPC, UTS and cgroup namespaces, no capabilities,
`--disable-userns`, a new session, death with its parent. The threat model is in the
README ("Threat model").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools.sandbox.config import (
        DEFAULT_SANDBOX_ID,
        SandboxLimits,
        SandboxOptions,
        check_inside_workspace,
        check_pass_env,
    )
    from tools.sandbox.errors import SandboxUnavailable
    from tools.sandbox.probe import bubblewrap_path
    from tools.sandbox.runner import BubblewrapRunner
    from tools.sandbox.view import SECRET_DIRS, SECRET_FILES, SYSTEM_PATHS

# Each name loads its module when first asked for: the settings need the limits
# (config.py), not the runner, and the command line starts without it.
_HOME = {"DEFAULT_SANDBOX_ID": "config", "SandboxLimits": "config", "SandboxOptions": "config",
         "check_inside_workspace": "config", "check_pass_env": "config", "SandboxUnavailable": "errors",
         "bubblewrap_path": "probe", "BubblewrapRunner": "runner", "SECRET_DIRS": "view", "SECRET_FILES": "view",
         "SYSTEM_PATHS": "view"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)


__all__ = [
    "DEFAULT_SANDBOX_ID",
    "SECRET_DIRS",
    "SECRET_FILES",
    "SYSTEM_PATHS",
    "BubblewrapRunner",
    "SandboxLimits",
    "SandboxOptions",
    "SandboxUnavailable",
    "bubblewrap_path",
    "check_inside_workspace",
    "check_pass_env",
]
