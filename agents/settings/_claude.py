"""Claude Code's project files, read for what Workingset can honour, and nothing taken silently.

    .claude/settings.json        permissions.allow / deny / ask / defaultMode,
    .claude/settings.local.json  enabledMcpjsonServers, disabledMcpjsonServers
    .mcp.json                    mcpServers (agents.settings._claude_mcp)

What applies depends on trust, as for `.workingset/config.toml` (agents.settings._config):

- trusted: every rule (added to Workingset's own: rule lists join across files, as in
  Claude Code), `defaultMode` where Workingset has the same mode (`default`, `plan`; the
  workspace's `.workingset/config.toml`, the environment and flags still win over it),
  and the `.mcp.json` servers (`disabledMcpjsonServers` left out; with
  `enabledMcpjsonServers`, only those). A rule or file Workingset cannot read as written
  is an error naming the file, the rule and what to write.
- untrusted: only the deny and ask rules, which can only restrict; the rest is withheld
  and named in the workspace's one notice. A rule it cannot read is named, not fatal.

In both, a rule on a tool Workingset does not have (`WebFetch(domain:…)`, a typo) and a
key Workingset does not read (`hooks`, `env`, `additionalDirectories`) are named in a
notice: the file is Claude Code's first, so they do not stop the run. Claude Code's
shorthand `Bash(npm run *)` (one trailing ` *`) is Workingset's `Bash(npm run:*)`, and
`Bash(*)` is `Bash`. The files are read through handles on `.claude/` and the
workspace: a link leading out of them yields nothing and a notice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.errors import ConfigError
from agents.permissions import Effect, missing_tool, parse_rule
from agents.settings._claude_mcp import MCP_FILE, read_mcp_file
from tools.files import is_present, real_dir
from tools.mcp import McpServerConfig

__all__ = ["CLAUDE_SETTINGS_FILES", "ClaudeImport", "read_claude_files"]

CLAUDE_SETTINGS_FILES = ("settings.json", "settings.local.json")  # in .claude/; the local one wins
SETTINGS_MAX_BYTES = 1_000_000
EXACT_MODES = {"default": "default", "plan": "plan"}  # Claude Code defaultMode -> Workingset permissions.mode
_MODE_GAPS = {
    "acceptEdits": "Workingset's accept-edits still asks before every Bash command, which Claude Code's "
    "acceptEdits does not for file commands",
    "bypassPermissions": "Workingset's bypass guards .git/, .workingset/, .claude/ and .mcp.json, not the "
    "directories Claude Code's guards",
    "dontAsk": 'Workingset\'s nearest, permissions.headless = "allow-list", also denies read-only tools no rule allows',
    "auto": "Workingset has no mode that approves calls by a classifier",
}
_READ_KEYS = {"permissions", "enabledMcpjsonServers", "disabledMcpjsonServers", "enableAllProjectMcpServers", "$schema"}
_PERMISSION_KEYS = {"allow", "deny", "ask", "defaultMode"}


@dataclass
class ClaudeImport:
    """What a workspace's Claude Code files give, sorted by what applies."""

    rules: dict[Effect, list[str]] = field(default_factory=lambda: {"allow": [], "deny": [], "ask": []})
    mode: str | None = None  # a Workingset permission mode, trusted only
    servers: list[McpServerConfig] = field(default_factory=list)  # trusted only
    notes: dict[str, list[str]] = field(default_factory=dict)  # file -> what was not applied and why
    withheld: list[str] = field(default_factory=list)  # what trusting the workspace would apply

    def note(self, where: str, text: str) -> None:
        self.notes.setdefault(where, []).append(text)

    def notes_text(self) -> str | None:
        """What was not applied, one clause per file, or None."""
        return "; ".join(f"{where}: {', and '.join(texts)}" for where, texts in self.notes.items()) or None


def read_claude_files(workspace: Path, *, trusted: bool, home: Path | None = None) -> ClaudeImport:
    """The Claude Code files of `workspace`; ConfigError (trusted only) for one that cannot
    be applied as written."""
    out = ClaudeImport()
    enabled: list[str] | None = None
    disabled: list[str] = []
    for name in CLAUDE_SETTINGS_FILES:
        where = f".claude/{name}"
        data = _read_json(workspace, name, where, trusted, out)
        if data is None:
            continue
        permissions = data.get("permissions", {})
        if not isinstance(permissions, dict):
            _bad(out, where, "its permissions are not an object", trusted)
            continue
        _read_rules(out, permissions, where, workspace, home, trusted)
        _read_mode(out, permissions.get("defaultMode"), where, trusted)
        unread = [k for k in data if k not in _READ_KEYS] + [
            f"permissions.{k}" for k in permissions if k not in _PERMISSION_KEYS
        ]
        if unread:
            out.note(where, f"{', '.join(unread)} (Workingset does not read {'it' if len(unread) == 1 else 'them'})")
        if trusted:
            enabled = _names(data, "enabledMcpjsonServers", where) or enabled
            disabled += _names(data, "disabledMcpjsonServers", where) or []
            if data.get("enableAllProjectMcpServers") is False:
                out.note(
                    where,
                    "enableAllProjectMcpServers = false (a trusted workspace's .mcp.json servers all "
                    "start, except those disabledMcpjsonServers names)",
                )
    _read_servers(out, workspace, trusted, enabled, disabled)
    return out


