"""A root Session from settings: what the environment provides, read once per tree.

`build_session` reads the workspace and the user's setup (plugins, skills, memory,
project instructions, hooks, permission rules, the sandbox) into a SessionBlueprint
and assembles the root from it (`agents.opening._blueprint.assemble`, the composition root
its subagents are assembled by too). The same function builds a session in one
process (`--local`, tests) and inside a Ray actor; `RuntimePorts` swaps the port
implementations that differ there (tool executor, summarizer, snapshot store,
subagent spawner) without touching the loop.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from agents.compaction import load_summarizer
from agents.errors import ConfigError
from agents.events import EventSink, Notice, discard_events
from agents.modes import Mode
from agents.opening._blueprint import RootSpec, SessionBlueprint, SpawnerFactory, assemble
from agents.opening._builtin_tools import BUILTIN_TOOL_NAMES
from agents.permissions import AuditLog, PermissionRuntime, missing_tool
from agents.ports import ClosableClient, ModelClient, SnapshotStore, Summarizer, ToolExecutor
from agents.providers import load_model_client, model_info
from agents.session import Approver, Session, new_session_id
from agents.settings import WorkingsetSettings, output_directory
from agents.snapshots import DiskSnapshotStore
from agents.sources import (
    HookRunner,
    LoadedPlugins,
    LoadSkillTool,
    MemoryStore,
    Section,
    SystemPrompt,
    apply_bundle,
    base_section,
    discover_plugins,
    discover_skills,
    environment_section,
    load_enabled,
    memory_section,
    memory_tools,
    project_instructions_section,
    read_project_instructions,
    skill_catalog_section,
    tool_catalog_section,
)
from agents.subagents import AgentTool, Budget, in_process_spawners
from agents.tokens import CalibratedCounter
from agents.trace import TraceWriter
from tools.artifacts import ArtifactStore
from tools.base import CommandRunner, PlainCommandRunner, Tool, ToolContext
from tools.executor import LocalToolExecutor
from tools.mcp import McpManager, McpServerConfig
from tools.recall import RecallTool
from tools.registry import ToolRegistry, default_workspace_tools
from tools.sandbox import BubblewrapRunner

__all__ = [
    "RuntimePorts",
    "build_session",
    "load_plugins",
    "open_session",
    "command_runner",
    "denied_path_globs",
    "permissions_from",
    "unmatched_rules",
    "resolve_workspace",
    "session_dir",
    "snapshot_store",
]


@dataclass
class RuntimePorts:
    """Port implementations that replace the in-process defaults (None keeps them)."""

    executor: ToolExecutor | None = None
    summarizer: Summarizer | None = None
    judge: ModelClient | None = None
    snapshots: SnapshotStore | None = None
    spawner_factory: SpawnerFactory | None = None  # None: children run in this process


def _check_cost_budgets(settings: WorkingsetSettings, model: ModelClient) -> None:
    """A cost budget needs prices: refuse at start what could not be measured."""
    limits = settings.subagents
    if limits.max_cost_usd is None and limits.tree_max_cost_usd is None:
        return
    if model_info(model, settings.models).prices is None:
        raise ConfigError(
            f"a cost budget is set but the price of {model.name} is unknown; give its prices in the "
            "`models` setting (input_usd_per_mtok, output_usd_per_mtok) or use a token budget"
        )


def resolve_workspace(cwd: str | Path) -> Path:
    path = Path(cwd).expanduser()
    if not path.is_dir():
        raise ConfigError(f"--cwd {cwd} is not an existing directory; create it or pass another one")
    return path.resolve()


def session_dir(settings: WorkingsetSettings, session_id: str) -> Path:
    return settings.home / "sessions" / session_id


_STORES: weakref.WeakValueDictionary[tuple, DiskSnapshotStore] = weakref.WeakValueDictionary()
_STORES_LOCK = threading.Lock()


def snapshot_store(settings: WorkingsetSettings) -> DiskSnapshotStore:
    """The settings' snapshot store: the SnapshotStore port (asave, aload) and, for sync
    callers, save and load. One per directory in a process while someone uses it, shared
    by every session there: one writer thread and one set of open files, however many
    sessions the process hosts (a thread each cost more than their saves)."""
    key = (settings.home / "snapshots", settings.snapshots.max_history, settings.snapshots.max_age_days)
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = DiskSnapshotStore(key[0], max_history=key[1], max_age_days=key[2])
            _STORES[key] = store
        return store


def command_runner(settings: WorkingsetSettings, *, writable: tuple[str, ...] = ()) -> CommandRunner:
    """Bash's runner: bubblewrap unless the user opted out of the sandbox. `writable`
    names protected workspace entries this runner leaves writable (grading's `.git`)."""
    sandbox = settings.sandbox
    if not sandbox.enabled:
        return PlainCommandRunner(sandbox.virtualenv)
    return BubblewrapRunner.configured(sandbox).allowing_writes(*writable)


def permissions_from(
    settings: WorkingsetSettings, audit_path: Path | None, workspace: Path, tools: Collection[str] = BUILTIN_TOOL_NAMES
) -> PermissionRuntime:
    """The rules and mode of the settings, for a session in `workspace` whose tools are
    `tools`. A rule on a tool no session of Workingset could have (a Claude Code tool it
    lacks, a typo) is refused: it could never match (agents.permissions.tool_names)."""
    p = settings.permissions
    permissions = PermissionRuntime.from_texts(
        allow=p.allow,
        deny=p.deny,
        ask=p.ask,
        mode=p.mode,
        headless=p.headless,
        audit=AuditLog(audit_path),
        workspace=workspace,
    )
    for rule in permissions.rules:
        missing = missing_tool(rule.tool, tools)
        if missing is not None and missing.certain:
            raise ConfigError(f"permission rule {rule.text!r} can never match: {missing.why}")
    return permissions


def unmatched_rules(permissions: PermissionRuntime, workspace: Path, tools: Collection[str]) -> list[str]:
    """A notice per rule that has nothing to match in this session: one on a tool the
    session lacks, one on a file tool naming only paths outside the workspace
    (`Read(~/.ssh/**)`: the file tools never reach there)."""
    notices = []
    for rule in permissions.rules:
        missing = missing_tool(rule.tool, tools)
        if missing is not None:
            notices.append(f"permission rule {rule.text!r} matches nothing here: {missing.why}")
        elif rule.paths == ():
            notices.append(
                f"permission rule {rule.text!r} names only paths outside the workspace {workspace}; the file tools "
                "never reach there, so in this session it has nothing to match (Bash is bounded by its sandbox, "
                "not by file rules)"
            )
    return notices


def denied_path_globs(permissions: PermissionRuntime) -> tuple[str, ...]:
    """The patterns of the deny rules on file tools (`deny: Read(secrets/**)`): the files
    that Read, Grep and Glob then treat as not there, whichever file tool a rule names."""
    patterns = (path for rule in permissions.rules if rule.effect == "deny" and rule.paths for path in rule.paths)
    return tuple(dict.fromkeys(patterns))


@dataclass
class _PromptParts:
    """The prompt sections read from the environment once per session (stable prefix)."""

    environment: Section
    project: Section | None
    skills: Section | None
    memory: MemoryStore

    def prompt_for(self, registry: ToolRegistry) -> SystemPrompt:
        # Memory writes are root-only: a registry without MemoryWrite belongs to a subagent.
        return SystemPrompt.assemble(
            [
                base_section(),
                tool_catalog_section(registry),
                self.skills,
                self.environment,
                self.project,
                memory_section(self.memory, is_root="MemoryWrite" in registry),
            ]
        )


def load_plugins(settings: WorkingsetSettings, workspace: Path) -> LoadedPlugins:
    """Enabled plugins: the user's (~/.workingset/plugins, plugins.dirs, installed entry
    points) and, only for the workspace the user trusted, its .workingset/plugins. A
    workspace plugin never shadows a user plugin: a taken name skips the workspace's."""
    plugins, problems = discover_plugins([settings.home / "plugins", *settings.plugins.dirs])
    trusted = settings.trusted_workspace is not None and settings.trusted_workspace == workspace.resolve()
    if trusted:
        own, own_problems = discover_plugins([workspace / ".workingset" / "plugins"], entry_points=())
        problems += own_problems
        taken = {p.name: p for p in plugins}
        for plugin in own:
            if plugin.name in taken:
                problems.append(
                    f"plugin {plugin.name!r} from {plugin.origin} skipped: the user's plugin "
                    f"{taken[plugin.name].origin} has that name"
                )
            else:
                plugins.append(plugin)
    loaded = load_enabled(plugins, settings.plugins.enabled)
    loaded.problems[:0] = problems
    return loaded


def offers_agent(bundle: list[str] | None) -> bool:
    """Whether sessions with this bundle offer the Agent tool (so may fan out)."""
    return bundle is None or any(fnmatchcase("Agent", pattern) for pattern in bundle)


def _bundled(tools: list[Tool], bundle: list[str] | None) -> tuple[list[Tool], bool]:
    """The bundle's selection, plus whether it keeps the Agent tool (added later).
    Recall always stays: clip and clear markers point to it."""
    if bundle is None:
        return tools, True
    keeps_agent = offers_agent(bundle)
    chosen = apply_bundle(tools, [p for p in bundle if p != "Agent"])
    if not any(t.name == "Recall" for t in chosen):
        chosen.append(next(t for t in tools if t.name == "Recall"))
    return chosen, keeps_agent


async def open_session(settings: WorkingsetSettings, workspace: Path, **kwargs) -> Session:
    """build_session plus what needs an event loop: the MCP servers' connections."""
    plugins = load_plugins(settings, workspace)
    servers = list(settings.mcp_servers)
    for raw in plugins.mcp_servers:
        try:
            servers.append(McpServerConfig.model_validate(raw))
        except ValueError as exc:
            plugins.problems.append(f"plugin MCP server {raw.get('name', '?')!r} is invalid: {exc}")
    manager = None
    if servers:
        manager = McpManager(servers, log_dir=session_dir(settings, kwargs.get("session_id") or "mcp") / "mcp")
        await manager.start()
        plugins.problems.extend(manager.problems)
    session = build_session(
        settings, workspace, plugins=plugins, extra_tools=manager.tools if manager else [], **kwargs
    )
    if manager is not None:
        session.closers.append(manager.aclose)
    return session


def build_session(
    settings: WorkingsetSettings,
    workspace: Path,
    *,
    emit: EventSink = discard_events,
    session_id: str | None = None,
    mode: Mode = Mode.DEFAULT,
    child_approver: Approver | None = None,
    tools: list[Tool] | None = None,
    extra_tools: Sequence[Tool] = (),
    plugins: LoadedPlugins | None = None,
    runtime: RuntimePorts | None = None,
) -> Session:
    runtime = runtime or RuntimePorts()
    session_id = session_id or new_session_id()
    state = session_dir(settings, session_id)
    plugins = plugins if plugins is not None else load_plugins(settings, workspace)
    memory = MemoryStore(workspace, settings.home)
    skills, skill_problems = discover_skills(workspace, settings.home, plugin_dirs=plugins.skill_dirs)
    instructions, instruction_problems = read_project_instructions(workspace)
    if tools is None:
        tools = [*default_workspace_tools(), RecallTool(), *memory_tools(memory), LoadSkillTool(skills), *plugins.tools]
    tool_names = [t.name for t in [*tools, *extra_tools]] + [AgentTool.name]
    permissions = permissions_from(settings, state / "audit.jsonl", workspace, tool_names)
    for text in [
        *plugins.problems,
        *skill_problems,
        *instruction_problems,
        *memory.list()[1],
        *unmatched_rules(permissions, workspace, tool_names),
    ]:
        emit(Notice(session_id=session_id, text=text))
    base_tools, keeps_agent = _bundled([*tools, *extra_tools], settings.bundle)
    hook_specs = [*settings.hooks, *plugins.hooks]
    hooks = HookRunner(hook_specs, workspace) if hook_specs else None
    parts = _PromptParts(
        environment_section(workspace),
        project_instructions_section(instructions),
        skill_catalog_section(skills),
        memory,
    )

    # Only what it needs, not `settings`: their class is made when they load, and a child's
    # process would be sent that class by value with every blueprint (~50 kB, ~40 ms a child).
    default_model, providers = settings.model, settings.providers

    def model_for(spec: str | None, role: str) -> ModelClient:
        return load_model_client(spec or default_model, role=role, settings=providers)

    artifacts = ArtifactStore(state / "artifacts")
    context = ToolContext(
        workspace=workspace,
        limits=settings.tools,
        runner=command_runner(settings),
        artifacts=artifacts,
        denied_path_globs=denied_path_globs(permissions),
    )
    executor = runtime.executor or LocalToolExecutor()
    trace = (
        TraceWriter(output_directory(settings.trace_dir, "trace_dir (--trace-dir)"), session_id)
        if settings.trace_dir is not None
        else None
    )
    blueprint = SessionBlueprint(
        model_for=model_for,
        executor=executor,
        tools=base_tools,
        tool_context=context,
        summarizer=runtime.summarizer or load_summarizer(settings.summarizer),
        counter=CalibratedCounter(),
        settings=settings.session(),
        subagents=settings.subagents,
        permissions=permissions,
        prompt_for=parts.prompt_for,
        emit=emit,
        spawner_factory=runtime.spawner_factory or in_process_spawners,
        artifacts=artifacts,
        child_approver=child_approver,
        hooks=hooks,
        trace=trace,
        keeps_agent=keeps_agent,
    )
    root_model = model_for(None, "root")
    _check_cost_budgets(settings, root_model)
    own_judge = (
        None
        if runtime.judge
        else load_model_client(settings.judge or settings.model, role="judge", settings=settings.providers)
    )
    root = RootSpec(
        session_id=session_id,
        model=root_model,
        mode=mode,
        budget=Budget.tree(
            session_id, max_tokens=settings.subagents.tree_max_tokens, max_cost_usd=settings.subagents.tree_max_cost_usd
        ),
        snapshots=runtime.snapshots or snapshot_store(settings),
        judge=runtime.judge or own_judge,
        trace=trace,
    )
    session = assemble(blueprint, root)
    # The clients made here are the session's alone: Session.aclose releases their
    # connections. A judge the runtime gave is shared, and stays open.
    for client in (root_model, own_judge):
        if isinstance(client, ClosableClient):
            session.closers.append(client.aclose)
    return session
