"""Evidence: what each recorded action uses that it could only have learned from a tool result.

Strategy-independent, so it is computed once per trace. Two needs per call (definitions in
the package docstring, "Tool-evidence recall" and "Grounding recall (legacy)"):

- tool evidence: the action's maximal items that, before the call, occur in some tool
  result and nowhere else — not in the system prompt, the task, other user text, the
  agent's own text or tool inputs;
- legacy: every item of the action whose first occurrence in the conversation is a tool
  result before the call (an item the agent echoed later still counts; overlaps count
  twice).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agents.messages import ContentBlock, Message, ToolUseBlock
from agents.tokens import CharRatioEstimator, TokenCounter
from benchmarks.traces import Trace

from .items import action_text, block_text, contains_item, extract_items, find_item, maximal_items

__all__ = [
    "CallNeeds",
    "TraceEvidence",
    "block_text",
    "contains_item",
    "extract_items",
    "find_item",
    "trace_evidence",
]


@dataclass(frozen=True)
class CallNeeds:
    """One recorded model call. `tool_items[j]` is tool evidence; `tool_producers[j]` the
    tool_use ids of the earlier results that hold it. `items` / `producers` are the legacy
    needs. `oracle_tokens` (task + the first producer of each tool-evidence item) excludes
    the request prefix (system + tools), which the metrics add from the replayed request."""

    message_index: int
    items: tuple[str, ...] = ()
    producers: tuple[tuple[str, ...], ...] = ()
    tool_items: tuple[str, ...] = ()
    tool_producers: tuple[tuple[str, ...], ...] = ()
    oracle_tokens: int = 0


@dataclass
class TraceEvidence:
    calls: dict[int, CallNeeds] = field(default_factory=dict)  # by index in trace.messages

    @property
    def needed_items(self) -> int:
        return sum(len(c.items) for c in self.calls.values())

    @property
    def tool_evidence_items(self) -> int:
        return sum(len(c.tool_items) for c in self.calls.values())


@dataclass(frozen=True)
class _Block:
    message: int
    kind: str  # the block's type: "text", "tool_use", "tool_result", "thinking", ...
    tool_id: str | None
    block: ContentBlock


class _Corpus:
    """Every block of the trace in order, as one searchable text with block offsets."""

    SEPARATOR = "\n\x00\n"

    def __init__(self, messages: Iterable[Message]):
        self.blocks: list[_Block] = []
        parts: list[str] = []
        self.starts: list[int] = []
        offset = 0
        for i, m in enumerate(messages):
            for b in m.content:
                tool_id = b.id if isinstance(b, ToolUseBlock) else getattr(b, "tool_use_id", None)
                self.blocks.append(_Block(i, b.type, tool_id, b))
                text = block_text(b)
                self.starts.append(offset)
                parts.append(text)
                offset += len(text) + len(self.SEPARATOR)
        self.text = self.SEPARATOR.join(parts)
        self._cache: dict[str, list[int]] = {}

    def blocks_with(self, item: str) -> list[int]:
        """Indexes of the blocks holding `item`, in order."""
        found = self._cache.get(item)
        if found is None:
            found, at = [], find_item(self.text, item)
            while at != -1:
                index = bisect_right(self.starts, at) - 1
                if not found or found[-1] != index:
                    found.append(index)
                at = find_item(self.text, item, at + 1)
            self._cache[item] = found
        return found

    def before(self, item: str, message_index: int) -> list[_Block]:
        return [self.blocks[h] for h in self.blocks_with(item) if self.blocks[h].message < message_index]


def _legacy_needs(corpus: _Corpus, items: set[str], i: int) -> tuple[list[str], list[tuple[str, ...]]]:
    needed, producers = [], []
    for item in sorted(items):
        holders = corpus.blocks_with(item)
        first = corpus.blocks[holders[0]] if holders else None
        if first is None or first.message >= i or first.kind != "tool_result":
            continue
        needed.append(item)
        producers.append(tuple(b.tool_id for b in corpus.before(item, i) if b.kind == "tool_result" and b.tool_id))
    return needed, producers


def _tool_needs(corpus: _Corpus, system: str, items: set[str], i: int) -> tuple[list[str], list[tuple[str, ...]]]:
    needed, producers = [], []
    for item in maximal_items(items):
        earlier = corpus.before(item, i)
        if not earlier or any(b.kind != "tool_result" for b in earlier) or contains_item(system, item):
            continue
        needed.append(item)
        producers.append(tuple(b.tool_id for b in earlier if b.tool_id))  # every result has its id
    return needed, producers


def trace_evidence(trace: Trace, counter: TokenCounter | None = None) -> TraceEvidence:
    """For each recorded action: its tool evidence and legacy needs, their producers, and
    the oracle's tokens."""
    counter = counter or CharRatioEstimator()
    corpus = _Corpus(trace.messages)
    results = {b.tool_id: b.block for b in corpus.blocks if b.kind == "tool_result"}
    task_tokens = counter.count_message(trace.messages[0])
    evidence = TraceEvidence()
    for i, message in enumerate(trace.messages):
        if message.role != "assistant":
            continue
        items = extract_items(action_text(message))
        legacy, legacy_producers = _legacy_needs(corpus, items, i)
        tool, tool_producers = _tool_needs(corpus, trace.system, items, i)
        first_producers = {p[0]: results[p[0]] for p in tool_producers}
        evidence.calls[i] = CallNeeds(
            i,
            tuple(legacy),
            tuple(legacy_producers),
            tuple(tool),
            tuple(tool_producers),
            task_tokens + _oracle_tokens(trace, first_producers, counter),
        )
    return evidence


def _oracle_tokens(trace: Trace, results: dict[str, Any], counter: TokenCounter) -> int:
    """The needed results as one assistant message (their tool uses) + one user message
    (the results, unclipped)."""
    if not results:
        return 0
    uses = {u.id: u for u in trace.tool_uses}
    use_message = Message.assistant(*(uses[i] for i in results if i in uses))
    result_message = Message.tool_results(results.values())
    return counter.count_message(use_message) + counter.count_message(result_message)
