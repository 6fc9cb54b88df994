"""What the loop does after a reply, by how the reply ended: the stop-reason contract.

    stop reason          next step                                   turn outcome
    end_turn, stop_seq.  natural end (the only one the goal judge sees)   end_turn
    tool_use             run the calls, then ask again
    pause_turn           ask again with the paused reply as it is; the
                         continuation joins the same assistant message
    max_tokens           continue: calls of the cut reply are answered with an
                         error (never run: their input may be cut too), a cut text
                         is followed by a request to go on; after
                         `agent.max_truncated_replies` cut replies in a row the turn
                         ends 'truncated' (never a success, never judged)   truncated
    refusal              the provider's safety system stopped the reply: the reply
                         is taken out of the conversation (the API asks for the
                         refused turn to be removed before going on), the turn ends refusal

A tool call whose arguments were not a JSON object runs as an error result the model
can fix (agents.session._tool_calls); that is part of the tool step, not a stop reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agents.messages import ToolResultBlock, ToolUseBlock
from agents.ports import ModelResponse

__all__ = ["CONTINUE_CUT_REPLY", "NextStep", "cut_call_result", "next_step_for"]

CONTINUE_CUT_REPLY = (
    "Your last reply was cut off at the output token limit. Continue exactly where it stopped; "
    "if you were writing a large file or tool input, split it into smaller steps."
)

StepKind = Literal["run_tools", "natural_end", "continue_cut", "resume_paused", "truncated", "refused"]


@dataclass(frozen=True)
class NextStep:
    kind: StepKind
    detail: str | None = None
    results: tuple[ToolResultBlock, ...] = ()  # answers for calls that must not run
    follow_up: str | None = None  # a user input to add before asking again


def cut_call_result(use: ToolUseBlock) -> ToolResultBlock:
    return ToolResultBlock(
        tool_use_id=use.id,
        is_error=True,
        content=(
            f"Not run: your reply was cut off at the output token limit while or after making this "
            f"{use.name} call, so its input may be incomplete. Make the call again, smaller if it was large."
        ),
    )


def next_step_for(response: ModelResponse, *, cut_in_a_row: int, max_cut_in_a_row: int) -> NextStep:
    """The step after `response`; `cut_in_a_row` counts the cut replies just before it."""
    uses = [b for b in response.content if isinstance(b, ToolUseBlock)]
    reason = response.stop_reason
    if reason == "refusal":
        why = f": {response.stop_details}" if response.stop_details else ""
        return NextStep("refused", detail=f"the provider refused to continue{why}; the refused reply was not kept")
    if reason == "pause_turn":
        return NextStep("resume_paused")
    if reason == "max_tokens":
        results = tuple(cut_call_result(u) for u in uses)
        if cut_in_a_row >= max_cut_in_a_row:
            detail = f"the reply was cut off at the output token limit {cut_in_a_row + 1} times in a row"
            return NextStep("truncated", detail=detail, results=results)
        return NextStep("continue_cut", results=results, follow_up=None if uses else CONTINUE_CUT_REPLY)
    if uses:
        return NextStep("run_tools")
    return NextStep("natural_end")
