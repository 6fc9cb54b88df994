"""RemoteSession: the caller's handle on a session hosted by a SessionActor.

It offers the methods the CLI and REPL use on an in-process Session (run_turn,
answer_permission, compact_now, set_mode, set_goal, clear, ...), streams the
session's events to the caller's sink as they happen, answers subagents'
permission questions, and survives the actor's death — or its silence: the link's
heartbeat (cluster.heartbeat) kills and replaces an actor that stops answering, which
this session hears as a notice and then as a death. An open that finds the actor
restarting waits for it (up to `cluster.actor_restart_timeout_s`); a turn that loses it
waits for the restart,
reopens the session from its last snapshot and, if the interrupted turn had not
completed, goes on with it from its last saved tool batch (or runs it again from
its start when nothing of it was saved), so no call that changes anything runs twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError, RayTaskError

from agents.compaction import CompactionEvent
from agents.errors import WorkingsetError
from agents.events import EndReason, EventSink, Notice, SessionEnded, SessionStarted
from agents.goal import GoalState
from agents.modes import Mode
from agents.ports import Usage
from agents.session import Approver, PermissionAnswer, TurnOutcome
from cluster.actor_link import ActorLink
from cluster.connection import ClusterError
from cluster.session_actor import ChildQuestion, ClusterServices, SessionSpec, TurnEnd

__all__ = ["RemoteSession"]

_LOST = (RayActorError, ActorDiedError, ActorUnavailableError)
_RESTART_POLL_S = 0.5
LOSSES_WITHOUT_PROGRESS = 3  # actor losses in a row, with nothing new saved between them, that end a turn


TURN_RESTARTS = (
    "the interrupted turn runs again from its start: it had saved nothing, so none of its calls "
    "that change anything had run"
)


class _ActorLost(Exception):
    pass


@dataclass
class _CompactResult:
    failure: str | None
    events: list[CompactionEvent] = field(default_factory=list)


# A handle to a SessionActor. Not `ray.actor.ActorHandle`: Ray types a handle's attributes
# as Never, so mypy would take every line after an actor call as unreachable and check none.
SessionActorHandle = Any


class RemoteSession:
    def __init__(
        self,
        link: ActorLink,
        spec: SessionSpec,
        *,
        emit: EventSink,
        approver: Approver | None,
        model_name: str = "",
        restart_timeout_s: float = 120.0,
        services: ClusterServices | None = None,
    ):
        # The link to the session's actor, shared with its other sessions in this process:
        # its event pump and its coalesced calls (cluster.actor_link).
        self.link = link
        self.actor: SessionActorHandle = link.actor
        # The shared service actors (snapshot store, compactor pool) live only while someone
        # holds their handles; a killed SessionActor drops its copies, so the caller keeps them
        # for the restarted actor to use.
        self.services = services
        self.spec = spec
        self.emit = emit
        self.approver = approver
        self.model_name = model_name
        self.restart_timeout_s = restart_timeout_s
        self.session_id = spec.session_id or ""
        self.mode = Mode(spec.mode)
        self.goal: GoalState | None = None
        self.pool_index = 0  # which actor of a SessionPool hosts it
        self._control: dict = {}
        self._unlisten: Callable[[], None] | None = None

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self) -> list[str]:
        """Open the session on the actor (agents.opening._lifecycle runs there); returns the notices
        opening it gave. An error of ours raised there is raised here as itself."""
        try:
            opened = await self._open_on_actor(self.spec)
        except RayTaskError as exc:
            if isinstance(exc.cause, WorkingsetError):
                raise exc.cause from None  # one clear message, not the actor's traceback
            raise
        self.session_id = opened["session_id"]
        self.spec = self.spec.model_copy(update={"session_id": self.session_id})
        self._apply(opened)
        if self._unlisten is None:  # the actor replaced for not answering: said in this session's events
            self._unlisten = self.link.heartbeat.listen(
                lambda reason: self.emit(Notice(session_id=self.session_id, text=reason))
            )
        return self._emit_all(opened["events"])

    def _emit_all(self, events: list) -> list[str]:
        for event in events:
            self.emit(event)
        return [e.text for e in events if isinstance(e, Notice)]

    async def aclose(self) -> None:
        """Close the session on its actor (a turn still running there is stopped)."""
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        await self.link.close(self.session_id)

    @property
    def message_count(self) -> int:
        """Messages in the session's conversation, as the actor last reported (after the
        open, each turn and each control call)."""
        return self._control.get("messages", 0)

    def announce_start(self) -> None:
        self.emit(SessionStarted(session_id=self.session_id, model=self.model_name, cwd=self.spec.workspace))

    def announce_end(self, reason: EndReason, final_text: str, error: str | None = None) -> None:
        usage = Usage.model_validate(self._control.get("usage") or {})
        self.emit(
            SessionEnded(
                session_id=self.session_id,
                reason=reason,
                final_text=final_text,
                turns=self._control.get("total_model_calls", 0),
                usage=usage,
                error=error,
            )
        )

    # -- turns --------------------------------------------------------------------------

    async def run_turn(self, user_input: str) -> TurnOutcome:
        begun = self._control.get("turns", 0) + 1  # the session's count of turns begun, in this one
        continuing = False
        stalled = 0  # actor losses in a row after which the reopened session had saved nothing new
        saved: tuple | None = None
        while stalled < LOSSES_WITHOUT_PROGRESS:
            try:
                if continuing:
                    return await self._consume(self._turn_batches("settle_resumed"))
                return await self._consume(self._turn_batches("turn", user_input))
            except _ActorLost:
                await self._reopen()
                # A long turn on a busy cluster may lose its actor many times; it is given up
                # on only when the losses stop it from getting anywhere.
                now = (self._control.get("messages"), self._control.get("total_model_calls"))
                stalled = stalled + 1 if now == saved else 1
                saved = now
                if self._control.get("turns", 0) < begun:
                    # Nothing of this turn was saved, so no call of it that changes anything
                    # had started (one is saved before it runs): running it again repeats none.
                    self.emit(Notice(session_id=self.session_id, text=TURN_RESTARTS))
                    continuing = False
                elif not self._control.get("in_turn"):
                    return TurnOutcome("end_turn", "", 0, detail="the turn had completed before the actor failed")
                else:  # saved mid-turn: the reopened session goes on from its last saved tool batch
                    continuing = True
        raise ClusterError(
            f"session {self.session_id} lost its actor {LOSSES_WITHOUT_PROGRESS} times in a row "
            "without saving anything new; giving up on the turn"
        )

    async def answer_permission(self, allow: bool, *, always: bool = False) -> TurnOutcome:
        try:
            return await self._consume(self._turn_batches("answer", allow, always))
        except _ActorLost:
            await self._reopen()
            return await self.settle_resumed() or TurnOutcome("end_turn", "", 0)

    async def settle_resumed(self) -> TurnOutcome | None:
        outcome = await self._consume(self._turn_batches("settle_resumed"))
        return None if outcome.model_calls == 0 and outcome.reason == "end_turn" and not outcome.final_text else outcome

    def _turn_batches(self, method: str, *args) -> AsyncIterator[list]:
        """The event batches of one turn (`method`: turn, answer, settle_resumed), through
        the actor's pump."""
        return self.link.events.stream(
            self.session_id, lambda token: self.link.begin(token, method, self.session_id, *args)
        )

    async def _consume(self, batches: AsyncIterator[list]) -> TurnOutcome:
        try:
            async for batch in batches:
                for item in batch:
                    if isinstance(item, TurnEnd):
                        self._apply(item.model_dump())
                        return item.outcome()
                    if isinstance(item, ChildQuestion):
                        await self._answer_child(item)
                        continue
                    self.emit(item)
        except _LOST as exc:
            self.emit(
                Notice(
                    session_id=self.session_id,
                    text=f"the session's actor failed ({type(exc).__name__}); "
                    "restarting it and resuming from the last snapshot",
                )
            )
            raise _ActorLost from exc
        except asyncio.CancelledError:
            # Cancelled here (Ctrl-C in the REPL): the turn stops on the actor too, and is kept.
            await asyncio.wait([asyncio.ensure_future(self._cancel_on_actor())], timeout=30)
            raise
        raise ClusterError(f"session {self.session_id}: the turn's stream ended without an outcome")

    async def _cancel_on_actor(self) -> None:
        await self.actor.cancel_turn.remote(self.session_id)

    async def _answer_child(self, question: ChildQuestion) -> None:
        # The child's own permission_requested event has already reached the stream.
        answer = await self.approver(question.request) if self.approver else PermissionAnswer(allow=False)
        await self.actor.answer_child.remote(self.session_id, question.request.tool_use_id, answer.allow, answer.always)

    async def _open_on_actor(self, spec: SessionSpec) -> dict:
        """`open` on the actor, waiting while the actor restarts (a call to a restarting
        actor fails at once). Opening again is safe: an open changes nothing a second open
        would repeat (a new session saves nothing until its first turn; a resume only reads)."""
        deadline = time.monotonic() + self.restart_timeout_s
        while True:
            try:
                return await self.link.open(spec)
            except _LOST as exc:
                if isinstance(exc, RayTaskError):
                    raise  # the actor is up and opening failed inside it: waiting will not help
                if time.monotonic() > deadline:
                    raise ClusterError(self._not_back(exc)) from None
                await asyncio.sleep(_RESTART_POLL_S)

    def _not_back(self, exc: Exception) -> str:
        actor = self.actor._actor_id.hex()[:16]
        which = f"session {self.session_id}" if self.session_id else "a new session"
        return (
            f"session actor {actor} (for {which}) did not come back within {self.restart_timeout_s:g} s "
            f"({type(exc).__name__}); see `ray status` for a node short of memory or CPU, or raise "
            "cluster.actor_restart_timeout_s"
        )

    async def _reopen(self) -> None:
        spec = self.spec.model_copy(update={"resume": True, "seek_model": True})
        try:
            opened = await self._open_on_actor(spec)
        except RayTaskError as exc:
            if not isinstance(exc, _LOST):
                raise
            # The actor is up but opening failed inside it on an actor it needs (e.g. the
            # snapshot store's): waiting longer will not help.
            raise ClusterError(f"session {self.session_id} could not be reopened: {exc.cause!r}") from exc
        self._apply(opened)
        self._emit_all(opened["events"])

    # -- control ------------------------------------------------------------------------

    async def compact_now(self, focus: str | None = None) -> _CompactResult:
        result = await self.actor.compact.remote(self.session_id, focus)
        await self._drain()
        return _CompactResult(result["failure"], [CompactionEvent.model_validate(e) for e in result["events"]])

    def set_mode(self, mode: Mode, *, announce: bool = True) -> None:
        self._call_control(self.actor.set_mode.remote(self.session_id, Mode(mode).value))

    def set_goal(self, condition: str | None) -> None:
        self._call_control(self.actor.set_goal.remote(self.session_id, condition))

    async def clear(self) -> None:
        self._apply(await self.actor.clear.remote(self.session_id))
        await self._drain()

    def _call_control(self, ref) -> None:
        import ray

        # Control calls are quick and the REPL waits for them anyway.
        self._apply(ray.get(ref))
        for event in ray.get(self.actor.drain.remote(self.session_id)):
            self.emit(event)

    async def _drain(self) -> None:
        for event in await self.actor.drain.remote(self.session_id):
            self.emit(event)

    def _apply(self, control: dict) -> None:
        self._control = control
        self.mode = Mode(control.get("mode", self.mode.value))
        goal = control.get("goal")
        self.goal = GoalState.model_validate(goal) if goal else None
