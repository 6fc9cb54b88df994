"""SessionHandle: what a caller drives a session through, wherever it runs.

An in-process `agents.session._loop.Session` and a `cluster.remote_session.RemoteSession`
(a session hosted by a SessionActor) both satisfy it, so the CLI, the REPL, the
console prompts and the batch evaluation are written once against it.
"""

from __future__ import annotations

from typing import Protocol

from agents.compaction import CompactionEvent
from agents.events import EndReason
from agents.modes import Mode
from agents.session._loop import TurnOutcome
from agents.session._state import GoalState

__all__ = ["CompactReport", "SessionHandle"]


class CompactReport(Protocol):
    """How a manual compaction went: why it failed (None: it did not), and its events."""

    @property
    def failure(self) -> str | None: ...

    @property
    def events(self) -> list[CompactionEvent]: ...


class SessionHandle(Protocol):
    @property
    def session_id(self) -> str: ...

    @property
    def mode(self) -> Mode: ...

    @property
    def goal(self) -> GoalState | None: ...

    def announce_start(self) -> None: ...

    def announce_end(self, reason: EndReason, final_text: str, error: str | None = None) -> None: ...

    async def run_turn(self, user_input: str) -> TurnOutcome: ...

    async def answer_permission(self, allow: bool, *, always: bool = False) -> TurnOutcome: ...

    async def settle_resumed(self) -> TurnOutcome | None: ...

    async def compact_now(self, focus: str | None = None) -> CompactReport: ...

    def set_mode(self, mode: Mode, *, announce: bool = True) -> None: ...

    def set_goal(self, condition: str | None) -> None: ...

    async def clear(self) -> None: ...

    async def aclose(self) -> None: ...
