"""Evidence items: the spans of text (paths, identifiers, error messages, numbers) a model
can only have copied from somewhere, and the tests for where they occur.

Definitions in the package docstring ("Evidence items").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from agents.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

__all__ = [
    "action_text",
    "block_text",
    "contains_item",
    "extract_items",
    "find_item",
    "maximal_items",
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


def block_text(block: ContentBlock) -> str:
    """What a block shows the model: text, a tool use's name and input values, a result
    body, reasoning; nothing for an image or encrypted reasoning."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolUseBlock):
        return "\n".join([block.name, *_strings(block.input)])
    if isinstance(block, ToolResultBlock):
        return block.content
    if isinstance(block, ThinkingBlock):
        return block.thinking
    return ""


def action_text(message: Message) -> str:
    """A recorded action: its text plus the input values of its tool uses."""
    return "\n".join(block_text(b) for b in message.content if not isinstance(b, ToolResultBlock))


def maximal_items(items: Iterable[str]) -> list[str]:
    """The items not contained, as a whole token, in a longer item of the same set, sorted:
    a span inside a longer item (a file name inside its path, `assertEqual` inside
    `self.assertEqual`) counts once, as part of the longer one."""
    kept: list[str] = []
    for item in sorted(set(items), key=lambda i: (-len(i), i)):
        if not any(item in longer and contains_item(longer, item) for longer in kept):
            kept.append(item)
    return sorted(kept)
