"""A workspace's own `.workingset/config.toml`: authority when trusted, data when not.

The agent can write the workspace, so an untrusted workspace's config may set only what
cannot reach the host, spend more, or loosen a rule:

- tuning of how the working set is compacted: `compact.preserve_recent_messages`,
  `compact.preserve_recent_tool_uses`, `compact.manual_keep_messages`,
  `compact.min_gain_tokens`, `compact.summary_reserve_tokens`,
  `summarizer.window_tokens`, `summarizer.extractive_max_chars` (any value the
  setting accepts);
- limits, only lowered (a value above what the user's own settings give, or one the
  user left unset, is ignored): `agent.max_turns`, `agent.max_output_tokens`,
  `agent.max_goal_auto_turns`, `compact.ratio`, `compact.context_window`, every
  `tools.*` cap, `summarizer.max_output_tokens`, `summarizer.timeout_s`;
- restrictive permission rules, added to the user's (never replacing them):
  `permissions.deny`, `permissions.ask`.

Everything else it sets — the sandbox, hooks, MCP servers, plugins, allow rules and the
permission mode, the model and summarizer specs, the compaction strategy (an import
path), `home`, `trace_dir`, `bundle`, the runtime — is ignored and named in one notice.
Its `.workingset/plugins` are not scanned. The file is read through a handle on
`.workingset/` (a link never leads out of it); a file that does not parse is ignored too.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.base import ToolLimits
from tools.files import is_present, list_beneath, real_dir

__all__ = [
    "LIMIT_KEYS",
    "RULE_KEYS",
    "TUNING_KEYS",
    "ScreenedConfig",
    "WorkspaceConfig",
    "screen",
    "untrusted_notice",
    "workspace_plugins",
]

CONFIG_MAX_BYTES = 1_000_000
PLUGIN_MANIFEST = "workingset-plugin.toml"

TUNING_KEYS = frozenset(
    {
        "compact.preserve_recent_messages",
        "compact.preserve_recent_tool_uses",
        "compact.manual_keep_messages",
        "compact.min_gain_tokens",
        "compact.summary_reserve_tokens",
        "summarizer.window_tokens",
        "summarizer.extractive_max_chars",
    }
)
LIMIT_KEYS = frozenset(
    {
        "agent.max_turns",
        "agent.max_output_tokens",
        "agent.max_goal_auto_turns",
        "compact.ratio",
        "compact.context_window",
        *(f"tools.{name}" for name in ToolLimits.model_fields),
        "summarizer.max_output_tokens",
        "summarizer.timeout_s",
    }
)
RULE_KEYS = frozenset({"permissions.deny", "permissions.ask"})


@dataclass(frozen=True)
class WorkspaceConfig:
    """What `<workspace>/.workingset/config.toml` holds ({} when absent)."""

    path: Path
    data: dict[str, Any]
    problem: str | None = None  # why it could not be used, when it exists but does not parse

    @classmethod
    def read(cls, workspace: Path) -> WorkspaceConfig:
        path = workspace / ".workingset" / "config.toml"
        directory = real_dir(workspace / ".workingset")
        text = None
        if directory is not None:
            with directory:
                text = directory.read_text_if_regular("config.toml", CONFIG_MAX_BYTES)
        if text is None:
            refused = is_present(path) and f"{path} cannot be read (a link leading outside .workingset/, or not a file)"
            return cls(path, {}, problem=refused or None)
        try:
            return cls(path, tomllib.loads(text))
        except tomllib.TOMLDecodeError as exc:
            return cls(path, {}, problem=f"{path} cannot be read ({exc})")


@dataclass
class ScreenedConfig:
    """An untrusted workspace config, sorted by what may apply."""

    tuning: dict[str, Any] = field(default_factory=dict)  # nested, ready for the settings
    limits: dict[str, Any] = field(default_factory=dict)  # dotted key -> value, applied if lower
    rules: dict[str, list[str]] = field(default_factory=dict)  # "deny"/"ask" -> rules to add
    ignored: list[str] = field(default_factory=list)  # dotted keys, in file order


def _flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            items.extend(_flatten(value, dotted + "."))
        else:
            items.append((dotted, value))
    return items


def screen(data: dict[str, Any]) -> ScreenedConfig:
    """Sort an untrusted config's keys into tuning, limits, rules and ignored."""
    out = ScreenedConfig()
    for key, value in _flatten(data):
        if key in TUNING_KEYS:
            section, name = key.split(".")
            out.tuning.setdefault(section, {})[name] = value
        elif key in LIMIT_KEYS:
            out.limits[key] = value
        elif key in RULE_KEYS and isinstance(value, list) and all(isinstance(v, str) for v in value):
            out.rules[key.split(".")[1]] = value
        else:
            out.ignored.append(key)
    return out


def workspace_plugins(workspace: Path) -> list[str]:
    """Names of the plugin directories under `.workingset/plugins` (not read, not imported)."""
    names = list_beneath(workspace, ".workingset/plugins") or []
    if PLUGIN_MANIFEST in names:  # the directory is itself one plugin
        return ["plugins"]
    return [n for n in names if PLUGIN_MANIFEST in (list_beneath(workspace, f".workingset/plugins/{n}") or [])]


def untrusted_notice(
    workspace: Path,
    ignored: list[str],
    plugins: list[str],
    problem: str | None = None,
    unknown: list[str] | None = None,
    claude: list[str] | None = None,
) -> str | None:
    """The one notice for an untrusted workspace, or None when it asked for nothing.
    `unknown` are its keys that are no setting at all (typos), which trust would not apply;
    `claude` what its Claude Code files ask for beyond deny and ask rules (agents.settings._claude)."""
    typos = f"unknown settings in .workingset/config.toml were ignored: {', '.join(unknown)}" if unknown else None
    if not ignored and not plugins and problem is None and not claude:
        return f"workspace {workspace}: {typos}" if typos else None
    parts = []
    if ignored:
        parts.append(f"settings in .workingset/config.toml were ignored: {', '.join(ignored)}")
    if plugins:
        parts.append(f"plugins in .workingset/plugins were not loaded: {', '.join(plugins)}")
    if problem is not None:
        parts.append(f"its config was ignored: {problem}")
    if claude:
        parts.append(f"Claude Code settings were not applied: {'; '.join(claude)} (their deny and ask rules apply)")
    notice = (
        f"workspace {workspace} is not trusted, so its {'; '.join(parts)}. To apply them, trust it: "
        f"`workingset trust {workspace}` (remembered), or --trust-workspace for this run"
    )
    return f"{notice}. Also, {typos}" if typos else notice
