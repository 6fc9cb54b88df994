"""Permission rules in the syntax people already know.

    Read                    every call to Read
    Bash(git status:*)      Bash running `git status` plus any arguments (one simple command)
    Bash(npm test)          Bash running exactly `npm test`
    Edit(src/**)            Edit of a path matching the glob src/** (relative to the workspace)
    mcp__github__*          every tool whose name matches the glob

What a pattern is matched against is the tool's *permission subject*: a tool may
define `permission_subject(args) -> str | None` (Bash: the command, file tools: the
path). A tool without one matches only rules without a pattern.

Bash patterns are not string prefixes: the command is parsed, and an allow rule covers
only one simple command of literal words while a deny or ask rule catches the command
anywhere in the line (command_rules says exactly how, and which forms are refused).
A pattern needs one tool name: `B*(rm:*)` is refused, since a glob cannot say whether the
pattern is a command or a path.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Literal

from agents.errors import ConfigError
from agents.permissions.command_rules import CommandPattern, parse_command_pattern
from agents.permissions.shell_line import read_line
from tools.bash import BashTool
from tools.glob_regex import GlobError
from tools.path_glob import path_glob_match

__all__ = ["SHELL_TOOL", "Effect", "Rule", "parse_rule", "parse_rules"]

Effect = Literal["allow", "deny", "ask"]

SHELL_TOOL = BashTool.name  # the tool whose permission subject is a shell command
_RULE = re.compile(r"^(?P<tool>[A-Za-z0-9_*?\[\]-]+)(?:\((?P<pattern>.*)\))?$")


@dataclass(frozen=True)
class Rule:
    effect: Effect
    tool: str  # a name or a glob over names
    pattern: str | None  # None: every call to the tool
    text: str  # as written, for audit lines and messages
    exact: bool = False  # a user's "always allow" grants this subject, not a pattern
    command: CommandPattern | None = None  # a Bash pattern, parsed when the rule loads

    def matches(self, tool_name: str, subject: str | None) -> bool:
        if not fnmatch.fnmatchcase(tool_name, self.tool):
            return False
        if self.pattern is None:
            return True
        if subject is None:
            return False
        if tool_name == SHELL_TOOL:
            return self._matches_command(subject)
        if self.exact:
            return subject == self.pattern
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


def parse_rule(text: str, effect: Effect) -> Rule:
    match = _RULE.match(text.strip())
    if match is None or (match.group("pattern") is not None and not match.group("pattern").strip()):
        raise ConfigError(
            f"permission rule {text!r} is malformed; write Tool or Tool(pattern), "
            "e.g. Read, Bash(git status:*), Edit(src/**)"
        )
    tool, pattern = match.group("tool"), match.group("pattern")
    pattern = pattern.strip() if pattern else None
    command = None
    if pattern is not None and tool != SHELL_TOOL and fnmatch.fnmatchcase(SHELL_TOOL, tool):
        raise ConfigError(
            f"permission rule {text.strip()!r} puts a pattern on a tool-name glob that covers "
            f"{SHELL_TOOL}; name the tool, e.g. {SHELL_TOOL}({pattern}) or Edit({pattern})"
        )
    if pattern is not None and tool == SHELL_TOOL:
        command = parse_command_pattern(text.strip(), pattern, effect)
    elif pattern is not None:
        try:
            path_glob_match("", pattern)  # compiles the glob once, so a bad one fails here
        except GlobError as exc:
            raise ConfigError(f"permission rule {text.strip()[:100]!r}: {exc}; write a shorter pattern") from None
    return Rule(effect=effect, tool=tool, pattern=pattern, text=text.strip(), command=command)


def parse_rules(texts: list[str], effect: Effect) -> list[Rule]:
    return [parse_rule(t, effect) for t in texts]
