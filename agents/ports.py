"""The seams: the only ways the agent loop reaches the world, each a small Protocol.

Implementations fit by shape. The same loop runs in one process (tests, `--local`)
and inside a Ray actor, with different implementations.

The five ports (a session's SessionPorts):

    ModelClient         one model call (agents.providers; a scripted one for tests)
    ToolExecutor        runs a validated tool call (tools.executor; cluster.tool_tasks on Ray)
    Summarizer          writes a handoff summary (agents.compaction; cluster.compactor_pool on Ray)
    SnapshotStore       saves and loads session state (agents.snapshots._store; cluster.snapshot_actor)
    SubagentSpawner     runs a child agent (agents.subagents._spawner; cluster.subagents._actor on Ray)

Optional capabilities, each a Protocol an implementation may also fit (checked with
isinstance, never looked up by attribute name); here unless another module is named,
where what the Protocol names is defined (so no import goes in a circle):

    TokenCountingClient   a ModelClient whose provider counts a request's tokens
    SelfDescribingClient  a ModelClient that states its own context window and prices (agents.providers._catalog)
    ReplayingClient       a ModelClient that replays a script and can seek in it
    ClosableClient        a ModelClient holding connections, released by `aclose`
    CalibratingCounter    a token counter the provider's counts calibrate
    PermissionSubjectTool a tool whose calls rules match against a subject (tools.base)
    DiskEffectTool        a tool that can tell whether a lost call's change is on disk (tools.base)

The other seams swapped on Ray (the in-process implementation, then Ray's):

    BudgetLedger   where a tree's usage is counted (agents.subagents._budgets): TreeLedger in the
                   root's process; cluster.subagents._tree_budget.RemoteLedger in a subagent actor
    EventSink      where a session's events go: a list or a printer in one process; the
                   SessionActor's queue, streamed to the caller (cluster.event_pump)
    Approver       answers a subagent's permission question inline (agents.session._kit):
                   the REPL's prompt; the SessionActor's `ask_user`, answered in the root's stream
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.messages import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    encodable_block,
)
from agents.permissions import RefusedCalls
from agents.session import SessionState
from agents.subagents import EvidenceRef, RecallRecord
from agents.usage import Usage
from tools.base import Tool, ToolContext, ToolOutput
from tools.encodable import encodable

if TYPE_CHECKING:
    from agents.snapshots import LoadedSnapshot

__all__ = [
    "CalibratingCounter",
    "ClosableClient",
    "EventSink",
    "ModelClient",
    "ModelRequest",
    "ReplyBlock",
    "ModelResponse",
    "ReplayingClient",
    "SnapshotStore",
    "SubagentRequest",
    "SubagentResult",
    "SubagentSpawner",
    "Summarizer",
    "ToolExecutor",
    "TokenCountingClient",
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
"""Why a reply ended. `end_turn` and `stop_sequence` are natural ends; `tool_use` asks
for tool results; `max_tokens` is a reply cut off (the output limit or the context
window); `pause_turn` a turn the provider paused, to be continued as it is; `refusal`
a reply the provider's safety system stopped (see agents.session._stop_reasons)."""

ReplyBlock = TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock


class ModelResponse(BaseModel):
    content: tuple[ReplyBlock, ...]
    stop_reason: StopReason = "end_turn"
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    stop_details: str | None = Field(
        None, description="What the provider said about the stop (e.g. a refusal's category)."
    )
    usage_reported: bool = Field(True, description="False when the provider sent no usage and it was estimated.")
    unknown_blocks: tuple[str, ...] = Field(
        (), description="Types of content blocks the reply held that Workingset does not know; left out of it."
    )

    @model_validator(mode="after")
    def _encodable(self) -> ModelResponse:
        """Whatever the provider decoded, the reply's text can be saved and sent back: a lone
        surrogate a model wrote as a JSON escape is kept as visible text (`tools.encodable`)."""
        content = tuple(encodable_block(block) for block in self.content)
        if any(a is not b for a, b in zip(content, self.content, strict=True)):
            self.content = content
        if self.stop_details is not None:
            self.stop_details = encodable(self.stop_details)
        return self

    def as_message(self) -> Message:
        return Message(role="assistant", content=self.content)


