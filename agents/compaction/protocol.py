"""The strategy seam: what a compaction strategy is given and what it returns.

A strategy gets the conversation, the request overhead (system prompt + tool schemas),
the budget and the trigger, and returns the conversation to send plus ledger events.
The loop never knows which strategy runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from agents.compaction.ledger import CompactionEvent
from agents.config import CompactSettings, SummarizerSettings
from agents.messages import Message
from agents.ports import Summarizer
from agents.tokens import TokenCounter, estimate_messages_tokens
from tools.artifacts import ArtifactStore

__all__ = [
    "CompactionEnv",
    "CompactionRequest",
    "CompactionResult",
    "CompactionStrategy",
    "Trigger",
    "check",
]

Trigger = Literal["auto", "manual", "prompt_too_long"]


@dataclass
class CompactionEnv:
    """What strategies may use: the counter, the summarizer port, the record of bodies,
    and the compact settings (the defaults of every strategy's spec parameters)."""

    counter: TokenCounter
    summarizer: Summarizer
    artifacts: ArtifactStore | None
    settings: CompactSettings
    summarizer_settings: SummarizerSettings
    model_name: str = ""

    def total(self, overhead_tokens: int, messages: Sequence[Message]) -> int:
        return overhead_tokens + estimate_messages_tokens(self.counter, messages)


@dataclass(frozen=True)
class CompactionRequest:
    messages: Sequence[Message]
    overhead_tokens: int
    budget_tokens: int
    trigger: Trigger = "auto"
    focus: str | None = None
    total_tokens: int | None = None  # the caller's running estimate of overhead + messages, if known

    def current_tokens(self, env: CompactionEnv) -> int:
        if self.total_tokens is not None:
            return self.total_tokens
        return env.total(self.overhead_tokens, self.messages)


@dataclass
class CompactionResult:
    messages: list[Message]
    events: list[CompactionEvent] = field(default_factory=list)
    failure: str | None = None

    @property
    def changed(self) -> bool:
        return any(e.applied for e in self.events)


class CompactionStrategy(Protocol):
    name: str

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult: ...


def check(condition: bool, message: str) -> None:
    """Parameter validation in a strategy's constructor; make_strategy turns the
    ValueError into a ConfigError that lists the valid parameters."""
    if not condition:
        raise ValueError(message)
