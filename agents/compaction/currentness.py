"""Currentness: which tool results a later action has made stale.

A result is *superseded* when a later completed tool call makes it outdated:

  re-run     the same tool with the same input ran again (a test, a build, a listing,
             the same read): the later output is the current one
  rewritten  it read a file that a later call wrote whole (Write, `create`, `cat > F`,
             `> F`, `cp`/`mv` onto it)
  re-read    it read a file that a later call read again whole
  edited     it read a file that a later call changed in part (Edit, `str_replace`,
             `insert`, `sed -i`, `>> F`) — only when asked (`edits=True`): most of
             such a read is still true, so by default it is not stale

What a call reads or writes is recognised from its tool name and input alone — the
structured file tools (Read / Write / Edit / MultiEdit, `str_replace_editor`-style
`view` / `create` / `str_replace` / `insert`, `open`) and, for shell commands, the
first line's common forms (`cat F` reads whole; `head`, `tail`, `nl`, `sed -n`,
`grep … F` and anything piped read in part). Anything not recognised supersedes
nothing and is superseded only by an exact re-run, so a miss keeps evidence rather
than losing it. Never decided from a tool's output.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from agents.compaction.clearing import (
    ClearedResult,
    ClearingOutcome,
    is_placeholder,
    marked_result,
    replace_results,
)
from agents.messages import (
    Message,
    SupersededBody,
    ToolUseBlock,
    completed_tool_interactions,
    tool_uses_by_id,
)

__all__ = ["Effects", "Reason", "Supersession", "clear_superseded", "effects_of", "superseded_results"]

Reason = Literal["re-run", "rewritten", "re-read", "edited"]

_READ_TOOLS = {"read", "view", "open", "read_file", "view_file"}
_WRITE_TOOLS = {"write", "create", "write_file", "create_file"}
_EDIT_TOOLS = {"edit", "multiedit", "edit_file", "apply_patch"}
_EDITOR_WRITES = {"create"}
_EDITOR_EDITS = {"str_replace", "insert", "undo_edit"}
_PATH_KEYS = ("file_path", "path", "filename", "file")
_SHELL_KEYS = ("command", "cmd")
_RANGE_KEYS = ("offset", "limit", "view_range", "line_start")

_CD_PREFIX = re.compile(r"^\s*cd\s+(\S+)\s*(?:&&|;)\s*")
_REDIRECT = re.compile(r"(?<![0-9&<>])(>{1,2})\s*([^\s;&|<>()]+)")
_COMMANDS = re.compile(r"\s*(?:&&|\|\||;)\s*")
_PIPE = re.compile(r"\s*\|\s*")
_REDIRECTION_WORD = re.compile(r"\d*(?:>{1,2}|<{1,3})&?")
_PARTIAL_READERS = {"head", "tail", "nl", "less", "more"}
_NOT_FILES = {"/dev/null", "/dev/stdout", "/dev/stderr"}


@dataclass(frozen=True)
class Effects:
    """What one call did to files, as far as its input says."""

    reads: frozenset[str] = frozenset()  # read whole
    partial_reads: frozenset[str] = frozenset()  # a range, a grep, a piped read
    writes: frozenset[str] = frozenset()  # replaced whole
    edits: frozenset[str] = frozenset()  # changed in part


@dataclass(frozen=True)
class Supersession:
    """Result `tool_use_id` is stale: call `by` re-ran it, or rewrote, re-read or edited its file."""

    tool_use_id: str
    by: str
    reason: Reason


def _normal(path: str, cwd: str | None) -> str:
    path = path.strip().strip("'\"")
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        path = path[len(cwd.rstrip("/")) + 1 :]
    while path.startswith("./"):
        path = path[2:]
    return path


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, posix=True)
    except ValueError:
        return segment.split()


def _operands(words: list[str]) -> list[str]:
    """A command's file operands: not options, counts, redirections or their targets."""
    out: list[str] = []
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
        elif _REDIRECTION_WORD.fullmatch(word):
            skip = True  # the redirection's target follows
        elif not (word.startswith("-") or re.fullmatch(r"[+-]?\d+", word) or any(c in word for c in "<>")):
            out.append(word)
    return out


@dataclass
class _Shell:
    cwd: str | None
    reads: set[str] = field(default_factory=set)
    partial: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    edits: set[str] = field(default_factory=set)

    def stage(self, words: list[str], piped: bool) -> None:
        """One simple command of a pipeline (`piped`: its output is filtered)."""
        if not words:
            return
        name, operands = words[0], _operands(words)
        paths = {_normal(p, self.cwd) for p in operands}
        if name == "sed":
            targets = {_normal(p, self.cwd) for p in operands[1:]}
            (self.edits if any(w.startswith("-i") for w in words[1:]) else self.partial).update(targets)
        elif name == "cat" and all(w == "-n" or not w.startswith("-") for w in words[1:]):
            (self.partial if piped else self.reads).update(paths)
        elif name in _PARTIAL_READERS:
            self.partial |= paths
        elif name == "grep" and len(operands) == 2 and not any(w.startswith(("-r", "-R")) for w in words[1:]):
            self.partial.add(_normal(operands[1], self.cwd))
        elif name in ("cp", "mv") and len(operands) >= 2:
            self.writes.add(_normal(operands[-1], self.cwd))
        elif name == "tee":
            (self.edits if "-a" in words else self.writes).update(paths)

    def effects(self) -> Effects:
        changed = self.writes | self.edits
        reads = self.reads - changed
        return Effects(
            frozenset(reads),
            frozenset(self.partial - changed - reads),
            frozenset(self.writes),
            frozenset(self.edits - self.writes),
        )


