"""`extractive`: a deterministic, offline summarizer.

It writes the handoff sections from what the history itself says, keeping the
identifiers a continuing agent needs — paths, symbols, commands with exit codes,
failing test names, error lines — each with its provenance (tool and call id).
Same input, same summary; output capped at `max_chars`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agents.compaction.summary import HANDOFF_SECTIONS, is_summary_boundary
from agents.messages import Message, completed_tool_interactions

__all__ = ["ExtractiveSummarizer"]

_EXIT = re.compile(r"(?:exit code:?\s*|<returncode>)(-?\d+)", re.IGNORECASE)
_FAILED_TEST = re.compile(r"\b(?:FAILED|ERROR)\s+(\S+::\S+)|\b(\S+\.py::\S+)\s+(?:FAILED|ERROR)")
_ERROR_LINE = re.compile(
    r"^\s*((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Failure)\b.*|.*\bTraceback\b.*|E\s{2,}.+)$", re.MULTILINE
)
_PYTEST_SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|error)[^=\n]*?)\s*=*$", re.MULTILINE)
_PATH = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.(?:py|pyi|js|ts|tsx|go|rs|c|h|cpp|java|rb|toml|cfg|ini|yaml|yml|json|md|txt|sh))\b"
)
_PATH_KEYS = ("path", "file", "file_path", "filename")
_ITEM_CHARS = 240


def _clip(text: str, limit: int = _ITEM_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe_call(name: str, args: dict) -> str:
    if "command" in args:
        return f"$ {_clip(str(args['command']), 160)}"
    parts = [f"{k}={_clip(str(v), 60)}" for k, v in args.items() if k not in ("content", "new_string", "old_string")]
    return f"{name}({', '.join(parts)})"


def _facts_of(output: str) -> list[str]:
    facts: list[str] = []
    if m := _EXIT.search(output):
        facts.append(f"exit {m.group(1)}")
    facts += [m.group(1) for m in _PYTEST_SUMMARY.finditer(output)][-1:]
    facts += sorted({(m.group(1) or m.group(2)) for m in _FAILED_TEST.finditer(output)})[:5]
    facts += [_clip(m.group(1), 160) for m in _ERROR_LINE.finditer(output)][-2:]
    return facts


class ExtractiveSummarizer:
    """Summarizer port, offline. `focus` moves matching evidence first."""

    name = "extractive"

    def __init__(self, max_chars: int = 6_000):
        self.max_chars = max_chars

    async def summarize(self, messages: list[Message], *, focus: str | None = None) -> str:
        return self.summarize_sync(messages, focus=focus)

    def summarize_sync(self, messages: Sequence[Message], *, focus: str | None = None) -> str:
        sections: dict[str, list[str]] = {name: [] for name in HANDOFF_SECTIONS}
        user_texts = [(i, m.text) for i, m in enumerate(messages) if m.role == "user" and m.text.strip()]
        carried = [t for i, t in user_texts if is_summary_boundary(messages[i])]
        fresh = [(i, t) for i, t in user_texts if not is_summary_boundary(messages[i])]
        if carried:
            sections["Objective"].append("Carried over from an earlier summary:\n" + carried[-1][:2_000])
        if fresh:
            sections["Objective"].append(_clip(fresh[0][1], 600) + f" (user, message {fresh[0][0]})")
            sections["Decisions and constraints"] += [f"{_clip(t)} (user, message {i})" for i, t in fresh[1:]]
        artifacts: dict[str, None] = {}
        for inter in completed_tool_interactions(messages):
            call = _describe_call(inter.use.name, inter.use.input)
            facts = _facts_of(inter.result.content)
            status = "error" if inter.result.is_error else "ok"
            detail = "; ".join(facts) if facts else _clip(inter.result.content, 120)
            sections["Verified evidence"].append(f"[{inter.use.name} {inter.use.id}, {status}] {call} → {detail}")
            for key in _PATH_KEYS:
                if isinstance(inter.use.input.get(key), str):
                    artifacts[inter.use.input[key]] = None
            for m in _PATH.finditer(inter.result.content[:20_000]):
                artifacts[m.group(1)] = None
        sections["Active artifacts"] = list(artifacts)[:40]
        assistant = [(i, m.text) for i, m in enumerate(messages) if m.role == "assistant" and m.text.strip()]
        if assistant:
            i, text = assistant[-1]
            sections["Current state"].append(f"{_clip(text, 600)} (assistant, message {i})")
        sections["Remaining work"].append("Not stated in the summarized part; see the recent messages.")
        if focus:
            key = focus.lower()
            sections["Verified evidence"].sort(key=lambda item: key not in item.lower())
        return self._render(sections)

    def _render(self, sections: dict[str, list[str]]) -> str:
        """Sections in order under one character cap: every header and its closing line
        are reserved first, items fill what is left, oldest sections first."""
        closing = {name: "- (none recorded)" if not items else "" for name, items in sections.items()}
        # Worst case for a section's closing line is "- (N more not shown)".
        reserved = sum(len(f"## {n}") + 1 + len(f"- ({len(i)} more not shown)") + 1 for n, i in sections.items())
        room = self.max_chars - reserved
        out: list[str] = []
        for name, items in sections.items():
            out.append(f"## {name}")
            kept = 0
            for item in items:
                line = f"- {item}"
                if len(line) + 1 > room:
                    break
                out.append(line)
                room -= len(line) + 1
                kept += 1
            if kept < len(items):
                out.append(f"- ({len(items) - kept} more not shown)")
            elif closing[name]:
                out.append(closing[name])
        return "\n".join(out)
