"""The out directory: everything one batch keeps, in one place.

    results.jsonl      one row per finished task attempt (the latest row wins)
    summary.json       the figures; report.md the same for people
    predictions.jsonl  SWE-bench predictions (instance_id, model_name_or_path, model_patch)
    patches/<task>.diff         the agent's change
    events/<task>.jsonl         the agent's events (and the eval phases), line by line
    logs/<task>/{setup,grade}.log
    home/              the sessions' Workingset home: snapshots, artifacts, audit logs
    workspaces/<task>  while a task runs (kept with --keep-workspaces)
    repos/             clones of the git URLs tasks name
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["OutDir"]


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
        self.repos = self.root / "repos"  # clones of git URLs

    def rel(self, path: Path) -> str:
        return str(path.relative_to(self.root))
