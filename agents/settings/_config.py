"""Settings: one pydantic model per component, loaded with pydantic-settings.

Precedence, highest first: command-line flags, `WORKINGSET_*` environment variables
(nested with `__`, e.g. `WORKINGSET_TOOLS__BASH_TIMEOUT_S=30`), the project's
`.workingset/config.toml`, the user's `~/.workingset/config.toml`, the defaults here.

The project's file is written where the agent writes, so it applies in full only to a
workspace the user trusts (agents.settings._trust: the trust list, or `--trust-workspace`); for
any other workspace only inert settings apply and the rest is named in one notice
(agents.settings._workspace lists them). A workspace's Claude Code files (`.claude/settings.json`,
`.claude/settings.local.json`, `.mcp.json`; agents.settings._claude) follow the same rule:
trusted, their rules join Workingset's, their `defaultMode` sits between the workspace's
`.workingset/config.toml` and the user's file, and their MCP servers join `mcp_servers`;
untrusted, only their deny and ask rules apply.

A key that is no setting is refused with the nearest one (agents.settings._keys): in the
user's file or a trusted workspace's, and as a `WORKINGSET_*` variable, except the few
that are not settings by design (settings_keys.NON_SETTING_VARIABLES). An untrusted
workspace's typos are named in its notice instead. Every section forbids extras, so a
bad key given in code (flags, overrides) is refused too.

The limits are defined once, where they are enforced: `[tools]` is tools.base.ToolLimits,
`[sandbox]` extends tools.sandbox's SandboxLimits and SandboxOptions.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from agents.errors import ConfigError
from agents.providers import ModelEntry
from agents.settings._claude import ClaudeImport, read_claude_files
from agents.settings._keys import UnknownKey, file_keys_problem, unknown_keys, unknown_variables
from agents.settings._trust import TrustList
from agents.settings._workspace import WorkspaceConfig, screen, untrusted_notice, workspace_plugins
from agents.sources import HookSpec
from tools.base import ToolLimits
from tools.mcp import McpServerConfig
from tools.sandbox import SandboxLimits, SandboxOptions

__all__ = [
    "AgentSettings",
    "AnthropicSettings",
    "ClusterSettings",
    "CompactSettings",
    "LoadedSettings",
    "OpenAISettings",
    "PermissionSettings",
    "PluginSettings",
    "ProviderSettings",
    "SubagentSettings",
    "SandboxSettings",
    "SessionSettings",
    "SnapshotSettings",
    "SummarizerSettings",
    "ToolSettings",
    "WorkingsetSettings",
    "load_settings",
    "load_workspace_settings",
    "config_files",
]

ENV_PREFIX = "WORKINGSET_"
# The least room a summary is given when recent messages are fitted after a refusal.
MIN_SUMMARY_TOKENS = 100


class Section(BaseModel):
    """A section of the settings: a key it does not define is an error, never ignored."""

    model_config = ConfigDict(extra="forbid")


# The [tools] section is the tools' own limits, defined once in tools/ (which cannot import
# agents/) and carried to every tool call in its ToolContext.
ToolSettings = ToolLimits


class CompactSettings(Section):
    """When and how the working set is compacted before a model call."""

    strategy: str = Field(
        "current", description="Compaction strategy spec: name[:key=value,...] or pkg.module:Factory."
    )
    ratio: float = Field(0.8, gt=0, le=1, description="Budget = (context window - max output) x ratio.")
    context_window: int | None = Field(
        None,
        ge=1_000,
        description="Override the model's context window (tokens); unset: the model table's, "
        "required for a model it does not know.",
    )
    preserve_recent_messages: int = Field(
        12, ge=1, description="Last N messages never cleared; auto summary keeps them."
    )
    preserve_recent_tool_uses: int = Field(3, ge=0, description="Last K completed tool interactions never cleared.")
    manual_keep_messages: int = Field(2, ge=1, description="Messages /compact keeps verbatim.")
    min_gain_tokens: int = Field(
        1_024, ge=0, description="Skip clearing that would free fewer tokens than this (cache rewrite cost)."
    )
    summary_reserve_tokens: int = Field(
        4_000,
        ge=MIN_SUMMARY_TOKENS,
        description="Room kept for the summary when fitting recent messages after a refusal.",
    )


class SummarizerSettings(Section):
    """Which summarizer writes handoff summaries, and its limits."""

    spec: str = Field("extractive", description="extractive, or a model spec (anthropic:..., scripted:...).")
    window_tokens: int = Field(100_000, ge=1_000, description="Older history above this is summarized in chunks.")
    max_output_tokens: int = Field(4_000, ge=100, description="max_tokens of a summarizer model call.")
    timeout_s: float = Field(120.0, gt=0, description="A summarizer call slower than this fails.")
    extractive_max_chars: int = Field(6_000, ge=500, description="Cap on an extractive summary.")


class AgentSettings(Section):
    """How long one run may go and how much each reply may say."""

    max_turns: int = Field(50, ge=1, description="Model calls allowed in one outer turn.")
    max_output_tokens: int = Field(8192, ge=1, description="max_tokens sent with each model call.")
    max_goal_auto_turns: int = Field(10, ge=0, description="Continuations the goal judge may start on its own.")
    max_truncated_replies: int = Field(
        2,
        ge=0,
        description="Replies cut off at max_tokens that are continued in a row; one more ends the turn 'truncated'.",
    )
    stable_prefix: bool = Field(
        True,
        description="Mode and goal changes reach the model as a short state block at the head of the next user "
        "message; the system prompt and tool list stay as built, so the cached prefix survives them (off: plan "
        "mode hides tools from the request and the goal sits in the system prompt).",
    )


class AnthropicSettings(Section):
    """The `anthropic:` provider."""

    base_url: str | None = Field(None, description="API base URL (default: ANTHROPIC_BASE_URL, then the SDK's).")
    thinking: Literal["off", "enabled", "adaptive"] = Field(
        "off",
        description="Extended thinking: enabled (with a budget; Claude 4.5 and earlier) or adaptive (newer models).",
    )
    thinking_budget_tokens: int = Field(
        8_000,
        ge=1_024,
        description="Reasoning tokens a reply may use when thinking is enabled (below max output tokens).",
    )
    interleaved_thinking: bool = Field(
        True, description="With thinking enabled and tools, let the model think between tool calls (beta header)."
    )
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = Field(
        None, description="output_config.effort, for models that take it (adaptive thinking)."
    )
    count_tokens: bool = Field(
        True, description="Ask the count_tokens endpoint before compacting and before a retry after a refusal."
    )


class OpenAISettings(Section):
    """The `openai:` provider: OpenAI or any OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama)."""

    base_url: str | None = Field(None, description="API base URL (default: OPENAI_BASE_URL, then api.openai.com/v1).")
    max_tokens_param: Literal["auto", "max_completion_tokens", "max_tokens"] = Field(
        "auto",
        description="How the output limit is sent: auto = max_completion_tokens for OpenAI, max_tokens elsewhere.",
    )
    stream_usage: bool = Field(
        True, description="Send stream_options.include_usage (off for a server that refuses the option)."
    )
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = Field(
        None, description="reasoning_effort for reasoning models (unset: the server's default)."
    )


class ProviderSettings(Section):
    """How model providers are called: timeouts, retries, and each provider's options."""

    connect_timeout_s: float = Field(10.0, gt=0, description="Opening the connection to the API, seconds.")
    idle_timeout_s: float = Field(
        120.0, gt=0, description="Longest silence between two events of a streamed reply; longer is a stalled stream."
    )
    total_timeout_s: float = Field(1_800.0, gt=0, description="One model call, every retry included, seconds.")
    max_retries: int = Field(4, ge=0, description="HTTP retries by the SDK: 408/409/429/5xx and connection errors.")
    stream_retries: int = Field(2, ge=0, description="Whole-call retries after a stream stalled or broke mid-reply.")
    anthropic: AnthropicSettings = Field(default_factory=AnthropicSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)


