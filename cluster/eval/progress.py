"""What a batch shows while it runs.

`ProgressReporter` (default): a live rich progress bar — done / total, running, passed,
failed, other endings, tokens and cost so far (running sessions included), elapsed
and ETA — with one line per finished task above it.

`JsonReporter` (`--json`): one JSON object per line on stdout, flushed at once:

| type | fields |
|---|---|
| `eval_started` | `tasks` (selected from the file), `to_run`, `skipped` (finished before), `changed` (their task row changed since their result), `concurrency`, `runtime`, `out`, `selection` (task file, --filter, --slice; or null) |
| `task_invalid` | `line`, `field`, `message`, `text` (a line of the task file that will not run) |
| `task_skipped` | `task_id`, `status` (its earlier result) |
| `task_changed` | `task_id` (its row in the task file changed since its result: it runs again) |
| `task_started` | `task_id`, `attempt` |
| `task_phase` | `task_id`, `phase` (`workspace`, `environment`, `setup`, `agent`, `patch`, `grade`), `node` (the Ray node it runs on; null with --local) |
| `task_retry` | `task_id`, `reason` (lost infrastructure; the task runs once more), `node_lost` (true: its node left the cluster; it runs again from its start elsewhere, not counted as a retry) |
| `task_finished` | `task_id`, `status`, `result` (the row written to results.jsonl) |
| `batch_stopped` | `reason` (`batch_max_cost`), `cap_usd`, `spent_usd`, `not_started` (no new task starts) |
| `eval_finished` | `interrupted`, `summary` (as in summary.json) |
| `notice` | `text` (a torn line of results.jsonl repaired, --redo's move, a cost cap that cannot cap) |

Every object also has `ts` (Unix time). The agents' own events are not in this stream:
each task's are in `<out>/events/<task>.jsonl`.

Task ids, errors, notes and file names come from task files, agents and tools: every
line shows them revealed (agents.visible) and as `Text`, never as markup.

While the progress bar is up, what Ray logs in this process (the `ray` logger: a task
retried by Ray, a worker that died) is printed above the bar through the same console,
not written across it; the Ray runtime's own C++ warnings are held back below errors
(cluster/connection/_runtime.py).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Protocol, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from agents.visible import reveal
from cluster.eval.report import describe_cost

__all__ = ["JsonReporter", "ProgressReporter", "Reporter"]


class Reporter(Protocol):
    def event(self, kind: str, **fields: Any) -> None: ...

    def usage(self, task_id: str, tokens: int, cost_usd: float) -> None: ...

    def close(self) -> None: ...


class JsonReporter:
    def __init__(self, stream: TextIO | None = None):
        self.stream = stream

    def event(self, kind: str, **fields: Any) -> None:
        stream = self.stream or sys.stdout
        stream.write(json.dumps({"type": kind, "ts": time.time(), **fields}, default=str) + "\n")
        stream.flush()

    def usage(self, task_id: str, tokens: int, cost_usd: float) -> None:
        return None

    def close(self) -> None:
        return None


class _AboveTheBar(logging.Handler):
    """Ray's log records, printed by the console that draws the progress bar."""

    def __init__(self, console: Console):
        super().__init__(logging.WARNING)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        first = record.getMessage().strip().splitlines()
        self.console.print(_line("dim", f"ray: {first[0] if first else ''}"))


_STYLE = {"passed": "green", "failed": "red", "error": "red", "timeout": "yellow", "budget": "yellow"}


def _line(style: str, text: str) -> Text:
    """One line above the bar: task ids, errors and file names come from task files,
    agents and tools, so revealed on one line and never read as markup."""
    return Text(reveal(text, one_line=True), style=style)