def _read_json(workspace: Path, name: str, where: str, trusted: bool, out: ClaudeImport) -> dict[str, Any] | None:
    directory = real_dir(workspace / ".claude")
    text = None
    if directory is not None:
        with directory:
            text = directory.read_text_if_regular(name, SETTINGS_MAX_BYTES)
    if text is None:
        if is_present(workspace / ".claude" / name):
            _bad(out, where, "it is a link leading outside .claude/ or the workspace, or not a regular file", trusted)
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        _bad(out, where, f"it is not valid JSON ({exc})", trusted)
        return None
    if not isinstance(data, dict):
        _bad(out, where, "it is not a JSON object", trusted)
        return None
    return data


def _bad(out: ClaudeImport, where: str, why: str, trusted: bool) -> None:
    if trusted:
        raise ConfigError(f"the workspace's {where} cannot be used: {why}; fix or remove it")
    out.note(where, why)


def _read_rules(
    out: ClaudeImport, permissions: dict[str, Any], where: str, workspace: Path, home: Path | None, trusted: bool
) -> None:
    # The tools themselves load here, not with the settings: the command line starts without them.
    from agents.opening import BUILTIN_TOOL_NAMES

    missing: dict[str, list[str]] = {}
    for effect in ("allow", "deny", "ask"):
        texts = permissions.get(effect, [])
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            _bad(out, where, f"its permissions.{effect} is not a list of rules", trusted)
            continue
        if effect == "allow" and not trusted:
            if texts:
                out.withheld.append(f"{where} (allow rules: {', '.join(texts)})")
            continue
        for raw in texts:
            text = claude_rule(raw)
            try:
                tool = parse_rule(text, effect, workspace=workspace, home=home).tool
            except ConfigError as exc:
                tool = text.split("(", 1)[0].strip()
                if missing_tool(tool, BUILTIN_TOOL_NAMES) is None:
                    if trusted:
                        raise ConfigError(f"the workspace's {where}: {exc}") from None
                    out.note(where, str(exc))
                    continue
            lacking = missing_tool(tool, BUILTIN_TOOL_NAMES)
            if lacking is not None:
                missing.setdefault(lacking.why, []).append(raw)
                continue
            out.rules[effect].append(text)
    for why, texts in missing.items():
        out.note(where, f"{', '.join(texts)} ({why})")


def claude_rule(text: str) -> str:
    """A Claude Code rule in Workingset's syntax, where the two differ only in spelling:
    `Bash(*)` is `Bash`, and a single trailing ` *` (`Bash(npm run *)`) is `:*`."""
    stripped = text.strip()
    if not (stripped.startswith("Bash(") and stripped.endswith(")")):
        return stripped
    pattern = stripped[5:-1].strip()
    if pattern == "*":
        return "Bash"
    if pattern.endswith(" *") and pattern.count("*") == 1:
        return f"Bash({pattern[:-2].rstrip()}:*)"
    return stripped


def _read_mode(out: ClaudeImport, mode: object, where: str, trusted: bool) -> None:
    if mode is None:
        return
    if not trusted:
        out.withheld.append(f"{where} (defaultMode {mode!r})")
    elif isinstance(mode, str) and mode in EXACT_MODES:
        out.mode = EXACT_MODES[mode]  # settings.local.json, read last, wins
    else:
        gap = _MODE_GAPS.get(str(mode), "Workingset has no such mode")
        out.note(
            where,
            f"defaultMode {mode!r} ({gap}; choose a Workingset mode with permissions.mode in .workingset/config.toml)",
        )


def _names(data: dict[str, Any], key: str, where: str) -> list[str] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"the workspace's {where} cannot be used: {key} is not a list of server names; fix it")
    return value


def _read_servers(
    out: ClaudeImport, workspace: Path, trusted: bool, enabled: list[str] | None, disabled: list[str]
) -> None:
    found = read_mcp_file(workspace)
    if found is None:
        return
    if found.problem is not None:
        _bad(out, MCP_FILE, found.problem, trusted)
        return
    for skipped in found.skipped:
        out.note(MCP_FILE, f"server {skipped}")
    if not trusted:
        if found.servers:
            out.withheld.append(f"{MCP_FILE} (MCP servers: {', '.join(s.name for s in found.servers)})")
        return
    for server in found.servers:
        if server.name in disabled or (enabled is not None and server.name not in enabled):
            list_name = "disabledMcpjsonServers" if server.name in disabled else "not in enabledMcpjsonServers"
            out.note(MCP_FILE, f"server {server.name} ({list_name})")
        else:
            out.servers.append(server)
