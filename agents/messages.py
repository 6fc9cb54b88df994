"""The typed conversation: content blocks shaped like the Anthropic Messages API.

Blocks are frozen pydantic models joined in one discriminated union, so a conversation
validates, encodes and decodes through a single adapter and round-trips exactly.
Compaction steps build new messages; they never mutate old ones.

Compaction markers. What compaction writes into a conversation is typed, not
recognised by its text: a text block may carry a `TextMarker` (a summary boundary,
a dropped span, a bridge, a digest of folded turns; or, not from compaction, the
session-state reminder) and a tool result a
`ResultMarker` (a cleared, superseded, elided or clipped body). The block's text is still exactly what the model is shown — each
marker renders it (`render`) — and the provider sends only that text; the marker is
ours, kept in snapshots and traces. A block without a marker is never a marker,
whatever its text says, so a tool output that happens to begin with "[cleared " is an
ordinary output. (Snapshots written before markers were typed are upgraded once on
load: `agents.snapshots._upgrade`.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter

from tools.encodable import encodable_value

__all__ = [
    "Bridge",
    "ClearedBody",
    "ClippedBody",
    "ContentBlock",
    "DroppedSpan",
    "ElidedBody",
    "FoldedTurns",
    "ImageBlock",
    "ImageSource",
    "ResultMarker",
    "StateReminder",
    "SummaryBoundary",
    "SupersededBody",
    "TextMarker",
    "Message",
    "RedactedThinkingBlock",
    "TextBlock",
    "ThinkingBlock",
    "ToolInteraction",
    "ToolResultBlock",
    "ToolUseBlock",
    "completed_tool_interactions",
    "encodable_block",
    "protocol_problems",
    "is_protocol_complete",
    "message_caches",
    "tool_results_by_id",
    "tool_uses_by_id",
    "MESSAGES_ADAPTER",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


def _absent(value: object) -> bool:
    # A block without a marker dumps exactly as it did before markers existed, so its
    # encoding (and content address in the snapshot store) does not change.
    return value is None


def _blank(value: object) -> bool:
    # Likewise a marker without a residue dumps as it did before residues existed.
    return value == ""


def _with_residue(note: str, residue: str) -> str:
    return f"{note}\nstill in view: {residue}" if residue else note


# -- compaction markers on text blocks ---------------------------------------------------


class SummaryBoundary(BaseModel):
    """Opens a summary: `summarized` earlier messages were replaced by the text after it."""

    model_config = _FROZEN
    kind: Literal["summary_boundary"] = "summary_boundary"
    summarized: int = Field(ge=0)

    def render(self) -> str:
        return (
            f"[Conversation compacted] {self.summarized} earlier messages were replaced by the summary "
            "below. Tool outputs they held can still be read with Recall."
        )


class DroppedSpan(BaseModel):
    """Stands where `dropped` real messages were dropped whole (a window, a trim)."""

    model_config = _FROZEN
    kind: Literal["dropped_span"] = "dropped_span"
    dropped: int = Field(ge=0)
    strategy: str

    def render(self) -> str:
        return (
            f"[Context trimmed] {self.dropped} earlier messages were dropped here by the '{self.strategy}' "
            "compaction strategy. Tool outputs they held are kept in the record; Recall(id=...) "
            "returns one when you know its id."
        )


class Bridge(BaseModel):
    """A synthetic assistant turn that only keeps roles alternating (no real turn)."""

    model_config = _FROZEN
    kind: Literal["bridge"] = "bridge"
    after_summary: bool = False

    def render(self) -> str:
        if self.after_summary:
            return "Understood. I will continue from this summary and the messages that follow."
        return "Understood. I will continue from the messages that follow."


class FoldedTurns(BaseModel):
    """Opens a digest: `folded` earlier messages were folded into the lines after it
    (one per tool call: what was run and the residue of its output), without a
    summarizer. A later fold adds its own digest after this one and never rewrites it."""

    model_config = _FROZEN
    kind: Literal["folded_turns"] = "folded_turns"
    folded: int = Field(ge=0)

    def render(self) -> str:
        return (
            f"[Earlier turns folded] {self.folded} earlier messages were folded into the digest below: "
            "one line per tool call with what its output showed. Recall(id=...) returns a full output."
        )


class StateReminder(BaseModel):
    """The session's mode and goal as the model is told them mid-session, at the head
    of a user message, instead of by an edit of the system prompt (which would rewrite
    the whole cached prefix): `agents.session._reminders`."""

    model_config = _FROZEN
    kind: Literal["state"] = "state"
    mode: Literal["default", "plan"] = "default"
    plan_tools: tuple[str, ...] = Field((), description="In plan mode, the tools that run.")
    goal: str | None = Field(None, description="The active goal's condition (None: no goal).")

    def render(self) -> str:
        if self.mode == "plan":
            mode = (
                "Plan mode is on: explore and propose a plan. Only these tools run now: "
                f"{', '.join(self.plan_tools) or 'none'}; a call to any other tool is refused. "
                "The user leaves plan mode by approving the plan."
            )
        else:
            mode = "Default mode: every tool in the catalog may run."
        if self.goal is None:
            goal = "No goal is active."
        else:
            goal = (
                f"Goal: {self.goal}\nWork until this condition holds and show it with tool results (e.g. the "
                "exact test command and its output). An independent judge checks the evidence when you stop."
            )
        return f"[Session state] {mode}\n{goal}"


TextMarker = Annotated[
    SummaryBoundary | DroppedSpan | Bridge | FoldedTurns | StateReminder, Field(discriminator="kind")
]


# -- compaction markers on tool results ----------------------------------------------------


class ClearedBody(BaseModel):
    """The body was cleared (clear-then-summarize, clear-tool-uses, current); Recall
    returns it. `residue`: the facts of the body kept in view (`agents.compaction.residue`)."""

    model_config = _FROZEN
    kind: Literal["cleared"] = "cleared"
    original_chars: int = Field(ge=0)
    residue: str = Field("", exclude_if=_blank)

    def render(self, tool_use_id: str) -> str:
        note = f'[cleared {self.original_chars} chars of tool output; Recall(id="{tool_use_id}") returns it]'
        return _with_residue(note, self.residue)


_SUPERSEDED_BECAUSE = {
    "re-run": "the same call ran again later",
    "rewritten": "the file was written again later",
    "re-read": "the file was read again later",
    "edited": "the file was edited later",
}


class SupersededBody(BaseModel):
    """The body was made stale by a later call `by` (currentness) and cleared; Recall
    returns it. `reason`: re-run, rewritten, re-read or edited."""

    model_config = _FROZEN
    kind: Literal["superseded"] = "superseded"
    original_chars: int = Field(ge=0)
    by: str
    reason: Literal["re-run", "rewritten", "re-read", "edited"]
    residue: str = Field("", exclude_if=_blank)

    def render(self, tool_use_id: str) -> str:
        note = (
            f"[superseded: {_SUPERSEDED_BECAUSE[self.reason]} (call {self.by}), so this output of "
            f'{self.original_chars} chars was cleared; Recall(id="{tool_use_id}") returns it]'
        )
        return _with_residue(note, self.residue)


class ElidedBody(BaseModel):
    """The body was elided by observation masking (mask, hybrid); Recall returns it."""

    model_config = _FROZEN
    kind: Literal["elided"] = "elided"
    original_chars: int = Field(ge=0)

    def render(self, tool_use_id: str) -> str:
        return f'[observation elided: {self.original_chars} chars; Recall(id="{tool_use_id}")]'


class ClippedBody(BaseModel):
    """The body kept its head and tail; `removed_chars` from `offset` on are in Recall.
    `render` is the marker line standing between the head and the tail."""

    model_config = _FROZEN
    kind: Literal["clipped"] = "clipped"
    removed_chars: int = Field(ge=0)
    offset: int = Field(ge=0)

    def render(self, tool_use_id: str) -> str:
        return (
            f'\n[truncated {self.removed_chars} chars; Recall(id="{tool_use_id}", offset={self.offset}) returns them]\n'
        )


ResultMarker = Annotated[ClearedBody | SupersededBody | ElidedBody | ClippedBody, Field(discriminator="kind")]


# -- blocks ---------------------------------------------------------------------------------


class TextBlock(BaseModel):
    model_config = _FROZEN
    type: Literal["text"] = "text"
    text: str
    marker: TextMarker | None = Field(
        None, exclude_if=_absent, description="Set when the harness wrote this text (compaction, a state reminder)."
    )


class ToolUseBlock(BaseModel):
    model_config = _FROZEN
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    raw_input: str | None = Field(
        None,
        exclude_if=_absent,
        description="The arguments exactly as the model sent them, kept only when they are not a JSON "
        "object (then `input` is empty and the call is answered with an error the model can fix).",
    )


class ToolResultBlock(BaseModel):
    model_config = _FROZEN
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str = ""
    is_error: bool = False
    marker: ResultMarker | None = Field(None, exclude_if=_absent, description="Set when compaction rewrote the body.")


class ThinkingBlock(BaseModel):
    """The model's reasoning. Anthropic signs it; the signature goes back unchanged with
    the block. Reasoning from other providers (e.g. `reasoning_content`) has no signature
    and is kept for the record only: no provider is sent an unsigned block."""

    model_config = _FROZEN
    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str = ""


class RedactedThinkingBlock(BaseModel):
    """Reasoning the provider encrypted; `data` goes back exactly as received."""

    model_config = _FROZEN
    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ImageSource(BaseModel):
    model_config = _FROZEN
    type: Literal["base64", "url"] = "base64"
    media_type: str | None = Field(None, description="e.g. image/png; required for base64 data.")
    data: str | None = Field(None, description="Base64 bytes (type base64).")
    url: str | None = Field(None, description="Where the image is (type url).")


class ImageBlock(BaseModel):
    """An image in a user message."""

    model_config = _FROZEN
    type: Literal["image"] = "image"
    source: ImageSource


ContentBlock = Annotated[
    TextBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock | ImageBlock,
    Field(discriminator="type"),
]


class Message(BaseModel):
    """One turn of the conversation. `content` is always a list of typed blocks."""

    model_config = _FROZEN
    role: Literal["user", "assistant"]
    content: tuple[ContentBlock, ...]

    # Per-counter token estimates, cached on the (immutable) message so that a turn's
    # estimate only pays for messages it has not seen before. Made on first use: a
    # default_factory costs pydantic a signature inspection per message built (~25 µs,
    # most of what loading a snapshot's messages costs).
    _token_cache: dict[str, int] | None = PrivateAttr(default=None)
    # Encoded form and its digest, cached for the same reason: a snapshot only pays
    # for messages it has not stored before.
    _encoded: tuple[str, bytes] | None = PrivateAttr(default=None)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=(TextBlock(text=text),))

    @classmethod
    def assistant(cls, *blocks: TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock) -> Message:
        return cls(role="assistant", content=tuple(blocks))

    @classmethod
    def tool_results(cls, results: Iterable[ToolResultBlock]) -> Message:
        return cls(role="user", content=tuple(results))

    def __eq__(self, other: object) -> bool:
        # Equal by what the message says; the token cache is bookkeeping, not content.
        if not isinstance(other, Message):
            return NotImplemented
        return self.role == other.role and self.content == other.content

    def __hash__(self) -> int:
        return hash((self.role, self.content))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Message:
        copy = super().model_copy(update=update, deep=deep)
        copy._token_cache = None  # an edited copy must be re-estimated and re-encoded
        copy._encoded = None
        return copy

    @property
    def text(self) -> str:
        """All text blocks joined; tool blocks are left out."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    @property
    def tool_results_in(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]


