"""Assemble an in-process Session from settings: the composition root of `--local`."""

from __future__ import annotations

from pathlib import Path

from agents.config import WorkingsetSettings
from agents.errors import ConfigError
from agents.events import EventSink, discard_events
from agents.loop import Session, SessionPorts
from agents.prompt import build_system_prompt
from agents.providers import load_model_client
from tools.base import ToolContext
from tools.executor import LocalToolExecutor
from tools.registry import default_registry

__all__ = ["build_session", "resolve_workspace"]


def resolve_workspace(cwd: str | Path) -> Path:
    path = Path(cwd).expanduser()
    if not path.is_dir():
        raise ConfigError(f"--cwd {cwd} is not an existing directory; create it or pass another one")
    return path.resolve()


def build_session(settings: WorkingsetSettings, workspace: Path, *, emit: EventSink = discard_events) -> Session:
    ports = SessionPorts(
        model=load_model_client(settings.model),
        executor=LocalToolExecutor(),
        registry=default_registry(),
        tool_context=ToolContext(workspace=workspace, limits=settings.tools.limits()),
        emit=emit,
    )
    return Session(ports, system_prompt=build_system_prompt(workspace), settings=settings.agent)
