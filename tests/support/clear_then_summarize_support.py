"""What the clear-then-summarize tests share, on top of the compaction fakes in tests/support/fakes.py
(their counter, model, overhead and FakeSummarizer): the strategy's recent-history settings,
a conversation of Bash calls with mixed-script result bodies, and running the strategy on it."""

import random

from agents.compaction import ClearThenSummarize, CompactionEnv, CompactionRequest
from agents.compaction.clearing import clear_old_tool_results
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.tokens import estimate_messages_tokens
from tests.support.fakes import (
    COMPACTION_COUNTER,
    COMPACTION_MODEL,
    COMPACTION_OVERHEAD,
    compaction_env,
    compaction_request,
)

COUNTER = COMPACTION_COUNTER
MODEL = COMPACTION_MODEL
OVERHEAD = COMPACTION_OVERHEAD
KEEP = 12  # preserve_recent_messages
KEEP_TOOLS = 3  # preserve_recent_tool_uses


def strategy_env(summarizer=None, artifacts=None, **overrides) -> CompactionEnv:
    """compaction_env with the recent history these tests keep (KEEP messages, KEEP_TOOLS tool uses)."""
    recent = {"preserve_recent_messages": KEEP, "preserve_recent_tool_uses": KEEP_TOOLS}
    return compaction_env(summarizer, artifacts, **(recent | overrides))


def result_body(k: int, chars: int) -> str:
    rng = random.Random(k)
    words = [
        "alpha",
        "β-beta",
        "gamma",
        "δέλτα",
        "ε",
        "🐍",
        "tests/test_x.py::test_y",
        "exit code: 1",
    ]
    out = []
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(words))
    return " ".join(out)[:chars]


def bash_conversation(pairs: int = 20, body_chars: int = 2_000) -> list[Message]:
    """user task, then `pairs` of (assistant text + tool_use, user tool_result); 1 + 2*pairs messages."""
    messages = [Message.user("Make the parser accept empty input.")]
    for k in range(pairs):
        messages.append(
            Message.assistant(
                TextBlock(text=f"Step {k}."),
                ToolUseBlock(id=f"toolu_{k:02d}", name="Bash", input={"command": f"pytest -k {k}"}),
            )
        )
        messages.append(
            Message.tool_results([ToolResultBlock(tool_use_id=f"toolu_{k:02d}", content=result_body(k, body_chars))])
        )
    return messages


def messages_tokens(messages) -> int:
    return estimate_messages_tokens(COUNTER, messages)


def cleared_conversation(messages) -> list[Message]:
    return clear_old_tool_results(messages, keep_recent_messages=KEEP, keep_recent_tool_uses=KEEP_TOOLS).messages


def strategy_request(messages, budget, trigger="auto", overhead=OVERHEAD) -> CompactionRequest:
    return compaction_request(messages, budget, trigger, overhead=overhead)


def summary_budget(messages, keep=KEEP, extra=200) -> int:
    """A budget that the cleared conversation exceeds but summary + last `keep` fits."""
    budget = OVERHEAD + messages_tokens(messages[-keep:]) + extra
    assert OVERHEAD + messages_tokens(cleared_conversation(messages)) > budget
    return budget


async def run_clear_then_summarize(messages, budget, trigger="auto", env=None, overhead=OVERHEAD):
    env = env or strategy_env()
    return await ClearThenSummarize().compact(strategy_request(messages, budget, trigger, overhead), env), env
