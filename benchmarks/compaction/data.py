"""Which trajectories a benchmark run measures: trace files and dirs, or synthetic ones.

A file or Workingset trace dir named on the command line must load; if it cannot, it is
named and skipped with the reason (`strict`: the run stops with that reason instead).
Inside a folder every `.json`/`.jsonl`/`.traj` file is tried: unreadable ones (not UTF-8,
not JSON) and recognised ones that fail to load are skipped with a reason; valid JSON
that no loader recognises (licenses' metadata, task lists, score summaries) is not a
trace and is only counted as ignored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agents.errors import ConfigError
from benchmarks.traces import (
    CALL_FILE,
    Trace,
    UnknownTraceFormat,
    corpus_dir,
    detect_format,
    is_trace_dir,
    load_trace_file,
    read_json_documents,
)

from .synthetic import synthetic_traces

__all__ = ["Inputs", "default_traces_dir", "load_inputs", "synthetic_inputs"]

_SUFFIXES = {".json", ".jsonl", ".traj"}


def default_traces_dir() -> Path:
    """The shared corpus of real trajectories beside the repository (benchmarks.traces.corpus)."""
    return corpus_dir()


@dataclass
class Inputs:
    traces: list[tuple[str, Trace]] = field(default_factory=list)  # (label, trace)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    ignored: list[str] = field(default_factory=list)
    synthetic: bool = False
    description: str = ""

    def add(self, traces: Iterable[Trace]) -> None:
        taken = Counter(label for label, _ in self.traces)
        for trace in traces:
            label = f"{trace.source}:{trace.task_id}"
            taken[label] += 1
            self.traces.append((label if taken[label] == 1 else f"{label}#{taken[label]}", trace))

    def skip(self, path: Path | str, reason: str, strict: bool) -> None:
        if strict:
            raise ConfigError(f"trace {path} cannot be used: {reason} (drop --strict to skip it)")
        self.skipped.append((str(path), reason))


def _reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, UnknownTraceFormat | OSError) else f"{type(exc).__name__}: {exc}"


def _load_named(path: Path, inputs: Inputs, strict: bool) -> None:
    try:
        inputs.add(load_trace_file(path))
    except (UnknownTraceFormat, OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        inputs.skip(path, _reason(exc), strict)


def _scan(root: Path, inputs: Inputs, strict: bool) -> None:
    trace_dirs: dict[Path, bool] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.suffix not in _SUFFIXES:
            continue
        if CALL_FILE.match(p.name):
            if p.parent not in trace_dirs:
                trace_dirs[p.parent] = is_trace_dir(p.parent)
                if trace_dirs[p.parent]:
                    _load_named(p.parent, inputs, strict)
            continue
        try:
            read_json_documents(p)
        except (UnknownTraceFormat, OSError) as exc:
            inputs.skip(p, _reason(exc), strict)
            continue
        try:
            detect_format(p)
        except UnknownTraceFormat:
            inputs.ignored.append(str(p))
            continue
        _load_named(p, inputs, strict)


def load_inputs(paths: Iterable[Path | str], *, strict: bool = False) -> Inputs:
    inputs = Inputs(description="traces: " + ", ".join(str(p) for p in paths))
    for path in map(Path, paths):
        if not path.exists():
            inputs.skip(path, "no such file or directory", strict)
        elif path.is_dir() and not is_trace_dir(path):
            _scan(path, inputs, strict)
        else:
            _load_named(path, inputs, strict)
    return inputs


def synthetic_inputs(count: int, seed: int = 0) -> Inputs:
    inputs = Inputs(synthetic=True, description=f"SYNTHETIC: {count} generated trajectories (seed {seed})")
    inputs.add(synthetic_traces(count, seed=seed))
    return inputs
