"""Traces: every compiled working set written as one JSON file per model call.

A trace shows what the model saw and why: each system-prompt section with its
source, the visible tools, the messages, the estimates and the compaction events
that shaped this call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from agents.compaction.ledger import CompactionEvent
from agents.messages import MESSAGES_ADAPTER
from agents.system_prompt import SystemPrompt
from agents.tokens import TokenCounter
from agents.working_set import CompiledRequest

__all__ = ["TraceWriter"]


class TraceWriter:
    def __init__(self, directory: Path, session_id: str):
        self.directory = Path(directory)
        self.session_id = session_id
        self._count = 0

    def write(
        self,
        compiled: CompiledRequest,
        prompt: SystemPrompt,
        events: Sequence[CompactionEvent],
        *,
        budget_tokens: int,
        counter: TokenCounter,
    ) -> Path:
        self._count += 1
        self.directory.mkdir(parents=True, exist_ok=True)
        request = compiled.request
        record = {
            "session_id": self.session_id,
            "call": self._count,
            "estimated_tokens": compiled.estimated_tokens,
            "budget_tokens": budget_tokens,
            "sections": [
                {
                    "name": s.name,
                    "title": s.title,
                    "source": s.source,
                    "chars": len(s.text),
                    "tokens": counter.count_text(s.text),
                }
                for s in prompt.sections
            ],
            "system": request.system,
            "visible_tools": [t.name for t in request.tools],
            "message_count": len(request.messages),
            "messages": MESSAGES_ADAPTER.dump_python(list(request.messages), mode="json"),
            "compaction_events": [e.model_dump(mode="json") for e in events],
        }
        path = self.directory / f"{self.session_id}-call-{self._count:04d}.json"
        path.write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
        return path
