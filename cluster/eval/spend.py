"""The batch's total cost cap (`--batch-max-cost USD`).

What the batch has spent is the cost of every row in the out directory (every attempt,
earlier runs of the same command included) plus what the running tasks have spent so
far. Once that reaches the cap no new task starts; running tasks finish under their own
per-task budget (`--max-cost`), so the total can pass the cap by what they spend after.
Calls of unknown price (scripted models, models the table and the `models` setting do
not price) add nothing, so such runs cannot be capped by cost: the batch says so at
start.
"""

from __future__ import annotations

from typing import Any

from agents.providers import model_info
from agents.settings import WorkingsetSettings
from cluster.eval.progress import Reporter
from cluster.eval.tasks import Task

__all__ = ["SpendMeter", "unpriced_models"]


def unpriced_models(settings: WorkingsetSettings, tasks: list[Task]) -> list[str]:
    """The model specs of these tasks whose calls have no price."""
    specs = sorted({t.model or settings.model for t in tasks})
    return [s for s in specs if model_info(s, settings.models).prices is None]


class SpendMeter:
    """A Reporter in front of the batch's reporter that keeps the running tasks' spend."""

    def __init__(self, reporter: Reporter, *, spent_before: float, cap_usd: float | None):
        self.reporter = reporter
        self.spent_before = spent_before  # the rows already in the out directory
        self.cap_usd = cap_usd
        self._finished = 0.0
        self._live: dict[str, float] = {}

    @property
    def spent(self) -> float:
        return self.spent_before + self._finished + sum(self._live.values())

    def reached(self) -> bool:
        return self.cap_usd is not None and self.spent >= self.cap_usd

    def finished(self, task_id: str, cost_usd: float) -> None:
        self._live.pop(task_id, None)
        self._finished += cost_usd

    def event(self, kind: str, **fields: Any) -> None:
        self.reporter.event(kind, **fields)

    def usage(self, task_id: str, tokens: int, cost_usd: float) -> None:
        self._live[task_id] = cost_usd
        self.reporter.usage(task_id, tokens, cost_usd)

    def close(self) -> None:
        self.reporter.close()
