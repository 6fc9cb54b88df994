"""The calls a user refused: what a subagent inherits from the sessions above it.

When the user answers "no" to a call, the session records the call (its tool and exact
permission subject, as an "always" grant would name it). The record goes down the tree:
every child and grandchild spawned afterwards denies that exact call without asking
again, so a model cannot bring a refused call back to the user (or past a user who is
not watching) by delegating it, and a fan-out does not ask the same refused question
once per child. Grants do not go down: a child asks again for what the user allowed
"always" in its parent.

The session that was refused keeps asking: a "no" there is an answer for this once, as
a "yes" is, and a later "yes" to the same call takes it off the record its future
children inherit. For a tool whose calls have no subject (an MCP tool), a refusal covers
every call of it, as a grant would.

`RefusedCalls` is the one value that carries the record: a session's own refusals and the
ones it inherited, joined, travel in each `SubagentRequest` (across Ray too), and a root's
own refusals are kept in its snapshots. The audit log is not this record (it is for
people, and a child's copy starts empty), nor is `SessionState.unanswered` (calls denied
because nobody could answer, which a child would deny anyway).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["RefusedCalls"]


class RefusedCalls(BaseModel):
    """Calls (tool name, permission subject) a user answered "no" to."""

    model_config = ConfigDict(frozen=True)

    calls: frozenset[tuple[str, str | None]] = frozenset()

    def has(self, tool: str, subject: str | None) -> bool:
        return (tool, subject) in self.calls

    def adding(self, tool: str, subject: str | None) -> RefusedCalls:
        return RefusedCalls(calls=self.calls | {(tool, subject)})

    def removing(self, tool: str, subject: str | None) -> RefusedCalls:
        return RefusedCalls(calls=self.calls - {(tool, subject)}) if self.has(tool, subject) else self

    def __or__(self, other: RefusedCalls) -> RefusedCalls:
        return RefusedCalls(calls=self.calls | other.calls)
