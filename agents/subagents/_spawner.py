"""Subagents in one process: the in-process SubagentSpawner and the run of one child.

A child is assembled from its parent's blueprint by the same function as the root
(`agents.opening._blueprint.assemble` with a ChildSpec: a NEW conversation holding only the
prompt, depth + 1, root-only tools removed, the call's tool_filter, a forked
PermissionRuntime that denies without asking what the user refused above it, its own
budget, no snapshots). Only its final text returns, as one tool result, with
references to the evidence it gathered (agents.subagents._evidence).
The same run happens inside a Ray actor in cluster/, behind the same port.
"""

from __future__ import annotations

from agents.errors import ModelError
from agents.events import SubagentFinished, SubagentStarted
from agents.opening import ChildSpec, SessionBlueprint, assemble
from agents.ports import SubagentRequest, SubagentResult
from agents.session import Session
from agents.sources import HookEvent
from agents.subagents._budgets import Budget, ScopeLimits
from agents.subagents._evidence import gather_evidence
from agents.subagents._tool import AgentInput, AgentTool, child_registry
from tools.base import ToolError

__all__ = [
    "AgentInput",
    "AgentTool",
    "InProcessSpawner",
    "SessionBlueprint",
    "child_limits",
    "child_registry",
    "in_process_spawners",
    "run_child",
]


class InProcessSpawner:
    """The SubagentSpawner port in one process: the child loop runs as a coroutine."""

    def __init__(self, blueprint: SessionBlueprint, *, parent_id: str, parent_budget: Budget):
        self.blueprint = blueprint
        self.parent_id = parent_id
        self.parent_budget = parent_budget

    async def spawn(self, request: SubagentRequest) -> SubagentResult:
        child_id = f"{self.parent_id}.{next(self.blueprint._ids)}"
        budget = await self.parent_budget.child(child_id, child_limits(self.blueprint, request))
        return await run_child(self.blueprint, request, parent_id=self.parent_id, child_id=child_id, budget=budget)


def in_process_spawners(bp: SessionBlueprint, parent_id: str, parent_budget: Budget) -> InProcessSpawner:
    """The blueprint's spawner factory in one process."""
    return InProcessSpawner(bp, parent_id=parent_id, parent_budget=parent_budget)


def child_limits(bp: SessionBlueprint, request: SubagentRequest) -> ScopeLimits:
    """A subagent's own budget (`subagents.max_*`), under its parent's in the tree's ledger."""
    limits = bp.subagents
    return ScopeLimits(
        label=f"subagent '{request.description}'", max_tokens=limits.max_tokens, max_cost_usd=limits.max_cost_usd
    )


async def run_child(
    bp: SessionBlueprint, request: SubagentRequest, *, parent_id: str, child_id: str, budget: Budget
) -> SubagentResult:
    """Build, run and report one child, charging `budget` (its scope, already opened in the
    tree's ledger); only its final text (or why it failed) returns."""
    try:
        child = assemble(bp, ChildSpec(request, child_id, budget))
    except ToolError as exc:
        return SubagentResult(text=str(exc), is_error=True, reason="error", session_id=child_id)
    parent_path = list(request.path[:-1])
    bp.emit(
        SubagentStarted(
            session_id=parent_id,
            child_session_id=child_id,
            description=request.description,
            depth=request.depth,
            path=parent_path,
            child_path=list(request.path),
        )
    )
    result = await _run_child(child, request)
    if bp.hooks is not None:
        stop = {
            "session_id": parent_id,
            "child_session_id": child_id,
            "description": request.description,
            "reason": result.reason,
        }
        await child.notify_hooks(HookEvent.SUBAGENT_STOP, stop)
    bp.emit(
        SubagentFinished(
            session_id=parent_id,
            child_session_id=child_id,
            description=request.description,
            reason=result.reason,
            is_error=result.is_error,
            usage=result.usage,
            cost_usd=result.cost_usd,
            model_calls=result.model_calls,
            unpriced_calls=result.unpriced_calls,
            path=parent_path,
            child_path=list(request.path),
            evidence=list(result.evidence),
        )
    )
    return result


async def _run_child(child: Session, request: SubagentRequest) -> SubagentResult:
    def result(text: str, reason: str, is_error: bool) -> SubagentResult:
        store = child.kit.artifacts
        evidence, records = gather_evidence(child.conversation, store.get if store is not None else lambda _id: None)
        return SubagentResult(
            text=text,
            evidence=evidence,
            records=records,
            is_error=is_error,
            reason=reason,
            usage=child.usage,
            cost_usd=child.cost_usd,
            unpriced_calls=child.unpriced_calls,
            model_calls=child.model_calls,
            session_id=child.session_id,
        )

    try:
        outcome = await child.run_turn(request.prompt)
    except ModelError as exc:
        return result(f"Subagent '{request.description}' failed: {type(exc).__name__}: {exc}", "error", True)
    if outcome.reason == "end_turn":
        return result(outcome.final_text or "(the subagent finished without a final answer)", "end_turn", False)
    if outcome.reason == "permission_denied":  # it finished; its answer comes with what it could not do
        answer = outcome.final_text or "(the subagent finished without a final answer)"
        return result(f"{answer}\n\n(Subagent '{request.description}': {outcome.detail}.)", outcome.reason, False)
    last = f" Its last words: {outcome.final_text}" if outcome.final_text else ""
    why = {
        "turn_limit": f"stopped at its turn limit ({outcome.model_calls} model calls) before finishing.",
        "budget": f"was stopped by a budget: {outcome.detail}.",
        "truncated": f"stopped with its reply cut off ({outcome.detail}).",
        "refusal": f"was refused by the provider ({outcome.detail}).",
    }.get(outcome.reason, f"stopped early ({outcome.reason}: {outcome.detail}).")
    return result(f"Subagent '{request.description}' {why}{last}", outcome.reason, True)
