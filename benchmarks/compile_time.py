"""Compile time of the working set at several conversation sizes.

    python -m benchmarks.compile_time [--sizes 100 1000 5000] [--samples 200]

Each sample appends one tool interaction (as a turn would) and compiles the next
request with the default strategy (`current`) under a budget the
conversation fits, so the figure is the per-turn cost of compiling, including the
incremental token estimate and the strategy's check. Reports p50 per size and the
ratio p50(1000)/p50(100): near 1 means the compile is incremental, not O(history).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.providers import Script, ScriptedModelClient
from agents.session import Session, SessionKit, SessionPorts
from agents.settings import CompactSettings, SessionSettings
from benchmarks.turn_overhead import RESULT_BODY, prefilled_conversation
from tools import LocalToolExecutor, ToolContext, default_registry


def _interaction(n: int) -> list[Message]:
    use = ToolUseBlock(id=f"toolu_new_{n}", name="Read", input={"path": f"src/new_{n}.py"})
    return [
        Message.assistant(TextBlock(text=f"Reading {n}."), use),
        Message.tool_results([ToolResultBlock(tool_use_id=use.id, content=RESULT_BODY)]),
    ]


async def compile_p50_ms(workspace: Path, size: int, samples: int) -> float:
    settings = SessionSettings(compact=CompactSettings(context_window=100_000_000))
    ports = SessionPorts(
        model=ScriptedModelClient(Script()),
        executor=LocalToolExecutor(),
    )
    kit = SessionKit(
        registry=default_registry(),
        tool_context=ToolContext(workspace=workspace),
    )
    session = Session(ports, kit, system_prompt="You are a coding agent.", settings=settings)
    session.conversation = prefilled_conversation(size)
    await session.compile_working_set()  # first compile pays for the whole history once
    timings = []
    for n in range(samples):
        session.conversation.extend(_interaction(n))
        started = time.perf_counter()
        await session.compile_working_set()
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'messages':>8}  {'compile p50 ms':>14}")
        for size in args.sizes:
            results[size] = asyncio.run(compile_p50_ms(Path(tmp), size, args.samples))
            print(f"{size:>8}  {results[size]:>14.3f}")
    if 100 in results and 1000 in results:
        print(f"ratio p50(1000)/p50(100): {results[1000] / results[100]:.2f}")


if __name__ == "__main__":
    main()