class SubagentSettings(Section):
    """Limits on subagents (the Agent tool)."""

    max_depth: int = Field(3, ge=0, description="Deepest allowed subagent (root is 0); deeper calls fail.")
    max_turns: int = Field(30, ge=1, description="Model calls one subagent may make.")
    max_tokens: int | None = Field(None, ge=1, description="Tokens (in + out) one subagent may use.")
    max_cost_usd: float | None = Field(None, gt=0, description="List-price cost one subagent may run up.")
    tree_max_tokens: int | None = Field(None, ge=1, description="Tokens the whole tree (root + subagents) may use.")
    tree_max_cost_usd: float | None = Field(None, gt=0, description="Cost the whole tree may run up.")


class PermissionSettings(Section):
    """Rules and mode of the PermissionRuntime."""

    mode: Literal["default", "accept-edits", "bypass", "plan"] = Field(
        "default", description="default asks before mutating; accept-edits allows file edits; bypass allows all."
    )
    allow: list[str] = Field(default_factory=list, description='Rules such as "Bash(git status:*)", "Edit(src/**)".')
    deny: list[str] = Field(default_factory=list, description="Rules that always deny; checked first.")
    ask: list[str] = Field(default_factory=list, description="Rules that always ask.")
    headless: Literal["deny-asks", "allow-list"] | None = Field(
        None,
        description="No one to ask: deny-asks turns asks into denials; allow-list denies all not allowed. "
        "Unset: deny-asks when stdin is not a terminal.",
    )


