"""Export a Session to a SessionState and restore one into a freshly built Session.

Restore takes the conversation and control state from the snapshot; everything the
environment provides (system prompt, tools, model) was already rebuilt when the
Session was built. Permission state comes back only when it is compatible with the
current configuration; otherwise it is re-decided and a notice says what changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.errors import ConfigError
from agents.messages import ToolResultBlock
from agents.modes import Mode
from agents.permissions import PermissionRuntime
from agents.permissions.rules import Rule
from agents.session_state import (
    PendingState,
    PermissionState,
    SessionState,
    git_head,
    settings_fingerprint,
)
from agents.tool_batch import PendingBatch
from agents.tool_calls import error_result, prepare_tool_call

if TYPE_CHECKING:
    from agents.loop import Session

__all__ = ["export_state", "permission_fingerprint", "restore_state"]


def permission_fingerprint(runtime: PermissionRuntime) -> str:
    return settings_fingerprint(
        {"mode": runtime.mode.value, "headless": runtime.headless, "rules": [(r.effect, r.text) for r in runtime.rules]}
    )


def _pending_state(batch: PendingBatch | None) -> PendingState | None:
    if batch is None:
        return None
    return PendingState(
        order=batch.order,
        results=list(batch.results.values()),
        allowed=[c.use.id for c in batch.allowed],
        asks=[c.use.id for c in batch.asks],
        reasons=batch.reasons,
    )


def export_state(session: Session, reason: str) -> SessionState:
    budget = session.ports.budget
    runtime = session.ports.permissions
    return SessionState(
        session_id=session.session_id,
        cwd=str(session.ports.tool_context.workspace),
        git_head=git_head(session.ports.tool_context.workspace),
        model=session.ports.model.name,
        settings_fingerprint=settings_fingerprint(session.settings.model_dump(mode="json")),
        reason=reason,
        conversation=list(session.conversation),
        mode=session.mode.value,
        goal=session.goal.model_copy() if session.goal else None,
        pending=_pending_state(session.pending),
        permissions=PermissionState(
            config_fingerprint=permission_fingerprint(runtime), grants=[(g.tool, g.pattern) for g in runtime.grants]
        ),
        usage=session.usage,
        model_calls=session.model_calls,
        turn_calls=session._turn_calls,
        final_text=session._final_text,
        tree_tokens=budget.tokens if budget else 0,
        tree_cost_usd=budget.cost_usd if budget else 0.0,
    )


def restore_state(session: Session, state: SessionState) -> list[str]:
    """Load `state` into `session` (built for the current environment); returns notices."""
    here = str(session.ports.tool_context.workspace)
    if state.cwd != here:
        raise ConfigError(
            f"session {state.session_id} belongs to workspace {state.cwd}, not {here}; "
            f"resume it with --cwd {state.cwd}"
        )
    notices: list[str] = []
    session.conversation = list(state.conversation)
    session.usage = state.usage
    session.model_calls = state.model_calls
    session._turn_calls = state.turn_calls
    session._final_text = state.final_text
    if session.ports.budget is not None:
        session.ports.budget.tokens, session.ports.budget.cost_usd = state.tree_tokens, state.tree_cost_usd
    session.set_mode(Mode(state.mode), announce=False)
    session.goal = None
    if state.goal is not None:
        session.set_goal(state.goal.condition)
        session.goal = state.goal.model_copy()
        if session.goal.status != "active":  # a met goal has left the system prompt
            session.prompt = session.prompt.replace(None, "goal")
    if state.model != session.ports.model.name:
        notices.append(f"the session was saved with model {state.model}; it continues with {session.ports.model.name}")
    compatible = _restore_grants(session, state, notices)
    session.pending = _restore_pending(session, state.pending, compatible, notices)
    return notices


def _restore_grants(session: Session, state: SessionState, notices: list[str]) -> bool:
    runtime = session.ports.permissions
    saved = state.permissions
    if saved is None:
        return True
    if saved.config_fingerprint == permission_fingerprint(runtime):
        runtime.grants = [
            Rule("allow", tool, subject, f"{tool}({subject})" if subject is not None else tool, exact=True)
            for tool, subject in saved.grants
        ]
        return True
    if saved.grants:
        dropped = ", ".join(f"{t}({s})" if s is not None else t for t, s in saved.grants)
        notices.append(f"permission rules changed since the snapshot; grants given then were dropped: {dropped}")
    return False


def _restore_pending(session: Session, saved: PendingState | None, compatible: bool, notices: list[str]) -> PendingBatch | None:
    if saved is None:
        return None
    last = session.conversation[-1] if session.conversation else None
    uses = {u.id: u for u in last.tool_uses} if last is not None and last.role == "assistant" else {}
    batch = PendingBatch(order=saved.order, names={i: uses[i].name for i in saved.order if i in uses}, reasons=saved.reasons)
    for result in saved.results:
        batch.results[result.tool_use_id] = result
    for use_id in [*saved.allowed, *saved.asks]:
        use = uses.get(use_id)
        if use is None:
            batch.results[use_id] = ToolResultBlock(tool_use_id=use_id, content="(the parked call was lost)", is_error=True)
            continue
        prepared = prepare_tool_call(use, registry=session.ports.registry, mode=session.mode)
        if isinstance(prepared, ToolResultBlock):
            notices.append(f"the parked call {use.name} cannot run any more: {prepared.content}")
            batch.results[use_id] = prepared
            continue
        if compatible:
            (batch.asks if use_id in saved.asks else batch.allowed).append(prepared)
            continue
        decision = session.ports.permissions.decide(prepared.tool, prepared.args, session.ports.tool_context.workspace)
        if decision.effect == "deny":
            batch.results[use_id] = error_result(use, f"Permission denied: {decision.reason}. The call did not run.")
        else:
            (batch.asks if decision.effect == "ask" else batch.allowed).append(prepared)
        notices.append(f"the parked call {use.name} was decided again under the current rules: {decision.effect}")
    return batch
