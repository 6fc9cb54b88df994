"""What a snapshot keeps of a session: the typed conversation plus control state.

The system prompt, tool catalog, skills, memory index, MCP tools and model are NOT
kept: a resumed session rebuilds them from the environment it resumes in.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from agents.goal import GoalState
from agents.messages import Message, ToolResultBlock
from agents.ports import Usage
from agents.snapshot_upgrade import upgrade_messages, upgrade_result
from tools.host_git import repository_head

__all__ = [
    "READABLE_SCHEMAS",
    "SCHEMA_VERSION",
    "PendingState",
    "PermissionState",
    "SessionState",
    "git_head",
    "settings_fingerprint",
]

# 2: compaction markers are typed fields of the message model. 1: they were plain
# text; a schema-1 state is upgraded when it is loaded (`agents.snapshot_upgrade`).
SCHEMA_VERSION = 2
READABLE_SCHEMAS = (1, 2)


class PendingState(BaseModel):
    """A parked tool batch: which calls of the last reply are settled, allowed, or asking."""

    order: list[str]
    results: list[ToolResultBlock] = Field(default_factory=list)
    allowed: list[str] = Field(default_factory=list)
    asks: list[str] = Field(default_factory=list)
    reasons: dict[str, str] = Field(default_factory=dict)


class PermissionState(BaseModel):
    """Grants are only meaningful under the rules they were given with."""

    config_fingerprint: str
    grants: list[tuple[str, str | None]] = Field(default_factory=list, description="(tool, exact subject)")


class SessionState(BaseModel):
    schema_version: int = SCHEMA_VERSION
    session_id: str
    cwd: str
    git_head: str | None = None
    model: str
    settings_fingerprint: str = ""
    saved_at: float = Field(default_factory=time.time)
    reason: str = Field("turn", description="What ended the turn that wrote this version.")
    conversation: list[Message] = Field(default_factory=list)
    mode: str = "default"
    goal: GoalState | None = None
    pending: PendingState | None = None
    permissions: PermissionState | None = None
    usage: Usage = Field(default_factory=Usage)
    model_calls: int = 0
    turn_calls: int = 0
    final_text: str = ""
    tree_tokens: int = 0
    tree_cost_usd: float = 0.0

    @model_validator(mode="after")
    def _upgrade_schema_1(self) -> SessionState:
        if self.schema_version < 2:
            self.conversation = upgrade_messages(self.conversation)
            if self.pending is not None:
                self.pending.results = [upgrade_result(r) for r in self.pending.results]
            self.schema_version = SCHEMA_VERSION
        return self

    def header(self) -> dict[str, Any]:
        """Everything but the conversation (which is stored content-addressed)."""
        return self.model_dump(mode="json", exclude={"conversation"})


def settings_fingerprint(values: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:16]


def git_head(cwd: Path) -> str | None:
    """The commit checked out in the repository holding `cwd`, read from `.git/` directly
    (a snapshot is taken every turn; a `git` process each time would cost more than the
    snapshot itself) and never through a link out of it; see tools.host_git."""
    head = repository_head(cwd)
    return head.commit if head is not None else None
