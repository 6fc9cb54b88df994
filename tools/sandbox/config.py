"""What a sandboxed command may use, and how the sandbox is set up: the one definition.

`SandboxLimits` are the limits of one command, `SandboxOptions` the rest of the
runner's configuration. The settings' `[sandbox]` section is both of them plus
`enabled` (agents.settings._config.SandboxSettings inherits these models), and BubblewrapRunner
is built from that section field by field, so a limit or an option is declared here
once, with its default, its bounds and its description.
"""

from __future__ import annotations

from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tools.protected import PROTECTED_DIRS
from tools.sandbox.cgroups import CgroupVersion
from tools.sandbox.view import default_toolchains

__all__ = [
    "DEFAULT_SANDBOX_ID",
    "SandboxLimits",
    "SandboxOptions",
    "check_inside_workspace",
    "check_pass_env",
    "looks_like_credential",
]

MiB = 1024**2
# Outside the ranges distributions, systemd and subuid allocation hand out, and not the
# kernel's overflow id 65534 (which already names every unmapped file).
DEFAULT_SANDBOX_ID = 90_000

_CREDENTIAL_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


def looks_like_credential(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (API_KEY, AUTH_TOKEN, ...)."""
    return any(word in name.upper() for word in _CREDENTIAL_WORDS)


def check_pass_env(names: tuple[str, ...] | list[str]) -> None:
    """Names passed into the sandbox must not look like credentials; raises ValueError."""
    for name in names:
        if looks_like_credential(name):
            raise ValueError(
                f"{name} looks like a credential, and the sandbox never passes credentials to commands; "
                "give a test a dummy value in its own setup instead"
            )


def check_inside_workspace(names: tuple[str, ...] | list[str]) -> None:
    """Protected entries name paths inside the workspace; raises ValueError otherwise."""
    for name in names:
        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or ".." in parts:
            raise ValueError(f"{name!r} is not a path inside the workspace (relative, without '..')")


class SandboxLimits(BaseModel):
    """Limits of one command. Memory, processes and CPU time count its whole process
    tree (a cgroup); file size is per file; /tmp and workspace growth per call."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_seconds: float = Field(300, gt=0, description="CPU time the whole command (every process it starts) may use.")
    memory_mb: int = Field(4096, ge=64, description="Memory (RSS, page cache, its /tmp) the whole command may use.")
    processes: int = Field(512, ge=8, description="Processes and threads the command may have at once.")
    file_size_mb: int = Field(1024, ge=1, description="Largest file one command may write.")
    tmp_size_mb: int = Field(512, ge=1, description="Size of the command's private /tmp (counts against memory).")
    workspace_growth_mb: int = Field(
        2048,
        ge=1,
        description="How much one command may write to the workspace (its new data, and one new file "
        "or directory per 4 KiB); held in memory until the command ends.",
    )

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * MiB

    @property
    def file_size_bytes(self) -> int:
        return self.file_size_mb * MiB

    @property
    def tmp_bytes(self) -> int:
        return self.tmp_size_mb * MiB

    @property
    def workspace_growth_bytes(self) -> int:
        return self.workspace_growth_mb * MiB


class SandboxOptions(BaseModel):
    """How the sandbox is built on this host: its identity, view, filter and cgroups."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bwrap: str | None = Field(None, description="The bubblewrap executable (default: bwrap on PATH).")
    uid: int = Field(DEFAULT_SANDBOX_ID, ge=1, description="Host uid commands run as when the harness runs as root.")
    gid: int = Field(DEFAULT_SANDBOX_ID, ge=1, description="Host gid commands run as when the harness runs as root.")
    toolchains: tuple[Path, ...] | None = Field(
        None,
        description="Directories visible read-only (compilers, interpreters, ~/.cargo); "
        "unset: the prefix of the Python running the harness.",
    )
    virtualenv: Path | None = Field(
        None,
        description="A Python virtual environment commands run in: read-only, its bin first on PATH, "
        "VIRTUAL_ENV set; its base interpreter visible without its site-packages, the harness's Python not at all "
        "(unless a toolchain).",
    )
    protected: tuple[str, ...] = Field(
        default_factory=lambda: tuple(sorted(PROTECTED_DIRS)),
        description="Workspace entries commands may read but not write (top level); remove one to let them write it.",
    )
    pass_env: tuple[str, ...] = Field(
        (), description="Environment variables passed into the sandbox besides PATH, HOME, LANG, TERM, TZ."
    )
    seccomp: bool = Field(True, description="Apply the syscall filter; false only where the kernel cannot.")
    weak_limits: bool = Field(
        False, description="Where no cgroup is usable, accept per-process rlimits instead of refusing to run."
    )
    weak_growth_limit: bool = Field(
        False,
        description="Where the kernel cannot cap a command's workspace writes (overlayfs over a tmpfs; "
        "as a non-root user, Linux 6.6 or later), accept a growth limit checked every 0.1 s instead of refusing "
        "to run (a fast writer can overshoot it).",
    )
    cgroup: CgroupVersion = Field("auto", description="cgroup version for the limits; auto prefers v2.")
    cgroup_parent: str | None = Field(
        None,
        description="Existing cgroup (path inside the hierarchy) to hold per-command cgroups; "
        "unset: a workingset/ cgroup under the harness's own.",
    )

    def effective_toolchains(self) -> tuple[Path, ...]:
        """The read-only directories commands see: the configured ones, or by default the
        harness's Python (none when commands run in a virtualenv of their own)."""
        if self.toolchains is not None:
            return self.toolchains
        return () if self.virtualenv is not None else default_toolchains()

    def seeing(self, *paths: Path) -> Self:
        """A copy that also shows these directories, read-only."""
        return self.model_copy(update={"toolchains": (*self.effective_toolchains(), *paths)})

    @field_validator("protected")
    @classmethod
    def _inside_workspace(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        check_inside_workspace(names)
        return names

    @field_validator("pass_env")
    @classmethod
    def _no_credentials(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        check_pass_env(names)
        return names
