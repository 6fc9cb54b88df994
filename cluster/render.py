"""Showing events to a person (rich) or to a program (one JSON object per line)."""

from __future__ import annotations

import sys
from typing import TextIO

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from agents.events import (
    AssistantText,
    CompactionEvent,
    ModelCall,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
)

__all__ = ["HumanRenderer", "JsonRenderer"]

_PREVIEW_LINES = 8


class JsonRenderer:
    """One JSON event per line on stdout, flushed at once so pipes see it live."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stdout

    def __call__(self, event: BaseModel) -> None:
        self.stream.write(event.model_dump_json() + "\n")
        self.stream.flush()


class HumanRenderer:
    def __init__(self, console: Console | None = None):
        self.console = console or Console(highlight=False)

    def __call__(self, event: BaseModel) -> None:
        c = self.console
        match event:
            case SessionStarted():
                c.print(f"[dim]session {event.session_id} · {escape(event.model)} · {escape(event.cwd)}[/]")
            case AssistantText():
                c.print(escape(event.text))
            case ToolCall():
                args = ", ".join(f"{k}={v!r}" for k, v in event.input.items())
                c.print(f"[cyan]▸ {escape(event.name)}[/]({escape(args[:200])})")
            case ToolResult():
                lines = event.content.splitlines()
                shown = "\n".join(lines[:_PREVIEW_LINES])
                more = f"\n… {len(lines) - _PREVIEW_LINES} more lines" if len(lines) > _PREVIEW_LINES else ""
                style = "red" if event.is_error else "dim"
                c.print(f"[{style}]{escape(shown)}{more}[/]")
            case ModelCall():
                u = event.usage
                c.print(
                    f"[dim]model call {event.turn}: ~{event.estimated_input_tokens} est. · "
                    f"{u.input_tokens} in / {u.output_tokens} out · {event.duration_ms:.0f} ms[/]"
                )
            case CompactionEvent():
                what = f"failed: {escape(event.failed)}" if event.failed else (
                    f"{event.tokens_before} → {event.tokens_after} tokens, "
                    f"{event.results_cleared} results cleared, {event.messages_summarized} messages summarized"
                )
                c.print(f"[yellow]compaction ({event.kind}, {event.trigger}): {what}[/]")
            case SessionEnded():
                u = event.usage
                tail = f" · {escape(event.error)}" if event.error else ""
                c.print(
                    f"[dim]ended ({event.reason}) after {event.turns} model calls · "
                    f"{u.input_tokens} in / {u.output_tokens} out{tail}[/]"
                )
