"""PermissionRuntime: decides, for each validated tool call, allow / deny / ask.

Order: deny rules, then calls the user refused in a parent session (a subagent denies
them without asking, agents.permissions.refusals), then session grants, then ask rules,
then allow rules, then the mode's default — so `ask: Bash(git push:*)` still asks when
`allow: Bash` is set. Modes: `default` asks before anything that is not read-only;
`accept-edits` also allows local file edits (Bash still asks); `bypass` allows all
that no deny rule forbids; `plan` allows read-only tools only. Headless runs have no
one to ask: `deny-asks` turns every ask into a deny, `allow-list` denies whatever no
allow rule names. Every decision is written to the audit log.

Protected entries (tools.protected: `.git/`, `.workingset/`, `.claude/`, `.mcp.json`, at any
depth): a file tool that changes something there is never allowed by a mode (accept-edits, bypass), by
a broad rule (`Edit`, `Edit(**)`, `Write(*)`) or by a headless policy. Only an allow
rule whose pattern names the directory literally (`Edit(.git/info/exclude)`,
`Write(.workingset/skills/**)`) or the user's own answer allows it; deny rules still win.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel

from agents.permissions.refusals import RefusedCalls
from agents.permissions.rules import SHELL_TOOL, Effect, Rule, parse_rules
from agents.permissions.shell_line import read_line
from agents.permissions.shell_words import SAFE_CHARS
from tools.base import ExecutionDomain, PermissionSubjectTool, Tool
from tools.protected import protected_part

__all__ = ["AuditLog", "Decision", "HeadlessPolicy", "PermissionMode", "PermissionRuntime", "permission_subject"]


class PermissionMode(StrEnum):
    DEFAULT = "default"
    ACCEPT_EDITS = "accept-edits"
    BYPASS = "bypass"
    PLAN = "plan"


class HeadlessPolicy(StrEnum):
    DENY_ASKS = "deny-asks"
    ALLOW_LIST = "allow-list"


@dataclass(frozen=True)
class Decision:
    effect: Effect
    source: Literal["rule", "grant", "mode", "headless", "user"]
    reason: str
    rule: str | None = None


def permission_subject(tool: Tool, args: BaseModel, workspace: Path) -> str | None:
    return tool.permission_subject(args, workspace) if isinstance(tool, PermissionSubjectTool) else None


_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


class AuditLog:
    """Append-only JSONL of permission decisions (and an in-memory copy for callers)."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self.entries: list[dict[str, Any]] = []

    def __getstate__(self) -> dict:
        # Shipped to a subagent's process: the file is shared, the in-memory copy is not.
        return {"path": self.path, "entries": []}

    def record(self, entry: dict[str, Any]) -> None:
        entry = {"ts": time.time(), **entry}
        self.entries.append(entry)
        if self.path is not None:
            self._append((json.dumps(entry, default=str) + "\n").encode())

    def _append(self, line: bytes) -> None:
        # The whole line in one O_APPEND write, as the buffered file object wrote it; the
        # directory is made when the file cannot be opened for want of it, not made again
        # before every line (this runs for every tool call).
        assert self.path is not None
        try:
            fd = os.open(self.path, _APPEND, 0o666)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, _APPEND, 0o666)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


