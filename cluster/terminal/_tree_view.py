"""The subagent tree as a person sees it: which child is working, asking or done.

`SubagentTree` follows the event stream (subagent_started / _finished, model calls,
permission questions and answers, all carrying the child's session id and path) and
draws the tree with each child's state, model calls, tokens and cost. `TreeWatch`
keeps the fan-out under way and the last one that finished: the human renderer
prints a tree when its fan-out has finished, the REPL's `/tree` on demand; `--json`
consumers get the same facts from the events themselves (docs/events.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.visible import reveal

__all__ = ["SubagentTree", "TreeWatch", "path_label"]


def path_label(path: list[str]) -> str:
    """A path on one line; descriptions come from the model, so hidden characters show as escapes."""
    return " › ".join(reveal(part, one_line=True) for part in path)


@dataclass
class _Node:
    session_id: str
    description: str
    state: str = "working"  # working, asking (the tool), done (the reason)
    model_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    unpriced: bool = False
    children: list[_Node] = field(default_factory=list)


class SubagentTree:
    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}
        self._roots: list[_Node] = []  # the top-level children, in start order

    def observe(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind == "subagent_started":
            self._started(event)
            return
        node = self._nodes.get(event.session_id)
        if kind == "subagent_finished":
            self._finished(event)
        elif node is None:
            return
        elif kind == "model_call":
            node.model_calls += 1
            node.tokens += event.usage.input_tokens + event.usage.output_tokens
            node.cost_usd += event.cost_usd or 0.0
            node.unpriced = node.unpriced or event.cost_usd is None
        elif kind == "permission_requested":
            node.state = f"asking ({event.name})"
        elif kind == "permission_decided" and node.state.startswith("asking"):
            node.state = "working"

    @property
    def running(self) -> int:
        return sum(1 for n in self._nodes.values() if not n.state.startswith("done"))

    def __bool__(self) -> bool:
        return bool(self._nodes)

    def render(self) -> str:
        """The tree, one line per child: state, calls, tokens, cost."""
        done = len(self._nodes) - self.running
        lines = [f"subagents: {len(self._nodes)} started, {done} done, {self.running} running"]
        for i, node in enumerate(self._roots):
            self._draw(node, "", i == len(self._roots) - 1, lines)
        return "\n".join(lines)

    def _started(self, event: Any) -> None:
        node = _Node(event.child_session_id, event.description)
        self._nodes[node.session_id] = node
        parent = self._nodes.get(event.session_id)
        (parent.children if parent is not None else self._roots).append(node)

    def _finished(self, event: Any) -> None:
        node = self._nodes.get(event.child_session_id)
        if node is None:
            return
        node.state = f"done ({event.reason})"
        node.model_calls = event.model_calls
        node.tokens = event.usage.input_tokens + event.usage.output_tokens
        node.cost_usd = event.cost_usd
        node.unpriced = event.unpriced_calls > 0

    def _draw(self, node: _Node, indent: str, last: bool, lines: list[str]) -> None:
        cost = "unpriced" if node.unpriced and not node.cost_usd else f"${node.cost_usd:.4f}"
        # The description and the tool a child asks for come from models: shown revealed.
        lines.append(
            f"{indent}{'└─' if last else '├─'} {reveal(node.description, one_line=True)} [{node.session_id}] · "
            f"{reveal(node.state, one_line=True)} · {node.model_calls} calls · {node.tokens:,} tokens · {cost}"
        )
        for i, child in enumerate(node.children):
            self._draw(child, indent + ("   " if last else "│  "), i == len(node.children) - 1, lines)


class TreeWatch:
    """The current fan-out's tree, and the last one that finished."""

    def __init__(self) -> None:
        self.current = SubagentTree()
        self.last: SubagentTree | None = None

    def __call__(self, event: Any) -> SubagentTree | None:
        """Follow one event; the tree, when this event finished its fan-out."""
        self.current.observe(event)
        if getattr(event, "type", "") != "subagent_finished" or self.current.running:
            return None
        self.last, self.current = self.current, SubagentTree()  # the next fan-out is drawn on its own
        return self.last

    def render(self) -> str:
        """The fan-out under way, else the last one; or a line saying there was none."""
        if self.current:
            return self.current.render()
        return self.last.render() if self.last is not None else "no subagents have run in this session yet"
