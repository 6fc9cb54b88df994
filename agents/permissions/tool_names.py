"""Whether a rule's tool can exist: a rule on a tool the session does not have matches nothing.

Only plain names are judged. A glob (`Memory*`), an MCP tool (`mcp__…`: its server may be
down this time) or a plugin's tool (`<plugin>__<tool>`: the plugin may be enabled another
time) can exist in some session, so a rule on one is kept. A plain name that is not one
of the session's tools is one of:

- a Claude Code tool Workingset does not have (`WebFetch`, `NotebookEdit`): certain never
  to match, named as such with Workingset's counterpart where there is one;
- a near miss of one of the session's tools (`Raed`): a typo, certain never to match;
- anything else: a tool a caller's own tool set had another time, perhaps; it matches
  nothing in this session, which says so.

The user's own settings refuse a rule in the first two cases and name it in the third
(agents.opening._assembly); a Claude Code settings file's rules are Claude Code's first, so there
every such rule is skipped and named (agents.settings._claude).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from dataclasses import dataclass

__all__ = ["CLAUDE_CODE_TOOLS", "MissingTool", "missing_tool"]

# Claude Code's built-in tools that Workingset does not have, and the Workingset tool a
# rule could name instead (None: Workingset has nothing like it).
CLAUDE_CODE_TOOLS: dict[str, str | None] = {
    "WebFetch": None,
    "WebSearch": None,
    "NotebookEdit": "Edit",
    "NotebookRead": "Read",
    "MultiEdit": "Edit",
    "LS": "Glob",
    "Task": "Agent",
    "Skill": "LoadSkill",
    "TodoWrite": None,
    "TodoRead": None,
    "ExitPlanMode": None,
    "EnterPlanMode": None,
    "AskUserQuestion": None,
    "BashOutput": None,
    "KillShell": None,
    "KillBash": None,
    "SlashCommand": None,
    "ListMcpResourcesTool": None,
    "ReadMcpResourceTool": None,
}


@dataclass(frozen=True)
class MissingTool:
    why: str
    certain: bool  # no session of Workingset could have it (a Claude Code tool, a typo)


def missing_tool(tool: str, known: Collection[str]) -> MissingTool | None:
    """Why a rule naming `tool` matches nothing among the tools `known`, or None."""
    if tool in known or "__" in tool or any(ch in tool for ch in "*?["):
        return None
    if tool in CLAUDE_CODE_TOOLS:
        instead = CLAUDE_CODE_TOOLS[tool]
        fix = f"write the rule for {instead}, the nearest" if instead else "remove the rule"
        return MissingTool(f"{tool} is a Claude Code tool and Workingset has no {tool} tool; {fix}", True)
    nearest = difflib.get_close_matches(tool, sorted(known), n=1, cutoff=0.75)
    if nearest:
        return MissingTool(f"Workingset has no tool named {tool}; did you mean {nearest[0]}?", True)
    return MissingTool(f"this session has no tool named {tool} (its tools: {', '.join(sorted(known))})", False)
