"""One task's event sink: every agent event to `<out>/events/<task>.jsonl`, and the
totals a result row reports (model calls, tokens, cost, compactions, tool calls and
Recall calls, actor failures), and the notes it keeps (an actor replaced for not
answering).

Tokens and cost count each session once: the root's own `model_call` events, plus
each subagent's own usage from its `subagent_finished` event (subagent ids contain a
dot, `<root>.<n>`). Cost is what each `model_call` event says it cost at the model's
prices (cache reads and writes included); a call whose price is unknown (a scripted
model, an unpriced open model) adds no dollars and is counted in `unpriced_calls`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO

from pydantic import BaseModel

from agents.compaction import CompactionEvent
from agents.events import ModelCall, Notice, SubagentFinished, ToolCall
from agents.ports import Usage
from agents.visible import reveal

__all__ = ["TaskStats"]

_ACTOR_FAILED = "the session's actor failed"
_ACTOR_REPLACED = "the session's actor stopped answering"  # cluster.heartbeat: kept in the row's notes


class TaskStats:
    def __init__(
        self, model_name: str, log_path: Path | None = None, on_change: Callable[[TaskStats], None] | None = None
    ):
        self.model_name = model_name
        self.log_path = log_path
        self.on_change = on_change
        self.session_id: str | None = None
        self.turns = 0
        self.usage = Usage()
        self.cost_usd = 0.0
        self.unpriced_calls = 0
        self.pricings: set[str] = set()
        self.compactions: Counter[str] = Counter()
        self.tool_calls = 0  # every tool_call event the sink sees
        self.recall_calls = 0  # of them, Recall: how often compaction cost the model a read-back
        self.actor_failures = 0
        self.phase = "workspace"  # the eval stage running now (named when a worker is lost under it)
        self.notes: list[str] = []  # what the infrastructure did under the task, for the row
        self._log: IO[str] | None = None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = log_path.open("a", encoding="utf-8", buffering=1)  # line-buffered: tail -f works

    @property
    def pricing(self) -> str | None:
        """list / configured / scripted / unknown, or mixed; None before any call."""
        if len(self.pricings) > 1:
            return "mixed"
        return next(iter(self.pricings), None)

    @property
    def tokens(self) -> int:
        u = self.usage
        return u.input_tokens + u.output_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens

    def __call__(self, event: BaseModel) -> None:
        if self._log is not None:
            self._log.write(reveal(event.model_dump_json()) + "\n")  # the same values, no raw control byte
        is_root = "." not in getattr(event, "session_id", "")
        changed = False
        if isinstance(event, ModelCall) and is_root:
            self.turns += 1
            self.usage = self.usage + event.usage
            self._price(event.cost_usd, event.pricing)
            changed = True
        elif isinstance(event, SubagentFinished):
            self.usage = self.usage + event.usage
            self.cost_usd += event.cost_usd
            self.unpriced_calls += event.unpriced_calls
            changed = True
        elif isinstance(event, ToolCall):
            self.tool_calls += 1
            self.recall_calls += int(event.name == "Recall")
        elif isinstance(event, CompactionEvent) and event.applied:
            self.compactions[event.kind] += 1
        elif isinstance(event, Notice) and event.text.startswith(_ACTOR_FAILED):
            self.actor_failures += 1
        elif isinstance(event, Notice) and event.text.startswith(_ACTOR_REPLACED):
            self.notes.append(event.text)
        if changed and self.on_change is not None:
            self.on_change(self)

    def _price(self, cost: float | None, pricing: str) -> None:
        self.pricings.add(pricing)
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += cost

    def note(self, kind: str, **fields) -> None:
        """An eval-level line in the same log (phases, retries), so one file tells the story."""
        if self._log is not None:
            self._log.write(json.dumps({"type": kind, **fields}) + "\n")

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
