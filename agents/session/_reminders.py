"""Stable sections: how the mode and the goal reach the model without rewriting the prefix.

A provider caches the request from its front: tools, then the system prompt, then the
messages. An edit of the tool list or of the system prompt therefore invalidates the
whole conversation behind it. The mode and the goal change mid-session, so with a stable
prefix (`agent.stable_prefix`, the default) they never edit either: the request shows the
full registry and a catalog of it in every mode (a call to a tool the mode hides is still
refused at execution, `agents.modes`), and the state reaches the model as a typed
`StateReminder` block at the head of the next user message — only when it differs from
what the conversation last told. What the model was told is read back from the
conversation itself (as it grows: `ToldState`), so a snapshot, a `/clear` or a
compaction that folded the reminder away needs no bookkeeping: the state is told again
— at the next user message, or, when a compaction inside a long turn folded it away, at
once, at the end of the latest user message (behind its tool results, so the cached
prefix before it stays). Without a stable prefix, the mode shapes the tool list and
catalog and the goal is a system-prompt section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.goal import GoalState, goal_section
from agents.messages import Message, StateReminder, TextBlock
from agents.modes import Mode, visible_registry
from agents.session._growth import GrowthCursor
from agents.sources import SystemPrompt, tool_catalog_section
from tools.registry import ToolRegistry

__all__ = ["PromptDelivery", "state_now", "told_state"]

_UNTOLD = StateReminder()  # what a conversation without a reminder implies: default mode, no goal


def state_now(registry: ToolRegistry, mode: Mode, goal: GoalState | None) -> StateReminder:
    plan_tools = tuple(t.name for t in visible_registry(registry, mode)) if mode is Mode.PLAN else ()
    condition = goal.condition if goal is not None and goal.status == "active" else None
    return StateReminder(mode=mode.value, plan_tools=plan_tools, goal=condition)


def told_state(conversation: Sequence[Message]) -> StateReminder:
    """The state the latest reminder in the conversation told (none: default, no goal)."""
    latest = _latest_reminder(conversation)
    return _UNTOLD if latest is None else latest


def _latest_reminder(messages: Sequence[Message]) -> StateReminder | None:
    for message in reversed(messages):
        if message.role != "user":
            continue
        for block in message.content:
            if isinstance(block, TextBlock) and isinstance(block.marker, StateReminder):
                return block.marker
    return None


class ToldState:
    """`told_state` of a session's conversation, read as it grows (a conversation
    without any reminder, the usual case in default mode, is not walked whole on every
    user message)."""

    def __init__(self) -> None:
        self._cursor = GrowthCursor()
        self._told = _UNTOLD

    def of(self, conversation: Sequence[Message]) -> StateReminder:
        rewritten, unread = self._cursor.unread(conversation)
        latest = _latest_reminder(unread)
        if latest is not None:
            self._told = latest
        elif rewritten:
            self._told = _UNTOLD
        return self._told


@dataclass(frozen=True)
class PromptDelivery:
    """Where the mode and the goal go: a reminder in the messages (`stable`) or the
    tool list and the system prompt."""

    stable: bool = True
    _told: ToldState = field(default_factory=ToldState, init=False, repr=False, compare=False)

    def shown_registry(self, registry: ToolRegistry, mode: Mode) -> ToolRegistry:
        """The tools the request shows."""
        return registry if self.stable else visible_registry(registry, mode)

    def prompt(self, prompt: SystemPrompt, registry: ToolRegistry, mode: Mode, goal: GoalState | None) -> SystemPrompt:
        """`prompt` with its Tool Catalog and Goal sections for this state."""
        catalog = tool_catalog_section(self.shown_registry(registry, mode))
        shown_goal = None if self.stable else goal_section(goal)
        return prompt.replace(catalog, "tools").replace(shown_goal, "goal")

    def user_message(
        self, text: str, conversation: Sequence[Message], registry: ToolRegistry, mode: Mode, goal: GoalState | None
    ) -> Message:
        """The next user message: the user's text, behind a reminder when the state
        changed since the conversation last told it."""
        message = Message.user(text)
        if not self.stable:
            return message
        now = state_now(registry, mode, goal)
        if now == self._told.of(conversation):
            return message
        return Message(role="user", content=(TextBlock(text=now.render(), marker=now), *message.content))

    def retold(
        self, conversation: Sequence[Message], registry: ToolRegistry, mode: Mode, goal: GoalState | None
    ) -> list[Message] | None:
        """After a compaction: `conversation` with the state told again at the end of its
        latest user message when the rewrite left the conversation telling another state
        (None when nothing needs telling)."""
        if not self.stable:
            return None
        now = state_now(registry, mode, goal)
        if now == self._told.of(conversation):
            return None
        last = next((i for i in range(len(conversation) - 1, -1, -1) if conversation[i].role == "user"), None)
        if last is None:
            return None
        message = conversation[last]
        told = Message(role="user", content=(*message.content, TextBlock(text=now.render(), marker=now)))
        return [*conversation[:last], told, *conversation[last + 1 :]]
