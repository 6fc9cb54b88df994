"""Permission rules in the syntax people already know.

    Read                    every call to Read
    Bash(git status:*)      Bash whose command is "git status" plus arguments (no ; && | etc.)
    Bash(npm test)          Bash whose command is exactly "npm test"
    Edit(src/**)            Edit of a path matching the glob src/** (relative to the workspace)
    mcp__github__*          every tool whose name matches the glob

What a pattern is matched against is the tool's *permission subject*: a tool may
define `permission_subject(args) -> str | None` (Bash: the command, file tools: the
path). A tool without one matches only rules without a pattern.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Literal

from agents.errors import ConfigError
from tools.path_glob import path_glob_match

__all__ = ["Effect", "Rule", "parse_rule", "parse_rules"]

Effect = Literal["allow", "deny", "ask"]

_SHELL_CONTROL = re.compile(r"[;&|`<>\n]|\$\(")
_RULE = re.compile(r"^(?P<tool>[A-Za-z0-9_*?\[\]-]+)(?:\((?P<pattern>.*)\))?$")


@dataclass(frozen=True)
class Rule:
    effect: Effect
    tool: str  # a name or a glob over names
    pattern: str | None  # None: every call to the tool
    text: str  # as written, for audit lines and messages
    exact: bool = False  # a user's "always allow" grants this subject, not a pattern

    def matches(self, tool_name: str, subject: str | None) -> bool:
        if not fnmatch.fnmatchcase(tool_name, self.tool):
            return False
        if self.pattern is None:
            return True
        if subject is None:
            return False
        if self.exact:
            return subject == self.pattern
        if self.pattern.endswith(":*"):
            prefix = self.pattern[:-2]
            if subject != prefix and not subject.startswith(prefix + " "):
                return False
            # A prefix grant covers one command, not whatever is chained after it.
            return not _SHELL_CONTROL.search(subject[len(prefix) :])
        if any(ch in self.pattern for ch in "*?["):
            return path_glob_match(subject, self.pattern)
        return subject == self.pattern


def parse_rule(text: str, effect: Effect) -> Rule:
    match = _RULE.match(text.strip())
    if match is None or (match.group("pattern") is not None and not match.group("pattern").strip()):
        raise ConfigError(
            f"permission rule {text!r} is malformed; write Tool or Tool(pattern), "
            "e.g. Read, Bash(git status:*), Edit(src/**)"
        )
    pattern = match.group("pattern")
    return Rule(effect=effect, tool=match.group("tool"), pattern=pattern.strip() if pattern else None, text=text.strip())


def parse_rules(texts: list[str], effect: Effect) -> list[Rule]:
    return [parse_rule(t, effect) for t in texts]
