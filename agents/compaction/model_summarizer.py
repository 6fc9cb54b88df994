"""A Summarizer that asks a model: older history + a handoff request, tools off."""

from __future__ import annotations

import asyncio

from agents.compaction.summary import SummaryFailed, handoff_instructions
from agents.messages import Message, TextBlock
from agents.ports import ModelClient, ModelRequest

__all__ = ["ModelSummarizer", "SUMMARIZER_SYSTEM"]

SUMMARIZER_SYSTEM = (
    "You compress a coding agent's conversation into a handoff summary for the agent that "
    "continues the work. Be exact and brief; never invent facts that the conversation does not show."
)


def handoff_messages(messages: list[Message], focus: str | None) -> tuple[Message, ...]:
    """Older history with the handoff request appended as the final user turn."""
    body = list(messages)
    if body and body[0].role != "user":
        body.insert(0, Message.user("[The conversation so far begins with the assistant's turn below.]"))
    request = TextBlock(text=handoff_instructions(focus))
    if body and body[-1].role == "user":
        body[-1] = Message(role="user", content=(*body[-1].content, request))
    else:
        body.append(Message(role="user", content=(request,)))
    return tuple(body)


class ModelSummarizer:
    def __init__(self, model: ModelClient, *, max_tokens: int = 4_000, timeout_s: float = 120.0):
        self.model = model
        self.name = f"model:{model.name}"
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s

    async def summarize(self, messages: list[Message], *, focus: str | None = None) -> str:
        request = ModelRequest(
            system=SUMMARIZER_SYSTEM, tools=(), messages=handoff_messages(messages, focus), max_tokens=self.max_tokens
        )
        try:
            response = await asyncio.wait_for(self.model.create(request), self.timeout_s)
        except TimeoutError as exc:
            raise SummaryFailed(f"summarizer {self.model.name} timed out after {self.timeout_s:g} s") from exc
        return response.as_message().text
