"""A snapshot is a copy of the session's state; a resume copies a loaded one back.

`snapshot_of` copies the state and stamps it with the environment it was taken in
(workspace, git head, model, settings and permission fingerprints, the tree budget's
figures). `restored_state` takes the conversation and control state from a snapshot
into the environment the session was just built for: permission grants come back
only when the rules they were given under are unchanged (the calls the user refused,
which the session's children deny, always come back); a parked call is prepared
again and, under changed rules, decided again; a call that could change something and
was running when the version was saved mid-batch is never run again: its result says
it may or may not have taken effect (a read runs again, and so does an Edit whose file
shows it was not made; one whose file shows it was made is settled as done). Notices
say what changed.
"""

from __future__ import annotations

import functools
import time

from agents.errors import ConfigError
from agents.messages import ToolResultBlock
from agents.permissions import PermissionRuntime, RefusedCalls, Rule
from agents.session import (
    PendingState,
    PermissionState,
    SessionKit,
    SessionState,
    error_result,
    git_head,
    interrupted_result,
    lost_call_result,
    parked_use,
    prepare_tool_call,
    settings_fingerprint,
)
from agents.settings import SessionSettings
from agents.subagents import TreeLedger
from tools.base import DiskEffectTool

__all__ = ["SESSION_LOST", "permission_fingerprint", "restored_state", "settings_print", "snapshot_of"]

SESSION_LOST = "the session was lost"


def permission_fingerprint(runtime: PermissionRuntime) -> str:
    return _permission_fingerprint(
        runtime.mode.value, runtime.headless, tuple((r.effect, r.text) for r in runtime.rules)
    )


@functools.lru_cache(maxsize=256)
def _permission_fingerprint(mode: str, headless: str | None, rules: tuple[tuple[str, str], ...]) -> str:
    # Every snapshot carries it; the configuration behind it seldom changes.
    return settings_fingerprint({"mode": mode, "headless": headless, "rules": [list(rule) for rule in rules]})


def settings_print(settings: SessionSettings) -> str:
    """The fingerprint of a session's settings that its snapshots carry."""
    return settings_fingerprint(settings.model_dump(mode="json"))


def snapshot_of(state: SessionState, kit: SessionKit, *, model: str, fingerprint: str, reason: str) -> SessionState:
    """The state as a snapshot stores it: a copy, stamped with where it was taken
    (`fingerprint`: the session's `settings_print`)."""
    workspace = kit.tool_context.workspace
    runtime = kit.permissions
    budget = kit.budget
    return state.copy_state(
        cwd=str(workspace),
        git_head=git_head(workspace),
        model=model,
        settings_fingerprint=fingerprint,
        saved_at=time.time(),
        reason=reason,
        permissions=PermissionState(
            config_fingerprint=permission_fingerprint(runtime),
            grants=[(g.tool, g.pattern) for g in runtime.grants],
            refused=sorted(runtime.refusals.calls, key=lambda call: (call[0], call[1] or "")),
        ),
        tree_tokens=budget.tokens if budget else 0,
        tree_cost_usd=budget.cost_usd if budget else 0.0,
    )


def restored_state(
    saved: SessionState, kit: SessionKit, *, session_id: str, model: str
) -> tuple[SessionState, list[str]]:
    """The state to continue from `saved` in this environment, and notices saying what
    could not come back as it was. Grants and the tree budget's figures go back into
    the kit's permission runtime and budget."""
    here = str(kit.tool_context.workspace)
    if saved.cwd != here:
        raise ConfigError(
            f"session {saved.session_id} belongs to workspace {saved.cwd}, not {here}; resume it with --cwd {saved.cwd}"
        )
    notices: list[str] = []
    if saved.model != model:
        notices.append(f"the session was saved with model {saved.model}; it continues with {model}")
    if kit.budget is not None and isinstance(kit.budget.ledger, TreeLedger):  # a root's: in its own process
        kit.budget.ledger.restore(kit.budget.scope_id, saved.tree_tokens, saved.tree_cost_usd)
    state = saved.copy_state(session_id=session_id, model=model, start_source="resume")
    compatible = _restore_answers(kit.permissions, saved, notices)
    state.pending = _restore_pending(state, kit, compatible, notices)
    return state, notices


