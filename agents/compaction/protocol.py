"""The strategy seam: what a compaction strategy is given and what it returns.

A strategy gets the conversation, the request overhead (system prompt + tool schemas),
the budget and the trigger, and returns the conversation to send plus ledger events.
The loop never knows which strategy runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from agents.compaction.ledger import CompactionEvent
from agents.messages import Message
from agents.ports import Summarizer
from agents.settings import CompactSettings, SummarizerSettings
from agents.tokens import TokenCounter, estimate_messages_tokens
from tools.artifacts import ArtifactStore

__all__ = [
    "CompactionEnv",
    "CompactionRequest",
    "CompactionResult",
    "CompactionStrategy",
    "Trigger",
    "check",
    "check_setting_parameters",
    "with_setting_parameters",
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
    @property
    def name(self) -> str: ...  # read-only, so a frozen dataclass's field satisfies it

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult: ...


def check(condition: bool, message: str) -> None:
    """Parameter validation in a strategy's constructor; make_strategy turns the
    ValueError into a ConfigError that lists the valid parameters."""
    if not condition:
        raise ValueError(message)


# -- spec parameters that override compact settings ---------------------------------------
#
# A strategy names, for each such parameter, the CompactSettings field it overrides
# (e.g. {"last": "preserve_recent_messages"}). The parameter defaults to None, which
# means "the setting"; a value given in the spec wins. The minimum a value may take
# is the setting's own (its `ge`), so a spec cannot set what the settings would refuse.


def _setting_minimum(setting: str) -> int:
    for constraint in CompactSettings.model_fields[setting].metadata:
        minimum = getattr(constraint, "ge", None)
        if minimum is not None:
            return int(minimum)
    return 0


def check_setting_parameters(strategy: object, parameters: Mapping[str, str]) -> None:
    for parameter, setting in parameters.items():
        value = getattr(strategy, parameter)
        minimum = _setting_minimum(setting)
        check(
            value is None or value >= minimum,
            f"{parameter} must be >= {minimum} (or none for the setting compact.{setting})",
        )


def with_setting_parameters(env: CompactionEnv, strategy: object, parameters: Mapping[str, str]) -> CompactionEnv:
    """`env` whose settings carry the values the strategy's spec gave (None: the setting)."""
    given = {setting: getattr(strategy, p) for p, setting in parameters.items() if getattr(strategy, p) is not None}
    if not given:
        return env
    return dataclasses.replace(env, settings=env.settings.model_copy(update=given))
