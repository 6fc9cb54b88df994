"""Assemble an in-process Session from settings: the composition root of `--local`."""

from __future__ import annotations

from pathlib import Path

from agents.budgets import Budget
from agents.compaction import load_summarizer
from agents.config import WorkingsetSettings
from agents.errors import ConfigError
from agents.events import EventSink, discard_events
from agents.loop import Session, SessionPorts, new_session_id
from agents.modes import Mode
from agents.permissions import AuditLog, PermissionRuntime
from agents.ports import ModelClient
from agents.providers import load_model_client
from agents.snapshot_store import DiskSnapshotStore
from agents.subagents import AgentTool, InProcessSpawner, SessionBlueprint
from agents.system_prompt import (
    SystemPrompt,
    base_section,
    environment_section,
    project_instructions_section,
    tool_catalog_section,
)
from agents.tokens import CharRatioEstimator
from agents.tool_batch import Approver
from agents.trace import TraceWriter
from tools.artifacts import ArtifactStore
from tools.base import Tool, ToolContext
from tools.executor import LocalToolExecutor
from tools.recall import RecallTool
from tools.registry import ToolRegistry, default_workspace_tools

__all__ = ["build_session", "build_system_prompt", "resolve_workspace", "session_dir", "snapshot_store"]


def resolve_workspace(cwd: str | Path) -> Path:
    path = Path(cwd).expanduser()
    if not path.is_dir():
        raise ConfigError(f"--cwd {cwd} is not an existing directory; create it or pass another one")
    return path.resolve()


def session_dir(settings: WorkingsetSettings, session_id: str) -> Path:
    return settings.home / "sessions" / session_id


def build_system_prompt(workspace: Path, registry: ToolRegistry) -> SystemPrompt:
    return SystemPrompt.assemble(
        [
            base_section(),
            tool_catalog_section(registry),
            environment_section(workspace),
            project_instructions_section(workspace),
        ]
    )


def snapshot_store(settings: WorkingsetSettings) -> DiskSnapshotStore:
    return DiskSnapshotStore(
        settings.home / "snapshots",
        max_history=settings.snapshots.max_history,
        max_age_days=settings.snapshots.max_age_days,
    )


def permissions_from(settings: WorkingsetSettings, audit_path: Path | None) -> PermissionRuntime:
    p = settings.permissions
    return PermissionRuntime.from_texts(
        allow=p.allow, deny=p.deny, ask=p.ask, mode=p.mode, headless=p.headless, audit=AuditLog(audit_path)
    )


def build_session(
    settings: WorkingsetSettings,
    workspace: Path,
    *,
    emit: EventSink = discard_events,
    session_id: str | None = None,
    mode: Mode = Mode.DEFAULT,
    child_approver: Approver | None = None,
    tools: list[Tool] | None = None,
) -> Session:
    session_id = session_id or new_session_id()
    state = session_dir(settings, session_id)
    base_tools = tools if tools is not None else [*default_workspace_tools(), RecallTool()]
    workspace_prompt = environment_section(workspace), project_instructions_section(workspace)

    def prompt_for(registry: ToolRegistry) -> SystemPrompt:
        return SystemPrompt.assemble([base_section(), tool_catalog_section(registry), *workspace_prompt])

    def model_for(spec: str | None, role: str) -> ModelClient:
        return load_model_client(spec or settings.model, role=role)

    model = model_for(None, "root")
    permissions = permissions_from(settings, state / "audit.jsonl")
    artifacts = ArtifactStore(state / "artifacts")
    context = ToolContext(workspace=workspace, limits=settings.tools.limits(), artifacts=artifacts)
    executor = LocalToolExecutor()
    summarizer = load_summarizer(settings.summarizer)
    counter = CharRatioEstimator()
    tree = Budget("tree", max_tokens=settings.subagents.tree_max_tokens, max_cost_usd=settings.subagents.tree_max_cost_usd)
    blueprint = SessionBlueprint(
        model_for=model_for,
        executor=executor,
        tools=base_tools,
        tool_context=context,
        summarizer=summarizer,
        counter=counter,
        settings=settings.session(),
        subagents=settings.subagents,
        permissions=permissions,
        prompt_for=prompt_for,
        emit=emit,
        artifacts=artifacts,
        child_approver=child_approver,
    )
    spawner = InProcessSpawner(blueprint, parent_id=session_id, parent_budget=tree)
    registry = ToolRegistry([*base_tools, AgentTool(spawner, depth=0, max_depth=settings.subagents.max_depth)])
    ports = SessionPorts(
        model=model,
        executor=executor,
        registry=registry,
        tool_context=context,
        summarizer=summarizer,
        artifacts=artifacts,
        counter=counter,
        emit=emit,
        trace=TraceWriter(settings.trace_dir, session_id) if settings.trace_dir is not None else None,
        permissions=permissions,
        judge=load_model_client(settings.judge or settings.model, role="judge"),
        budget=tree,
        snapshots=snapshot_store(settings),
    )
    return Session(ports, system_prompt=prompt_for(registry), settings=settings.session(), session_id=session_id, mode=mode)
