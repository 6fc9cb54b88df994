"""Showing events to a person (rich) or to a program (one JSON object per line).

Everything in an event may come from a model, a tool or a file the agent wrote, so
nothing in one reaches the terminal raw: each piece is revealed (agents.visible: escape
sequences, C1 controls, carriage returns and bidirectional or invisible characters
show as escapes) and handed to rich as `Text`, never parsed as markup. The JSON line
is the event's JSON revealed the same way: the same values, with no raw control byte.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError
from rich.console import Console
from rich.text import Text

from agents.visible import reveal
from cluster.terminal._approval import describe_request
from cluster.terminal._tree_view import TreeWatch, path_label

__all__ = ["HumanRenderer", "JsonRenderer"]

_PREVIEW_LINES = 8


class JsonRenderer:
    """One JSON event per line on stdout, flushed at once so pipes see it live."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stdout

    def __call__(self, event: BaseModel) -> None:
        try:
            line = event.model_dump_json()
        except PydanticSerializationError:
            # A string with a surrogate (a path that is not UTF-8): json writes it as the
            # JSON escape `\udcxx`, which decodes to the same string.
            line = json.dumps(event.model_dump(mode="json"))
        self.stream.write(reveal(line) + "\n")
        self.stream.flush()


def _styled(style: str, text: str, *, one_line: bool = False) -> Text:
    return Text(reveal(text, one_line=one_line), style=style)


def _session_started(e: Any) -> Text:
    return _styled("dim", f"session {e.session_id} · {e.model} · {e.cwd}", one_line=True)


def _tool_call(e: Any) -> Text:
    args = ", ".join(f"{k}={v!r}" for k, v in e.input.items())
    return Text.assemble(_styled("cyan", f"▸ {e.name}", one_line=True), "(", reveal(args[:200], one_line=True), ")")


def _tool_result(e: Any) -> Text:
    lines = reveal(e.content).split("\n")
    shown = "\n".join(lines[:_PREVIEW_LINES])
    more = f"\n… {len(lines) - _PREVIEW_LINES} more lines" if len(lines) > _PREVIEW_LINES else ""
    return Text(shown + more, style="red" if e.is_error else "dim")


def _model_call(e: Any) -> Text:
    u = e.usage
    return Text(
        f"model call {e.turn}: ~{e.estimated_input_tokens} est. · "
        f"{u.input_tokens} in / {u.output_tokens} out · {e.duration_ms:.0f} ms",
        style="dim",
    )


def _compaction(e: Any) -> Text:
    what = (
        f"failed: {e.failed}"
        if e.failed
        else f"{e.tokens_before} → {e.tokens_after} tokens, {e.results_cleared} results cleared, "
        f"{e.messages_summarized} messages summarized"
    )
    return _styled("yellow", f"compaction ({e.kind}, {e.trigger}): {what}")


def _permission_decided(e: Any) -> Text | None:
    if e.effect != "deny" and e.source != "user":
        return None  # routine allows would drown the output
    return _styled("magenta", f"permission {e.effect} · {e.name} · {e.reason}", one_line=True)


def _permission_requested(e: Any) -> Text:
    # One line (the prompt itself shows the whole request and the diff), revealed the same way.
    summary, *rest = describe_request(e).splitlines()
    warning = next((line.strip() for line in rest if line.lstrip().startswith("!")), "")
    line = f"permission needed · {summary[:200]} · {e.reason}" + (f" {warning}" if warning else "")
    return _styled("magenta", line, one_line=True)


def _subagent_finished(e: Any) -> Text:
    unpriced = getattr(e, "unpriced_calls", 0)
    cost = (
        f"${e.cost_usd:.4f}"
        if not unpriced
        else (f"${e.cost_usd:.4f} + {unpriced} unpriced" if e.cost_usd else "unpriced")
    )
    return _styled("blue", f"subagent {e.child_session_id} {e.reason} · {e.model_calls} calls · {cost}", one_line=True)


def _session_ended(e: Any) -> Text:
    tail = f" · {e.error}" if e.error else ""
    return _styled(
        "dim",
        f"ended ({e.reason}) after {e.turns} model calls · {e.usage.input_tokens} in / "
        f"{e.usage.output_tokens} out{tail}",
    )


_FORMATTERS: dict[str, Callable[[Any], Text | None]] = {
    "session_started": _session_started,
    "assistant_text": lambda e: _styled("", e.text),
    "tool_call": _tool_call,
    "tool_result": _tool_result,
    "model_call": _model_call,
    "compaction": _compaction,
    "permission_requested": _permission_requested,
    "permission_decided": _permission_decided,
    "goal_verdict": lambda e: _styled("green", f"judge: {e.verdict} — {e.reason}"),
    "mode_changed": lambda e: _styled("blue", f"mode: {e.mode}", one_line=True),
    "subagent_started": lambda e: _styled(
        "blue", f"subagent {e.child_session_id} started: {e.description}", one_line=True
    ),
    "subagent_finished": _subagent_finished,
    "notice": lambda e: _styled("yellow", e.text),
    "snapshot": lambda e: None if e.saved else _styled("red", e.error or "state not saved"),
    "session_ended": _session_ended,
}


class HumanRenderer:
    """Events as lines; a subagent's lines start with its path in the tree, and when a
    fan-out has finished the tree is drawn with each child's state, tokens and cost."""

    def __init__(self, console: Console | None = None, trees: TreeWatch | None = None):
        self.console = console or Console(highlight=False)
        self.trees = trees or TreeWatch()

    def __call__(self, event: BaseModel) -> None:
        kind = getattr(event, "type", "")
        finished = self.trees(event)
        formatter = _FORMATTERS.get(kind)
        line = formatter(event) if formatter else None
        if line is not None:
            path = getattr(event, "path", None)
            self.console.print(Text.assemble(Text(f"[{path_label(path)}] ", style="blue"), line) if path else line)
        if finished is not None:
            self.console.print(Text(finished.render(), style="blue"), soft_wrap=True)
