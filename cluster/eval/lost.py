"""Lost infrastructure, as the batch sees it (task_flow.py raises, runner.py reruns).

    Retry      a session actor or runtime that did not come back, a worker lost under a
               stage: the task runs again (runner.MAX_INFRA_RETRIES)
    NodeLost   the node the attempt ran on left the cluster: the task runs again from its
               start elsewhere, not counted as that one retry

Both carry what the lost attempt spent, so the task's row counts it.
"""

from __future__ import annotations

from agents.errors import WorkingsetError
from agents.ports import Usage
from cluster.eval.results import ResultRow
from cluster.eval.stats import TaskStats

__all__ = ["NodeLost", "Retry"]


class Retry(WorkingsetError):
    """Lost infrastructure: the task may run once more. Carries what the lost attempt
    spent, so the row counts it."""

    def __init__(self, message: str, stats: TaskStats | None = None):
        super().__init__(message)
        self.actor_failures = stats.actor_failures if stats else 0
        self.usage = stats.usage if stats else Usage()
        self.cost_usd = stats.cost_usd if stats else 0.0
        self.unpriced_calls = stats.unpriced_calls if stats else 0
        self.notes = list(stats.notes) if stats else []  # what the infrastructure did under the lost run
        self.charged = stats is not None  # False: raised where the attempt's figures are not known

    def charge(self, row: ResultRow) -> ResultRow:
        u = self.usage
        return row.model_copy(
            update={
                "actor_restarts": row.actor_restarts + self.actor_failures,
                "input_tokens": row.input_tokens + u.input_tokens,
                "output_tokens": row.output_tokens + u.output_tokens,
                "cache_read_tokens": row.cache_read_tokens + u.cache_read_input_tokens,
                "cache_creation_tokens": row.cache_creation_tokens + u.cache_creation_input_tokens,
                "cost_usd": round(row.cost_usd + self.cost_usd, 6),
                "unpriced_calls": row.unpriced_calls + self.unpriced_calls,
            }
        )


class NodeLost(Retry):
    """The node the attempt ran on left the cluster: the task runs again from its start
    on another node, and this does not count as one of its retries."""

    def __init__(self, node: str, phase: str, stats: TaskStats | None = None):
        super().__init__(f"node {node[:12]} was lost during the {phase} phase", stats)
        self.node = node
        self.phase = phase
