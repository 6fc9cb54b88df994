"""The agent loop: compile → query → execute, until a natural end or the turn limit.

Plain asyncio. It reaches the world only through the ports it is given, so the same
code runs in one process and inside a Ray actor.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Literal

from agents.config import AgentSettings
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
from agents.ports import ModelClient, ModelResponse, ToolExecutor, Usage
from agents.tokens import CharRatioEstimator, TokenCounter
from agents.tool_calls import run_tool_call
from agents.working_set import WorkingSetCompiler
from tools.base import ToolContext
from tools.registry import ToolRegistry

__all__ = ["Session", "SessionPorts", "TurnOutcome"]


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
    counter: TokenCounter = field(default_factory=CharRatioEstimator)
    emit: EventSink = discard_events


class Session:
    """One agent conversation and the loop that advances it."""

    def __init__(
        self,
        ports: SessionPorts,
        *,
        system_prompt: str,
        settings: AgentSettings | None = None,
        session_id: str | None = None,
    ):
        self.ports = ports
        self.system_prompt = system_prompt
        self.settings = settings or AgentSettings()
        self.session_id = session_id or uuid.uuid4().hex[:12]
        self.conversation: list[Message] = []
        self.usage = Usage()
        self.model_calls = 0
        self.compiler = WorkingSetCompiler(ports.counter)

    # -- lifecycle events -------------------------------------------------------------

    def announce_start(self) -> None:
        self._emit(
            SessionStarted(
                session_id=self.session_id,
                model=self.ports.model.name,
                cwd=str(self.ports.tool_context.workspace),
            )
        )

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
        for call_number in range(1, self.settings.max_turns + 1):
            response = await self._query(call_number)
            final_text = response.as_message().text or final_text
            uses = [b for b in response.content if isinstance(b, ToolUseBlock)]
            if not uses:
                return TurnOutcome("end_turn", final_text, call_number)
            results = await asyncio.gather(*(self._execute(use) for use in uses))
            self.conversation.append(Message.tool_results(results))
        return TurnOutcome("turn_limit", final_text, self.settings.max_turns)

    async def _query(self, call_number: int) -> ModelResponse:
        compiled = self.compiler.compile(
            system=self.system_prompt,
            registry=self.ports.registry,
            messages=self.conversation,
            max_tokens=self.settings.max_output_tokens,
        )
        started = time.perf_counter()
        response = await self.ports.model.create(compiled.request)
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

    async def _execute(self, use: ToolUseBlock) -> ToolResultBlock:
        self._emit(ToolCall(session_id=self.session_id, tool_use_id=use.id, name=use.name, input=use.input))
        started = time.perf_counter()
        result = await run_tool_call(
            use,
            registry=self.ports.registry,
            executor=self.ports.executor,
            ctx=self.ports.tool_context,
        )
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

    def _emit(self, event) -> None:
        self.ports.emit(event)
