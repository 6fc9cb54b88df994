"""Harness overhead per turn with the scripted model, at several conversation sizes.

    python -m benchmarks.turn_overhead [--sizes 10 100 1000] [--repeats 50]

A turn here is one outer turn that ends in one model call with no tools: it measures
what Workingset itself adds (compile the working set, estimate tokens, call the port,
append, emit events), not model latency. Conversations are prefilled with realistic
tool interactions (a Read call and a ~2 KB result per pair).
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
from tools import LocalToolExecutor, ToolContext, default_registry

RESULT_BODY = "\n".join(f"{n:6d}\tdef function_{n}(x):  # a line of source" for n in range(50))


def prefilled_conversation(size: int) -> list[Message]:
    messages = [Message.user("Investigate the failing test.")]
    n = 0
    while len(messages) < size:
        use = ToolUseBlock(id=f"toolu_{n}", name="Read", input={"path": f"src/module_{n}.py"})
        messages.append(Message.assistant(TextBlock(text=f"Reading module {n}."), use))
        messages.append(Message.tool_results([ToolResultBlock(tool_use_id=use.id, content=RESULT_BODY)]))
        n += 1
    return messages[:size]


def make_session(workspace: Path, size: int) -> Session:
    ports = SessionPorts(
        model=ScriptedModelClient(Script(final_text="ok")),
        executor=LocalToolExecutor(),
    )
    kit = SessionKit(
        registry=default_registry(),
        tool_context=ToolContext(workspace=workspace),
    )
    session = Session(ports, kit, system_prompt="You are a coding agent.")
    session.conversation = prefilled_conversation(size)
    return session


async def median_turn_ms(workspace: Path, size: int, repeats: int) -> float:
    session = make_session(workspace, size)
    await session.run_turn("warm up")  # fills the per-message token cache once
    samples = []
    for _ in range(repeats):
        session.conversation = session.conversation[:size]
        started = time.perf_counter()
        await session.run_turn("next")
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'messages':>8}  {'median ms/turn':>14}")
        for size in args.sizes:
            ms = asyncio.run(median_turn_ms(Path(tmp), size, args.repeats))
            print(f"{size:>8}  {ms:>14.3f}")


if __name__ == "__main__":
    main()
