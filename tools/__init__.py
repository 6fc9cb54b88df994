"""Workingset tools: the workspace tools, their registry and a local executor.

This package never imports agents/, cluster/ or ray: tools run anywhere.
"""

from tools.base import (
    CommandRunner,
    ExecutionDomain,
    PlainCommandRunner,
    Tool,
    ToolContext,
    ToolError,
    ToolLimits,
    ToolOutput,
)
from tools.bash import BashTool
from tools.executor import LocalToolExecutor, ThreadedToolExecutor
from tools.files import EditTool, GlobTool, GrepTool, ReadTool, WriteTool
from tools.registry import (
    FILE_TOOLS,
    ToolRegistry,
    UnknownTool,
    default_registry,
    default_workspace_tools,
    validate_input,
)
from tools.workspace import relative_display

__all__ = [
    "FILE_TOOLS",
    "BashTool",
    "CommandRunner",
    "EditTool",
    "ExecutionDomain",
    "GlobTool",
    "GrepTool",
    "LocalToolExecutor",
    "PlainCommandRunner",
    "ReadTool",
    "ThreadedToolExecutor",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolLimits",
    "ToolOutput",
    "ToolRegistry",
    "UnknownTool",
    "WriteTool",
    "default_registry",
    "default_workspace_tools",
    "relative_display",
    "validate_input",
]
