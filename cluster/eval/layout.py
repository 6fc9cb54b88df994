"""The out directory: everything one batch keeps, in one place.

    results.jsonl      one row per finished task attempt (the latest row wins)
    run.json           the settings that produced the rows (provenance.py); a rerun must match
    summary.json       the figures; report.md the same for people
    predictions.jsonl  SWE-bench predictions (instance_id, model_name_or_path, model_patch)
    patches/<task>.diff         the agent's change
    events/<task>.jsonl         the agent's events (and the eval phases), line by line
    logs/<task>/{setup,grade-setup,grade}.log   setup in the workspace, setup and tests in the grading copy
    home/              the sessions' Workingset home: snapshots, artifacts, audit logs
    workspaces/<task>  the agent's workspace while it runs (kept with --keep-workspaces)
    grading/<task>     the grading copy: the base, the patch, the hidden tests (kept likewise)
    repos/             clones of the git URLs tasks name
    state/bases/<task>.git   the task's trusted base, while it runs (no sandbox binds state/ writable)
    state/scratch/     scratch indexes and object directories of host-side git
    state/batch.lock   held by the batch running on this directory (one at a time)
    state/processes.json  the running batch's mark on its processes (leftovers.py)
    previous/<time>/   what --redo moved aside: the rows, reports and per-task files of before
    state/envs/        the tasks' own environments, unless --env-cache names another place
                       (environments/cache.py: bound read-only into the sandboxes that use them)

On Ray, the directories a task works in — workspaces/, grading/, repos/, state/ and
logs/ while it runs — are an OutDir of the same layout on the node that runs the task
(node_site.node_root); its logs, patch and events come back here.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import time
from pathlib import Path

from agents.errors import ConfigError

__all__ = ["OutDir", "safe_name"]


def safe_name(task_id: str) -> str:
    """A file name for a task id (readable, and unique through a short hash when changed)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id).strip("._")[:80] or "task"
    if cleaned == task_id:
        return cleaned
    return f"{cleaned}-{hashlib.sha256(task_id.encode()).hexdigest()[:8]}"


class OutDir:
    """Everything a batch keeps, under one directory."""

    def __init__(self, root: Path):
        self.root = root.expanduser().resolve()
        self.results = self.root / "results.jsonl"
        self.summary = self.root / "summary.json"
        self.report = self.root / "report.md"
        self.predictions = self.root / "predictions.jsonl"
        self.patches = self.root / "patches"
        self.events = self.root / "events"
        self.logs = self.root / "logs"
        self.home = self.root / "home"  # sessions' artifacts and snapshots
        self.workspaces = self.root / "workspaces"
        self.grading = self.root / "grading"
        self.repos = self.root / "repos"  # clones of git URLs
        self.state = self.root / "state"  # the harness's own: no sandbox writes it
        self.bases = self.state / "bases"
        self.scratch = self.state / "scratch"
        self.run_record = self.root / "run.json"
        self.previous = self.root / "previous"
        self.environments = self.state / "envs"
        self.processes = self.state / "processes.json"
        self._lock: int | None = None

    # What --redo moves aside: the rows first and run.json last, so a move cut short by a
    # crash never leaves rows without the record of what produced them.
    def _produced(self) -> list[Path]:
        torn = sorted(self.root.glob("results.jsonl.torn-*"))
        return [
            self.results,
            *torn,
            self.summary,
            self.report,
            self.predictions,
            self.patches,
            self.events,
            self.logs,
            self.home,
            self.workspaces,
            self.grading,
            self.run_record,
        ]

    def move_aside(self) -> Path | None:
        """Move what earlier runs produced to previous/<time>/ (nothing is deleted);
        returns that directory, or None when there was nothing."""
        present = [p for p in self._produced() if p.exists()]
        if not present:
            return None
        stamp = time.strftime("%Y%m%dT%H%M%S")
        dest = self.previous / stamp
        n = 1
        while dest.exists():
            n += 1
            dest = self.previous / f"{stamp}-{n}"
        dest.mkdir(parents=True)
        for path in present:
            path.rename(dest / path.name)
        return dest

    def sweep_temps(self) -> None:
        """Temporary files of replacements a kill cut short (durable.write_atomic)."""
        for tmp in self.root.glob(".*.tmp"):
            tmp.unlink(missing_ok=True)

    def lock(self) -> None:
        """Hold the directory for this batch; a second batch on it is refused (the lock
        goes with the process, also when it is killed)."""
        self.state.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.state / "batch.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise ConfigError(
                f"another `workingset eval` (pid {holder}) is running on {self.root}; wait for it to "
                "end or use a different --out"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock = fd

    def unlock(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def rel(self, path: Path) -> str:
        return str(path.relative_to(self.root))
