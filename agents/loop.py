"""The agent loop: compile → query → execute, until a natural end, a limit, or a pause.

Plain asyncio. It reaches the world only through the ports it is given, so the same
code runs in one process and inside a Ray actor. Compaction, permissions, the goal
judge and budgets are called steps, not inline branches; the tool batch lives in
`agents.tool_batch`.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from dataclasses import dataclass, field
from typing import Literal

from agents.budgets import Budget, BudgetExceeded
from agents.compaction import (
    CompactionEnv,
    CompactionRequest,
    CompactionResult,
    ExtractiveSummarizer,
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
    EventSink,
    GoalVerdict,
    ModeChanged,
    ModelCall,
    Notice,
    PermissionRequested,
    SessionEnded,
    SessionStarted,
    SnapshotSaved,
    discard_events,
)
from agents.goal import GoalState, anchor_after_rewrite, goal_section, judge_step
from agents.hooks import HookEvent, HookResult, HookRunner
from agents.messages import Message, ToolUseBlock
from agents.models import cost_usd, model_info
from agents.modes import Mode, visible_registry
from agents.permissions import PermissionRuntime
from agents.persistence import export_state, restore_state
from agents.ports import (
    ModelClient,
    ModelResponse,
    SnapshotStore,
    Summarizer,
    ToolExecutor,
    Usage,
)
from agents.prompt_too_long import RetryCheck, check_retry, exact_tokens, twice_refused
from agents.session_state import SessionState
from agents.snapshot_store import SnapshotError
from agents.stop_reasons import NextStep, next_step_for
from agents.system_prompt import SystemPrompt, tool_catalog_section
from agents.tokens import CharRatioEstimator, TokenCounter
from agents.tool_batch import Approver, PendingBatch, ToolBatchRunner
from agents.trace import TraceWriter
from agents.working_set import CompiledRequest, WorkingSetCompiler
from tools.artifacts import ArtifactStore
from tools.base import ToolContext
from tools.registry import ToolRegistry

__all__ = ["Session", "SessionPorts", "TurnOutcome", "new_session_id"]

TurnReason = Literal[
    "end_turn", "turn_limit", "permission", "judge_error", "goal_limit", "budget", "truncated", "refusal"
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


@dataclass
class SessionPorts:
    """What the loop is given to reach the world."""

    model: ModelClient
    executor: ToolExecutor
    registry: ToolRegistry
    tool_context: ToolContext
    summarizer: Summarizer = field(default_factory=ExtractiveSummarizer)
    artifacts: ArtifactStore | None = None
    counter: TokenCounter = field(default_factory=CharRatioEstimator)
    emit: EventSink = discard_events
    trace: TraceWriter | None = None
    permissions: PermissionRuntime = field(default_factory=lambda: PermissionRuntime.from_texts(mode="bypass"))
    approver: Approver | None = None  # answers asks inline; None at the root means "park"
    judge: ModelClient | None = None  # the goal judge; defaults to the main model
    budget: Budget | None = None
    is_child: bool = False
    snapshots: SnapshotStore | None = None  # None for subagents: they never write snapshots
    hooks: HookRunner | None = None


class Session:
    """One agent conversation and the loop that advances it."""

    def __init__(
        self,
        ports: SessionPorts,
        *,
        system_prompt: SystemPrompt | str,
        settings: SessionSettings | None = None,
        session_id: str | None = None,
        mode: Mode = Mode.DEFAULT,
    ):
        if ports.artifacts is not None and ports.tool_context.artifacts is None:
            # Recall reads the same record that clipping and clearing write.
            ports.tool_context = dataclasses.replace(ports.tool_context, artifacts=ports.artifacts)
        self.ports = ports
        self.prompt = SystemPrompt.plain(system_prompt) if isinstance(system_prompt, str) else system_prompt
        self.settings = settings or SessionSettings()
        self.session_id = session_id or new_session_id()
        self.conversation: list[Message] = []
        self.usage = Usage()
        self.cost_usd = 0.0  # of the calls whose price is known
        self.unpriced_calls = 0
        self.model_calls = 0
        self.mode = Mode.DEFAULT
        self.goal: GoalState | None = None
        self.pending: PendingBatch | None = None
        self._start_source: str | None = "startup"  # SessionStart fires before the first turn
        self.closers: list = []  # async callables run by aclose (MCP connections, ...)
        self._turn_calls = 0
        self._cut_in_a_row = 0  # replies cut off at max_tokens just before this one
        self._resuming_paused = False  # the next reply continues the last (paused) one
        self._final_text = ""
        self.compiler = WorkingSetCompiler(ports.counter)
        self.strategy = make_strategy(self.settings.compact.strategy)
        self.model_info = model_info(ports.model, self.settings.models)
        self.budget_tokens = compact_budget(
            ports.model, self.settings.agent.max_output_tokens, self.settings.compact, self.settings.models
        )
        self.tools = ToolBatchRunner(self)
        self.set_mode(mode, announce=False)
        check_budget_fits(self.budget_tokens, self._overhead_tokens())
        self._compaction_env = CompactionEnv(
            counter=ports.counter,
            summarizer=ports.summarizer,
            artifacts=ports.artifacts,
            settings=self.settings.compact,
            summarizer_settings=self.settings.summarizer,
            model_name=ports.model.name,
        )

    # -- lifecycle events -------------------------------------------------------------

    def announce_start(self) -> None:
        self.emit(SessionStarted(session_id=self.session_id, model=self.ports.model.name, cwd=str(self.ports.tool_context.workspace)))

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
        self.ports.emit(event)

    # -- user actions -----------------------------------------------------------------

    def set_mode(self, mode: Mode, *, announce: bool = True) -> None:
        """Enter or leave a mode; the Tool Catalog is rebuilt from what the mode shows."""
        self.mode = Mode(mode)
        visible = visible_registry(self.ports.registry, self.mode)
        self.prompt = self.prompt.replace(tool_catalog_section(visible), "tools")
        if announce:
            self.emit(ModeChanged(session_id=self.session_id, mode=self.mode.value))

    def set_goal(self, condition: str | None) -> None:
        """Set a goal (its evidence starts now) or clear it with None."""
        self.goal = GoalState(condition=condition, since_index=len(self.conversation)) if condition else None
        self.prompt = self.prompt.replace(goal_section(self.goal), "goal")

    async def run_turn(self, user_input: str) -> TurnOutcome:
        """One outer turn: the user speaks, the agent works until it answers or pauses."""
        if self.pending is not None:
            raise WorkingsetError("a tool call is waiting for permission; answer it before sending more input")
        if self._start_source is not None and not self.ports.is_child:
            source, self._start_source = self._start_source, None
            cwd = str(self.ports.tool_context.workspace)
            await self.notify_hooks(HookEvent.SESSION_START, {"session_id": self.session_id, "cwd": cwd, "source": source})
        self.conversation.append(Message.user(user_input))
        self._turn_calls, self._final_text, self._cut_in_a_row = 0, "", 0
        return self._saved(await self._advance())

    async def notify_hooks(self, event: HookEvent, payload: dict, *, tool_name: str | None = None) -> HookResult | None:
        """Run the hooks for `event`; their warnings and messages become notices."""
        hooks = self.ports.hooks
        if hooks is None or not hooks.matching(event, tool_name):
            return None
        result = await hooks.run(event, payload)
        for text in [*result.warnings, *result.messages]:
            self.emit(Notice(session_id=self.session_id, text=f"{event.value} hook: {text}"))
        return result

    async def aclose(self) -> None:
        """Release what the session holds open (MCP connections)."""
        while self.closers:
            await self.closers.pop()()

    async def answer_permission(self, allow: bool, *, always: bool = False) -> TurnOutcome:
        """Resume the parked call with the user's answer."""
        if self.pending is None or not self.pending.asks:
            raise WorkingsetError("no tool call is waiting for permission")
        if await self.tools.answer(self.pending, allow=allow, always=always):
            return self._saved(self._paused())
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
        return self._saved(await self._advance())

    async def compact_now(self, focus: str | None = None) -> CompactionResult:
        """Manual `/compact`: summarize keeping the last few messages; on failure the
        history stays exactly as it was and the result says why."""
        result = await self._compact("manual", focus)
        if result.changed:
            self.save_snapshot("compact")
        return result

    def clear(self) -> None:
        """`/clear`: an empty conversation, saved at once, so the old one is only in history."""
        self.conversation = []
        self.pending = None
        self.goal = None
        self.prompt = self.prompt.replace(None, "goal")
        self._turn_calls, self._final_text = 0, ""
        self._start_source = "clear"
        self.save_snapshot("clear")

    def save_snapshot(self, reason: str) -> str | None:
        """Store the state now; a failure is reported and the session goes on."""
        if self.ports.snapshots is None:
            return None
        try:
            version = self.ports.snapshots.save(export_state(self, reason))
        except SnapshotError as exc:
            self.emit(SnapshotSaved(session_id=self.session_id, saved=False, reason=reason, error=f"state not saved: {exc}"))
            return None
        self.emit(SnapshotSaved(session_id=self.session_id, saved=True, version=version, reason=reason))
        return version

    def restore(self, state: SessionState) -> list[str]:
        """Continue from a snapshot; notices say what could not come back as it was."""
        notices = restore_state(self, state)
        self._start_source = "resume"
        for text in notices:
            self.emit(Notice(session_id=self.session_id, text=text))
        return notices

    def _saved(self, outcome: TurnOutcome) -> TurnOutcome:
        self.save_snapshot(outcome.reason)
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
        """Carry out the step the reply's stop reason calls for (agents.stop_reasons);
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
            batch = await self.tools.gate([b for b in response.content if isinstance(b, ToolUseBlock)])
            if batch.asks:
                self.pending = batch
                return self._paused()
            await self.tools.finish(batch)
        return None

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
            compiled, response = await self._retry_smaller(compiled, refusal)
        self._calibrate(compiled.estimated_tokens, response)
        cost = cost_usd(response.usage, self.model_info.prices)
        self.model_calls += 1
        self.usage = self.usage + response.usage
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += cost
        self._record_reply(response)
        self.emit(
            ModelCall(
                session_id=self.session_id,
                turn=call_number,
                estimated_input_tokens=compiled.estimated_tokens,
                usage=response.usage,
                stop_reason=response.stop_reason,
                duration_ms=(time.perf_counter() - started) * 1000,
                cost_usd=cost,
                pricing=self.model_info.pricing,
            )
        )
        for text in (b.text for b in response.content if b.type == "text"):
            self.emit(AssistantText(session_id=self.session_id, text=text))
        if self.ports.budget is not None:
            self.ports.budget.charge(response.usage, cost, self.ports.model.name)
        return response

    def _record_reply(self, response: ModelResponse) -> None:
        """Append the reply; the continuation of a paused turn joins the paused message."""
        message = response.as_message()
        if self._resuming_paused and self.conversation and self.conversation[-1].role == "assistant":
            paused = self.conversation.pop()
            message = Message(role="assistant", content=(*paused.content, *message.content))
        self.conversation.append(message)

    def _calibrate(self, estimated: int, response: ModelResponse) -> None:
        observe = getattr(self.ports.counter, "observe", None)
        if observe is not None and response.usage_reported:
            observe(estimated, response.usage.prompt_tokens)

    async def _retry_smaller(self, refused: CompiledRequest, refusal: PromptTooLong) -> tuple[CompiledRequest, ModelResponse]:
        """The design's prompt-too-long path: recompile once, check, send once more.
        Nothing is sent, and the conversation is left as it was, unless the recompiled
        request passes the check of `agents.prompt_too_long`."""
        target = refusal_budget(refused.estimated_tokens, refusal, self.budget_tokens)
        result = await self._compact("prompt_too_long", None, budget=target, apply=False)
        retry = self._compile_now(result.messages) if result.changed and result.failure is None else None
        check = RetryCheck(
            refused_estimate=refused.estimated_tokens,
            budget=target,
            failure=result.failure or (None if result.changed else f"strategy '{self.strategy.name}' changed nothing"),
            retry_estimate=retry.estimated_tokens if retry is not None else None,
            refused_actual=refusal.actual_tokens,
            limit=refusal.limit_tokens,
        )
        try:
            await check_retry(check, refusal, count=retry and (lambda: exact_tokens(self.ports.model, retry.request)))
        except PromptTooLong:
            self._emit_compaction(result)  # what was tried, though not applied
            raise
        self._apply(result)
        if self.ports.trace is not None:
            self.ports.trace.write(retry, self.prompt, result.events, budget_tokens=target, counter=self.ports.counter)
        try:
            return retry, await self.ports.model.create(retry.request)
        except PromptTooLong as again:
            raise twice_refused(again, estimate=retry.estimated_tokens, budget=self.budget_tokens) from again

    async def _judge_goal(self, outcome: TurnOutcome) -> str | TurnOutcome | None:
        """After a natural end in Default mode: the judge decides whether work goes on
        (a continue input), stops (an outcome), or the goal is met (None)."""
        goal = self.goal
        if goal is None or goal.status != "active" or self.mode is Mode.PLAN:
            return None
        auto_turns = goal.auto_turns  # the event reports the count this verdict was given at
        step = await judge_step(
            goal,
            self.ports.judge or self.ports.model,
            self.conversation,
            max_auto_turns=self.settings.agent.max_goal_auto_turns,
        )
        self.emit(GoalVerdict(session_id=self.session_id, condition=goal.condition, verdict=step.verdict.verdict,
                              reason=step.verdict.reason, auto_turns=auto_turns))
        if goal.status == "met":
            self.prompt = self.prompt.replace(None, "goal")
        if step.stop is not None:
            return TurnOutcome(step.stop, outcome.final_text, outcome.model_calls, detail=step.detail)
        return step.continue_with

    # -- compile and compact ----------------------------------------------------------

    def _overhead_tokens(self) -> int:
        tools = self.compiler.tools_for(visible_registry(self.ports.registry, self.mode))
        return self.compiler.prefix_tokens(self.prompt.text, tools)

    def _compile_now(self, messages: list[Message] | None = None) -> CompiledRequest:
        return self.compiler.compile(
            system=self.prompt.text,
            registry=visible_registry(self.ports.registry, self.mode),
            messages=self.conversation if messages is None else messages,
            max_tokens=self.settings.agent.max_output_tokens,
        )

    async def _compile(self, trigger: Literal["auto"], budget: int | None = None) -> CompiledRequest:
        # The strategy sees every call (it decides whether to act); the running estimate
        # is passed along so an under-budget call costs no recount. Over the budget, the
        # provider's own count (when it has one) decides, and calibrates the estimator.
        compiled = self._compile_now()
        total = compiled.estimated_tokens
        if total > (budget or self.budget_tokens):
            counted = await exact_tokens(self.ports.model, compiled.request)
            if counted is not None:
                observe = getattr(self.ports.counter, "observe", None)
                if observe is not None:
                    observe(total, counted)
                total = counted
        result = await self._compact(trigger, None, total_tokens=total, budget=budget)
        events: list[CompactionEvent] = result.events
        if result.changed:
            compiled = self._compile_now()
        if self.ports.trace is not None:
            self.ports.trace.write(compiled, self.prompt, events, budget_tokens=self.budget_tokens, counter=self.ports.counter)
        return compiled

    async def _compact(
        self, trigger, focus: str | None, total_tokens: int | None = None, budget: int | None = None, *, apply: bool = True
    ) -> CompactionResult:
        request = CompactionRequest(
            messages=self.conversation,  # strategies never mutate it; they return new lists
            overhead_tokens=self._overhead_tokens(),
            budget_tokens=budget or self.budget_tokens,
            trigger=trigger,
            focus=focus,
            total_tokens=total_tokens,
        )
        hooked = self.ports.hooks is not None and (
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
        if apply:
            self._apply(result)
        return result

    def _apply(self, result: CompactionResult) -> None:
        if result.changed:
            if self.goal is not None:
                self.goal.since_index = anchor_after_rewrite(self.goal.since_index, self.conversation, result.messages)
            self.conversation = result.messages
        self._emit_compaction(result)

    def _emit_compaction(self, result: CompactionResult) -> None:
        for event in result.events:
            self.emit(event.model_copy(update={"session_id": self.session_id}))
