"""Traces: every compiled working set written as one JSON file per model call.

A trace shows what the model saw and why: each system-prompt section with its
source, the visible tools, the messages, the estimates and the compaction events
that shaped this call.

A subagent's trace goes in its own directory under its parent's (named by session
ids, never by the model's descriptions), with a `subagent.json` saying which child
it is, so the directory tree is the subagent tree:

    trace/ROOT-call-0001.json
    trace/ROOT.1/subagent.json, ROOT.1-call-0001.json, ...
    trace/ROOT.1/ROOT.1.2/...          (a grandchild)

On Ray a child writes from its SubagentActor's process, so the files land on that
actor's node (the root's node, unless it had no room).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from agents.compaction import CompactionEvent
from agents.messages import MESSAGES_ADAPTER
from agents.sources import SystemPrompt
from agents.tokens import TokenCounter
from agents.visible import reveal
from agents.working_set import CompiledRequest

__all__ = ["TraceWriter"]


class TraceWriter:
    def __init__(self, directory: Path, session_id: str, *, about: dict | None = None):
        self.directory = Path(directory)
        self.session_id = session_id
        self._count = 0
        self._about = about  # a subagent's description and place, written with its first call

    def for_child(self, child_id: str, description: str, path: Sequence[str], depth: int) -> TraceWriter:
        """The trace of a descendant of this (root) session, in its directory in the tree."""
        if not child_id.startswith(self.session_id + "."):
            raise ValueError(f"{child_id!r} is not a descendant of session {self.session_id!r}")
        directory = self.directory
        steps = child_id[len(self.session_id) + 1 :].split(".")
        for n in range(1, len(steps) + 1):  # one directory per ancestor, then the child's own
            directory = directory / ".".join([self.session_id, *steps[:n]])
        about = {
            "session_id": child_id,
            "parent_session_id": child_id.rpartition(".")[0],
            "description": description,
            "path": list(path),
            "depth": depth,
        }
        return TraceWriter(directory, child_id, about=about)

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
        if self._about is not None and self._count == 1:
            (self.directory / "subagent.json").write_text(
                reveal(json.dumps(self._about, ensure_ascii=False, indent=1)), encoding="utf-8"
            )
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
        # Readable text (ensure_ascii off), but no raw control or bidi character (agents.visible).
        path.write_text(reveal(json.dumps(record, ensure_ascii=False, indent=1)), encoding="utf-8")
        return path
