"""Showing events to a person (rich) or to a program (one JSON object per line)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from cluster.approval import describe_request, shown
from cluster.tree_view import TreeWatch, path_label

__all__ = ["HumanRenderer", "JsonRenderer"]

_PREVIEW_LINES = 8


class JsonRenderer:
    """One JSON event per line on stdout, flushed at once so pipes see it live."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stdout

    def __call__(self, event: BaseModel) -> None:
        self.stream.write(event.model_dump_json() + "\n")
        self.stream.flush()


def _session_started(e: Any) -> str:
    return f"[dim]session {e.session_id} · {escape(e.model)} · {escape(e.cwd)}[/]"


def _tool_call(e: Any) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in e.input.items())
    return f"[cyan]▸ {escape(e.name)}[/]({escape(args[:200])})"


def _tool_result(e: Any) -> str:
    lines = e.content.splitlines()
    shown = "\n".join(lines[:_PREVIEW_LINES])
    more = f"\n… {len(lines) - _PREVIEW_LINES} more lines" if len(lines) > _PREVIEW_LINES else ""
    return f"[{'red' if e.is_error else 'dim'}]{escape(shown)}{more}[/]"


def _model_call(e: Any) -> str:
    u = e.usage
    return (
        f"[dim]model call {e.turn}: ~{e.estimated_input_tokens} est. · "
        f"{u.input_tokens} in / {u.output_tokens} out · {e.duration_ms:.0f} ms[/]"
    )


def _compaction(e: Any) -> str:
    what = (
        f"failed: {escape(e.failed)}"
        if e.failed
        else f"{e.tokens_before} → {e.tokens_after} tokens, {e.results_cleared} results cleared, "
        f"{e.messages_summarized} messages summarized"
    )
    return f"[yellow]compaction ({e.kind}, {e.trigger}): {what}[/]"


def _permission_decided(e: Any) -> str | None:
    if e.effect != "deny" and e.source != "user":
        return None  # routine allows would drown the output
    return f"[magenta]permission {e.effect} · {escape(e.name)} · {escape(e.reason)}[/]"


def _permission_requested(e: Any) -> str:
    # One line (the prompt itself shows the whole request and the diff), escaped the same way.
    summary, *rest = describe_request(e).splitlines()
    warning = next((line.strip() for line in rest if line.lstrip().startswith("!")), "")
    line = f"permission needed · {summary[:200]} · {shown(e.reason)[0]}" + (f" {warning}" if warning else "")
    return f"[magenta]{escape(line)}[/]"


def _subagent_finished(e: Any) -> str:
    unpriced = getattr(e, "unpriced_calls", 0)
    cost = f"${e.cost_usd:.4f}" if not unpriced else (f"${e.cost_usd:.4f} + {unpriced} unpriced" if e.cost_usd else "unpriced")
    return f"[blue]subagent {e.child_session_id} {e.reason} · {e.model_calls} calls · {cost}[/]"


def _session_ended(e: Any) -> str:
    tail = f" · {escape(e.error)}" if e.error else ""
    return f"[dim]ended ({e.reason}) after {e.turns} model calls · {e.usage.input_tokens} in / {e.usage.output_tokens} out{tail}[/]"


_FORMATTERS: dict[str, Callable[[Any], str | None]] = {
    "session_started": _session_started,
    "assistant_text": lambda e: escape(e.text),
    "tool_call": _tool_call,
    "tool_result": _tool_result,
    "model_call": _model_call,
    "compaction": _compaction,
    "permission_requested": _permission_requested,
    "permission_decided": _permission_decided,
    "goal_verdict": lambda e: f"[green]judge: {e.verdict} — {escape(e.reason)}[/]",
    "mode_changed": lambda e: f"[blue]mode: {e.mode}[/]",
    "subagent_started": lambda e: f"[blue]subagent {e.child_session_id} started: {escape(e.description)}[/]",
    "subagent_finished": _subagent_finished,
    "notice": lambda e: f"[yellow]{escape(e.text)}[/]",
    "snapshot": lambda e: None if e.saved else f"[red]{escape(e.error or 'state not saved')}[/]",
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
            self.console.print(f"[blue]\\[{escape(path_label(path))}][/] {line}" if path else line)
        if finished is not None:
            self.console.print(f"[blue]{escape(finished.render())}[/]", soft_wrap=True)
