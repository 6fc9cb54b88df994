"""Peer rules no built-in strategy states, written over Workingset's compaction steps so a
preset can name them (`benchmarks.compaction.peer_rules:Factory:key=value`).

`OpenHandsV1Condenser` is the OpenHands V1 SDK's LLMSummarizingCondenser
(openhands-sdk/openhands/sdk/context/condenser/llm_summarizing_condenser.py, defaults
max_size=240, keep_first=2, max_tokens None). Before each call it condenses when the view
holds more than `max_size` events, or more than `max_tokens` tokens (the SDK takes the
smaller of max_tokens and the agent model's input limit). Over max_size it keeps
`keep_first` events, a summary, and the last max_size // 2 - keep_first - 1; over the
token limit it keeps the longest suffix that brings the view to max_tokens // 2; both
over: the stricter. A condensation that would forget fewer than 10% of the view's events
is not made (minimum_progress).

Counting as the SDK does: the view begins with the system-prompt event, which Workingset
sends as request overhead and never counts, so keep_first=2 (system prompt and task)
keeps one conversation event here and max_size counts one event fewer. Events are
`agents.compaction.units` events; tokens are the harness's estimate of the whole request
(the SDK counts with the model's tokenizer). A cut inside a parallel batch drops the
batch whole, as the SDK's manipulation indices keep a batch together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from agents.compaction import CompactionEnv, CompactionRequest, CompactionResult, CompactionRun, check
from agents.compaction.units import head_end, size, split_keeping_recent

__all__ = ["OpenHandsV1Condenser"]

MINIMUM_PROGRESS = 0.1


@dataclass(frozen=True)
class OpenHandsV1Condenser:
    name: ClassVar[str] = "openhands-v1"
    max_size: int = 240
    keep_first: int = 2
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        check(self.keep_first >= 1, "keep_first must be >= 1 (the system-prompt event counts)")
        check(self.max_size // 2 - self.keep_first - 1 > 0, "keep_first must be less than max_size // 2 - 1")
        check(self.max_tokens is None or self.max_tokens >= 1, "max_tokens must be >= 1 (or none)")

    def _token_tail(self, run: CompactionRun, head: int) -> int:
        """Events of the longest clean suffix with which head + suffix fit max_tokens // 2."""
        assert self.max_tokens is not None
        clean = run.clean()
        messages = run.messages
        room = self.max_tokens // 2 - run.total(messages[:head])
        suffix = sum(run.env.counter.count_message(m) for m in messages[head:])
        for start in range(head, len(messages) + 1):
            if (start == len(messages) or clean[start]) and suffix <= room:
                return size(messages[start:], "events")
            if start < len(messages):
                suffix -= run.env.counter.count_message(messages[start])
        return 0

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        run = CompactionRun(self.name, request, env)
        first = self.keep_first - 1  # the system-prompt event is overhead here
        if request.trigger == "prompt_too_long":
            return await run.summarize_to_fit(first, env.settings.summary_reserve_tokens)
        events = size(run.messages, "events")
        tails = []
        if request.trigger == "manual":
            tails.append((events + 1) // 2 - self.keep_first - 1)
        if events + 1 > self.max_size:
            tails.append(self.max_size // 2 - self.keep_first - 1)
        head = head_end(run.messages, first, "events")
        if self.max_tokens is not None and run.tokens() > self.max_tokens:
            tails.append(self._token_tail(run, head))
        if not tails:
            return run.done()
        tail = split_keeping_recent(run.messages, max(min(tails), 0), "events")
        if tail is None or tail <= head:
            return run.done()
        if size(run.messages[head:tail], "events") < MINIMUM_PROGRESS * (events + 1):
            return run.done()  # the SDK refuses a condensation below minimum_progress
        failure = await run.summarize(head, tail)
        return run.fail(failure, "summary") if failure else run.done()