_TEXT_FIELDS = ("text", "thinking", "content", "input", "raw_input", "id", "name", "tool_use_id", "signature", "data")


_Block = TypeVar("_Block", bound=BaseModel)


def encodable_block(block: _Block) -> _Block:
    """`block` with every text field UTF-8 can encode (`tools.encodable`); the very same
    block when nothing needed it, which is almost always."""
    changes = {}
    for name in _TEXT_FIELDS:
        value = getattr(block, name, None)
        if value is not None:
            made = encodable_value(value)
            if made is not value:
                changes[name] = made
    return block.model_copy(update=changes) if changes else block


def message_caches(message: Message) -> dict[str, Any]:
    """The message's private attributes (its token and encoding caches), as pydantic keeps
    them. Read directly: pydantic's attribute fallback costs ~3 µs a call, which adds up
    when a turn walks a thousand messages."""
    private = message.__pydantic_private__
    assert private is not None  # Message declares private attributes, so pydantic made the dict
    return private


MESSAGES_ADAPTER: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


class ToolInteraction(BaseModel):
    """A tool_use and its tool_result, with the indexes of the messages holding them."""

    model_config = _FROZEN
    use: ToolUseBlock
    result: ToolResultBlock
    use_index: int
    result_index: int


def tool_uses_by_id(messages: Sequence[Message]) -> dict[str, tuple[int, ToolUseBlock]]:
    return {b.id: (i, b) for i, m in enumerate(messages) for b in m.tool_uses}


