"""The names of the tools every root session has, before a bundle picks among them.

Plugin tools (`<plugin>__<tool>`) and MCP tools (`mcp__<server>__<tool>`) come and go
with the configuration; these do not. A rule on a plain name outside this set and the
session's own tools can never match (agents.permissions.tool_names).
"""

from __future__ import annotations

from agents.sources import LoadSkillTool, MemoryDeleteTool, MemoryListTool, MemoryShowTool, MemoryWriteTool
from agents.subagents import AgentTool
from tools.bash import BashTool
from tools.recall import RecallTool
from tools.registry import FILE_TOOLS

__all__ = ["BUILTIN_TOOL_NAMES"]

BUILTIN_TOOL_NAMES: frozenset[str] = frozenset(
    tool.name
    for tool in (
        *FILE_TOOLS,
        BashTool,
        RecallTool,
        MemoryListTool,
        MemoryShowTool,
        MemoryWriteTool,
        MemoryDeleteTool,
        LoadSkillTool,
        AgentTool,
    )
)
