"""Recorded coding-agent runs, normalized to Workingset's typed conversation.

`load_trace_file` reads any supported file and picks its loader from the content (file
names in the public datasets are not reliable: `output.jsonl`, `trajectory.json`, `.traj`).
`find_trace_files` lists the loadable traces under a folder by the same test, so licenses,
READMEs, task metadata and benchmark summaries drop out without a name list.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from . import anthropic_messages, mini_swe_agent, moatless, openhands, swe_agent
from .anthropic_messages import load_anthropic_messages, to_anthropic_messages
from .mini_swe_agent import load_mini_swe_agent
from .moatless import load_moatless
from .model import (
    NO_OBSERVATION,
    Trace,
    UnknownTraceFormat,
    model_calls,
    read_json_documents,
)
from .openhands import load_openhands
from .swe_agent import load_swe_agent

__all__ = [
    "FORMATS",
    "NO_OBSERVATION",
    "Trace",
    "TraceFormat",
    "UnknownTraceFormat",
    "detect_format",
    "find_trace_files",
    "load_anthropic_messages",
    "load_mini_swe_agent",
    "load_moatless",
    "load_openhands",
    "load_swe_agent",
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
    # Workingset's own session exports and trace dirs go here, ahead of the public formats.
    TraceFormat(mini_swe_agent.SOURCE, mini_swe_agent.detect, mini_swe_agent.parse),
    TraceFormat(openhands.SOURCE, openhands.detect, openhands.parse),
    TraceFormat(moatless.SOURCE, moatless.detect, moatless.parse),
    TraceFormat(swe_agent.SOURCE, swe_agent.detect, swe_agent.parse),
    TraceFormat(anthropic_messages.SOURCE, anthropic_messages.detect, anthropic_messages.parse),
]

# Only these can hold JSON/JSONL traces; checking the suffix first keeps the folder scan
# from parsing binaries and text files.
_SUFFIXES = {".json", ".jsonl", ".traj"}


def _supported() -> str:
    return ", ".join(f.name for f in FORMATS)


def _match(docs: list[Any]) -> TraceFormat | None:
    return next((f for f in FORMATS if f.detect(docs)), None)


def _read(path: Path) -> list[Any]:
    try:
        return read_json_documents(path)
    except UnknownTraceFormat as exc:
        raise UnknownTraceFormat(f"{exc}; supported formats: {_supported()}") from exc


def detect_format(path: str | Path) -> str:
    """The name of the format `load_trace_file` would use for this file."""
    p = Path(path)
    found = _match(_read(p))
    if found is None:
        raise UnknownTraceFormat(f"{p}: unknown trace format; supported formats: {_supported()}")
    return found.name


def load_trace_file(path: str | Path) -> list[Trace]:
    """Every run in the file (an OpenHands output.jsonl holds several)."""
    p = Path(path)
    docs = _read(p)
    found = _match(docs)
    if found is None:
        raise UnknownTraceFormat(f"{p}: unknown trace format; supported formats: {_supported()}")
    return found.parse(docs, p)


def find_trace_files(root: str | Path) -> list[Path]:
    """Every file under `root` that some loader recognises, sorted."""
    found: list[Path] = []
    for p in sorted(Path(root).rglob("*")):
        if not p.is_file() or p.suffix not in _SUFFIXES:
            continue
        try:
            docs = read_json_documents(p)
        except UnknownTraceFormat:
            continue
        if _match(docs) is not None:
            found.append(p)
    return found
