"""The tool protocol: what every tool declares, and the context it runs in.

A tool is recoverable-error friendly: anything the model can fix (a bad path, an
ambiguous edit) is raised as `ToolError` and reaches the model as an `is_error`
result. Any other exception is a bug and propagates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from tools.protected import PROTECTED_DIRS

__all__ = [
    "ArtifactLookup",
    "CommandRunner",
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
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class ToolLimits:
    """Caps that keep one tool call bounded."""

    bash_timeout_s: float = 120.0
    bash_output_max_chars: int = 30_000
    read_max_bytes: int = 2_000_000
    read_default_lines: int = 2_000
    grep_max_matches: int = 200
    glob_max_paths: int = 500
    recall_max_chars: int = 31_600


class CommandRunner(Protocol):
    """Turns a shell command into the argv that actually runs it.

    The plain runner returns `bash -c CMD`; the bubblewrap runner wraps it in a
    sandbox. Bash never knows which one it has.
    """

    def argv(self, command: str, workspace: Path) -> list[str]: ...

    def env(self, workspace: Path) -> dict[str, str]: ...


@dataclass(frozen=True)
class PlainCommandRunner:
    """Runs commands directly with the caller's environment (no sandbox)."""

    def argv(self, command: str, workspace: Path) -> list[str]:
        return ["bash", "-c", command]

    def env(self, workspace: Path) -> dict[str, str]:
        return dict(os.environ)


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
    # Workspace-relative globs (tools.path_glob) from the session's per-file deny rules:
    # Read, Grep and Glob treat a file matching one as not there.
    denied_path_globs: tuple[str, ...] = ()


class ArtifactLookup(Protocol):
    """Read access to stored tool-result bodies (see tools.artifacts)."""

    def get(self, artifact_id: str) -> str | None: ...


@runtime_checkable
class Tool(Protocol):
    """What a tool declares. `input_model`'s JSON schema is what the model sees."""

    name: str
    description: str
    input_model: type[BaseModel]
    is_read_only: bool
    execution_domain: ExecutionDomain
    root_only: bool

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput: ...
