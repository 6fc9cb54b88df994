"""The tool protocol: what every tool declares, and the context it runs in.

A tool is recoverable-error friendly: anything the model can fix (a bad path, an
ambiguous edit) is raised as `ToolError` and reaches the model as an `is_error`
result. Any other exception is a bug and propagates.

`Tool[InputT]` is generic in its input model: a tool's `run` receives an instance of
its own `input_model`, validated by the registry, so it needs no check of its own.
Two optional capabilities sit beside it, each a Protocol a tool fits by shape (a
method of that name): `PermissionSubjectTool` (what permission rules match a call
against) and `DiskEffectTool` (whether an interrupted call's change is on disk). The
agent's other seams are listed in `agents.ports`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tools.encodable import encodable
from tools.protected import PROTECTED_DIRS

__all__ = [
    "ArtifactLookup",
    "CommandLaunch",
    "CommandRunner",
    "CommandWatch",
    "DiskEffectTool",
    "LimitReached",
    "PermissionSubjectTool",
    "PlainCommandRunner",
    "ExecutionDomain",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolLimits",
    "ToolOutput",
]


class ExecutionDomain(StrEnum):
    """Where a tool's effects happen; capability shaping reads this, never tool names."""

    LOCAL = "local"  # in the harness process, workspace reads and writes
    SANDBOX = "sandbox"  # arbitrary commands, under the sandbox
    DELEGATED_RUNTIME = "delegated_runtime"  # another agent or runtime acts (Agent tool)
    REMOTE = "remote"  # an external server (MCP)


class ToolError(Exception):
    """A failure the model can act on; becomes a tool_result with is_error=True."""


class ToolOutput(BaseModel):
    """What a tool returns. Its text is made encodable here, the one place every tool's
    output passes (`tools.encodable`): a file name that is not UTF-8 or a lone surrogate
    from an MCP server is shown as an escape, never a save or request that fails."""

    content: str
    is_error: bool = False

    @field_validator("content")
    @classmethod
    def _encodable(cls, content: str) -> str:
        return encodable(content)


class ToolLimits(BaseModel):
    """Caps that keep one tool call bounded. This is the one definition of them: the
    settings' `[tools]` section is this model (agents.settings._config), and the session passes
    the loaded values to every tool call in its ToolContext."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bash_timeout_s: float = Field(120.0, gt=0, description="Wall-clock limit of one Bash call, seconds.")
    bash_output_max_chars: int = Field(30_000, ge=200, description="Bash output kept (head + tail).")
    read_max_bytes: int = Field(2_000_000, ge=1, description="Files larger than this are refused by Read.")
    read_default_lines: int = Field(2_000, ge=1, description="Lines Read returns when no limit is given.")
    grep_max_matches: int = Field(200, ge=1, description="Matches Grep returns before cutting.")
    glob_max_paths: int = Field(500, ge=1, description="Paths Glob returns before cutting.")
    search_timeout_s: float = Field(
        30.0,
        gt=0,
        description="Wall-clock limit of one Grep or Glob call, seconds; what was found by then is "
        "returned, marked as cut.",
    )
    result_max_tokens: int = Field(
        8_000, ge=16, description="Per-result budget: a longer tool result keeps head + marker + tail."
    )

    @property
    def recall_max_chars(self) -> int:
        """Recall pages stay inside the per-result budget (4 chars/token, minus room for its note)."""
        return max(self.result_max_tokens * 4 - 400, 200)


@dataclass(frozen=True)
class LimitReached:
    """A limit of the sandbox ended a command; `message` names it
    ("memory limit of 4096 MB reached")."""

    limit: str  # memory, processes, cpu_time, tmp_size, workspace_growth, workspace_write
    message: str


class CommandWatch(Protocol):
    """Watches one running command for its runner: limits, killing the whole tree, cleanup."""

    poll_s: float  # how often `check` runs while the command runs

    async def started(self, pid: int) -> None:
        """The process is spawned (its pid); returns once the command may run."""
        ...

    async def check(self) -> LimitReached | None: ...

    async def finish(self) -> LimitReached | None:
        """After the command ended, however it ended (exit, timeout, limit, cancellation)
        and its processes are gone: settle what it did; a limit it hit on the way out."""
        ...

    def kill(self) -> None: ...

    def close(self) -> None:
        """Release what the call held (cgroup, fds); runs whatever happened."""
        ...


def _could_not_start(exc: BaseException) -> ToolError:
    return ToolError(f"the command could not start: {exc}")


@dataclass
class CommandLaunch:
    """How to start one command, and what watches it while it runs."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    watch: CommandWatch | None = None
    failure: Callable[[BaseException], ToolError] = _could_not_start  # the spawn itself failed


