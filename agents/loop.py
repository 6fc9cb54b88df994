"""The agent loop: compile → query → execute, until a natural end, a limit, or a pause.

Plain asyncio. It reaches the world only through the ports it is given, so the same
code runs in one process and inside a Ray actor. Compaction, permissions, the goal
judge and budgets are called steps, not inline branches; the tool batch lives in
`agents.tool_batch`.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar, overload

from agents.budgets import BudgetExceeded
from agents.compaction import (
    CompactionEnv,
    CompactionRequest,
    CompactionResult,
    check_budget_fits,
    compact_budget,
    make_strategy,
    refusal_budget,
)
from agents.compaction.ledger import CompactionEvent
from agents.config import SessionSettings
from agents.errors import PromptTooLong, WorkingsetError
from agents.events import (
    AssistantText,
    GoalVerdict,
    ModeChanged,
    ModelCall,
    Notice,
    PermissionRequested,
    SessionEnded,
    SessionStarted,
    SnapshotSaved,
)
from agents.goal import anchor_after_rewrite, goal_section, judge_step
from agents.hooks import HookEvent, HookResult
from agents.messages import Message, ToolUseBlock
from agents.modes import Mode, visible_registry
from agents.persistence import restored_state, snapshot_of
from agents.ports import ModelResponse, Usage
from agents.session_kit import SessionKit, SessionPorts, notify_hooks
from agents.session_state import GoalState, PendingState, SessionState
from agents.snapshot_store import SnapshotError
from agents.system_prompt import SystemPrompt, tool_catalog_section
from agents.tool_batch import ToolBatchRunner
from agents.working_set import CompiledRequest, WorkingSetCompiler

__all__ = ["Session", "SessionKit", "SessionPorts", "TurnOutcome", "new_session_id"]

_REFUSAL_SAFETY = 0.9  # aim a little under the provider's limit after a refusal

TurnReason = Literal["end_turn", "turn_limit", "permission", "judge_error", "goal_limit", "budget"]


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


T = TypeVar("T")


class _InState(Generic[T]):
    """A Session attribute that reads and writes a field of the session's state."""

    def __init__(self, field: str):
        self.field = field

    @overload
    def __get__(self, session: None, owner: type) -> _InState[T]: ...

    @overload
    def __get__(self, session: Session, owner: type) -> T: ...

    def __get__(self, session: Session | None, owner: type) -> _InState[T] | T:
        return self if session is None else getattr(session.state, self.field)

    def __set__(self, session: Session, value: T) -> None:
        setattr(session.state, self.field, value)


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
        self.compiler = WorkingSetCompiler(kit.counter)
        self.strategy = make_strategy(self.settings.compact.strategy)
        self.budget_tokens = compact_budget(ports.model.name, self.settings.agent.max_output_tokens, self.settings.compact)
        self.tools = ToolBatchRunner(self.state, ports, kit, result_max_tokens=self.settings.result_max_tokens)
        self.set_mode(mode, announce=False)
        check_budget_fits(self.budget_tokens, self._overhead_tokens())
        self._compaction_env = CompactionEnv(
            counter=kit.counter,
            summarizer=ports.summarizer,
            artifacts=kit.artifacts,
            settings=self.settings.compact,
            summarizer_settings=self.settings.summarizer,
            model_name=ports.model.name,
        )

    # The state's fields, by the names the loop and its callers use.
    session_id = _InState[str]("session_id")
    conversation = _InState[list[Message]]("conversation")
    mode = _InState[Mode]("mode")
    goal = _InState[GoalState | None]("goal")
    pending = _InState[PendingState | None]("pending")
    usage = _InState[Usage]("usage")
    model_calls = _InState[int]("model_calls")
    _turn_calls = _InState[int]("turn_calls")
    _final_text = _InState[str]("final_text")

    # -- lifecycle events -------------------------------------------------------------

    def announce_start(self) -> None:
        self.emit(SessionStarted(session_id=self.session_id, model=self.ports.model.name, cwd=str(self.kit.tool_context.workspace)))

    def announce_end(self, reason: str, final_text: str, error: str | None = None) -> None:
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
        visible = visible_registry(self.kit.registry, self.mode)
        self.prompt = self.prompt.replace(tool_catalog_section(visible), "tools")
        if announce:
            self.emit(ModeChanged(session_id=self.session_id, mode=self.mode.value))

    def set_goal(self, condition: str | None) -> None:
        """Set a goal (its evidence starts now) or clear it with None."""
        self.state.goal = GoalState(condition=condition, since_index=len(self.conversation)) if condition else None
        self._show_goal()

    def _show_goal(self) -> None:
        # Only an active goal is in the system prompt; a met one has left it.
        self.prompt = self.prompt.replace(goal_section(self.goal), "goal")

    async def run_turn(self, user_input: str) -> TurnOutcome:
        """One outer turn: the user speaks, the agent works until it answers or pauses."""
        state = self.state
        if state.pending is not None:
            raise WorkingsetError("a tool call is waiting for permission; answer it before sending more input")
        if state.start_source is not None and not self.kit.is_child:
            source, state.start_source = state.start_source, None
            cwd = str(self.kit.tool_context.workspace)
            await self.notify_hooks(HookEvent.SESSION_START, {"session_id": self.session_id, "cwd": cwd, "source": source})
        state.conversation.append(Message.user(user_input))
        state.turn_calls, state.final_text = 0, ""
        return await self._saved(await self._advance())

    async def notify_hooks(self, event: HookEvent, payload: dict, *, tool_name: str | None = None) -> HookResult | None:
        """Run the hooks for `event`; their warnings and messages become notices."""
        return await notify_hooks(self.kit, self.session_id, event, payload, tool_name=tool_name)

    async def aclose(self) -> None:
        """Release what the session holds open (MCP connections)."""
        while self.closers:
            await self.closers.pop()()

    async def answer_permission(self, allow: bool, *, always: bool = False) -> TurnOutcome:
        """Resume the parked call with the user's answer."""
        if self.pending is None or not self.pending.asks:
            raise WorkingsetError("no tool call is waiting for permission")
        if await self.tools.answer(self.pending, allow=allow, always=always):
            return await self._saved(self._paused())
        return await self.continue_parked()

    async def settle_resumed(self) -> TurnOutcome | None:
        """After a resume: the parked question again, or the turn continued when every
        parked call was settled on restore; None when nothing was parked."""
        if self.pending is None:
            return None
        if self.pending.asks:
            return self._paused()
        return await self.continue_parked()

    async def continue_parked(self) -> TurnOutcome:
        """Run a parked batch whose calls are all settled, then go on with the turn
        (after a resume re-decided them, for instance)."""
        if self.pending is None or self.pending.asks:
            raise WorkingsetError("nothing parked is ready to continue")
        await self.tools.finish(self.pending)
        self.pending = None
        return await self._saved(await self._advance())

    async def compact_now(self, focus: str | None = None) -> CompactionResult:
        """Manual `/compact`: summarize keeping the last few messages; on failure the
        history stays exactly as it was and the result says why."""
        result = await self._compact("manual", focus)
        if result.changed:
            await self.save_snapshot("compact")
        return result

    async def clear(self) -> None:
        """`/clear`: an empty conversation, saved at once, so the old one is only in history."""
        state = self.state
        state.conversation, state.pending, state.goal = [], None, None
        self._show_goal()
        state.turn_calls, state.final_text = 0, ""
        state.start_source = "clear"
        await self.save_snapshot("clear")

    async def save_snapshot(self, reason: str) -> str | None:
        """Store the state now; a failure is reported and the session goes on."""
        if self.ports.snapshots is None:
            return None
        snapshot = snapshot_of(self.state, self.kit, model=self.ports.model.name, settings=self.settings, reason=reason)
        try:
            version = await self.ports.snapshots.save(snapshot)
        except SnapshotError as exc:
            self.emit(SnapshotSaved(session_id=self.session_id, saved=False, reason=reason, error=f"state not saved: {exc}"))
            return None
        self.emit(SnapshotSaved(session_id=self.session_id, saved=True, version=version, reason=reason))
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

    async def _saved(self, outcome: TurnOutcome) -> TurnOutcome:
        await self.save_snapshot(outcome.reason)
        return outcome

    async def compile_working_set(self) -> CompiledRequest:
        """The request the next model call would send, after auto compaction."""
        return await self._compile("auto")

    # -- the loop ---------------------------------------------------------------------

    async def _advance(self) -> TurnOutcome:
        try:
            while True:
                outcome = await self._work()
                if outcome.reason != "end_turn":
                    return outcome
                follow_up = await self._judge_goal(outcome)
                if follow_up is None or isinstance(follow_up, TurnOutcome):
                    return follow_up or outcome
                self.conversation.append(Message.user(follow_up))
                self._turn_calls = 0
        except BudgetExceeded as exc:
            return TurnOutcome("budget", self._final_text, self._turn_calls, detail=str(exc))

    async def _work(self) -> TurnOutcome:
        while self._turn_calls < self.settings.agent.max_turns:
            self._turn_calls += 1
            response = await self._query(self._turn_calls)
            self._final_text = response.as_message().text or self._final_text
            uses = [b for b in response.content if isinstance(b, ToolUseBlock)]
            if not uses:
                return TurnOutcome("end_turn", self._final_text, self._turn_calls)
            batch = await self.tools.gate(uses)
            if batch.asks:
                self.pending = batch
                return self._paused()
            await self.tools.finish(batch)
        return TurnOutcome("turn_limit", self._final_text, self._turn_calls)

    def _paused(self) -> TurnOutcome:
        request = self.tools.current_request(self.pending)
        return TurnOutcome(
            "permission", self._final_text, self._turn_calls, detail=f"{request.name} needs approval", request=request
        )

    async def _query(self, call_number: int) -> ModelResponse:
        compiled = await self._compile("auto")
        started = time.perf_counter()
        try:
            response = await self.ports.model.create(compiled.request)
        except PromptTooLong as refusal:
            # Recompile once around a summary and retry; the retry is not a new turn.
            compiled = await self._compile("prompt_too_long", refusal_budget(compiled.estimated_tokens, refusal, self.budget_tokens))
            try:
                response = await self.ports.model.create(compiled.request)
            except PromptTooLong as again:
                raise PromptTooLong(
                    f"the provider refused the request twice as too long (estimate {compiled.estimated_tokens} "
                    f"tokens, compact budget {self.budget_tokens}); nothing further was removed — "
                    "lower compact.ratio or set compact.context_window to the model's real window",
                    actual_tokens=again.actual_tokens,
                    limit_tokens=again.limit_tokens,
                ) from again
        self.model_calls += 1
        self.usage = self.usage + response.usage
        self.conversation.append(response.as_message())
        self.emit(
            ModelCall(
                session_id=self.session_id,
                turn=call_number,
                estimated_input_tokens=compiled.estimated_tokens,
                usage=response.usage,
                stop_reason=response.stop_reason,
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        )
        for text in (b.text for b in response.content if b.type == "text"):
            self.emit(AssistantText(session_id=self.session_id, text=text))
        if self.kit.budget is not None:
            self.kit.budget.charge(response.usage, self.ports.model.name)
        return response

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
        self.emit(GoalVerdict(session_id=self.session_id, condition=goal.condition, verdict=step.verdict.verdict,
                              reason=step.verdict.reason, auto_turns=auto_turns))
        if goal.status == "met":
            self._show_goal()
        if step.stop is not None:
            return TurnOutcome(step.stop, outcome.final_text, outcome.model_calls, detail=step.detail)
        return step.continue_with

    # -- compile and compact ----------------------------------------------------------

    def _overhead_tokens(self) -> int:
        tools = self.compiler.tools_for(visible_registry(self.kit.registry, self.mode))
        return self.compiler.prefix_tokens(self.prompt.text, tools)

    def _compile_now(self) -> CompiledRequest:
        return self.compiler.compile(
            system=self.prompt.text,
            registry=visible_registry(self.kit.registry, self.mode),
            messages=self.conversation,
            max_tokens=self.settings.agent.max_output_tokens,
        )

    async def _compile(self, trigger: Literal["auto", "prompt_too_long"], budget: int | None = None) -> CompiledRequest:
        # The strategy sees every call (it decides whether to act); the running estimate
        # is passed along so an under-budget call costs no recount.
        compiled = self._compile_now()
        result = await self._compact(trigger, None, total_tokens=compiled.estimated_tokens, budget=budget)
        events: list[CompactionEvent] = result.events
        if result.changed:
            compiled = self._compile_now()
        if self.kit.trace is not None:
            self.kit.trace.write(compiled, self.prompt, events, budget_tokens=self.budget_tokens, counter=self.kit.counter)
        return compiled

    async def _compact(
        self, trigger, focus: str | None, total_tokens: int | None = None, budget: int | None = None
    ) -> CompactionResult:
        request = CompactionRequest(
            messages=self.conversation,  # strategies never mutate it; they return new lists
            overhead_tokens=self._overhead_tokens(),
            budget_tokens=budget or self.budget_tokens,
            trigger=trigger,
            focus=focus,
            total_tokens=total_tokens,
        )
        hooked = self.kit.hooks is not None and (
            trigger != "auto" or request.current_tokens(self._compaction_env) > request.budget_tokens
        )
        payload = {"session_id": self.session_id, "trigger": trigger}
        if hooked:
            payload["tokens_before"] = request.current_tokens(self._compaction_env)
            await self.notify_hooks(HookEvent.PRE_COMPACT, payload)
        result = await self.strategy.compact(request, self._compaction_env)
        if hooked:
            after = result.events[-1].tokens_after if result.events else payload["tokens_before"]
            await self.notify_hooks(HookEvent.POST_COMPACT, {**payload, "tokens_after": after})
        if result.changed:
            if self.goal is not None:
                self.goal.since_index = anchor_after_rewrite(self.goal.since_index, self.conversation, result.messages)
            self.conversation = result.messages
        for event in result.events:
            self.emit(event.model_copy(update={"session_id": self.session_id}))
        return result