@runtime_checkable
class ModelClient(Protocol):
    """One model call: working set in, content blocks and usage out.

    `name` is the spec it answers to ("anthropic:claude-sonnet-4-5"). Errors are raised
    from the `agents.errors` tree: PromptTooLong (the loop recompiles once), AuthError,
    Overloaded / ModelTimeout (transient, already retried), ModelResponseError.

    Optional capabilities, each its own Protocol: TokenCountingClient,
    SelfDescribingClient (agents.providers._catalog), ReplayingClient, ClosableClient.
    """

    name: str

    async def create(self, request: ModelRequest) -> ModelResponse: ...


@runtime_checkable
class TokenCountingClient(Protocol):
    """A client whose provider counts a request's input tokens exactly, without a reply;
    None when counting is switched off (the settings' `anthropic.count_tokens`)."""

    name: str

    async def count_tokens(self, request: ModelRequest) -> int | None: ...


@runtime_checkable
class ReplayingClient(Protocol):
    """A client replaying a script (agents.providers.scripted): a session reopened after
    its process failed continues where its snapshot left off."""

    def seek(self, calls_made: int) -> None: ...


@runtime_checkable
class ClosableClient(Protocol):
    """A client holding connections; `aclose` releases them. The session that was built
    with the client closes it (agents.opening._assembly hands it to Session.aclose)."""

    async def aclose(self) -> None: ...


@runtime_checkable
class CalibratingCounter(Protocol):
    """A token counter the provider's reported counts calibrate (agents.tokens.CalibratedCounter)."""

    def observe(self, estimated: int, actual: int) -> None: ...


class EventSink(Protocol):
    """Where a session's events go; called once per event, in order."""

    def __call__(self, event: BaseModel, /) -> None: ...


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
    """Save and load versioned session state (see agents.snapshots._store). Async only: a
    process hosting many sessions must not stop them all while one is written (the disk
    work runs on the store's writer thread, or in the store actor). Sync callers (the
    `sessions` command, tests) use a DiskSnapshotStore's own `save`/`load`."""

    async def asave(self, state: SessionState) -> str: ...

    async def aload(self, session_id: str, version: str | None = None) -> LoadedSnapshot: ...

    async def arelease(self, session_id: str) -> None:
        """The session has closed: what the store holds open for it may go."""


class SubagentRequest(BaseModel):
    """One Agent call: what the child is asked, and where it sits in the tree."""

    description: str
    prompt: str
    depth: int = Field(ge=1, description="The child's depth; the root is 0.")
    path: tuple[str, ...] = Field((), description="The child's place in the tree: descriptions from the root down.")
    tool_filter: tuple[str, ...] | None = None
    model: str | None = None
    refused: RefusedCalls = Field(
        default_factory=RefusedCalls,
        description="Calls the user refused in the parent or above it: the child denies them without asking.",
    )


class SubagentResult(BaseModel):
    """All a parent ever sees of a child: its final text (or why it failed), references to
    the evidence it gathered (with their bodies, for the parent's Recall) and its cost."""

    text: str
    evidence: tuple[EvidenceRef, ...] = ()
    records: tuple[RecallRecord, ...] = Field(
        (), description="Bodies of the evidence, kept by the parent, never shown whole."
    )
    is_error: bool = False
    reason: str = "end_turn"
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    unpriced_calls: int = Field(0, description="Calls whose price is unknown (not in cost_usd).")
    model_calls: int = 0
    session_id: str = ""


@runtime_checkable
class SubagentSpawner(Protocol):
    """Run a child agent on a fresh conversation and return only its final text."""

    async def spawn(self, request: SubagentRequest) -> SubagentResult: ...