def _restore_answers(runtime: PermissionRuntime, state: SessionState, notices: list[str]) -> bool:
    """The user's answers back into `runtime`: refusals always, grants when the rules are
    unchanged (returned: whether they are)."""
    saved = state.permissions
    if saved is None:
        return True
    runtime.refusals = RefusedCalls(calls=frozenset(saved.refused))
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


def _restore_pending(state: SessionState, kit: SessionKit, compatible: bool, notices: list[str]) -> PendingState | None:
    saved = state.pending
    if saved is None:
        return None
    pending = PendingState(order=saved.order, results=list(saved.results), reasons=saved.reasons)
    again = _settle_running(state, saved, pending, kit, notices)
    settled = {r.tool_use_id for r in pending.results}
    for use_id in [*saved.allowed, *saved.asks]:
        if use_id in settled:  # ran (or was blocked) before the version was saved
            continue
        use = parked_use(state.conversation, use_id)
        if use is None:
            pending.settle(lost_call_result(use_id))
            continue
        prepared = prepare_tool_call(use, registry=kit.registry, mode=state.mode)
        if isinstance(prepared, ToolResultBlock):
            notices.append(f"the parked call {use.name} cannot run any more: {prepared.content}")
            pending.settle(prepared)
            continue
        if compatible or use_id in again:
            (pending.asks if use_id in saved.asks else pending.allowed).append(use_id)
            continue
        decision = kit.permissions.decide(prepared.tool, prepared.args, kit.tool_context.workspace)
        if decision.effect == "deny":
            pending.settle(error_result(use, f"Permission denied: {decision.reason}. The call did not run."))
        else:
            (pending.asks if decision.effect == "ask" else pending.allowed).append(use_id)
        notices.append(f"the parked call {use.name} was decided again under the current rules: {decision.effect}")
    return pending


def _settle_running(
    state: SessionState, saved: PendingState, pending: PendingState, kit: SessionKit, notices: list[str]
) -> set[str]:
    """Settle the calls that were running when the version was saved: one that could
    have changed something is never run again (its result says its outcome is unknown);
    a read runs again. Returns the reads (allowed already, they are not decided again)."""
    again: set[str] = set()
    settled = {r.tool_use_id for r in saved.results}
    for use_id in saved.running:
        if use_id in settled:
            continue
        use = parked_use(state.conversation, use_id)
        if use is not None and use.name in kit.registry and kit.registry.get(use.name).is_read_only:
            again.add(use_id)
            continue
        seen = _effect_on_disk(kit, use) if use is not None else None
        name = use.name if use is not None else use_id
        if seen is False:
            # Left unsettled, it is run as a parked call: decided again if the rules changed.
            notices.append(
                f"the call {name} was running when the session was lost; its change is not in the file, so it runs now"
            )
        elif seen:
            notices.append(
                f"the call {name} was running when the session was lost; its change is in the file, "
                "so it is not run again"
            )
            pending.settle(
                ToolResultBlock(
                    tool_use_id=use_id,
                    content="This call had taken effect when the session "
                    "was lost (its change is in the file); it was not run again.",
                )
            )
        else:
            notices.append(
                f"the call {name} was running when the session was lost; it is not run again, and its "
                "result tells the model its outcome is unknown"
            )
            pending.settle(interrupted_result(use_id, by=SESSION_LOST, started=True))
    return again


def _effect_on_disk(kit: SessionKit, use) -> bool | None:
    """Whether an interrupted call's change is on disk, for a tool that can tell (Edit:
    its file is replaced atomically); None for every other."""
    if use.name not in kit.registry:
        return None
    tool = kit.registry.get(use.name)
    if not isinstance(tool, DiskEffectTool):
        return None
    try:
        args = tool.input_model.model_validate(use.input)
    except ValueError:
        return None
    return tool.effect_on_disk(args, kit.tool_context)
