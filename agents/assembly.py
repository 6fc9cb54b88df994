"""Assemble an in-process Session from settings: the composition root of `--local`."""

from __future__ import annotations

from pathlib import Path

from agents.compaction import load_summarizer
from agents.config import WorkingsetSettings
from agents.errors import ConfigError
from agents.events import EventSink, discard_events
from agents.loop import Session, SessionPorts, new_session_id
from agents.providers import load_model_client
from agents.system_prompt import (
    SystemPrompt,
    base_section,
    environment_section,
    project_instructions_section,
    tool_catalog_section,
)
from agents.trace import TraceWriter
from tools.artifacts import ArtifactStore
from tools.base import ToolContext
from tools.executor import LocalToolExecutor
from tools.recall import RecallTool
from tools.registry import ToolRegistry, default_workspace_tools

__all__ = ["build_session", "build_system_prompt", "resolve_workspace"]


def resolve_workspace(cwd: str | Path) -> Path:
    path = Path(cwd).expanduser()
    if not path.is_dir():
        raise ConfigError(f"--cwd {cwd} is not an existing directory; create it or pass another one")
    return path.resolve()


def build_system_prompt(workspace: Path, registry: ToolRegistry) -> SystemPrompt:
    return SystemPrompt.assemble(
        [
            base_section(),
            tool_catalog_section(registry),
            environment_section(workspace),
            project_instructions_section(workspace),
        ]
    )


def build_session(
    settings: WorkingsetSettings, workspace: Path, *, emit: EventSink = discard_events, session_id: str | None = None
) -> Session:
    registry = ToolRegistry([*default_workspace_tools(), RecallTool()])
    model = load_model_client(settings.model)
    summarizer = load_summarizer(settings.summarizer)
    session_id = session_id or new_session_id()
    trace = TraceWriter(settings.trace_dir, session_id) if settings.trace_dir is not None else None
    return Session(
        SessionPorts(
            model=model,
            executor=LocalToolExecutor(),
            registry=registry,
            tool_context=ToolContext(workspace=workspace, limits=settings.tools.limits()),
            summarizer=summarizer,
            artifacts=ArtifactStore(settings.home / "sessions" / session_id / "artifacts"),
            emit=emit,
            trace=trace,
        ),
        system_prompt=build_system_prompt(workspace, registry),
        settings=settings.session(),
        session_id=session_id,
    )