# Longer first lines are not parsed: shlex is pure Python, and the strategy looks at every
# call on each compaction, so a megabyte command would stall every turn after it. Such a
# call claims no effects, which only ever keeps evidence.
_LONGEST_PARSED_LINE = 8192


def _shell_effects(command: str) -> Effects:
    """Reads and writes of a shell command's first line (a heredoc's body and quoted
    scripts are not parsed)."""
    line = command.split("\n", 1)[0]
    if len(line) > _LONGEST_PARSED_LINE:
        return Effects()
    m = _CD_PREFIX.match(line)
    shell = _Shell(cwd=m.group(1) if m else None)
    line = line[m.end() :] if m else line
    for op, target in _REDIRECT.findall(line):
        if target not in _NOT_FILES:
            (shell.writes if op == ">" else shell.edits).add(_normal(target, shell.cwd))
    for command_text in _COMMANDS.split(line):
        stages = _PIPE.split(command_text)
        for n, stage in enumerate(stages):
            shell.stage(_words(stage), piped=len(stages) > 1 or n > 0)
    return shell.effects()


def _path_of(use: ToolUseBlock) -> str | None:
    for key in _PATH_KEYS:
        value = use.input.get(key)
        if isinstance(value, str) and value:
            return _normal(value, None)
    return None


def _file_tool_effects(name: str, sub: object, path: str, ranged: bool) -> Effects | None:
    one = frozenset({path})
    if sub in _EDITOR_WRITES or (sub is None and name in _WRITE_TOOLS):
        return Effects(writes=one)
    if sub in _EDITOR_EDITS or (sub is None and name in _EDIT_TOOLS):
        return Effects(edits=one)
    if sub == "view" or (sub is None and name in _READ_TOOLS):
        return Effects(partial_reads=one) if ranged else Effects(reads=one)
    return None


def effects_of(use: ToolUseBlock) -> Effects:
    """What a call reads and writes, from its name and input."""
    name = use.name.lower()
    path = _path_of(use)
    sub = use.input.get("command")
    if path is not None:
        ranged = any(use.input.get(k) for k in _RANGE_KEYS)
        found = _file_tool_effects(name, sub if isinstance(sub, str) and sub.isidentifier() else None, path, ranged)
        if found is not None:
            return found
    for key in _SHELL_KEYS:
        value = use.input.get(key)
        if isinstance(value, str) and value.strip():
            return _shell_effects(value)
    return Effects()


def _call_key(use: ToolUseBlock) -> str:
    return use.name + "\x00" + json.dumps(use.input, sort_keys=True, default=str)


@dataclass
class _Later:
    """Walking the calls newest first: the nearest later call of each kind."""

    runs: dict[str, str] = field(default_factory=dict)  # call key -> use id
    writes: dict[str, str] = field(default_factory=dict)  # path -> writer
    edits: dict[str, str] = field(default_factory=dict)  # path -> editor
    reads: dict[str, str] = field(default_factory=dict)  # path -> whole reader

    def superseder(self, key: str, touched: Sequence[str], edits: bool) -> tuple[str, Reason] | None:
        if key in self.runs:
            return self.runs[key], "re-run"
        tables: tuple[tuple[dict[str, str], Reason], ...] = (
            (self.writes, "rewritten"),
            (self.reads, "re-read"),
            (self.edits, "edited"),
        )
        for table, reason in tables:
            if reason == "edited" and not edits:
                continue
            found = next((table[p] for p in touched if p in table), None)
            if found is not None:
                return found, reason
        return None

    def add(self, key: str, use_id: str, effects: Effects) -> None:
        self.runs[key] = use_id
        for path in effects.writes:
            self.writes[path] = use_id
        for path in effects.edits:
            self.edits[path] = use_id
        for path in effects.reads:
            self.reads[path] = use_id


def superseded_results(messages: Sequence[Message], *, edits: bool = False) -> dict[str, Supersession]:
    """Every completed tool result a later completed call made stale, by tool_use_id
    (`edits`: a partial edit of a file also makes its earlier reads stale). An
    unanswered call supersedes nothing: its output is not in view yet."""
    later = _Later()
    out: dict[str, Supersession] = {}
    for interaction in reversed(completed_tool_interactions(messages)):
        use = interaction.use
        key = _call_key(use)
        effects = effects_of(use)
        found = later.superseder(key, sorted(effects.reads | effects.partial_reads), edits)
        if found is not None:
            out[use.id] = Supersession(use.id, *found)
        later.add(key, use.id, effects)
    return out


def clear_superseded(messages: Sequence[Message], stale: dict[str, Supersession], *, start: int = 0) -> ClearingOutcome:
    """Every stale result body from messages[start:] on, except the latest result, becomes
    a `superseded` note naming the call that superseded it and why."""
    results = [b for m in messages[start:] for b in m.tool_results_in]
    latest = results[-1].tool_use_id if results else None
    chosen = [b for b in results if b.tool_use_id in stale and b.tool_use_id != latest and not is_placeholder(b.marker)]
    if not chosen:
        return ClearingOutcome(list(messages), [])
    uses = tool_uses_by_id(messages)
    replacements = {}
    for block in chosen:
        why = stale[block.tool_use_id]
        replacements[block.tool_use_id] = marked_result(
            block, SupersededBody(original_chars=len(block.content), by=why.by, reason=why.reason)
        )
    cleared = [ClearedResult(b, uses[b.tool_use_id][1].name if b.tool_use_id in uses else "") for b in chosen]
    return ClearingOutcome(replace_results(messages, replacements), cleared)
