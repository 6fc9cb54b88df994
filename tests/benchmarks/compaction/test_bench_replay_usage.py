"""The replayed model reports usage as the measuring counter counts it, so the replayed
harness calibrates its count as it would live and compacts before the window, not after."""

from __future__ import annotations

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.tokens import CharRatioEstimator, estimate_request_tokens
from benchmarks.compaction.tokenizers import ScaledCounter
from benchmarks.replay import MAX_OUTPUT_TOKENS, replay_trace
from benchmarks.traces import Trace

WINDOW = 12_000
# A tokenizer 60% denser than chars/4 (Claude's is ~40% denser on these traces).
DENSE = ScaledCounter(CharRatioEstimator(), 1.6, "usage")


def _long_trace(turns: int = 30) -> Trace:
    messages = [Message.user("Read every part and fix the parser.")]
    for k in range(turns):
        use = ToolUseBlock(id=f"toolu_{k:02d}", name="bash", input={"command": f"cat src/part{k}.py"})
        messages += [
            Message.assistant(TextBlock(text=f"Reading part {k}."), use),
            Message.tool_results([ToolResultBlock(tool_use_id=use.id, content=f"def part{k}():\n" + "y = 1\n" * 250)]),
        ]
    messages.append(Message.assistant(TextBlock(text="Fixed.")))
    return Trace(source="hand", task_id="t-long", system="You fix bugs.", path="<hand>", messages=messages)


def _over_window(replay) -> list[int]:
    limit = WINDOW - MAX_OUTPUT_TOKENS
    counts = [
        estimate_request_tokens(DENSE, system=r.system, tools=r.tools, messages=r.messages) for r in replay.requests
    ]
    return [n for n in counts if n > limit]


async def test_with_usage_reported_the_default_never_sends_a_request_over_the_window_by_the_denser_count():
    replay = await replay_trace(_long_trace(), strategy="current", context_window=WINDOW, usage_counter=DENSE)
    assert replay.refused is None and replay.compactions
    assert _over_window(replay) == []


async def test_without_usage_the_estimator_alone_lets_requests_pass_the_window_by_the_denser_count():
    replay = await replay_trace(_long_trace(), strategy="current", context_window=WINDOW)
    assert _over_window(replay)


async def test_raw_replays_the_whole_recording_however_far_over_the_window():
    trace = _long_trace()
    replay = await replay_trace(trace, strategy="raw", context_window=WINDOW, usage_counter=DENSE)
    assert replay.refused is None and not replay.compactions
    assert len([i for i in replay.answered if i is not None]) == sum(1 for m in trace.messages if m.role == "assistant")
