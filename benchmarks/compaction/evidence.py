"""Evidence: what each recorded action uses that it could only have learned from a tool result.

Strategy-independent, so it is computed once per trace (see the package docstring,
"Grounding recall", for the definitions these functions implement).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.tokens import CharRatioEstimator, TokenCounter
from benchmarks.traces import Trace

__all__ = [
    "CallNeeds",
    "TraceEvidence",
    "block_text",
    "contains_item",
    "extract_items",
    "find_item",
    "trace_evidence",
]

_EXTENSIONS = (
    "py|pyi|pyx|c|h|cc|cpp|hpp|rs|go|java|kt|js|jsx|ts|tsx|rb|php|sh|toml|cfg|ini|yaml|yml|json"
    "|md|rst|txt|html|css|pony|lock"
)
# A path: segments joined by "/", at least one "/", ending on a word character.
_PATH = re.compile(r"(?<![\w.~-])(?:[\w.~-]*/)+[\w.-]*\w")
# A bare file name with a known extension (not the tail of a longer path).
_FILE = re.compile(rf"(?<![\w./-])[\w-]+\.(?:{_EXTENSIONS})\b")
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
_CAMEL = re.compile(r"\b(?:[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+)\b")
_SNAKE = re.compile(r"\b_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_*\b")
_QUOTED = re.compile(r"\"([^\"\n]{6,80})\"|'([^'\n]{6,80})'")
_ERROR_MESSAGE = re.compile(r"\b\w*(?:Error|Exception)\b:[ \t]*([^\n]{6,120})", re.MULTILINE)
_NUMBER = re.compile(r"\b\d{3,}\b")
MIN_ITEM_CHARS = 4
MAX_ITEM_CHARS = 200


def extract_items(text: str) -> set[str]:
    """The evidence items of a text: paths, file names, dotted identifiers, CamelCase and
    snake_case identifiers (>= 4 chars), quoted strings (6-80 chars), error messages
    (the text after `XxxError:` / `XxxException:`), numbers of >= 3 digits."""
    items: set[str] = set()
    for pattern in (_PATH, _FILE, _DOTTED, _CAMEL, _SNAKE):
        items.update(m.group(0) for m in pattern.finditer(text))
    items.update((m.group(1) or m.group(2)).strip() for m in _QUOTED.finditer(text))
    items.update(m.group(1).strip() for m in _ERROR_MESSAGE.finditer(text))
    items = {i for i in items if MIN_ITEM_CHARS <= len(i) <= MAX_ITEM_CHARS}
    items.update(m.group(0) for m in _NUMBER.finditer(text))
    return items


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def find_item(text: str, item: str, start: int = 0) -> int:
    """The first position >= start where `item` occurs as a whole token: an edge of the item
    that is a word character must not touch another word character. -1 if none."""
    left, right = _is_word(item[0]), _is_word(item[-1])
    at = text.find(item, start)
    while at != -1:
        end = at + len(item)
        if (not left or at == 0 or not _is_word(text[at - 1])) and (
            not right or end == len(text) or not _is_word(text[end])
        ):
            return at
        at = text.find(item, at + 1)
    return -1


def contains_item(text: str, item: str) -> bool:
    return find_item(text, item) != -1


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)
    elif value is not None:
        yield str(value)


def block_text(block: TextBlock | ToolUseBlock | ToolResultBlock) -> str:
    """What a block shows the model: text, a tool use's name and input values, a result body."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolUseBlock):
        return "\n".join([block.name, *_strings(block.input)])
    return block.content


def action_text(message: Message) -> str:
    """A recorded action: its text plus the input values of its tool uses."""
    return "\n".join(block_text(b) for b in message.content if not isinstance(b, ToolResultBlock))


@dataclass(frozen=True)
class CallNeeds:
    """One recorded model call. `items[j]` came first from a tool result; `producers[j]` are
    the tool_use ids of every earlier result that holds it. `oracle_tokens` excludes the
    request prefix (system + tools), which the metrics add from the replayed request."""

    message_index: int
    items: tuple[str, ...] = ()
    producers: tuple[tuple[str, ...], ...] = ()
    oracle_tokens: int = 0


@dataclass
class TraceEvidence:
    calls: dict[int, CallNeeds] = field(default_factory=dict)  # by index in trace.messages

    @property
    def needed_items(self) -> int:
        return sum(len(c.items) for c in self.calls.values())


@dataclass(frozen=True)
class _Block:
    message: int
    kind: str  # "text" | "tool_use" | "tool_result"
    tool_id: str | None
    block: TextBlock | ToolUseBlock | ToolResultBlock


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


def trace_evidence(trace: Trace, counter: TokenCounter | None = None) -> TraceEvidence:
    """For each recorded action: the evidence items it uses whose first appearance in the
    conversation was a tool result, their producers, and the oracle's tokens."""
    counter = counter or CharRatioEstimator()
    corpus = _Corpus(trace.messages)
    task_tokens = counter.count_message(trace.messages[0])
    evidence = TraceEvidence()
    for i, message in enumerate(trace.messages):
        if message.role != "assistant":
            continue
        items, producers, first_producers = [], [], {}
        for item in sorted(extract_items(action_text(message))):
            holders = corpus.blocks_with(item)
            first = corpus.blocks[holders[0]] if holders else None
            if first is None or first.message >= i or first.kind != "tool_result":
                continue
            ids = tuple(corpus.blocks[h].tool_id for h in holders
                        if corpus.blocks[h].message < i and corpus.blocks[h].kind == "tool_result")
            items.append(item)
            producers.append(ids)
            first_producers[ids[0]] = corpus.blocks[holders[0]].block
        evidence.calls[i] = CallNeeds(i, tuple(items), tuple(producers),
                                      task_tokens + _oracle_tokens(trace, first_producers, counter))
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