class ProgressReporter:
    def __init__(self, console: Console | None = None):
        self.console = console or Console(highlight=False)
        self.progress = Progress(
            TextColumn("[bold]eval"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TextColumn("·"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.bar: TaskID | None = None
        self.running = 0
        self.statuses: dict[str, int] = {}
        self.tokens = 0
        self.cost = 0.0
        self.live: dict[str, tuple[int, float]] = {}
        self._ray_handlers: tuple[list[logging.Handler], bool] | None = None

    def _route_ray_logs(self) -> None:
        ray_log = logging.getLogger("ray")
        self._ray_handlers = (list(ray_log.handlers), ray_log.propagate)
        ray_log.handlers = [_AboveTheBar(self.progress.console)]
        ray_log.propagate = False

    def _restore_ray_logs(self) -> None:
        if self._ray_handlers is not None:
            ray_log = logging.getLogger("ray")
            ray_log.handlers, ray_log.propagate = self._ray_handlers
            self._ray_handlers = None

    def _counts(self) -> str:
        s = self.statuses
        other = sum(v for k, v in s.items() if k not in ("passed", "failed"))
        tokens = self.tokens + sum(t for t, _ in self.live.values())
        cost = self.cost + sum(c for _, c in self.live.values())
        return (
            f"running {self.running} · [green]passed {s.get('passed', 0)}[/] · [red]failed {s.get('failed', 0)}[/] · "
            f"other {other} · {tokens:,} tok" + (f" · ${cost:.4f}" if cost else "")
        )

    def _refresh(self, advance: int = 0) -> None:
        if self.bar is not None:
            self.progress.update(self.bar, advance=advance, counts=self._counts())

    def event(self, kind: str, **fields: Any) -> None:
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(**fields)

    def _on_eval_started(
        self, *, to_run: int, skipped: int, tasks: int, out: str, selection: str | None = None, **_: Any
    ) -> None:
        if selection:
            self.console.print(_line("dim", f"selected: {selection}"))
        if skipped:
            self.console.print(_line("dim", f"{skipped} of {tasks} tasks already finished in {out}; skipped"))
        self.progress.start()
        self._route_ray_logs()
        self.bar = self.progress.add_task("eval", total=to_run, counts=self._counts())

    def _on_task_invalid(self, *, message: str, line: int, field: str | None = None, text: str = "", **_: Any) -> None:
        self.progress.console.print(_line("yellow", f"skipped: {text or message}"))

    def _on_notice(self, *, text: str, **_: Any) -> None:
        self.progress.console.print(_line("yellow", text))

    def _on_task_changed(self, *, task_id: str, **_: Any) -> None:
        self.progress.console.print(
            _line("yellow", f"↻ {task_id}: its row in the task file changed since its result; running it again")
        )

    def _on_batch_stopped(self, *, cap_usd: float, spent_usd: float, not_started: int, **_: Any) -> None:
        self.progress.console.print(
            _line(
                "yellow",
                f"batch cost cap ${cap_usd:.4f} reached (${spent_usd:.4f} spent): "
                f"{not_started} tasks not started; running tasks finish",
            )
        )

    def _on_task_started(self, **_: Any) -> None:
        self.running += 1
        self._refresh()

    def _on_task_retry(self, *, task_id: str, reason: str, node_lost: bool = False, **_: Any) -> None:
        again = "running it again from its start on another node" if node_lost else "running it once more"
        self.progress.console.print(_line("yellow", f"↻ {task_id}: {reason}; {again}"))

    def _on_task_finished(self, *, task_id: str, status: str, result: dict, **_: Any) -> None:
        self.running -= 1
        self.statuses[status] = self.statuses.get(status, 0) + 1
        self.live.pop(task_id, None)
        tokens = sum(
            result.get(k, 0) for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")
        )
        self.tokens += tokens
        self.cost += result.get("cost_usd", 0.0)
        detail = f" · {result['error']}" if result.get("error") else ""
        cost = describe_cost(result.get("cost_usd", 0.0), result.get("unpriced_calls", 0), result.get("pricing"))
        self.progress.console.print(
            Text.assemble(
                _line(_STYLE.get(status, "white"), f"{status:>7}"),
                _line(
                    "",
                    f" {task_id} · {result.get('turns', 0)} turns · {tokens:,} tok · {cost} · "
                    f"{result.get('wall_s', 0.0):.1f} s{detail}",
                ),
            )
        )
        self._refresh(advance=1)

    def _on_eval_finished(self, *, summary: dict, interrupted: bool, **_: Any) -> None:
        self.close()
        s = summary
        per_solved = s["cost_per_solved_usd"]
        solved = f" (${per_solved:.4f} per solved task)" if per_solved is not None else ""
        cost = f"${s['cost_usd']:.4f}{solved}" if s["cost_usd"] is not None else "not priced"
        if s.get("unpriced_tasks") and s["cost_usd"] is not None:
            cost += f" + {s['unpriced_tasks']} unpriced tasks"
        self.console.print(
            f"[bold]{'interrupted' if interrupted else 'stopped by the cost cap' if s.get('stopped') else 'done'}[/]: "
            f"{s['statuses']['passed']}/{s['finished']} passed "
            f"({s['pass_rate'] * 100:.1f} %) · {cost} · "
            f"wall p50 {s['wall_s']['p50'] or 0:.1f} s, p95 {s['wall_s']['p95'] or 0:.1f} s"
        )

    def usage(self, task_id: str, tokens: int, cost_usd: float) -> None:
        self.live[task_id] = (tokens, cost_usd)
        self._refresh()

    def close(self) -> None:
        self._restore_ray_logs()
        if self.progress.live.is_started:
            self.progress.stop()