class CommandRunner(Protocol):
    """Turns a shell command into the process that actually runs it.

    The plain runner returns `bash -c CMD`; the bubblewrap runner wraps it in a
    sandbox with limits and a watch. Bash never knows which one it has. `launch` may
    raise ToolError (the sandbox cannot start here, and says why).
    """

    def launch(self, command: str, workspace: Path) -> CommandLaunch: ...


@dataclass(frozen=True)
class PlainCommandRunner:
    """Runs commands directly with the caller's environment (no sandbox); with a
    `virtualenv`, that environment's bin first on PATH and VIRTUAL_ENV set."""

    virtualenv: Path | None = None

    def launch(self, command: str, workspace: Path) -> CommandLaunch:
        env = dict(os.environ)
        if self.virtualenv is not None:
            env["VIRTUAL_ENV"] = str(self.virtualenv)
            env["PATH"] = os.pathsep.join([str(self.virtualenv / "bin"), env.get("PATH", "")])
            for name in ("PYTHONHOME", "PYTHONPATH"):  # the harness's, not the environment's
                env.pop(name, None)
        return CommandLaunch(["bash", "-c", command], env)


@dataclass(frozen=True)
class ToolContext:
    """Everything a tool call may depend on besides its input. Picklable."""

    workspace: Path
    limits: ToolLimits = field(default_factory=ToolLimits)
    runner: CommandRunner = field(default_factory=PlainCommandRunner)
    artifacts: ArtifactLookup | None = None
    # Directory names (at any depth, see tools.protected) that Write and Edit change only
    # when the call names them itself: a path reaching one through a link is refused.
    protected_dirs: frozenset[str] = PROTECTED_DIRS
    # Workspace-relative globs (tools.files._path_glob) from the session's per-file deny rules:
    # Read, Grep and Glob treat a file matching one as not there.
    denied_path_globs: tuple[str, ...] = ()


class ArtifactLookup(Protocol):
    """Read access to stored tool-result bodies (see tools.artifacts)."""

    def get(self, artifact_id: str) -> str | None: ...


InputT = TypeVar("InputT", bound=BaseModel)
InputT_contra = TypeVar("InputT_contra", bound=BaseModel, contravariant=True)


@runtime_checkable
class Tool(Protocol[InputT]):
    """What a tool declares. `input_model`'s JSON schema is what the model sees.

    The declarations are read-only: a tool may state them as plain class attributes
    (`input_model = ReadInput`, a subclass of BaseModel) or set them per instance. `run`
    receives an instance of the tool's own `input_model`, validated by the registry: a
    tool fits `Tool[ReadInput]` with `async def run(self, args: ReadInput, ctx)`. A bare
    `Tool` is `Tool[Any]`, what a registry of many tools holds."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def input_model(self) -> type[InputT]: ...
    @property
    def is_read_only(self) -> bool: ...
    @property
    def execution_domain(self) -> ExecutionDomain: ...
    @property
    def root_only(self) -> bool: ...

    async def run(self, args: InputT, ctx: ToolContext) -> ToolOutput: ...


@runtime_checkable
class PermissionSubjectTool(Protocol[InputT_contra]):
    """A tool whose calls permission rules match against a subject: Bash the command
    (`Bash(git status:*)`), the file tools the path (`Edit(src/**)`). A tool without
    it is matched by name alone."""

    def permission_subject(self, args: InputT_contra, workspace: Path) -> str | None: ...


@runtime_checkable
class DiskEffectTool(Protocol[InputT_contra]):
    """A tool that can tell whether a call cut short by a lost session made its change
    (Edit: the file is replaced atomically). True: made; False: not made; None: the
    file cannot tell. A tool without it: the outcome is unknown."""

    def effect_on_disk(self, args: InputT_contra, ctx: ToolContext) -> bool | None: ...