class SnapshotSettings(Section):
    """How much history of each session's snapshots is kept."""

    max_history: int = Field(50, ge=0, description="Older versions kept per session.")
    max_age_days: float = Field(30.0, gt=0, description="Versions older than this are dropped.")


class SandboxSettings(SandboxOptions, SandboxLimits):
    """The bubblewrap sandbox around Bash (and evaluation's setup, git and grading
    commands): whether it is on, and the runner's own limits and options (tools.sandbox.config)."""

    enabled: bool = Field(True, description="Run Bash inside bubblewrap; off only by explicit choice (--no-sandbox).")


class ClusterSettings(Section):
    """The Ray runtime (cluster/)."""

    address: str | None = Field(None, description="Join this Ray cluster (also RAY_ADDRESS); unset: embedded.")
    dashboard: bool = Field(False, description="Start the Ray dashboard with the embedded cluster.")
    start_timeout_s: float = Field(
        60.0,
        gt=0,
        description="How long the embedded cluster's GCS may take to come up (Ray gives its raylet a "
        "fixed 30 s more); a start that fails is tried once more.",
    )
    compactor_pool_size: int = Field(2, ge=1, description="Summarizer actors shared by all sessions.")
    compactor_max_queue: int = Field(16, ge=1, description="Summaries one summarizer actor accepts at once.")
    tool_task_cpus: float = Field(
        0.5,
        gt=0,
        description="CPU each tool call holds: a Ray task's reservation; Bash run in the session's "
        "process shares the node's CPUs divided by this many slots.",
    )
    eval_task_memory_mb: int = Field(
        256, ge=1, description="Memory an eval task holds on its node while it runs (Ray places tasks where it fits)."
    )
    eval_task_cpus: float = Field(
        0.0, ge=0, description="CPU an eval task holds on its node while it runs, besides its tool calls and grade."
    )
    eval_grade_cpus: float = Field(1.0, gt=0, description="CPU reserved by each eval task's grade.")
    subagent_pool_idle: int = Field(8, ge=0, description="Idle subagent actors kept for reuse.")
    subagents_per_actor: int = Field(
        8, ge=1, description="Subagents one subagent actor runs at once (they wait on models, as sessions do)."
    )
    actor_restart_timeout_s: float = Field(
        120.0, gt=0, description="How long opening or resuming a session waits for its restarting session actor."
    )
    snapshot_actor: Literal["auto", "always", "never"] = Field(
        "auto", description="Route snapshots through one store actor: auto = when the cluster has several nodes."
    )
    heartbeat_s: float = Field(5.0, gt=0, description="How often the driver pings each session and task actor.")
    heartbeat_timeout_s: float = Field(
        60.0,
        gt=0,
        description="An actor alive to Ray that answers no ping for this long has stopped (SIGSTOP, a "
        "deadlock, a swapped-out node): it is killed and replaced.",
    )


class PluginSettings(Section):
    """Plugins: where to look and which ones join the session."""

    dirs: list[Path] = Field(
        default_factory=list,
        description="Extra plugin directories (besides ~/.workingset/plugins, and .workingset/plugins of a trusted workspace).",
    )
    enabled: list[str] = Field(
        default_factory=list, description="Plugins (by name) whose tools, skills, MCP servers and hooks join."
    )


