"""The tool calls of one assistant reply, from gate to results.

gate:   lookup in the full registry → input validation → mode check → permission.
        A call that needs the user's answer is asked inline (when an approver is
        given), parked (at the root), or denied (a child with no one to ask).
finish: run the allowed calls concurrently, clip each result to its budget (the
        full body goes to the record first), and append the results in call order,
        followed by the instructions of subdirectories a file tool reached for the
        first time (agents.sources._nested_instructions).
        The state is saved before each wave that can change something (which calls
        are starting) and after the batch, so a resumed session never runs such a call
        twice (`agents.snapshots._persistence`); a batch cut short (the user interrupted the turn)
        is closed with results saying which calls may have run.

A batch is a PendingState (calls named by tool_use id; parked, it is the state's
`pending`); each call is prepared from the reply that made it (the last message)
where it is decided and again where it runs. The runner works on the session's
SessionState with its ports and kit; it knows nothing of the Session that drives it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from agents.compaction import clip_tool_result
from agents.events import Notice, PermissionDecided, PermissionRequested, ToolCall, ToolResult
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.permissions import PATH_TOOLS, Decision, change_preview, permission_subject
from agents.session._kit import Approver, PermissionAnswer, SessionKit, SessionPorts, notify_hooks
from agents.session._state import PendingState, SessionState
from agents.session._tool_calls import (
    PreparedCall,
    error_result,
    execute_prepared,
    interrupted_result,
    prepare_parked,
    prepare_tool_call,
)
from agents.sources import HookEvent, ToldDirectories, nested_instructions
from tools.base import ExecutionDomain

__all__ = ["Approver", "PermissionAnswer", "ToolBatchRunner", "waves"]

TURN_CANCELLED = "the turn was cancelled"


def _cut_short_by(exc: BaseException) -> str:
    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
        return TURN_CANCELLED
    return f"the tool batch failed ({type(exc).__name__}: {exc})"


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
    """Gate, answer and finish the tool calls of a reply, over a state and its ports."""

    def __init__(
        self,
        state: SessionState,
        ports: SessionPorts,
        kit: SessionKit,
        *,
        result_max_tokens: int,
        checkpoint: Callable[[], Awaitable[object]] | None = None,
    ):
        self.state = state
        self.ports = ports
        self.kit = kit
        self.result_max_tokens = result_max_tokens
        self.checkpoint = checkpoint  # saves the state (a snapshot) before each wave and after the batch
        self._reached: list[str] = []  # paths the file tools of this batch reached
        self._noted: set[str] = set()  # instruction problems already told the user
        self._told = ToldDirectories()  # the directories whose instructions the conversation told

    async def gate(self, uses: list[ToolUseBlock]) -> PendingState:
        kit = self.kit
        batch = PendingState(order=[u.id for u in uses])
        for use in uses:
            kit.emit(ToolCall(session_id=self.state.session_id, tool_use_id=use.id, name=use.name, input=use.input))
            batch.started[use.id] = time.perf_counter()
            prepared = prepare_tool_call(use, registry=kit.registry, mode=self.state.mode)
            if isinstance(prepared, ToolResultBlock):
                self._settle(batch, prepared, use.name)
                continue
            decision = kit.permissions.decide(prepared.tool, prepared.args, kit.tool_context.workspace)
            self._announce(prepared, decision)
            if decision.effect == "ask":
                decision = await self._ask(prepared, decision)
            if decision.effect == "allow":
                batch.allowed.append(use.id)
            elif decision.effect == "deny":
                if decision.source == "headless":  # the turn's outcome says so (agents.session._loop)
                    self.state.unanswered.append(use.name)
                self._settle(
                    batch, error_result(use, f"Permission denied: {decision.reason}. The call did not run."), use.name
                )
            else:
                batch.asks.append(use.id)
                batch.reasons[use.id] = decision.reason
        self._request_first(batch)
        return batch

    async def answer(self, batch: PendingState, *, allow: bool, always: bool) -> bool:
        """Apply the user's answer to the first parked call; True while more are waiting."""
        call = self._prepared(batch.asks.pop(0), batch)
        if call is not None:
            kit = self.kit
            decision = kit.permissions.answer(
                call.tool, call.args, kit.tool_context.workspace, allow=allow, always=always
            )
            self._announce(call, decision)
            if allow:
                batch.allowed.append(call.use.id)
            else:
                self._settle(
                    batch, error_result(call.use, "Permission denied by the user. The call did not run."), call.use.name
                )
        return self._request_first(batch)

    async def finish(self, batch: PendingState) -> None:
        """PreToolUse hooks (in call order) may still block an allowed call; the rest run in
        call order, concurrently where that is safe (see `waves`); PostToolUse hooks see
        each full result before it is clipped."""
        prepared = (self._prepared(use_id, batch) for use_id in sorted(batch.allowed, key=batch.order.index))
        allowed = [call for call in prepared if call is not None]
        runnable = [c for c in allowed if await self._pre_tool_use(batch, c)]
        self.state.pending = batch  # while it runs, a save shows which calls are done and which started
        try:
            for wave in waves(runnable):
                await self._run_wave(batch, wave)
        except BaseException as exc:  # cancelled (the user interrupted the turn) or a bug: close the batch
            self._close(batch, by=_cut_short_by(exc))
            raise
        self.state.pending = None
        results = Message.tool_results(batch.results_in_order())
        told = self._nested_instructions()
        self.state.conversation.append(Message(role="user", content=(*results.content, *told)) if told else results)
        await self._save()

    def _nested_instructions(self) -> list[TextBlock]:
        """The instructions of subdirectories this batch's file tools reached first."""
        reached, self._reached = self._reached, []
        if not reached:
            return []
        told = self._told.of(self.state.conversation)
        blocks, problems = nested_instructions(self.kit.tool_context.workspace, reached, told)
        for problem in problems:
            if problem not in self._noted:
                self._noted.add(problem)
                self.kit.emit(Notice(session_id=self.state.session_id, text=problem))
        return blocks

    async def _run_wave(self, batch: PendingState, wave: list[PreparedCall]) -> None:
        # A wave that can change something is recorded as started first: killed while it
        # runs, a resume tells the model its outcome is unknown instead of running it again.
        # A wave of reads is not: run again after a kill, it repeats nothing.
        if any(not c.tool.is_read_only for c in wave):
            batch.running = [c.use.id for c in wave]
            await self._save()
        outputs = await asyncio.gather(
            *(execute_prepared(c, executor=self.ports.executor, ctx=self.kit.tool_context) for c in wave)
        )
        for call, result in zip(wave, outputs, strict=True):
            await self._post_tool_use(call, result)
            self._settle(batch, self._clip_to_budget(result), call.use.name)
            if call.tool.name in PATH_TOOLS and not result.is_error:
                subject = permission_subject(call.tool, call.args, self.kit.tool_context.workspace)
                if subject is not None:
                    self._reached.append(subject)
        batch.running = []

    def _close(self, batch: PendingState, *, by: str) -> None:
        """Close a batch the turn was cut off in: every call not settled gets a result
        saying whether it may have run, so the conversation stays protocol-complete and
        nothing is run again."""
        settled = {r.tool_use_id for r in batch.results}
        for use_id in batch.order:
            if use_id not in settled:
                self._settle(batch, interrupted_result(use_id, by=by, started=use_id in batch.running), "")
        batch.running = []
        self.state.pending = None
        self.state.conversation.append(Message.tool_results(batch.results_in_order()))

    async def _save(self) -> None:
        if self.checkpoint is not None:
            await self.checkpoint()

    def current_request(self, batch: PendingState | None) -> PermissionRequested:
        """The question for the first parked call (what a caller shows the user)."""
        assert batch is not None and batch.asks, "no call is parked"
        use_id = batch.asks[0]
        call = self._prepared(use_id, batch)
        assert call is not None, "a parked call that cannot be prepared is settled, not asked"
        return self._request_for(call, batch.reasons.get(use_id, "needs approval"))

    async def _pre_tool_use(self, batch: PendingState, call: PreparedCall) -> bool:
        if self.kit.hooks is None:
            return True
        sid = self.state.session_id
        payload = {"session_id": sid, "tool_name": call.tool.name, "tool_input": call.use.input}
        outcome = await notify_hooks(self.kit, sid, HookEvent.PRE_TOOL_USE, payload, tool_name=call.tool.name)
        if outcome is not None and outcome.block:
            blocked = error_result(call.use, f"Blocked by a PreToolUse hook: {outcome.reason}. The call did not run.")
            self._settle(batch, blocked, call.use.name)
            return False
        return True

    async def _post_tool_use(self, call: PreparedCall, result: ToolResultBlock) -> None:
        if self.kit.hooks is None:
            return
        sid = self.state.session_id
        payload = {
            "session_id": sid,
            "tool_name": call.tool.name,
            "tool_input": call.use.input,
            "tool_result": result.content,
            "is_error": result.is_error,
        }
        await notify_hooks(self.kit, sid, HookEvent.POST_TOOL_USE, payload, tool_name=call.tool.name)

    # -- helpers ----------------------------------------------------------------------

    def _prepared(self, use_id: str, batch: PendingState) -> PreparedCall | None:
        """A call of the batch prepared from the reply; one that cannot be any more (its
        reply or tool is gone) is settled with the error that says why."""
        prepared = prepare_parked(self.state.conversation, use_id, registry=self.kit.registry, mode=self.state.mode)
        if isinstance(prepared, ToolResultBlock):
            self._settle(batch, prepared, "")
            return None
        return prepared

    def _request_first(self, batch: PendingState) -> bool:
        """Ask about the first parked call, if there is one; True when there was."""
        if not batch.asks:
            return False
        call = self._prepared(batch.asks[0], batch)
        if call is not None:
            self._request(call, batch.reasons.get(call.use.id, "needs approval"))
        return True

    async def _ask(self, call: PreparedCall, decision: Decision) -> Decision:
        kit = self.kit
        if kit.approver is not None:
            request = self._request(call, decision.reason)
            answer = await kit.approver(request)
            answered = kit.permissions.answer(
                call.tool, call.args, kit.tool_context.workspace, allow=answer.allow, always=answer.always
            )
            self._announce(call, answered)
            return answered
        if kit.is_child:
            denied = Decision(
                "deny", "headless", f"{call.tool.name} needs approval and this subagent has no one to ask"
            )
            kit.permissions.record(call.tool, call.args, kit.tool_context.workspace, denied)
            self._announce(call, denied)
            return denied
        return decision  # the root parks it

    def _request_for(self, call: PreparedCall, reason: str) -> PermissionRequested:
        return PermissionRequested(
            session_id=self.state.session_id,
            tool_use_id=call.use.id,
            name=call.use.name,
            input=call.use.input,
            reason=reason,
            preview=change_preview(call.args, self.kit.tool_context.workspace),
            path=list(self.kit.path),  # a subagent's question names it
        )

    def _request(self, call: PreparedCall, reason: str) -> PermissionRequested:
        request = self._request_for(call, reason)
        self.kit.emit(request)
        return request

    def _announce(self, call: PreparedCall, decision: Decision) -> None:
        self.kit.emit(
            PermissionDecided(
                session_id=self.state.session_id,
                tool_use_id=call.use.id,
                name=call.tool.name,
                effect=decision.effect,
                source=decision.source,
                reason=decision.reason,
                rule=decision.rule,
            )
        )

    def _settle(self, batch: PendingState, result: ToolResultBlock, name: str) -> None:
        batch.settle(result)
        started = batch.started.get(result.tool_use_id, time.perf_counter())
        self.kit.emit(
            ToolResult(
                session_id=self.state.session_id,
                tool_use_id=result.tool_use_id,
                name=name,
                is_error=result.is_error,
                content=result.content,
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        )

    def _clip_to_budget(self, result: ToolResultBlock) -> ToolResultBlock:
        """Per-result budget at entry; the full body goes to the record first."""
        clipped = clip_tool_result(
            result.content, max_tokens=self.result_max_tokens, recall_id=result.tool_use_id, counter=self.kit.counter
        )
        if clipped is None:
            return result
        if self.kit.artifacts is not None:
            self.kit.artifacts.put(result.tool_use_id, result.content)
        return ToolResultBlock(
            tool_use_id=result.tool_use_id, content=clipped.content, is_error=result.is_error, marker=clipped.marker
        )
