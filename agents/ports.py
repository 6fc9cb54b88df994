"""The five ports: the only ways the agent loop reaches the world.

Each is a small Protocol; implementations fit by shape. The same loop runs in one
process (tests, `--local`) and inside a Ray actor, with different implementations.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agents.messages import Message, TextBlock, ToolUseBlock
from agents.session_state import LoadedSnapshot, SessionState
from agents.usage import Usage
from tools.base import Tool, ToolContext, ToolOutput

__all__ = [
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "SnapshotStore",
    "SubagentRequest",
    "SubagentResult",
    "SubagentSpawner",
    "Summarizer",
    "ToolExecutor",
    "ToolSchema",
    "Usage",
]


class ToolSchema(BaseModel):
    """A tool as the model sees it (Anthropic `tools` entry)."""

    model_config = ConfigDict(frozen=True)
    name: str
    description: str
    input_schema: dict[str, Any]


class ModelRequest(BaseModel):
    """One compiled working set: everything a single model call sees."""

    model_config = ConfigDict(frozen=True)
    system: str
    tools: tuple[ToolSchema, ...] = ()
    messages: tuple[Message, ...]
    max_tokens: int = 4096


StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"]


class ModelResponse(BaseModel):
    content: tuple[TextBlock | ToolUseBlock, ...]
    stop_reason: StopReason = "end_turn"
    usage: Usage = Field(default_factory=Usage)
    model: str = ""

    def as_message(self) -> Message:
        return Message(role="assistant", content=self.content)


@runtime_checkable
class ModelClient(Protocol):
    """One model call: working set in, content blocks and usage out."""

    name: str

    async def create(self, request: ModelRequest) -> ModelResponse: ...


@runtime_checkable
class ToolExecutor(Protocol):
    """Run one tool call whose input already passed validation."""

    async def execute(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> ToolOutput: ...


@runtime_checkable
class Summarizer(Protocol):
    """Turn older history into a handoff summary (tools disabled)."""

    async def summarize(self, messages: list[Message], *, focus: str | None = None) -> str: ...


@runtime_checkable
class SnapshotStore(Protocol):
    """Save and load versioned session state (see agents.snapshot_store). Async: a
    process hosting many sessions must not stop them all while one is written."""

    async def save(self, state: SessionState) -> str: ...

    async def load(self, session_id: str, version: str | None = None) -> LoadedSnapshot: ...


class SubagentRequest(BaseModel):
    """One Agent call: what the child is asked, and where it sits in the tree."""

    description: str
    prompt: str
    depth: int = Field(ge=1, description="The child's depth; the root is 0.")
    tool_filter: tuple[str, ...] | None = None
    model: str | None = None


class SubagentResult(BaseModel):
    """All a parent ever sees of a child: its final text (or why it failed) and its cost."""

    text: str
    is_error: bool = False
    reason: str = "end_turn"
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    model_calls: int = 0
    session_id: str = ""


@runtime_checkable
class SubagentSpawner(Protocol):
    """Run a child agent on a fresh conversation and return only its final text."""

    async def spawn(self, request: SubagentRequest) -> SubagentResult: ...