class SessionSettings(BaseModel):
    """The part of the settings one Session's loop reads."""

    agent: AgentSettings = Field(default_factory=AgentSettings)
    compact: CompactSettings = Field(default_factory=CompactSettings)
    summarizer: SummarizerSettings = Field(default_factory=SummarizerSettings)
    result_max_tokens: int = Field(8_000, ge=16)
    models: dict[str, ModelEntry] = Field(default_factory=dict)


class WorkingsetSettings(BaseSettings):
    """All of Workingset's settings."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    model: str = Field(
        "anthropic:claude-sonnet-4-5", description="Model spec: anthropic:<model>, openai:<model> or scripted:<file>."
    )
    providers: ProviderSettings = Field(default_factory=ProviderSettings, description="Model providers.")
    models: dict[str, ModelEntry] = Field(
        default_factory=dict, description="Context windows and prices of models the built-in table does not know."
    )
    agent: AgentSettings = Field(default_factory=AgentSettings, description="Loop limits.")
    tools: ToolSettings = Field(default_factory=ToolSettings, description="Tool caps.")
    compact: CompactSettings = Field(default_factory=CompactSettings, description="Compaction.")
    subagents: SubagentSettings = Field(default_factory=SubagentSettings, description="Subagent limits.")
    permissions: PermissionSettings = Field(default_factory=PermissionSettings, description="Permissions.")
    judge: str | None = Field(None, description="Model spec of the goal judge (default: the main model).")
    snapshots: SnapshotSettings = Field(default_factory=SnapshotSettings, description="Snapshot history.")
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings, description="Bash sandbox.")
    cluster: ClusterSettings = Field(default_factory=ClusterSettings, description="Ray runtime.")
    runtime: Literal["ray", "local"] = Field("ray", description="Where sessions run: on Ray, or in this process.")
    hooks: list[HookSpec] = Field(default_factory=list, description="Hooks (PreToolUse, PostToolUse, ...).")
    plugins: PluginSettings = Field(default_factory=PluginSettings, description="Plugins.")
    bundle: list[str] | None = Field(
        None, description="Tool names or globs forming the effective registry (unset: all)."
    )
    mcp_servers: list[McpServerConfig] = Field(default_factory=list, description="MCP servers to connect.")
    summarizer: SummarizerSettings = Field(default_factory=SummarizerSettings, description="Summaries.")
    home: Path = Field(
        default_factory=lambda: Path.home() / ".workingset",
        description="Where Workingset keeps per-session state (artifacts, snapshots).",
    )
    trace_dir: Path | None = Field(None, description="Write every compiled working set here as JSON.")
    trusted_workspace: Path | None = Field(
        None,
        description="The workspace whose own .workingset/ (config, plugins) applies in full. Set by the loader "
        "from the trust list or --trust-workspace; never taken from a file or the environment.",
    )

    @model_validator(mode="after")
    def _thinking_fits_the_reply(self) -> WorkingsetSettings:
        anthropic = self.providers.anthropic
        if anthropic.thinking == "enabled" and anthropic.thinking_budget_tokens >= self.agent.max_output_tokens:
            raise ValueError(
                f"providers.anthropic.thinking_budget_tokens ({anthropic.thinking_budget_tokens}) must be below "
                f"agent.max_output_tokens ({self.agent.max_output_tokens})"
            )
        return self

    def session(self) -> SessionSettings:
        return SessionSettings(
            agent=self.agent,
            compact=self.compact,
            summarizer=self.summarizer,
            result_max_tokens=self.tools.result_max_tokens,
            models=self.models,
        )


def config_files(cwd: Path, home: Path | None = None) -> list[Path]:
    """The TOML files that apply to a workspace, highest precedence first."""
    home = home if home is not None else Path.home()
    return [cwd / ".workingset" / "config.toml", home / ".workingset" / "config.toml"]


def _check_toml(path: Path) -> None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {path} cannot be read ({exc}); fix or remove it") from exc
    _check_keys(data, path)


def _check_keys(data: dict[str, Any], path: Path) -> None:
    problem = file_keys_problem(WorkingsetSettings, data, path)
    if problem is not None:
        raise ConfigError(problem)


def _check_environment() -> None:
    problems = unknown_variables(WorkingsetSettings, os.environ, ENV_PREFIX)
    if problems:
        raise ConfigError("; ".join(problems))


def _describe(error: ErrorDetails) -> str:
    if not error["loc"]:  # a check across settings names them itself
        return str(error["msg"]).removeprefix("Value error, ")
    loc = ".".join(str(p) for p in error["loc"])
    env = ENV_PREFIX + "__".join(str(p).upper() for p in error["loc"])
    if error["type"] == "extra_forbidden" and all(isinstance(p, str) for p in error["loc"]):
        nested: dict[str, Any] = {}
        for part in reversed(error["loc"]):
            nested = {str(part): nested}
        nearest = next((u.nearest for u in unknown_keys(WorkingsetSettings, nested)), None)
        return f"setting '{loc}' ({env}) is unknown" + (f"; did you mean '{nearest}'?" if nearest else "")
    return f"setting '{loc}' ({env}): {error['msg']}"


def _typo(unknown: UnknownKey) -> str:
    return f"'{unknown.key}'" + (f" (did you mean '{unknown.nearest}'?)" if unknown.nearest else "")


@dataclass(frozen=True)
class LoadedSettings:
    """Settings, and what an untrusted workspace asked for of its own and did not get."""

    settings: WorkingsetSettings
    workspace: Path
    trusted: bool
    ignored: tuple[str, ...] = ()  # keys of its config.toml that did not apply
    plugins: tuple[str, ...] = ()  # its .workingset/plugins, not scanned
    problem: str | None = None  # its config.toml could not be read
    unknown: tuple[str, ...] = ()  # keys of its config.toml that are no setting, with the nearest one
    claude: ClaudeImport = field(default_factory=ClaudeImport)  # its Claude Code files

    @property
    def asks_for_more(self) -> bool:
        """Whether trusting the workspace would apply more of it (a typo it would not)."""
        return not self.trusted and bool(self.ignored or self.plugins or self.problem or self.claude.withheld)

    @property
    def notice(self) -> str | None:
        """The one notice naming what was ignored (and how to trust the workspace), and
        what of its Claude Code files Workingset did not apply, trusted or not."""
        parts = []
        if not self.trusted:
            parts.append(
                untrusted_notice(
                    self.workspace,
                    list(self.ignored),
                    list(self.plugins),
                    self.problem,
                    list(self.unknown),
                    self.claude.withheld,
                )
            )
        if (notes := self.claude.notes_text()) is not None:
            parts.append(f"workspace {self.workspace}: of its Claude Code files, not applied: {notes}")
        return " ".join(p for p in parts if p) or None


def _is_config_file(path: Path) -> bool:
    """Whether the user's config file is there; one that is something else (a directory)
    is refused, never silently skipped: the run would not be the one the user set up."""
    if path.is_file():
        return True
    if path.exists():
        raise ConfigError(
            f"config file {path} is not a file (a directory?); move it aside and put your settings "
            "in a file of that name"
        )
    return False


def load_settings(
    cwd: Path, overrides: dict[str, Any] | None = None, home: Path | None = None, *, trusted: bool | None = None
) -> WorkingsetSettings:
    """Settings for a workspace; `overrides` are the flags (nested dicts allowed)."""
    return load_workspace_settings(cwd, overrides, home, trusted=trusted).settings


def load_workspace_settings(
    cwd: Path, overrides: dict[str, Any] | None = None, home: Path | None = None, *, trusted: bool | None = None
) -> LoadedSettings:
    """Settings for a workspace, and the notice naming what an untrusted one did not get.

    `trusted`: True trusts the workspace for this load (--trust-workspace), False never
    (batch evaluation), None lets the user's trust list decide. `home` is the user's home
    directory (default: Path.home()), holding `.workingset/config.toml` and the trust list."""
    cwd = Path(cwd).resolve()
    _check_environment()
    user_files = [p for p in config_files(cwd, home)[1:] if _is_config_file(p)]
    for path in user_files:
        _check_toml(path)
    if trusted is None:
        trusted = TrustList.for_user(home).is_trusted(cwd)
    own = WorkspaceConfig.read(cwd)
    if any(own.path.resolve() == p.resolve() for p in user_files):
        own = WorkspaceConfig(own.path, {})  # the workspace is the home directory: the file is the user's
    overrides = {k: v for k, v in (overrides or {}).items() if k != "trusted_workspace"}
    claude = read_claude_files(cwd, trusted=bool(trusted), home=home)
    if trusted:
        if own.problem is not None:
            raise ConfigError(f"config file {own.problem}; fix or remove it")
        _check_keys(own.data, own.path)
        settings = _build(overrides, _under_own(own.data, claude), user_files, own.path)
        settings = _with_claude(settings, claude)
        return LoadedSettings(settings.model_copy(update={"trusted_workspace": cwd}), cwd, True, claude=claude)
    # Its typos are named as typos, not as keys trust would apply; they never stop the run.
    unknown = unknown_keys(WorkingsetSettings, own.data)
    settings, ignored = _build_untrusted(overrides, own, user_files, unknown)
    return LoadedSettings(
        _with_claude(settings, claude),
        cwd,
        False,
        tuple(ignored),
        tuple(workspace_plugins(cwd)),
        own.problem,
        tuple(_typo(u) for u in unknown),
        claude,
    )


def _under_own(data: dict[str, Any], claude: ClaudeImport) -> dict[str, Any]:
    """The workspace's settings with Claude Code's defaultMode beneath its own mode."""
    if claude.mode is None:
        return data
    permissions = data.get("permissions")
    if isinstance(permissions, dict) and "mode" in permissions:
        return data
    own = permissions if isinstance(permissions, dict) else {}
    return {**data, "permissions": {"mode": claude.mode, **own}}


def _with_claude(settings: WorkingsetSettings, claude: ClaudeImport) -> WorkingsetSettings:
    """`settings` with the Claude Code rules added to each list and its MCP servers
    after Workingset's own (a name those already use keeps theirs)."""
    p = settings.permissions
    rules: dict[str, list[str]] = {
        kind: list(dict.fromkeys([*getattr(p, kind), *added])) for kind, added in claude.rules.items() if added
    }
    taken = {server.name for server in settings.mcp_servers}
    servers = list(settings.mcp_servers)
    for server in claude.servers:
        if server.name in taken:
            claude.note(".mcp.json", f"server {server.name} (your settings have a server of that name)")
        else:
            servers.append(server)
    return settings.model_copy(update={"permissions": p.model_copy(update=rules), "mcp_servers": servers})


