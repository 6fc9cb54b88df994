"""What the clear-then-summarize tests share: tiny settings and budgets, a summarizer that
records its calls and refuses a runaway loop, a conversation of Bash calls with mixed-script
result bodies, and running the strategy on it."""

import random

from agents.compaction import ClearThenSummarize, CompactionEnv, CompactionRequest
from agents.compaction.clearing import clear_old_tool_results
from agents.config import CompactSettings, SummarizerSettings
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.tokens import CharRatioEstimator, estimate_messages_tokens

COUNTER = CharRatioEstimator()
MODEL = "claude-sonnet-4-5"
OVERHEAD = 300
KEEP = 12  # preserve_recent_messages
KEEP_TOOLS = 3  # preserve_recent_tool_uses


class BoundedSummarizer:
    """Records the messages it was given; answers `text`, raises `error`, and refuses to be
    called more than `max_calls` times (so a runaway loop fails instead of hanging)."""

    def __init__(
        self,
        text: str = "## Objective\nfix the parser",
        error: Exception | None = None,
        max_calls: int = 20,
    ):
        self.text = text
        self.error = error
        self.max_calls = max_calls
        self.calls: list[list[Message]] = []

    async def summarize(self, messages: list[Message], *, focus: str | None = None) -> str:
        self.calls.append(list(messages))
        if len(self.calls) > self.max_calls:
            raise RuntimeError(f"called more than {self.max_calls} times")
        if self.error is not None:
            raise self.error
        return self.text


def strategy_settings(**overrides) -> CompactSettings:
    values = {
        "min_gain_tokens": 0,
        "preserve_recent_messages": KEEP,
        "preserve_recent_tool_uses": KEEP_TOOLS,
        "manual_keep_messages": 2,
        "summary_reserve_tokens": 100,
    }
    return CompactSettings(**(values | overrides))


def strategy_env(summarizer=None, artifacts=None, **overrides) -> CompactionEnv:
    return CompactionEnv(
        counter=COUNTER,
        summarizer=summarizer or BoundedSummarizer(),
        artifacts=artifacts,
        settings=strategy_settings(**overrides),
        summarizer_settings=SummarizerSettings(),
        model_name=MODEL,
    )


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
            Message.tool_results(
                [ToolResultBlock(tool_use_id=f"toolu_{k:02d}", content=result_body(k, body_chars))]
            )
        )
    return messages


def messages_tokens(messages) -> int:
    return estimate_messages_tokens(COUNTER, messages)


def cleared_conversation(messages) -> list[Message]:
    return clear_old_tool_results(
        messages, keep_recent_messages=KEEP, keep_recent_tool_uses=KEEP_TOOLS
    ).messages


def strategy_request(messages, budget, trigger="auto", overhead=OVERHEAD) -> CompactionRequest:
    return CompactionRequest(
        messages=messages, overhead_tokens=overhead, budget_tokens=budget, trigger=trigger
    )


def summary_budget(messages, keep=KEEP, extra=200) -> int:
    """A budget that the cleared conversation exceeds but summary + last `keep` fits."""
    budget = OVERHEAD + messages_tokens(messages[-keep:]) + extra
    assert OVERHEAD + messages_tokens(cleared_conversation(messages)) > budget
    return budget


async def run_clear_then_summarize(messages, budget, trigger="auto", env=None, overhead=OVERHEAD):
    env = env or strategy_env()
    return await ClearThenSummarize().compact(
        strategy_request(messages, budget, trigger, overhead), env
    ), env
