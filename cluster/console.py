"""Asking the person at the terminal: permission prompts and plan approval."""

from __future__ import annotations

import asyncio
from typing import overload

from agents.errors import ConfigError
from agents.events import PermissionRequested
from agents.handle import SessionHandle
from agents.loop import TurnOutcome
from agents.session_kit import Approver, PermissionAnswer
from cluster.approval import describe_request

__all__ = ["ask_line", "console_approver", "describe_request", "settle_parked"]


async def ask_line(prompt: str) -> str | None:
    """One line from stdin without blocking the event loop; None at end of input."""
    try:
        return await asyncio.to_thread(input, prompt)
    except EOFError:
        return None


async def console_approver(request: PermissionRequested) -> PermissionAnswer:
    """Asks until it gets y, n or a; end of input denies."""
    print(f"\nPermission needed [{request.session_id}]: {describe_request(request)}")
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