def _build_untrusted(
    overrides: dict[str, Any], own: WorkspaceConfig, user_files: list[Path], unknown: list[UnknownKey]
) -> tuple[WorkingsetSettings, list[str]]:
    """Only the inert part of an untrusted workspace's config: tuning, lowered limits, and
    restrictive rules added to the user's. Returns the settings and the ignored keys."""
    screened = screen(own.data)
    applied: dict[str, Any] = {section: dict(values) for section, values in screened.tuning.items()}
    typos = tuple(u.key for u in unknown)
    ignored = [k for k in screened.ignored if k not in typos and not k.startswith(tuple(t + "." for t in typos))]
    if screened.limits:
        base = _build(overrides, {}, user_files, None)
        for key, value in screened.limits.items():
            section, name = key.split(".")
            current = getattr(getattr(base, section), name)
            if current is None:
                ignored.append(f"{key} (unset in your settings)")
            elif _is_number(value) and _is_number(current) and value > current:
                ignored.append(f"{key} (above your {current})")
            else:  # lower, or not a number: validation names a wrong type
                applied.setdefault(section, {})[name] = value
    settings = _build(overrides, applied, user_files, own.path)
    if screened.rules:
        p = settings.permissions
        extra = {kind: list(dict.fromkeys([*getattr(p, kind), *rules])) for kind, rules in screened.rules.items()}
        settings = settings.model_copy(update={"permissions": p.model_copy(update=extra)})
    return settings.model_copy(update={"trusted_workspace": None}), ignored


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _build(
    overrides: dict[str, Any], workspace_data: dict[str, Any], user_files: list[Path], workspace_file: Path | None
) -> WorkingsetSettings:
    class _Loaded(WorkingsetSettings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            own = InitSettingsSource(settings_cls, init_kwargs=workspace_data)
            tomls = [TomlConfigSettingsSource(settings_cls, toml_file=p) for p in user_files]
            return (init_settings, env_settings, own, *tomls)

    try:
        return _Loaded(**overrides)
    except ValidationError as exc:
        problems = "; ".join(_describe(e) for e in exc.errors())
        files = ([workspace_file] if workspace_data and workspace_file else []) + user_files
        where = ", ".join(str(p) for p in files) or "no config files"
        raise ConfigError(f"invalid settings: {problems} (sources: flags, environment, {where})") from exc
