"""Goals and the independent Judge.

A goal's condition enters the system prompt. After each natural end of a reply in
Default mode, a separate model call (its own ModelClient, no tools) sees only the
evidence since the goal was set and answers met / not met / error with a reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ValidationError

from agents.errors import ModelError
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.ports import ModelClient, ModelRequest
from agents.session import GoalState
from agents.sources import Section

__all__ = [
    "GoalState",
    "JudgeStep",
    "Verdict",
    "anchor_after_rewrite",
    "continue_input",
    "goal_section",
    "judge_goal",
    "judge_step",
    "render_evidence",
]

JUDGE_SYSTEM = (
    "You are an independent judge of a coding agent's work. You did not do the work and you "
    "owe the agent nothing. Decide from the evidence alone whether the goal's completion "
    "condition is met: a claim without a tool result that shows it is not evidence."
)
_EVIDENCE_MAX_CHARS = 60_000
_RESULT_MAX_CHARS = 2_000
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class Verdict(BaseModel):
    verdict: Literal["met", "not_met", "error"]
    reason: str = ""


def goal_section(goal: GoalState | None) -> Section | None:
    if goal is None or goal.status != "active":
        return None
    text = (
        f"{goal.condition}\n"
        "Work until this condition holds and show it with tool results (e.g. the exact test "
        "command and its output). An independent judge checks the evidence when you stop."
    )
    return Section("goal", "Goal", "goal (set by the user)", text)


def continue_input(goal: GoalState, reason: str) -> str:
    return (
        f"The goal is not met yet, according to the judge: {reason}\n"
        f"Continue working until this holds: {goal.condition}"
    )


def _clip(text: str, limit: int) -> str:
    return (
        text if len(text) <= limit else f"{text[: limit // 2]}\n[… {len(text) - limit} chars …]\n{text[-limit // 2 :]}"
    )


def render_evidence(messages: Sequence[Message]) -> str:
    """The conversation as a plain transcript; the newest part wins when it is long."""
    lines: list[str] = []
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock):
                lines.append(f"{message.role.upper()}: {block.text}")
            elif isinstance(block, ToolUseBlock):
                lines.append(f"TOOL CALL {block.name} {json.dumps(block.input, ensure_ascii=False)[:1_000]}")
            elif isinstance(block, ToolResultBlock):
                tag = "TOOL ERROR" if block.is_error else "TOOL RESULT"
                lines.append(f"{tag}: {_clip(block.content, _RESULT_MAX_CHARS)}")
    transcript = "\n".join(lines)
    return (
        transcript
        if len(transcript) <= _EVIDENCE_MAX_CHARS
        else "[… earlier evidence omitted …]\n" + transcript[-_EVIDENCE_MAX_CHARS:]
    )


def _judge_prompt(condition: str, evidence: str) -> str:
    return (
        f"Completion condition:\n{condition}\n\n"
        f"Evidence (everything since the goal was set):\n<evidence>\n{evidence}\n</evidence>\n\n"
        'Answer with one JSON object and nothing else: {"verdict": "met" | "not_met", "reason": "..."}'
    )


def parse_verdict(text: str) -> Verdict:
    match = _JSON_OBJECT.search(text)
    if match is None:
        return Verdict(verdict="error", reason=f"judge answered without a JSON verdict: {text[:200]!r}")
    try:
        verdict = Verdict.model_validate(json.loads(match.group(0)))
    except (json.JSONDecodeError, ValidationError):
        return Verdict(verdict="error", reason=f"judge answered an unreadable verdict: {match.group(0)[:200]!r}")
    return verdict


async def judge_goal(judge: ModelClient, condition: str, evidence: Sequence[Message]) -> Verdict:
    request = ModelRequest(
        system=JUDGE_SYSTEM,
        tools=(),
        messages=(Message.user(_judge_prompt(condition, render_evidence(evidence))),),
        max_tokens=1_024,
    )
    try:
        response = await judge.create(request)
    except ModelError as exc:
        return Verdict(verdict="error", reason=f"judge call failed: {type(exc).__name__}: {exc}")
    return parse_verdict(response.as_message().text)


@dataclass(frozen=True)
class JudgeStep:
    """What one judging means for the loop: go on with an input, stop, or (neither) done."""

    verdict: Verdict
    continue_with: str | None = None
    stop: Literal["judge_error", "goal_limit"] | None = None
    detail: str | None = None


async def judge_step(
    goal: GoalState, judge: ModelClient, conversation: Sequence[Message], *, max_auto_turns: int
) -> JudgeStep:
    """Judge the evidence since the goal was set and update the goal's state."""
    verdict = await judge_goal(judge, goal.condition, conversation[goal.since_index :])
    goal.last_reason = verdict.reason
    if verdict.verdict == "met":
        goal.status = "met"
        return JudgeStep(verdict)
    if verdict.verdict == "error":
        return JudgeStep(verdict, stop="judge_error", detail=verdict.reason)
    if goal.auto_turns >= max_auto_turns:
        detail = f"goal still not met after {goal.auto_turns} automatic continuations: {verdict.reason}"
        return JudgeStep(verdict, stop="goal_limit", detail=detail)
    goal.auto_turns += 1
    return JudgeStep(verdict, continue_with=continue_input(goal, verdict.reason))


def anchor_after_rewrite(since_index: int, before: Sequence[Message], after: Sequence[Message]) -> int:
    """Where the judge's evidence starts once the conversation was rewritten: the same
    first message if it survived, the start (the summary) if it was summarized away."""
    if since_index >= len(before):
        return len(after)
    anchor = before[since_index]
    return next((i for i, m in enumerate(after) if m is anchor), 0)
