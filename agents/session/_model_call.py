"""One model call and what it is counted as: the budget reserved before it and settled
after, its usage and cost added to the session's, the estimator calibrated, the reply
recorded in the conversation, and the events that report it.
"""

from __future__ import annotations

import time

from agents.errors import PromptTooLong
from agents.events import AssistantText, ModelCall, Notice
from agents.messages import Message, with_unique_tool_ids
from agents.ports import CalibratingCounter, ModelResponse
from agents.providers import ModelInfo, cost_usd
from agents.session._growth import ToolIdIndex
from agents.session._kit import SessionKit, SessionPorts
from agents.session._request_builder import RequestBuilder
from agents.session._state import SessionState

__all__ = ["ModelCaller"]


class ModelCaller:
    """Makes the session's model calls, one at a time, each against its budget."""

    def __init__(
        self,
        state: SessionState,
        ports: SessionPorts,
        kit: SessionKit,
        *,
        request_builder: RequestBuilder,
        info: ModelInfo,
    ):
        self.state = state
        self.ports = ports
        self.kit = kit
        self.request_builder = request_builder
        self.info = info
        self.tool_ids = ToolIdIndex()  # the conversation's tool_use ids, read as it grows

    async def query(self, call_number: int) -> ModelResponse:
        compiled = await self.request_builder.compile("auto")
        if self.kit.budget is not None:
            await self.kit.budget.reserve()  # refused when the tree (or this scope) is already spent
        started = time.perf_counter()
        try:
            # A request the count says is over the window is refused here, unsent.
            refused = self.request_builder.would_not_fit(compiled)
            if refused is not None:
                raise refused
            response = await self.ports.model.create(compiled.request)
        except PromptTooLong as refusal:
            # Recompile once around a summary and retry; the retry is not a new turn.
            compiled, response = await self.request_builder.retry_smaller(compiled, refusal)
        self._calibrate(compiled.estimated_tokens, response)
        cost = self._count(response)
        response = self._record_reply(response)
        session_id = self.state.session_id
        self.kit.emit(
            ModelCall(
                session_id=session_id,
                turn=call_number,
                estimated_input_tokens=compiled.estimated_tokens,
                usage=response.usage,
                stop_reason=response.stop_reason,
                duration_ms=(time.perf_counter() - started) * 1000,
                cost_usd=cost,
                pricing=self.info.pricing,
            )
        )
        for text in (b.text for b in response.content if b.type == "text"):
            self.kit.emit(AssistantText(session_id=session_id, text=text))
        if response.unknown_blocks:
            kinds = ", ".join(sorted(set(response.unknown_blocks)))
            self.kit.emit(
                Notice(
                    session_id=session_id,
                    text=f"the reply held content blocks of a type this "
                    f"Workingset does not know ({kinds}); they were left out",
                )
            )
        if self.kit.budget is not None:
            await self.kit.budget.settle(response.usage, cost, self.ports.model.name)
        return response

    def _count(self, response: ModelResponse) -> float | None:
        """Add the call to the session's usage and cost; its cost, None when unpriced."""
        state = self.state
        cost = cost_usd(response.usage, self.info.prices)
        state.model_calls += 1
        state.usage = state.usage + response.usage
        if cost is None:
            state.unpriced_calls += 1
        else:
            state.cost_usd += cost
        return cost

    def _record_reply(self, response: ModelResponse) -> ModelResponse:
        """Append the reply (returned with its tool_use ids made unique); the continuation
        of a paused turn joins the paused message."""
        conversation = self.state.conversation
        message = response.as_message()
        if message.tool_uses:
            message, renamed = with_unique_tool_ids(message, self.tool_ids.ids(conversation))
            if renamed:
                response = response.model_copy(update={"content": message.content})
                self.kit.emit(
                    Notice(
                        session_id=self.state.session_id,
                        text="the model reused tool-use ids; the calls "
                        "were given fresh ones: " + ", ".join(f"{old} → {new}" for old, new in renamed),
                    )
                )
        if self.state.resuming_paused and conversation and conversation[-1].role == "assistant":
            paused = conversation.pop()
            message = Message(role="assistant", content=(*paused.content, *message.content))
        conversation.append(message)
        return response

    def _calibrate(self, estimated: int, response: ModelResponse) -> None:
        if isinstance(self.kit.counter, CalibratingCounter) and response.usage_reported:
            self.kit.counter.observe(estimated, response.usage.prompt_tokens)
