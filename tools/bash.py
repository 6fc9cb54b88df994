"""Bash: run one shell command in the workspace, bounded in time and output.

The command runs in its own session (start_new_session=True), so its process
group holds everything it starts; killing that group is how a timeout, or a
cancelled call, guarantees nothing outlives the call. However the command ended,
its watch then settles it (`finish`): the sandbox writes the command's changes back
into the workspace there.

We use a SubprocessProtocol rather than `create_subprocess_exec`'s streams
because on Python 3.11 `Process.wait()` only returns once every holder of the
output pipe has exited: `sleep 100 &` would make a finished command look like a
timeout. The protocol tells us separately when the shell exits and when the
pipe closes.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import subprocess
from enum import Enum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tools.base import (
    CommandLaunch,
    CommandWatch,
    ExecutionDomain,
    LimitReached,
    ToolContext,
    ToolOutput,
)
from tools.child_watch import watch_children_by_pidfd

__all__ = ["BashInput", "BashTool", "OutputCapture"]

# After the shell exits (or is killed), how long to wait for output still in the pipe.
_DRAIN_GRACE_S = 2.0


# One argument of a command line is at most 128 KiB on Linux (MAX_ARG_STRLEN); the
# command goes to bash as one argument.
MAX_COMMAND_BYTES = 128 * 1024 - 1


class BashInput(BaseModel):
    """Input for Bash."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(
        min_length=1,
        description="Shell command to run with bash, in the workspace root as working directory.",
    )
    timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="Seconds before the command is killed. Omit for the default; values "
        "above the harness limit are capped to it.",
    )

    @field_validator("command")
    @classmethod
    def _runnable(cls, command: str) -> str:
        # Both are limits of the kernel's argv, not of bash: such a command can never start.
        if "\0" in command:
            raise ValueError("the command contains a NUL byte, which no command line can hold; remove it")
        if len(command.encode()) > MAX_COMMAND_BYTES:
            raise ValueError(
                f"the command is {len(command.encode()):,} bytes; a command line holds at most "
                f"{MAX_COMMAND_BYTES:,}: write the script to a file with Write and run that file"
            )
        return command


class BashTool:
    name = "Bash"
    description = (
        "Run a shell command (bash) in the workspace and return its combined stdout and "
        "stderr, followed by its exit code. Long output keeps its beginning and end. "
        "The command is killed when it times out, and background processes do not "
        "survive the call. Prefer Read, Grep and Glob for reading and searching files."
    )
    input_model = BashInput
    is_read_only = False
    execution_domain = ExecutionDomain.SANDBOX
    root_only = False

    def permission_subject(self, args: BashInput, workspace: Path) -> str:
        """Permission rules match the command, e.g. Bash(git status:*)."""
        return args.command

    async def run(self, args: BashInput, ctx: ToolContext) -> ToolOutput:
        workspace = ctx.workspace.resolve()
        limit = ctx.limits.bash_timeout_s
        timeout = min(args.timeout_s, limit) if args.timeout_s else limit
        capture = OutputCapture(ctx.limits.bash_output_max_chars)
        launch = ctx.runner.launch(args.command, workspace)  # ToolError: the sandbox cannot start
        try:
            return await self._run(launch, workspace, timeout, capture)
        finally:
            if launch.watch is not None:  # emptying and removing the call's cgroup may wait on the kernel
                await asyncio.to_thread(launch.watch.close)

    async def _run(self, launch: CommandLaunch, workspace: Path, timeout: float, capture: OutputCapture) -> ToolOutput:
        loop = asyncio.get_running_loop()
        watch_children_by_pidfd()
        watch = launch.watch
        try:
            transport, proto = await loop.subprocess_exec(
                lambda: _CaptureProtocol(capture),
                *launch.argv,
                cwd=workspace,
                env=launch.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                pass_fds=launch.pass_fds,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise launch.failure(exc) from exc
        ended: _Ended | LimitReached = _Ended.TIMED_OUT
        settled: LimitReached | None = None
        try:
            if watch is not None:
                await watch.started(transport.get_pid())
            ended = await _wait(proto, timeout, watch)
        finally:
            # Also runs when the call is cancelled: never leave the command running.
            stragglers = _kill_group(transport.get_pid())
            if watch is not None:  # off the loop: it waits until the cgroup is empty
                await asyncio.to_thread(watch.kill)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proto.closed.wait(), _DRAIN_GRACE_S)
            # If something escaped the group and still holds the pipe, stop listening.
            transport.close()
            if watch is not None:  # however it ended: what it did lands (the sandbox merges its writes)
                settled = await watch.finish()
        proto.flush()
        output = capture.text().rstrip("\n")
        code = transport.get_returncode()
        if ended is _Ended.EXITED and settled is not None:
            return _limit_result(settled, output, f" (the command exited with code {code})")
        if isinstance(ended, LimitReached):
            return _limit_result(_also(ended, settled), output, "; the command was killed")
        if ended is _Ended.TIMED_OUT:
            shown = output or "(no output before the timeout)"
            unwritten = f"{settled.message}.\n" if settled is not None and settled.limit == "workspace_write" else ""
            return ToolOutput(
                content=f"Command timed out after {timeout:g} s and was killed.\n{unwritten}Partial output:\n{shown}",
                is_error=True,
            )
        lines = [output or "(no output)"]
        if stragglers:
            lines.append("[background processes still running when the command exited were killed]")
        if code is not None and code < 0:
            lines.append(f"[terminated by signal {_signal_name(-code)}]")
        lines.append(f"exit code: {code}")
        # Non-zero exit is information for the model, not a tool failure.
        return ToolOutput(content="\n".join(lines))


