"""The next model request: the working set compiled, compacted first when it is over the
budget, and compiled smaller once more when the provider refuses it as too long — or
when, by the (calibrated) count, it would not fit the window at all: such a request is
never sent, it takes the prompt-too-long path at once (`would_not_fit`).

The Session owns the conversation and the system prompt; this step reads them (the
prompt through a getter, since mode and goal changes replace it) and writes back only
what a compaction rewrites: the conversation and the goal's evidence anchor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Literal

from agents.compaction import (
    CompactionEnv,
    CompactionEvent,
    CompactionRequest,
    CompactionResult,
    CompactionStrategy,
    check_budget_fits,
    compact_budget,
    context_window_for,
    refusal_budget,
)
from agents.errors import PromptTooLong
from agents.goal import anchor_after_rewrite
from agents.messages import Message
from agents.ports import CalibratingCounter, ModelResponse
from agents.session._kit import SessionKit, SessionPorts, notify_hooks
from agents.session._prompt_too_long import RetryCheck, check_retry, exact_tokens, twice_refused
from agents.session._reminders import PromptDelivery
from agents.session._state import SessionState
from agents.settings import SessionSettings
from agents.sources import HookEvent, SystemPrompt
from agents.tokens import estimate_prefix_tokens
from agents.working_set import CompiledRequest, WorkingSetCompiler

__all__ = ["RequestBuilder"]


class RequestBuilder:
    """Compiles the session's working set and runs its compaction strategy."""

    def __init__(
        self,
        state: SessionState,
        ports: SessionPorts,
        kit: SessionKit,
        settings: SessionSettings,
        *,
        strategy: CompactionStrategy,
        prompt: Callable[[], SystemPrompt],
        delivery: PromptDelivery,
    ):
        self.state = state
        self.ports = ports
        self.kit = kit
        self.settings = settings
        self.strategy = strategy
        self.prompt = prompt
        self.delivery = delivery  # which tools a request shows; the state told after a compaction
        self.compiler = WorkingSetCompiler(kit.counter)
        self.budget_tokens = compact_budget(
            ports.model, settings.agent.max_output_tokens, settings.compact, settings.models
        )
        # What a request may hold and still be answered: the window less the output reserve.
        window = context_window_for(ports.model, settings.compact.context_window, settings.models)
        self.limit_tokens = window - settings.agent.max_output_tokens
        self.env = CompactionEnv(
            counter=kit.counter,
            summarizer=ports.summarizer,
            artifacts=kit.artifacts,
            settings=settings.compact,
            summarizer_settings=settings.summarizer,
            model_name=ports.model.name,
        )

    def check_fits(self) -> None:
        """The system prompt and tool schemas alone must fit the budget."""
        check_budget_fits(self.budget_tokens, self.overhead_tokens())

    def overhead_tokens(self) -> int:
        tools = self.compiler.tools_for(self.delivery.shown_registry(self.kit.registry, self.state.mode))
        return self.compiler.prefix_tokens(self.prompt().text, tools)

    def compile_now(self, messages: list[Message] | None = None) -> CompiledRequest:
        return self.compiler.compile(
            system=self.prompt().text,
            registry=self.delivery.shown_registry(self.kit.registry, self.state.mode),
            messages=self.state.conversation if messages is None else messages,
            max_tokens=self.settings.agent.max_output_tokens,
        )

    async def compile(self, trigger: Literal["auto"], budget: int | None = None) -> CompiledRequest:
        # The strategy sees every call (it decides whether to act); the running estimate
        # is passed along so an under-budget call costs no recount. Over the budget, the
        # provider's own count (when it has one) decides, and calibrates the estimator.
        compiled = self.compile_now()
        total = compiled.estimated_tokens
        if total > (budget or self.budget_tokens):
            counted = await exact_tokens(self.ports.model, compiled.request)
            if counted is not None:
                if isinstance(self.kit.counter, CalibratingCounter):
                    self.kit.counter.observe(total, counted)
                total = counted
        result = await self.compact(trigger, None, total_tokens=total, budget=budget)
        events: list[CompactionEvent] = result.events
        if result.changed:
            compiled = self.compile_now()
        if self.kit.trace is not None:
            self.kit.trace.write(
                compiled, self.prompt(), events, budget_tokens=self.budget_tokens, counter=self.kit.counter
            )
        return compiled

    def would_not_fit(self, compiled: CompiledRequest) -> PromptTooLong | None:
        """The refusal a request over the window would get, made before it is sent (None:
        it fits). The count is the session's counter, calibrated by provider usage."""
        tokens = compiled.estimated_tokens
        if tokens <= self.limit_tokens:
            return None
        return PromptTooLong(
            f"the request holds {tokens} tokens by the session's count, over the "
            f"{self.limit_tokens} the window leaves beside the output reserve; it was not sent",
            actual_tokens=tokens,
            limit_tokens=self.limit_tokens,
        )

    async def compact(
        self,
        trigger,
        focus: str | None,
        total_tokens: int | None = None,
        budget: int | None = None,
        *,
        apply: bool = True,
    ) -> CompactionResult:
        request = CompactionRequest(
            messages=self.state.conversation,  # strategies never mutate it; they return new lists
            overhead_tokens=self.overhead_tokens(),
            budget_tokens=budget or self.budget_tokens,
            trigger=trigger,
            focus=focus,
            total_tokens=total_tokens,
        )
        hooked = self.kit.hooks is not None and (
            trigger != "auto" or request.current_tokens(self.env) > request.budget_tokens
        )
        session_id = self.state.session_id
        payload = {"session_id": session_id, "trigger": trigger}
        if hooked:
            payload["tokens_before"] = request.current_tokens(self.env)
            await notify_hooks(self.kit, session_id, HookEvent.PRE_COMPACT, payload)
        result = self.retell_state(await self.strategy.compact(request, self.env))
        if hooked:
            after = result.events[-1].tokens_after if result.events else payload["tokens_before"]
            await notify_hooks(self.kit, session_id, HookEvent.POST_COMPACT, {**payload, "tokens_after": after})
        if apply:
            self.apply(result)
        return result

    def retell_state(self, result: CompactionResult) -> CompactionResult:
        """A compaction that folded away the latest state reminder mid-turn: the next
        request tells the state again rather than leaving it until the next user message."""
        if not result.changed:
            return result
        retold = self.delivery.retold(result.messages, self.kit.registry, self.state.mode, self.state.goal)
        return result if retold is None else replace(result, messages=retold)

    def apply(self, result: CompactionResult) -> None:
        state = self.state
        if result.changed:
            if state.goal is not None:
                state.goal.since_index = anchor_after_rewrite(
                    state.goal.since_index, state.conversation, result.messages
                )
            state.conversation = result.messages
        self.emit_compaction(result)

    def emit_compaction(self, result: CompactionResult) -> None:
        for event in result.events:
            self.kit.emit(event.model_copy(update={"session_id": self.state.session_id}))

    async def retry_smaller(
        self, refused: CompiledRequest, refusal: PromptTooLong
    ) -> tuple[CompiledRequest, ModelResponse]:
        """The design's prompt-too-long path: recompile once, check, send once more.
        Nothing is sent, and the conversation is left as it was, unless the recompiled
        request passes the check of `agents.session._prompt_too_long`."""
        fixed = estimate_prefix_tokens(self.kit.counter, system=refused.request.system, tools=refused.request.tools)
        target = refusal_budget(refused.estimated_tokens, refusal, self.budget_tokens, fixed)
        result = await self.compact("prompt_too_long", None, budget=target, apply=False)
        retry = self.compile_now(result.messages) if result.changed and result.failure is None else None
        check = RetryCheck(
            refused_estimate=refused.estimated_tokens,
            budget=target,
            failure=result.failure or (None if result.changed else f"strategy '{self.strategy.name}' changed nothing"),
            retry_estimate=retry.estimated_tokens if retry is not None else None,
            refused_actual=refusal.actual_tokens,
            limit=refusal.limit_tokens,
        )
        count = None if retry is None else (lambda: exact_tokens(self.ports.model, retry.request))
        try:
            await check_retry(check, refusal, count=count)
        except PromptTooLong:
            self.emit_compaction(result)  # what was tried, though not applied
            raise
        assert retry is not None  # check_retry refuses when nothing was recompiled
        self.apply(result)
        if self.kit.trace is not None:
            self.kit.trace.write(retry, self.prompt(), result.events, budget_tokens=target, counter=self.kit.counter)
        try:
            return retry, await self.ports.model.create(retry.request)
        except PromptTooLong as again:
            raise twice_refused(again, estimate=retry.estimated_tokens, budget=self.budget_tokens) from again
