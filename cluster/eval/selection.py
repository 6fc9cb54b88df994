"""Which tasks of the file a batch runs: `--filter PATTERN` (task ids by glob,
repeatable: a task is kept when any pattern matches) and then `--slice START:END` (a
Python slice over what is left, in the file's order; either end may be left out or
negative). The report and summary name the selection that produced them.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from agents.errors import ConfigError
from cluster.eval.tasks import Task

__all__ = ["Selection", "parse_slice"]


def parse_slice(text: str) -> slice:
    """`START:END` (argparse type): `2:5`, `:10`, `-3:`."""
    start, sep, end = text.partition(":")
    if not sep or ":" in end:
        raise argparse.ArgumentTypeError(f"expected START:END (e.g. 0:10, :5, -3:), got {text!r}")
    try:
        return slice(int(start) if start.strip() else None, int(end) if end.strip() else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"START and END must be whole numbers, got {text!r}") from None


def _slice_text(part: slice) -> str:
    return f"{'' if part.start is None else part.start}:{'' if part.stop is None else part.stop}"


@dataclass
class Selection:
    """What was asked for and what it picked, for the report."""

    task_file: str
    filters: list[str] = field(default_factory=list)
    part: slice | None = None
    in_file: int = 0
    selected: int = 0

    def apply(self, tasks: list[Task]) -> list[Task]:
        self.in_file = len(tasks)
        picked = [t for t in tasks if any(fnmatchcase(t.id, p) for p in self.filters)] if self.filters else list(tasks)
        if self.filters and not picked:
            sample = ", ".join(t.id for t in tasks[:3]) + (", ..." if len(tasks) > 3 else "")
            raise ConfigError(
                f"no task id in {self.task_file} matches --filter {' '.join(map(repr, self.filters))} "
                f"(its ids: {sample}); check the pattern (a glob: *, ?, [abc])"
            )
        if self.part is not None:
            left = len(picked)
            picked = picked[self.part]
            if not picked:
                which = f"{left} tasks of {self.task_file}" + (" that --filter kept" if self.filters else "")
                raise ConfigError(
                    f"--slice {_slice_text(self.part)} selects none of the {which}; pick a range inside 0:{left}"
                )
        self.selected = len(picked)
        return picked

    def describe(self) -> str:
        """One line: `tasks.jsonl, --filter 'a*', --slice 0:2: 2 of 6 tasks`."""
        parts = [self.task_file]
        parts += [f"--filter {p!r}" for p in self.filters]
        if self.part is not None:
            parts.append(f"--slice {_slice_text(self.part)}")
        return f"{', '.join(parts)}: {self.selected} of {self.in_file} tasks"

    def to_json(self) -> dict:
        return {
            "task_file": self.task_file,
            "filters": list(self.filters),
            "slice": None if self.part is None else _slice_text(self.part),
            "selected": self.selected,
            "in_file": self.in_file,
        }