@dataclass
class PermissionRuntime:
    rules: list[Rule] = field(default_factory=list)
    mode: PermissionMode = PermissionMode.DEFAULT
    headless: HeadlessPolicy | None = None
    audit: AuditLog = field(default_factory=AuditLog)
    grants: list[Rule] = field(default_factory=list)
    scope: str = "root"
    refusals: RefusedCalls = field(default_factory=RefusedCalls)  # the user's "no" answers in this session
    inherited: RefusedCalls = field(default_factory=RefusedCalls)  # refused above it: denied without asking

    @classmethod
    def from_texts(
        cls,
        *,
        allow: Sequence[str] = (),
        deny: Sequence[str] = (),
        ask: Sequence[str] = (),
        mode: PermissionMode | str = PermissionMode.DEFAULT,
        headless: HeadlessPolicy | str | None = None,
        audit: AuditLog | None = None,
        workspace: Path | None = None,
    ) -> PermissionRuntime:
        """Parse rules up front, so a malformed rule fails at start naming itself;
        `workspace` places rules on absolute paths (`Read(//srv/w/.env)`)."""
        rules = [
            *parse_rules(list(deny), "deny", workspace=workspace),
            *parse_rules(list(allow), "allow", workspace=workspace),
            *parse_rules(list(ask), "ask", workspace=workspace),
        ]
        return cls(
            rules=rules,
            mode=PermissionMode(mode),
            headless=HeadlessPolicy(headless) if headless else None,
            audit=audit or AuditLog(),
        )

    def fork(self, scope: str, *, refused: RefusedCalls) -> PermissionRuntime:
        """For a subagent: the same rules, no grants, nothing pending, and the calls its
        parent's user refused (`refused`: the parent's `refused_calls()`, which comes with
        the spawn request) denied without asking."""
        return PermissionRuntime(
            rules=list(self.rules),
            mode=self.mode,
            headless=self.headless,
            audit=self.audit,
            scope=scope,
            inherited=refused,
        )

    def refused_calls(self) -> RefusedCalls:
        """What a child of this session inherits: the calls refused here and above."""
        return self.inherited | self.refusals

    def decide(self, tool: Tool, args: BaseModel, workspace: Path) -> Decision:
        subject = permission_subject(tool, args, workspace)
        decision = self._decide(tool, subject)
        self._audit(tool.name, subject, decision)
        return decision

    def answer(self, tool: Tool, args: BaseModel, workspace: Path, *, allow: bool, always: bool = False) -> Decision:
        """The user's answer to an ask; `always` grants this subject for the session."""
        subject = permission_subject(tool, args, workspace)
        reason = "approved by the user" if allow else "denied by the user"
        if allow and always and tool.name == SHELL_TOOL and subject is not None and read_line(subject).simple is None:
            # The same text with expansions or operators can run something else next time.
            reason += ' (this once: "always" covers only a single simple command)'
        elif allow and always:
            text = f"{tool.name}({subject})" if subject is not None else tool.name
            self.grants.append(Rule("allow", tool.name, subject, text, exact=True))
        # The latest answer counts for the children spawned from now on.
        self.refusals = (
            self.refusals.removing(tool.name, subject) if allow else self.refusals.adding(tool.name, subject)
        )
        decision = Decision("allow" if allow else "deny", "user", reason)
        self._audit(tool.name, subject, decision)
        return decision

    def record(self, tool: Tool, args: BaseModel, workspace: Path, decision: Decision) -> Decision:
        """Audit a decision made outside the rules (a subagent with no one to ask)."""
        self._audit(tool.name, permission_subject(tool, args, workspace), decision)
        return decision

    def _decide(self, tool: Tool, subject: str | None) -> Decision:
        guarded = _guarded_part(tool, subject)
        for effect in ("deny", "ask", "allow"):
            if effect == "ask" and (answered := self._answered(tool, subject)) is not None:
                return answered
            for rule in self.rules:
                if rule.effect != effect or not rule.matches(tool.name, subject):
                    continue
                if effect == "allow" and guarded is not None and not _names_literally(rule, subject, guarded):
                    continue  # a broad allow rule does not reach into .git/ or .workingset/
                return self._headless_ask(
                    tool, subject, Decision(effect, "rule", _rule_reason(rule, tool, subject), rule.text)
                )
        if self.headless is HeadlessPolicy.ALLOW_LIST:
            return Decision("deny", "headless", f"{tool.name} is not on the allow-list of this headless run")
        decision = self._mode_default(tool)
        if guarded is not None and decision.effect != "deny":
            decision = Decision("ask", "mode", _protected_reason(tool, subject, guarded))
        return self._headless_ask(tool, subject, decision)

    def _answered(self, tool: Tool, subject: str | None) -> Decision | None:
        """The user's own answers, which outrank ask and allow rules: a call refused in a
        parent session, then an "always" grant for this exact call."""
        if self.inherited.has(tool.name, subject):
            return Decision(
                "deny", "user", "the user denied this same call in a parent session; a subagent does not ask again"
            )
        for grant in self.grants:
            if grant.matches(tool.name, subject):
                return Decision("allow", "grant", f"granted this session: {grant.text}", grant.text)
        return None

    def _headless_ask(self, tool: Tool, subject: str | None, decision: Decision) -> Decision:
        """A headless run has no one to ask: an ask (by rule or by mode) becomes a deny."""
        if decision.effect != "ask" or self.headless is None:
            return decision
        hint = _rule_hint(tool, subject)
        how = (
            f"allow it with a rule such as {hint!r}"
            if hint
            else "a command with shell operators, expansions, redirections or quoting cannot be "
            "allowed by a rule; run simple commands one at a time, or allow Bash"
        )
        return Decision(
            "deny",
            "headless",
            f"{tool.name} needs approval and nobody can answer in a headless run; {how}",
            decision.rule,
        )

    def _mode_default(self, tool: Tool) -> Decision:
        if tool.is_read_only:
            return Decision("allow", "mode", "read-only tool")
        if self.mode is PermissionMode.BYPASS:
            return Decision("allow", "mode", "bypass mode")
        if self.mode is PermissionMode.PLAN:
            return Decision("deny", "mode", "plan mode allows read-only tools only")
        if self.mode is PermissionMode.ACCEPT_EDITS and tool.execution_domain is ExecutionDomain.LOCAL:
            return Decision("allow", "mode", "accept-edits mode allows file edits")
        return Decision("ask", "mode", f"{tool.name} changes state; {self.mode.value} mode asks first")

    def _audit(self, tool: str, subject: str | None, decision: Decision) -> None:
        self.audit.record(
            {
                "scope": self.scope,
                "tool": tool,
                "subject": subject,
                "effect": decision.effect,
                "source": decision.source,
                "rule": decision.rule,
                "reason": decision.reason,
            }
        )


