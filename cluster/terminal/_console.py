"""Talking to the person at the terminal: lines told (`say`), permission prompts and plan approval.

`say` is how the CLI prints a line that holds anything it did not write itself (a model
error, a file name, a stored text): revealed first (agents.visible), so an escape
sequence, a C1 control or a carriage return in it shows instead of acting on the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from typing import TYPE_CHECKING, TextIO, overload

from agents.errors import ConfigError
from agents.visible import reveal
from cluster.terminal._approval import describe_request
from cluster.terminal._tree_view import path_label

if TYPE_CHECKING:  # the session's types: `say` alone must not load the agent loop (start-up time)
    from agents.events import PermissionRequested
    from agents.session import Approver, PermissionAnswer, SessionHandle, TurnOutcome

__all__ = ["ask_line", "claim_stdout", "console_approver", "describe_request", "say", "settle_parked"]


def say(text: str, *, file: TextIO | None = None) -> None:
    """Print `text` (to stdout, or `file`) with every hidden character shown as an escape."""
    print(reveal(text), file=file)


def claim_stdout() -> TextIO:
    """Standard output for this process's JSON stream alone (`--json`): returns it, and
    points `sys.stdout` at stderr, so whatever else prints — Ray's driver prints what its
    raylet reports, a worker's death, to stdout — cannot break the stream."""
    stream = sys.stdout
    sys.stdout = sys.stderr
    return stream


async def ask_line(prompt: str) -> str | None:
    """One line from stdin without blocking the event loop; None at end of input. The
    read runs on a daemon thread, not the loop's executor: Ctrl-C at the prompt ends the
    run at once instead of waiting for a line that never comes."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str | None] = loop.create_future()

    def deliver(line: str | None, error: BaseException | None) -> None:
        if not answer.done():
            answer.set_exception(error) if error is not None else answer.set_result(line)

    def read() -> None:
        line, error = None, None
        try:
            line = _read_line(prompt)
        except EOFError:
            pass
        except BaseException as exc:  # handed to the waiting coroutine
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(deliver, line, error)

    threading.Thread(target=read, name="workingset-input", daemon=True).start()
    return await answer


class _RawLines:
    """Lines of a non-terminal stdin read from its file descriptor: a thread blocked in
    os.read holds no lock the interpreter needs at exit (sys.stdin's reader would)."""

    def __init__(self) -> None:
        self.pending = b""
        self.ended = False

    def next(self, fd: int) -> str:
        while b"\n" not in self.pending and not self.ended:
            chunk = os.read(fd, 65536)
            self.ended = not chunk
            self.pending += chunk
        if not self.pending:
            raise EOFError
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode(errors="replace")


_RAW_LINES = _RawLines()


def _read_line(prompt: str) -> str:
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # stdin replaced by an in-memory stream
        return input(prompt)
    if sys.stdin.isatty():
        return input(prompt)  # readline's editing; it reads the terminal without sys.stdin's lock
    print(prompt, end="", flush=True)
    return _RAW_LINES.next(fd)


async def console_approver(request: PermissionRequested) -> PermissionAnswer:
    """Asks until it gets y, n or a; end of input denies."""
    from agents.session import PermissionAnswer

    who = f"subagent {path_label(request.path)} · {request.session_id}" if request.path else request.session_id
    say(f"\nPermission needed [{who}]: {describe_request(request)}")
    while True:
        line = await ask_line("Allow? [y]es / [n]o / [a]lways this session: ")
        if line is None:
            return PermissionAnswer(allow=False)
        choice = line.strip().lower()[:1]
        if choice in ("y", "n", "a"):
            return PermissionAnswer(allow=choice != "n", always=choice == "a")


@overload
async def settle_parked(session: SessionHandle, approver: Approver | None, outcome: TurnOutcome) -> TurnOutcome: ...
@overload
async def settle_parked(
    session: SessionHandle, approver: Approver | None, outcome: None = None
) -> TurnOutcome | None: ...
async def settle_parked(
    session: SessionHandle, approver: Approver | None, outcome: TurnOutcome | None = None
) -> TurnOutcome | None:
    """Answer parked calls until none is left; returns how the turn finally ended."""
    if outcome is None:
        outcome = await session.settle_resumed()  # a call parked before a resume comes first
    while outcome is not None and outcome.reason == "permission":
        if approver is None:
            raise ConfigError(
                f"session {session.session_id} has a call waiting for permission and nobody can answer here; "
                "resume it from a terminal or allow the call with --allow"
            )
        assert outcome.request is not None  # a pause for permission carries its question
        answer = await approver(outcome.request)
        outcome = await session.answer_permission(answer.allow, always=answer.always)
    return outcome