class _Ended(Enum):
    EXITED = "exited"
    TIMED_OUT = "timed out"


async def _wait(proto: _CaptureProtocol, timeout: float, watch: CommandWatch | None) -> _Ended | LimitReached:
    """Until the command exits, the timeout passes, or the watch reports a limit."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (remaining := deadline - loop.time()) > 0:
        step = min(remaining, watch.poll_s) if watch is not None else remaining
        try:
            await asyncio.wait_for(proto.exited.wait(), step)
            return _Ended.EXITED
        except TimeoutError:
            hit = await watch.check() if watch is not None else None
            if hit is not None:
                return hit
    return _Ended.TIMED_OUT


def _also(ended: LimitReached, settled: LimitReached | None) -> LimitReached:
    """The limit that ended the command, and what could not be written back after it."""
    if settled is None or settled.limit != "workspace_write":
        return ended
    return LimitReached(ended.limit, f"{ended.message}; {settled.message}")


def _limit_result(hit: LimitReached, output: str, how: str) -> ToolOutput:
    return ToolOutput(content=f"{hit.message}{how}.\nOutput:\n{output or '(no output)'}", is_error=True)


class OutputCapture:
    """Keeps the first and last characters of a stream, counting what falls between.

    Memory stays bounded however much the command prints. The tail gets the larger
    share because test summaries and final errors are printed last.
    """

    def __init__(self, max_chars: int) -> None:
        self.head_cap = max_chars // 3
        self.tail_cap = max_chars - self.head_cap
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self.removed = 0

    def feed(self, text: str) -> None:
        if self._head_len < self.head_cap:
            take = text[: self.head_cap - self._head_len]
            self._head.append(take)
            self._head_len += len(take)
            text = text[len(take) :]
        if not text:
            return
        self._tail += text
        excess = len(self._tail) - self.tail_cap
        if excess > 0:
            self.removed += excess
            self._tail = self._tail[excess:]

    def text(self) -> str:
        head = "".join(self._head)
        if not self.removed:
            return head + self._tail
        marker = f"\n[... {self.removed} chars of output removed; start and end shown ...]\n"
        return head + marker + self._tail


class _CaptureProtocol(asyncio.SubprocessProtocol):
    def __init__(self, capture: OutputCapture) -> None:
        self.capture = capture
        # Incremental, so a UTF-8 character split across two reads decodes intact. A byte
        # that is not UTF-8 (`ls` of a Latin-1 file name) is kept, and shown as `\xNN` by
        # ToolOutput (tools.encodable): the name the model reads is one the file tools open.
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if isinstance(data, bytes):
            self.capture.feed(self.decoder.decode(data))

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        # Called once the process has exited and all its pipes are closed.
        self.closed.set()

    def flush(self) -> None:
        self.capture.feed(self.decoder.decode(b"", final=True))


def _kill_group(pgid: int) -> bool:
    """SIGKILL the command's process group; True if anything was still in it."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)