def _guarded_part(tool: Tool, subject: str | None) -> int | None:
    """For a file tool that changes something: where its path enters a protected directory."""
    if subject is None or tool.is_read_only or tool.execution_domain is not ExecutionDomain.LOCAL:
        return None
    return protected_part(subject)


def _names_literally(rule: Rule, subject: str | None, part: int) -> bool:
    """Whether an allow rule's pattern spells out the path up to and including the
    protected directory, with no wildcard on the way (`.git/hooks/*` does, `**` does not)."""
    if rule.pattern is None or subject is None:
        return False
    wanted = PurePosixPath(subject).parts[: part + 1]
    for pattern in rule.paths if rule.paths is not None else (rule.pattern,):
        named = PurePosixPath(pattern.lstrip("/")).parts[: part + 1]
        if named == wanted and not any(ch in "".join(named) for ch in "*?["):
            return True
    return False


def _protected_reason(tool: Tool, subject: str | None, part: int) -> str:
    parts = PurePosixPath(subject or "").parts
    entry = "/".join(parts[: part + 1])
    where = f"is {entry}" if part == len(parts) - 1 else f"is inside {entry}/"
    return (
        f"{subject} {where}, which the host acts on; changing it needs your answer "
        f"or a rule that names it, such as {tool.name}({subject})"
    )


def _rule_reason(rule: Rule, tool: Tool, subject: str | None) -> str:
    reason = f"rule {rule.text}"
    if tool.name == SHELL_TOOL and subject is not None and rule.command is not None and rule.effect != "allow":
        line = read_line(subject)
        if line.unknowable and not rule.command.names(line, literally=True):
            reason += f" (the command is treated as matching because {line.unknowable})"
    return reason


def _rule_hint(tool: Tool, subject: str | None) -> str | None:
    """A rule the user could add to allow this call, or None when no rule can."""
    if not subject:
        return tool.name
    if tool.name != SHELL_TOOL:
        return f"{tool.name}({subject})"
    words = read_line(subject).simple
    if words is None or not all(set(w) <= SAFE_CHARS for w in words):
        return None
    return f"{tool.name}({' '.join(words)})"