def with_unique_tool_ids(message: Message, taken: Set[str]) -> tuple[Message, list[tuple[str, str]]]:
    """`message` with each tool_use id not in `taken` (nor repeated in it): a reused id is
    given a fresh one, so every result answers exactly one call. Returns the renames
    (old, new); `taken` is only read (it may be a session's index of its ids)."""
    renamed: list[tuple[str, str]] = []
    blocks = []
    own: set[str] = set()
    for block in message.content:
        if isinstance(block, ToolUseBlock):
            fresh, n = block.id, 1
            while fresh in taken or fresh in own:
                n += 1
                fresh = f"{block.id}_{n}"
            if fresh != block.id:
                renamed.append((block.id, fresh))
                block = block.model_copy(update={"id": fresh})
            own.add(fresh)
        blocks.append(block)
    return (message.model_copy(update={"content": tuple(blocks)}) if renamed else message), renamed


def tool_results_by_id(messages: Sequence[Message]) -> dict[str, tuple[int, ToolResultBlock]]:
    return {b.tool_use_id: (i, b) for i, m in enumerate(messages) for b in m.tool_results_in}


def completed_tool_interactions(messages: Sequence[Message]) -> list[ToolInteraction]:
    """Every tool_use that has a later tool_result, in the order the uses were made."""
    results = tool_results_by_id(messages)
    done: list[ToolInteraction] = []
    for i, m in enumerate(messages):
        for use in m.tool_uses:
            found = results.get(use.id)
            if found is not None and found[0] > i:
                done.append(ToolInteraction(use=use, result=found[1], use_index=i, result_index=found[0]))
    return done


def protocol_problems(messages: Sequence[Message], *, allow_trailing_uses: bool = True) -> list[str]:
    """What breaks the tool protocol: a result without an earlier use, or a use left
    unanswered when the next user turn arrives. An unanswered use in the very last
    message is allowed by default (its results are still being produced)."""
    problems: list[str] = []
    pending: dict[str, int] = {}
    seen_uses: set[str] = set()
    for i, m in enumerate(messages):
        if m.role == "user":
            for r in m.tool_results_in:
                if r.tool_use_id not in seen_uses:
                    problems.append(f"message {i}: tool_result {r.tool_use_id} has no earlier tool_use")
                pending.pop(r.tool_use_id, None)
            for use_id, at in pending.items():
                problems.append(f"message {at}: tool_use {use_id} unanswered before message {i}")
            pending.clear()
        else:
            for u in m.tool_uses:
                seen_uses.add(u.id)
                pending[u.id] = i
    if not allow_trailing_uses:
        problems.extend(f"message {at}: tool_use {uid} unanswered" for uid, at in pending.items())
    return problems


def is_protocol_complete(messages: Sequence[Message]) -> bool:
    """True when every result has its use and no use is left dangling at the end."""
    return not protocol_problems(messages, allow_trailing_uses=False)
