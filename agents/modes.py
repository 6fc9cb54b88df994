"""Modes shape what the model can do, from tool metadata alone (never lists of names).

Plan mode shows only tools that are read-only and not delegated to another runtime,
so any new tool — MCP included — joins or leaves Plan by what it declares. The full
registry stays at execution and refuses calls to tools the current mode hides.
"""

from __future__ import annotations

from enum import StrEnum

from tools.base import ExecutionDomain, Tool
from tools.registry import ToolRegistry

__all__ = ["Mode", "hidden_tool_message", "is_visible", "visible_registry"]


class Mode(StrEnum):
    DEFAULT = "default"
    PLAN = "plan"


def is_visible(tool: Tool, mode: Mode) -> bool:
    if mode is Mode.PLAN:
        return tool.is_read_only and tool.execution_domain is not ExecutionDomain.DELEGATED_RUNTIME
    return True


def visible_registry(registry: ToolRegistry, mode: Mode) -> ToolRegistry:
    if mode is Mode.DEFAULT:
        return registry
    return registry.filtered(lambda tool: is_visible(tool, mode))


def hidden_tool_message(name: str, mode: Mode) -> str:
    return (
        f"{name} is unavailable in {mode.value} mode. Use the tools listed for this mode; "
        "the user leaves plan mode by approving the plan."
    )
