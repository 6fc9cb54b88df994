"""The tool calls of one assistant reply, from gate to results.

gate:   lookup in the full registry → input validation → mode check → permission.
        A call that needs the user's answer is asked inline (when an approver is
        given), parked (at the root), or denied (a child with no one to ask).
finish: run the allowed calls concurrently, clip each result to its budget (the
        full body goes to the record first), and append the results in call order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel

from agents.compaction import clip_tool_result
from agents.events import PermissionDecided, PermissionRequested, ToolCall, ToolResult
from agents.hooks import HookEvent
from agents.messages import Message, ToolResultBlock, ToolUseBlock
from agents.permissions import Decision
from agents.permissions.preview import change_preview
from agents.tool_calls import PreparedCall, error_result, execute_prepared, prepare_tool_call
from tools.base import ExecutionDomain

if TYPE_CHECKING:
    from agents.loop import Session

__all__ = ["Approver", "PendingBatch", "PermissionAnswer", "ToolBatchRunner"]


class PermissionAnswer(BaseModel):
    allow: bool
    always: bool = False


Approver = Callable[[PermissionRequested], Awaitable[PermissionAnswer]]


@dataclass
class PendingBatch:
    """One reply's tool calls while their permissions are being settled."""

    order: list[str]
    results: dict[str, ToolResultBlock] = field(default_factory=dict)
    allowed: list[PreparedCall] = field(default_factory=list)
    asks: list[PreparedCall] = field(default_factory=list)
    started: dict[str, float] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # why each parked call asks


def waves(calls: list[PreparedCall]) -> list[list[PreparedCall]]:
    """Split calls (in call order) into groups that may run at once. A call that changes
    the workspace (not read-only, local or sandboxed: Edit, Write, Bash) runs alone, so
    two edits of one file never race and a command sees the edits made before it;
    reads, subagents and remote tools between them run concurrently."""
    groups: list[list[PreparedCall]] = []
    shared: list[PreparedCall] = []
    for call in calls:
        tool = call.tool
        if not tool.is_read_only and tool.execution_domain in (ExecutionDomain.LOCAL, ExecutionDomain.SANDBOX):
            if shared:
                groups.append(shared)
                shared = []
            groups.append([call])
        else:
            shared.append(call)
    if shared:
        groups.append(shared)
    return groups


