"""Recorded coding-agent runs, normalized to Workingset's typed conversation.

What the package's __init__ held; it re-exports these names, and its docstring
describes the package (benchmarks.traces).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from . import (
    anthropic_messages,
    mini_swe_agent,
    moatless,
    nebius,
    openhands,
    openhands_v1,
    swe_agent,
    workingset,
)
from .anthropic_messages import load_anthropic_messages, to_anthropic_messages
from .mini_swe_agent import load_mini_swe_agent
from .moatless import load_moatless
from .model import (
    NO_OBSERVATION,
    CallRecord,
    Trace,
    UnknownTraceFormat,
    model_calls,
    read_json_documents,
)
from .nebius import load_nebius
from .openhands import load_openhands
from .openhands_v1 import load_openhands_v1
from .swe_agent import load_swe_agent
from .workingset import is_trace_dir, load_trace_dir

__all__ = [
    "FORMATS",
    "NO_OBSERVATION",
    "CallRecord",
    "Trace",
    "TraceFormat",
    "UnknownTraceFormat",
    "detect_format",
    "find_trace_files",
    "load_anthropic_messages",
    "load_mini_swe_agent",
    "load_moatless",
    "load_nebius",
    "load_openhands",
    "load_openhands_v1",
    "load_swe_agent",
    "load_trace_dir",
    "load_trace_file",
    "model_calls",
    "to_anthropic_messages",
]


class TraceFormat(NamedTuple):
    name: str
    detect: Callable[[list[Any]], bool]
    parse: Callable[[list[Any], str | Path], list[Trace]]


# Tried in order; the first whose `detect` accepts the parsed documents wins. The specific
# formats (with distinctive top-level keys) come before the generic Anthropic message list,
# which is the fallback for any plain user/assistant conversation.
FORMATS: list[TraceFormat] = [
    # Workingset's own session exports and trace records, ahead of the public formats (a
    # trace record holds a `messages` list the generic Anthropic loader would also accept).
    # A trace dir is a directory, handled in load_trace_file / find_trace_files.
    TraceFormat(workingset.SESSION_SOURCE, workingset.detect_session, workingset.parse_session),
    TraceFormat(workingset.TRACE_SOURCE, workingset.detect_trace_call, workingset.parse_trace_call),
    TraceFormat(mini_swe_agent.SOURCE, mini_swe_agent.detect, mini_swe_agent.parse),
    # V1 events also carry `action` / `observation` keys, so V1 goes before V0's detector.
    TraceFormat(openhands_v1.SOURCE, openhands_v1.detect, openhands_v1.parse),
    TraceFormat(openhands.SOURCE, openhands.detect, openhands.parse),
    TraceFormat(moatless.SOURCE, moatless.detect, moatless.parse),
    TraceFormat(swe_agent.SOURCE, swe_agent.detect, swe_agent.parse),
    TraceFormat(nebius.SOURCE, nebius.detect, nebius.parse),
    TraceFormat(anthropic_messages.SOURCE, anthropic_messages.detect, anthropic_messages.parse),
]

# Only these can hold JSON/JSONL traces; checking the suffix first keeps the folder scan
# from parsing binaries and text files.
_SUFFIXES = {".json", ".jsonl", ".traj"}


def _supported() -> str:
    return ", ".join(f.name for f in FORMATS) + f", {workingset.TRACE_SOURCE} dir"


def _match(docs: list[Any]) -> TraceFormat | None:
    return next((f for f in FORMATS if f.detect(docs)), None)


def _read(path: Path) -> list[Any]:
    try:
        return read_json_documents(path)
    except UnknownTraceFormat as exc:
        raise UnknownTraceFormat(f"{exc}; supported formats: {_supported()}") from exc


def detect_format(path: str | Path) -> str:
    """The name of the format `load_trace_file` would use for this file (or trace dir)."""
    p = Path(path)
    if p.is_dir():
        if is_trace_dir(p):
            return workingset.TRACE_SOURCE
        raise UnknownTraceFormat(f"{p}: a directory that is not a Workingset trace dir")
    found = _match(_read(p))
    if found is None:
        raise UnknownTraceFormat(f"{p}: unknown trace format; supported formats: {_supported()}")
    return found.name


def load_trace_file(path: str | Path) -> list[Trace]:
    """Every run in the file (an OpenHands output.jsonl holds several), or every session
    in a Workingset trace dir."""
    p = Path(path)
    if p.is_dir():
        return load_trace_dir(p)
    if not p.exists():
        raise UnknownTraceFormat(f"{p}: no such file or directory")
    docs = _read(p)
    found = _match(docs)
    if found is None:
        raise UnknownTraceFormat(f"{p}: unknown trace format; supported formats: {_supported()}")
    return found.parse(docs, p)


def find_trace_files(root: str | Path) -> list[Path]:
    """Every file under `root` that some loader recognises, sorted; a Workingset trace dir
    is listed once, as the directory (`root` itself may be one)."""
    root = Path(root)
    if is_trace_dir(root):
        return [root]
    found: list[Path] = []
    trace_dirs: dict[Path, bool] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.suffix not in _SUFFIXES:
            continue
        if workingset.CALL_FILE.match(p.name):
            if p.parent not in trace_dirs:
                trace_dirs[p.parent] = is_trace_dir(p.parent)
                if trace_dirs[p.parent]:
                    found.append(p.parent)
            if trace_dirs[p.parent]:
                continue
        try:
            docs = read_json_documents(p)
        except UnknownTraceFormat:
            continue
        if _match(docs) is not None:
            found.append(p)
    return found
