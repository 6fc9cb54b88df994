"""The agent loop: compile → query → execute, until a natural end or the turn limit.

Plain asyncio. It reaches the world only through the ports it is given, so the same
code runs in one process and inside a Ray actor. Compaction, clipping and traces are
called steps, not inline branches.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from dataclasses import dataclass, field
from typing import Literal

from agents.compaction import (
    CompactionEnv,
    CompactionRequest,
    CompactionResult,
    ExtractiveSummarizer,
    check_budget_fits,
    clip_tool_result,
    compact_budget,
    make_strategy,
)
from agents.compaction.ledger import CompactionEvent
from agents.config import SessionSettings
from agents.errors import PromptTooLong
from agents.events import (
    AssistantText,
    EventSink,
    ModelCall,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    discard_events,
)
from agents.messages import Message, ToolResultBlock, ToolUseBlock
from agents.ports import ModelClient, ModelResponse, Summarizer, ToolExecutor, Usage
from agents.system_prompt import SystemPrompt
from agents.tokens import CharRatioEstimator, TokenCounter
from agents.tool_calls import run_tool_call
from agents.trace import TraceWriter
from agents.working_set import CompiledRequest, WorkingSetCompiler
from tools.artifacts import ArtifactStore
from tools.base import ToolContext
from tools.registry import ToolRegistry

__all__ = ["Session", "SessionPorts", "TurnOutcome", "new_session_id"]


_REFUSAL_SAFETY = 0.9  # aim a little under the provider's limit after a refusal


def new_session_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class TurnOutcome:
    """How one outer turn ended."""

    reason: Literal["end_turn", "turn_limit"]
    final_text: str
    model_calls: int


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


class Session:
    """One agent conversation and the loop that advances it."""

    def __init__(
        self,
        ports: SessionPorts,
        *,
        system_prompt: SystemPrompt | str,
        settings: SessionSettings | None = None,
        session_id: str | None = None,
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
        self.model_calls = 0
        self.compiler = WorkingSetCompiler(ports.counter)
        self.strategy = make_strategy(self.settings.compact.strategy)
        self.budget_tokens = compact_budget(ports.model.name, self.settings.agent.max_output_tokens, self.settings.compact)
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
        self._emit(SessionStarted(session_id=self.session_id, model=self.ports.model.name, cwd=str(self.ports.tool_context.workspace)))

    def announce_end(self, reason: str, final_text: str, error: str | None = None) -> None:
        self._emit(
            SessionEnded(
                session_id=self.session_id,
                reason=reason,
                final_text=final_text,
                turns=self.model_calls,
                usage=self.usage,
                error=error,
            )
        )

    # -- the loop ---------------------------------------------------------------------

    async def run_turn(self, user_input: str) -> TurnOutcome:
        """One outer turn: the user speaks, the agent works until it answers."""
        self.conversation.append(Message.user(user_input))
        final_text = ""
        for call_number in range(1, self.settings.agent.max_turns + 1):
            response = await self._query(call_number)
            final_text = response.as_message().text or final_text
            uses = [b for b in response.content if isinstance(b, ToolUseBlock)]
            if not uses:
                return TurnOutcome("end_turn", final_text, call_number)
            results = await asyncio.gather(*(self._execute(use) for use in uses))
            self.conversation.append(Message.tool_results(results))
        return TurnOutcome("turn_limit", final_text, self.settings.agent.max_turns)

    async def compact_now(self, focus: str | None = None) -> CompactionResult:
        """Manual `/compact`: summarize keeping the last few messages; on failure the
        history stays exactly as it was and the result says why."""
        return await self._compact("manual", focus)

    async def compile_working_set(self) -> CompiledRequest:
        """The request the next model call would send, after auto compaction."""
        return await self._compile("auto")

    async def _query(self, call_number: int) -> ModelResponse:
        compiled = await self._compile("auto")
        started = time.perf_counter()
        try:
            response = await self.ports.model.create(compiled.request)
        except PromptTooLong as refusal:
            # Recompile once around a summary and retry; the retry is not a new turn.
            compiled = await self._compile("prompt_too_long", self._refusal_budget(compiled.estimated_tokens, refusal))
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
        self._emit(
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
            self._emit(AssistantText(session_id=self.session_id, text=text))
        return response

    # -- compile and compact ----------------------------------------------------------

    def _overhead_tokens(self) -> int:
        return self.compiler.prefix_tokens(self.prompt.text, self.compiler.tools_for(self.ports.registry))

    def _compile_now(self) -> CompiledRequest:
        return self.compiler.compile(
            system=self.prompt.text,
            registry=self.ports.registry,
            messages=self.conversation,
            max_tokens=self.settings.agent.max_output_tokens,
        )

    def _refusal_budget(self, estimated: int, refusal: PromptTooLong) -> int:
        """The provider counted more than we estimated: aim below what it would accept,
        scaled by its own numbers when it gave them, else at half of what was refused."""
        if refusal.actual_tokens and refusal.limit_tokens:
            target = int(estimated * refusal.limit_tokens / refusal.actual_tokens * _REFUSAL_SAFETY)
        else:
            target = estimated // 2
        return min(self.budget_tokens, target)

    async def _compile(self, trigger: Literal["auto", "prompt_too_long"], budget: int | None = None) -> CompiledRequest:
        # The strategy sees every call (it decides whether to act); the running estimate
        # is passed along so an under-budget call costs no recount.
        compiled = self._compile_now()
        result = await self._compact(trigger, None, total_tokens=compiled.estimated_tokens, budget=budget)
        events: list[CompactionEvent] = result.events
        if result.changed:
            compiled = self._compile_now()
        if self.ports.trace is not None:
            self.ports.trace.write(compiled, self.prompt, events, budget_tokens=self.budget_tokens, counter=self.ports.counter)
        return compiled

    async def _compact(
        self, trigger, focus: str | None, total_tokens: int | None = None, budget: int | None = None
    ) -> CompactionResult:
        request = CompactionRequest(
            messages=list(self.conversation),
            overhead_tokens=self._overhead_tokens(),
            budget_tokens=budget or self.budget_tokens,
            trigger=trigger,
            focus=focus,
            total_tokens=total_tokens,
        )
        result = await self.strategy.compact(request, self._compaction_env)
        if result.changed:
            self.conversation = result.messages
        for event in result.events:
            self._emit(event.model_copy(update={"session_id": self.session_id}))
        return result

    # -- tools ------------------------------------------------------------------------

    async def _execute(self, use: ToolUseBlock) -> ToolResultBlock:
        self._emit(ToolCall(session_id=self.session_id, tool_use_id=use.id, name=use.name, input=use.input))
        started = time.perf_counter()
        result = await run_tool_call(use, registry=self.ports.registry, executor=self.ports.executor, ctx=self.ports.tool_context)
        result = self._clip_to_budget(result)
        self._emit(
            ToolResult(
                session_id=self.session_id,
                tool_use_id=use.id,
                name=use.name,
                is_error=result.is_error,
                content=result.content,
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        )
        return result

    def _clip_to_budget(self, result: ToolResultBlock) -> ToolResultBlock:
        """Per-result budget at entry; the full body goes to the record first."""
        clipped = clip_tool_result(
            result.content, max_tokens=self.settings.result_max_tokens, recall_id=result.tool_use_id, counter=self.ports.counter
        )
        if clipped is None:
            return result
        if self.ports.artifacts is not None:
            self.ports.artifacts.put(result.tool_use_id, result.content)
        return ToolResultBlock(tool_use_id=result.tool_use_id, content=clipped.content, is_error=result.is_error)

    def _emit(self, event) -> None:
        self.ports.emit(event)