class ToolBatchRunner:
    def __init__(self, session: Session):
        self.session = session

    async def gate(self, uses: list[ToolUseBlock]) -> PendingBatch:
        s = self.session
        batch = PendingBatch(order=[u.id for u in uses], names={u.id: u.name for u in uses})
        for use in uses:
            s.emit(ToolCall(session_id=s.session_id, tool_use_id=use.id, name=use.name, input=use.input))
            batch.started[use.id] = time.perf_counter()
            prepared = prepare_tool_call(use, registry=s.ports.registry, mode=s.mode)
            if isinstance(prepared, ToolResultBlock):
                self._settle(batch, prepared)
                continue
            decision = s.ports.permissions.decide(prepared.tool, prepared.args, s.ports.tool_context.workspace)
            self._announce(prepared, decision)
            if decision.effect == "ask":
                decision = await self._ask(prepared, decision)
            if decision.effect == "allow":
                batch.allowed.append(prepared)
            elif decision.effect == "deny":
                self._settle(batch, error_result(use, f"Permission denied: {decision.reason}. The call did not run."))
            else:
                batch.asks.append(prepared)
                batch.reasons[use.id] = decision.reason
        if batch.asks:
            self._request(batch.asks[0], batch.reasons[batch.asks[0].use.id])
        return batch

    async def answer(self, batch: PendingBatch, *, allow: bool, always: bool) -> bool:
        """Apply the user's answer to the first parked call; True while more are waiting."""
        s = self.session
        call = batch.asks.pop(0)
        decision = s.ports.permissions.answer(call.tool, call.args, s.ports.tool_context.workspace, allow=allow, always=always)
        self._announce(call, decision)
        if allow:
            batch.allowed.append(call)
        else:
            self._settle(batch, error_result(call.use, "Permission denied by the user. The call did not run."))
        if batch.asks:
            self._request(batch.asks[0], batch.reasons.get(batch.asks[0].use.id, "needs approval"))
            return True
        return False

    async def finish(self, batch: PendingBatch) -> None:
        """PreToolUse hooks (in call order) may still block an allowed call; the rest run in
        call order, concurrently where that is safe (see `waves`); PostToolUse hooks see
        each full result before it is clipped."""
        s = self.session
        ctx = s.ports.tool_context
        allowed = sorted(batch.allowed, key=lambda c: batch.order.index(c.use.id))
        runnable = [c for c in allowed if await self._pre_tool_use(batch, c)]
        for wave in waves(runnable):
            outputs = await asyncio.gather(*(execute_prepared(c, executor=s.ports.executor, ctx=ctx) for c in wave))
            for call, result in zip(wave, outputs, strict=True):
                await self._post_tool_use(call, result)
                self._settle(batch, self._clip_to_budget(result))
        s.conversation.append(Message.tool_results(batch.results[i] for i in batch.order))

    async def _pre_tool_use(self, batch: PendingBatch, call: PreparedCall) -> bool:
        s = self.session
        if s.ports.hooks is None:
            return True
        payload = {"session_id": s.session_id, "tool_name": call.tool.name, "tool_input": call.use.input}
        outcome = await s.notify_hooks(HookEvent.PRE_TOOL_USE, payload, tool_name=call.tool.name)
        if outcome is not None and outcome.block:
            self._settle(batch, error_result(call.use, f"Blocked by a PreToolUse hook: {outcome.reason}. The call did not run."))
            return False
        return True

    async def _post_tool_use(self, call: PreparedCall, result: ToolResultBlock) -> None:
        s = self.session
        if s.ports.hooks is None:
            return
        payload = {
            "session_id": s.session_id,
            "tool_name": call.tool.name,
            "tool_input": call.use.input,
            "tool_result": result.content,
            "is_error": result.is_error,
        }
        await s.notify_hooks(HookEvent.POST_TOOL_USE, payload, tool_name=call.tool.name)

    # -- helpers ----------------------------------------------------------------------

    async def _ask(self, call: PreparedCall, decision: Decision) -> Decision:
        s = self.session
        if s.ports.approver is not None:
            request = self._request(call, decision.reason)
            answer = await s.ports.approver(request)
            answered = s.ports.permissions.answer(
                call.tool, call.args, s.ports.tool_context.workspace, allow=answer.allow, always=answer.always
            )
            self._announce(call, answered)
            return answered
        if s.ports.is_child:
            denied = Decision("deny", "headless", f"{call.tool.name} needs approval and this subagent has no one to ask")
            s.ports.permissions.record(call.tool, call.args, s.ports.tool_context.workspace, denied)
            self._announce(call, denied)
            return denied
        return decision  # the root parks it

    def current_request(self, batch: PendingBatch) -> PermissionRequested:
        """The question for the first parked call (what a caller shows the user)."""
        call = batch.asks[0]
        return self._request_for(call, batch.reasons.get(call.use.id, "needs approval"))

    def _request_for(self, call: PreparedCall, reason: str) -> PermissionRequested:
        s = self.session
        return PermissionRequested(
            session_id=s.session_id,
            tool_use_id=call.use.id,
            name=call.use.name,
            input=call.use.input,
            reason=reason,
            preview=change_preview(call.args, s.ports.tool_context.workspace),
        )

    def _request(self, call: PreparedCall, reason: str) -> PermissionRequested:
        request = self._request_for(call, reason)
        self.session.emit(request)
        return request

    def _announce(self, call: PreparedCall, decision: Decision) -> None:
        s = self.session
        s.emit(
            PermissionDecided(
                session_id=s.session_id,
                tool_use_id=call.use.id,
                name=call.tool.name,
                effect=decision.effect,
                source=decision.source,
                reason=decision.reason,
                rule=decision.rule,
            )
        )

    def _settle(self, batch: PendingBatch, result: ToolResultBlock) -> None:
        s = self.session
        batch.results[result.tool_use_id] = result
        started = batch.started.get(result.tool_use_id, time.perf_counter())
        s.emit(
            ToolResult(
                session_id=s.session_id,
                tool_use_id=result.tool_use_id,
                name=batch.names.get(result.tool_use_id, ""),
                is_error=result.is_error,
                content=result.content,
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        )

    def _clip_to_budget(self, result: ToolResultBlock) -> ToolResultBlock:
        """Per-result budget at entry; the full body goes to the record first."""
        s = self.session
        clipped = clip_tool_result(
            result.content, max_tokens=s.settings.result_max_tokens, recall_id=result.tool_use_id, counter=s.ports.counter
        )
        if clipped is None:
            return result
        if s.ports.artifacts is not None:
            s.ports.artifacts.put(result.tool_use_id, result.content)
        return ToolResultBlock(
            tool_use_id=result.tool_use_id, content=clipped.content, is_error=result.is_error, marker=clipped.marker
        )
