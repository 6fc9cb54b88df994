"""The agent loop: compile → query → execute, until a natural end, a limit, or a pause.

Plain asyncio. It reaches the world only through the ports it is given, so the same
code runs in one process and inside a Ray actor. Compaction, permissions, the goal
judge and budgets are called steps, not inline branches: the request and its
compaction are built by `agents.session._request_builder`, a model call is made and counted
against the budget by `agents.session._model_call`, the tool batch runs in `agents.session._tool_batch`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import uuid
from dataclasses import dataclass
from typing import Literal

from agents.compaction import CompactionResult, CompactionStrategy, make_strategy
from agents.errors import WorkingsetError
from agents.events import (
    EndReason,
    GoalVerdict,
    ModeChanged,
    Notice,
    PermissionRequested,
    SessionEnded,
    SessionStarted,
    SnapshotSaved,
)
from agents.goal import judge_step
from agents.messages import Message, ToolUseBlock
from agents.modes import Mode
from agents.ports import ModelResponse, Usage
from agents.providers import model_info
from agents.session._kit import SessionKit, SessionPorts, notify_hooks
from agents.session._model_call import ModelCaller
from agents.session._reminders import PromptDelivery
from agents.session._request_builder import RequestBuilder
from agents.session._state import GoalState, PendingState, SessionState, StateField
from agents.session._stop_reasons import NextStep, next_step_for
from agents.session._tool_batch import TURN_CANCELLED, ToolBatchRunner
from agents.session._tool_calls import interrupted_result
from agents.settings import SessionSettings
from agents.snapshots import SnapshotError, restored_state, settings_print, snapshot_of
from agents.sources import HookEvent, HookResult, SystemPrompt
from agents.subagents import BudgetExceeded
from agents.working_set import CompiledRequest, WorkingSetCompiler
from tools.encodable import encodable

__all__ = ["Session", "SessionKit", "SessionPorts", "TurnOutcome", "TurnReason", "new_session_id"]

TURN_CONTINUES = (
    "the session was lost during a turn; the turn goes on from its last saved tool batch, "
    "and no call that could have changed something runs again"
)

TurnReason = Literal[
    "end_turn",
    "turn_limit",
    "permission",
    "judge_error",
    "goal_limit",
    "budget",
    "truncated",
    "refusal",
    "permission_denied",
]


def new_session_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class TurnOutcome:
    """How one outer turn ended (or paused). A pause for permission carries the question."""

    reason: TurnReason
    final_text: str
    model_calls: int
    detail: str | None = None
    request: PermissionRequested | None = None


class Session:
    """One agent conversation and the loop that advances it.

    Everything the loop advances is `self.state` (a SessionState); the five ports and
    the kit are what it was given; `conversation`, `mode`, `goal`, `pending`, `usage`,
    ... are the state's fields."""

    def __init__(
        self,
        ports: SessionPorts,
        kit: SessionKit,
        *,
        system_prompt: SystemPrompt | str,
        settings: SessionSettings | None = None,
        session_id: str | None = None,
        mode: Mode = Mode.DEFAULT,
    ):
        self.ports = ports
        self.kit = kit
        self.prompt = SystemPrompt.plain(system_prompt) if isinstance(system_prompt, str) else system_prompt
        self.settings = settings or SessionSettings()
        self.state = SessionState(
            session_id=session_id or new_session_id(), cwd=str(kit.tool_context.workspace), model=ports.model.name
        )
        self.closers: list = []  # async callables run by aclose (MCP connections, ...)
        self.saved_version: str | None = None  # the last version this session saved
        self.delivery = PromptDelivery(stable=self.settings.agent.stable_prefix)
        self.request_builder = RequestBuilder(
            self.state,
            ports,
            kit,
            self.settings,
            strategy=make_strategy(self.settings.compact.strategy),
            prompt=lambda: self.prompt,
            delivery=self.delivery,
        )
        self.model_info = model_info(ports.model, self.settings.models)
        self.model_caller = ModelCaller(
            self.state, ports, kit, request_builder=self.request_builder, info=self.model_info
        )
        self.tool_batches = ToolBatchRunner(
            self.state,
            ports,
            kit,
            result_max_tokens=self.settings.result_max_tokens,
            checkpoint=lambda: self.save_snapshot("tool_batch"),
        )
        self.set_mode(mode, announce=False)
        self.request_builder.check_fits()

    @functools.cached_property
    def _settings_print(self) -> str:
        """Every snapshot carries it; a session's settings do not change while it runs."""
        return settings_print(self.settings)

    @property
    def compiler(self) -> WorkingSetCompiler:
        return self.request_builder.compiler

    @property
    def budget_tokens(self) -> int:
        return self.request_builder.budget_tokens

    @property
    def strategy(self) -> CompactionStrategy:
        return self.request_builder.strategy

    @strategy.setter
    def strategy(self, strategy: CompactionStrategy) -> None:
        self.request_builder.strategy = strategy

    # The state's fields, by the names the loop and its callers use.
    session_id = StateField[str]("session_id")
    conversation = StateField[list[Message]]("conversation")
    mode = StateField[Mode]("mode")
    goal = StateField[GoalState | None]("goal")
    pending = StateField[PendingState | None]("pending")
    usage = StateField[Usage]("usage")
    model_calls = StateField[int]("model_calls")
    cost_usd = StateField[float]("cost_usd")
    unpriced_calls = StateField[int]("unpriced_calls")
    _turn_calls = StateField[int]("turn_calls")
    _final_text = StateField[str]("final_text")
    _cut_in_a_row = StateField[int]("cut_in_a_row")
    _resuming_paused = StateField[bool]("resuming_paused")

    # -- lifecycle events -------------------------------------------------------------

    def announce_start(self) -> None:
        self.emit(
            SessionStarted(
                session_id=self.session_id, model=self.ports.model.name, cwd=str(self.kit.tool_context.workspace)
            )
        )

    def announce_end(self, reason: EndReason, final_text: str, error: str | None = None) -> None:
        self.emit(
            SessionEnded(
                session_id=self.session_id,
                reason=reason,
                final_text=final_text,
                turns=self.model_calls,
                usage=self.usage,
                error=error,
            )
        )

    def emit(self, event) -> None:
        self.kit.emit(event)

    # -- user actions -----------------------------------------------------------------

    def set_mode(self, mode: Mode, *, announce: bool = True) -> None:
        """Enter or leave a mode; the Tool Catalog is rebuilt from what the mode shows."""
        self.state.mode = Mode(mode)
        self.prompt = self.delivery.prompt(self.prompt, self.kit.registry, self.mode, self.goal)
        if announce:
            self.emit(ModeChanged(session_id=self.session_id, mode=self.mode.value))

    def set_goal(self, condition: str | None) -> None:
        """Set a goal (its evidence starts now) or clear it with None."""
        self.state.goal = GoalState(condition=condition, since_index=len(self.conversation)) if condition else None
        self._show_goal()

    def _show_goal(self) -> None:
        # Only an active goal is in the system prompt; a met one has left it.
        self.prompt = self.delivery.prompt(self.prompt, self.kit.registry, self.mode, self.goal)

    async def run_turn(self, user_input: str) -> TurnOutcome:
        """One outer turn: the user speaks, the agent works until it answers or pauses."""
        state = self.state
        if state.pending is not None:
            raise WorkingsetError("a tool call is waiting for permission; answer it before sending more input")
        if state.start_source is not None and not self.kit.is_child:
            source, state.start_source = state.start_source, None
            cwd = str(self.kit.tool_context.workspace)
            await self.notify_hooks(
                HookEvent.SESSION_START, {"session_id": self.session_id, "cwd": cwd, "source": source}
            )
        text = encodable(user_input)  # a command-line argument that is not UTF-8 holds surrogates
        state.conversation.append(
            self.delivery.user_message(text, state.conversation, self.kit.registry, self.mode, self.goal)
        )
        state.turn_calls, state.final_text, state.cut_in_a_row, state.unanswered = 0, "", 0, []
        state.turns, state.in_turn = state.turns + 1, True
        if state.goal is not None:
            state.goal.auto_turns = 0  # the user spoke: the judge's continuations count afresh
        return await self._advanced()

    async def notify_hooks(self, event: HookEvent, payload: dict, *, tool_name: str | None = None) -> HookResult | None:
        """Run the hooks for `event`; their warnings and messages become notices."""
        return await notify_hooks(self.kit, self.session_id, event, payload, tool_name=tool_name)

    async def aclose(self) -> None:
        """Release what the session holds open (MCP connections, the model clients it was
        built with, its snapshot file)."""
        while self.closers:
            await self.closers.pop()()
        if self.ports.snapshots is not None:
            with contextlib.suppress(SnapshotError):  # closing loses nothing: every save is done
                await self.ports.snapshots.arelease(self.session_id)

    async def answer_permission(self, allow: bool, *, always: bool = False) -> TurnOutcome:
        """Resume the parked call with the user's answer."""
        if self.pending is None or not self.pending.asks:
            raise WorkingsetError("no tool call is waiting for permission")
        if await self.tool_batches.answer(self.pending, allow=allow, always=always):
            return await self._saved(self._paused())
        return await self.continue_parked()

    async def settle_resumed(self) -> TurnOutcome | None:
        """After a resume: the parked question again, or the turn continued when every
        parked call was settled on restore, or a turn the session was lost in continued
        from its last saved tool batch; None when no turn was under way."""
        if self.pending is not None:
            return self._paused() if self.pending.asks else await self.continue_parked()
        if not self.state.in_turn:
            return None
        self.emit(Notice(session_id=self.session_id, text=TURN_CONTINUES))
        return await self._advanced()

    async def continue_parked(self) -> TurnOutcome:
        """Run a parked batch whose calls are all settled, then go on with the turn
        (after a resume re-decided them, for instance)."""
        if self.pending is None or self.pending.asks:
            raise WorkingsetError("nothing parked is ready to continue")
        await self.tool_batches.finish(self.pending)
        self.pending = None
        return await self._advanced()

    async def compact_now(self, focus: str | None = None) -> CompactionResult:
        """Manual `/compact`: summarize keeping the last few messages; on failure the
        history stays exactly as it was and the result says why."""
        result = await self.request_builder.compact("manual", focus)
        if result.changed:
            await self.save_snapshot("compact")
        return result

    async def clear(self) -> None:
        """`/clear`: an empty conversation, saved at once, so the old one is only in history
        (`cleared_from` names its version)."""
        state = self.state
        state.cleared_from = self.saved_version
        state.conversation, state.pending, state.goal = [], None, None
        self._show_goal()
        state.turn_calls, state.final_text, state.in_turn = 0, "", False
        state.start_source = "clear"
        await self.save_snapshot("clear")

    async def save_snapshot(self, reason: str) -> str | None:
        """Store the state now; a failure is reported and the session goes on."""
        if self.ports.snapshots is None:
            return None
        snapshot = snapshot_of(
            self.state, self.kit, model=self.ports.model.name, fingerprint=self._settings_print, reason=reason
        )
        try:
            version = await self.ports.snapshots.asave(snapshot)
        except SnapshotError as exc:
            self.emit(
                SnapshotSaved(session_id=self.session_id, saved=False, reason=reason, error=f"state not saved: {exc}")
            )
            return None
        self.emit(SnapshotSaved(session_id=self.session_id, saved=True, version=version, reason=reason))
        self.saved_version = version
        return version

    def restore(self, saved: SessionState) -> list[str]:
        """Continue from a snapshot; notices say what could not come back as it was."""
        restored, notices = restored_state(saved, self.kit, session_id=self.session_id, model=self.ports.model.name)
        self.state.assign(restored)  # in place: the tool batch works on this same state
        self.set_mode(self.mode, announce=False)
        self._show_goal()
        for text in notices:
            self.emit(Notice(session_id=self.session_id, text=text))
        return notices

    async def _advanced(self) -> TurnOutcome:
        """The turn advanced to its end and saved. Cancelled (Ctrl-C in the REPL, a caller
        that gave up), the turn is closed — every call of the last reply has a result —
        and saved as it stands; the conversation is kept."""
        try:
            return await self._saved(await self._advance())
        except asyncio.CancelledError:
            self._close_cancelled_turn()
            await self.save_snapshot("cancelled")
            raise

    def _close_cancelled_turn(self) -> None:
        state = self.state
        last = state.conversation[-1] if state.conversation else None
        if last is not None and last.role == "assistant" and last.tool_uses and state.pending is None:
            # cancelled between the reply and its batch: none of its calls started
            results = [interrupted_result(u.id, by=TURN_CANCELLED, started=False) for u in last.tool_uses]
            state.conversation.append(Message.tool_results(results))
        state.in_turn = False

    async def _saved(self, outcome: TurnOutcome) -> TurnOutcome:
        self.state.in_turn = outcome.reason == "permission"  # a paused turn goes on when it is answered
        await self.save_snapshot(outcome.reason)
        return outcome

    async def compile_working_set(self) -> CompiledRequest:
        """The request the next model call would send, after auto compaction."""
        return await self.request_builder.compile("auto")

    # -- the loop ---------------------------------------------------------------------

    async def _advance(self) -> TurnOutcome:
        try:
            while True:
                outcome = await self._work()
                if outcome.reason != "end_turn":
                    return outcome
                follow_up = await self._judge_goal(outcome)
                if follow_up is None or isinstance(follow_up, TurnOutcome):
                    return self._unless_denied(follow_up or outcome)
                self.conversation.append(Message.user(follow_up))
                self._turn_calls = 0
        except BudgetExceeded as exc:
            return TurnOutcome("budget", self._final_text, self._turn_calls, detail=str(exc))

    def _unless_denied(self, outcome: TurnOutcome) -> TurnOutcome:
        """A turn that ended naturally after calls were denied for want of anyone to ask
        did not do what the model says it did: its outcome says so."""
        denied = self.state.unanswered
        if outcome.reason != "end_turn" or not denied:
            return outcome
        tools = ", ".join(
            name if denied.count(name) == 1 else f"{name} ×{denied.count(name)}" for name in dict.fromkeys(denied)
        )
        calls = f"{len(denied)} tool calls ({tools}) were" if len(denied) > 1 else f"1 tool call ({tools}) was"
        detail = f"{calls} denied because nobody could answer a permission prompt; the task may be unfinished"
        return TurnOutcome("permission_denied", outcome.final_text, outcome.model_calls, detail=detail)

    async def _work(self) -> TurnOutcome:
        while self._turn_calls < self.settings.agent.max_turns:
            self._turn_calls += 1
            response = await self.model_caller.query(self._turn_calls)
            step = next_step_for(
                response, cut_in_a_row=self._cut_in_a_row, max_cut_in_a_row=self.settings.agent.max_truncated_replies
            )
            if step.kind != "refused":
                self._final_text = response.as_message().text or self._final_text
            outcome = await self._take(step, response)
            if outcome is not None:
                return outcome
        return TurnOutcome("turn_limit", self._final_text, self._turn_calls)

    async def _take(self, step: NextStep, response: ModelResponse) -> TurnOutcome | None:
        """Carry out the step the reply's stop reason calls for (agents.session._stop_reasons);
        an outcome ends the turn, None asks the model again."""
        self._cut_in_a_row = self._cut_in_a_row + 1 if step.kind == "continue_cut" else 0
        self._resuming_paused = step.kind == "resume_paused"
        if step.results:
            self.conversation.append(Message.tool_results(step.results))
        if step.follow_up is not None:
            self.conversation.append(Message.user(step.follow_up))
        if step.kind == "natural_end":
            return TurnOutcome("end_turn", self._final_text, self._turn_calls)
        if step.kind == "truncated":
            return TurnOutcome("truncated", self._final_text, self._turn_calls, detail=step.detail)
        if step.kind == "refused":
            self.conversation.pop()  # the refused reply; the record keeps it in the event stream
            return TurnOutcome("refusal", self._final_text, self._turn_calls, detail=step.detail)
        if step.kind == "run_tools":
            batch = await self.tool_batches.gate([b for b in response.content if isinstance(b, ToolUseBlock)])
            if batch.asks:
                self.pending = batch
                return self._paused()
            await self.tool_batches.finish(batch)
        return None

    def _paused(self) -> TurnOutcome:
        request = self.tool_batches.current_request(self.pending)
        return TurnOutcome(
            "permission", self._final_text, self._turn_calls, detail=f"{request.name} needs approval", request=request
        )

    async def _judge_goal(self, outcome: TurnOutcome) -> str | TurnOutcome | None:
        """After a natural end in Default mode: the judge decides whether work goes on
        (a continue input), stops (an outcome), or the goal is met (None)."""
        goal = self.goal
        if goal is None or goal.status != "active" or self.mode is Mode.PLAN:
            return None
        auto_turns = goal.auto_turns  # the event reports the count this verdict was given at
        step = await judge_step(
            goal,
            self.kit.judge or self.ports.model,
            self.conversation,
            max_auto_turns=self.settings.agent.max_goal_auto_turns,
        )
        self.emit(
            GoalVerdict(
                session_id=self.session_id,
                condition=goal.condition,
                verdict=step.verdict.verdict,
                reason=step.verdict.reason,
                auto_turns=auto_turns,
            )
        )
        if step.verdict.verdict == "met":  # judge_step marked the goal met
            self._show_goal()
        if step.stop is not None:
            return TurnOutcome(step.stop, outcome.final_text, outcome.model_calls, detail=step.detail)
        return step.continue_with
