"""Permission rules in the syntax people already know (Claude Code's).

    Read                    every call to Read
    Bash(git status:*)      Bash running `git status` plus any arguments (one simple command)
    Bash(npm test)          Bash running exactly `npm test`
    Edit(src/**)            Edit or Write of a path under src/ (relative to the workspace)
    Read(./.env)            Read of the workspace's own .env (path forms: path_rules)
    mcp__github             every tool of the MCP server `github`
    mcp__github__*          every tool whose name matches the glob

What a pattern is matched against is the tool's *permission subject*: a tool may
define `permission_subject(args) -> str | None` (Bash: the command, file tools: the
path). A tool without one matches only rules without a pattern; a pattern on an MCP tool
is refused, since it could never match.

File tools' patterns read as Claude Code reads them (gitignore style, `./`, `/`, `//`,
`~/`; path_rules turns each into workspace-relative globs when the rule loads), and an
`Edit` rule covers every tool that edits files (Edit and Write), as in Claude Code. Bash
patterns are not string prefixes: the command is parsed, and an allow rule covers only
one simple command of literal words while a deny or ask rule catches the command
anywhere in the line (command_rules says exactly how, and which forms are refused).
A pattern needs one tool name: `B*(rm:*)` is refused, since a glob cannot say whether the
pattern is a command or a path.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agents.errors import ConfigError
from agents.permissions.command_rules import CommandPattern, parse_command_pattern
from agents.permissions.path_rules import rule_paths
from agents.permissions.shell_line import read_line
from tools.bash import BashTool
from tools.files import GlobError, path_glob_match
from tools.registry import FILE_TOOLS

__all__ = ["MCP_PREFIX", "PATH_TOOLS", "SHELL_TOOL", "Effect", "Rule", "parse_rule", "parse_rules", "tool_globs"]

Effect = Literal["allow", "deny", "ask"]

SHELL_TOOL = BashTool.name  # the tool whose permission subject is a shell command
PATH_TOOLS: tuple[str, ...] = tuple(tool.name for tool in FILE_TOOLS)  # their subject is a workspace path
MCP_PREFIX = "mcp__"
_COVERS = {"Edit": ("Edit", "Write")}  # as in Claude Code: an Edit rule covers every tool that edits files
_RULE = re.compile(r"^(?P<tool>[A-Za-z0-9_.*?\[\]-]+)(?:\((?P<pattern>.*)\))?$")


@functools.lru_cache(maxsize=256)
def tool_globs(tool: str) -> tuple[str, ...]:
    """The tool names (globs) a rule naming `tool` covers: `Edit` covers Write too, and
    `mcp__server` every tool of that server (named mcp__server__<tool>, tools.mcp._tool)."""
    if tool in _COVERS:
        return _COVERS[tool]
    if tool.startswith(MCP_PREFIX):
        tool = tool.replace(".", "_")  # as tools.mcp._tool names a server's tools
        if "__" not in tool[len(MCP_PREFIX) :] and not any(ch in tool for ch in "*?["):
            return (f"{tool}__*",)
    return (tool,)


@dataclass(frozen=True)
class Rule:
    effect: Effect
    tool: str  # a name or a glob over names
    pattern: str | None  # None: every call to the tool
    text: str  # as written, for audit lines and messages
    exact: bool = False  # a user's "always allow" grants this subject, not a pattern
    command: CommandPattern | None = None  # a Bash pattern, parsed when the rule loads
    paths: tuple[str, ...] | None = None  # a file tool's pattern as workspace-relative globs (path_rules)

    def matches(self, tool_name: str, subject: str | None) -> bool:
        names = (self.tool,) if self.exact else tool_globs(self.tool)
        if not any(fnmatch.fnmatchcase(tool_name, name) for name in names):
            return False
        if self.pattern is None:
            return True
        if subject is None:
            return False
        if tool_name == SHELL_TOOL:
            return self._matches_command(subject)
        if self.exact:
            return subject == self.pattern
        if self.paths is not None:
            return any(path_glob_match(subject, path) for path in self.paths)
        if any(ch in self.pattern for ch in "*?["):
            return path_glob_match(subject, self.pattern)
        return subject == self.pattern

    def _matches_command(self, command: str) -> bool:
        line = read_line(command)
        if self.exact:
            # An "always" answer covers this exact command, and only while it is one simple
            # command: a line with expansions can run something else next time.
            return line.simple is not None and command == self.pattern
        pattern = self.command or parse_command_pattern(self.text, self.pattern or "", self.effect)
        return pattern.allows(line) if self.effect == "allow" else pattern.catches(line)


def parse_rule(text: str, effect: Effect, *, workspace: Path | None = None, home: Path | None = None) -> Rule:
    """Rule `text`; `workspace` (and `home`, default the user's) place its absolute and
    home path forms. ConfigError, naming the rule and what to write, for a refused form."""
    match = _RULE.match(text.strip())
    if match is None or (match.group("pattern") is not None and not match.group("pattern").strip()):
        raise ConfigError(
            f"permission rule {text!r} is malformed; write Tool or Tool(pattern), "
            "e.g. Read, Bash(git status:*), Edit(src/**)"
        )
    tool, pattern = match.group("tool"), match.group("pattern")
    pattern = pattern.strip() if pattern else None
    command, paths, text = None, None, text.strip()
    if pattern is not None and tool != SHELL_TOOL and fnmatch.fnmatchcase(SHELL_TOOL, tool):
        raise ConfigError(
            f"permission rule {text!r} puts a pattern on a tool-name glob that covers "
            f"{SHELL_TOOL}; name the tool, e.g. {SHELL_TOOL}({pattern}) or Edit({pattern})"
        )
    if pattern is not None and tool.startswith(MCP_PREFIX):
        raise ConfigError(
            f"permission rule {text!r} puts a pattern on an MCP tool, whose calls have nothing to match it "
            f"against; write {tool} (every tool of a server: mcp__<server>, one tool: mcp__<server>__<tool>)"
        )
    if pattern is not None and tool == SHELL_TOOL:
        command = parse_command_pattern(text, pattern, effect)
    elif pattern is not None and any(fnmatch.fnmatchcase(t, g) for t in PATH_TOOLS for g in tool_globs(tool)):
        paths = rule_paths(text, pattern, workspace, home)
    if pattern is not None and command is None:
        try:
            for glob in paths or (pattern,):
                path_glob_match("", glob)  # compiles the glob once, so a bad one fails here
        except GlobError as exc:
            raise ConfigError(f"permission rule {text[:100]!r}: {exc}; write a shorter pattern") from None
    return Rule(effect=effect, tool=tool, pattern=pattern, text=text, command=command, paths=paths)


def parse_rules(texts: list[str], effect: Effect, *, workspace: Path | None = None) -> list[Rule]:
    return [parse_rule(t, effect, workspace=workspace) for t in texts]
