"""The out directory: everything one batch keeps, in one place.

    results.jsonl      one row per finished task attempt (the latest row wins)
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
    state/envs/        the tasks' own environments, unless --env-cache names another place
                       (environments/cache.py: bound read-only into the sandboxes that use them)
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

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
        self.environments = self.state / "envs"

    def rel(self, path: Path) -> str:
        return str(path.relative_to(self.root))
