"""Fan-out of parallel subagents vs one, with a scripted model of fixed latency.

    python -m benchmarks.fanout [--children 8] [--latency-ms 200] [--calls 3]

The root's first reply makes N Agent calls at once; each subagent makes `--calls`
model calls, every one sleeping `--latency-ms` (the scripted model's `sleep_ms`),
then answers. Compares the wall time of N children with that of 1 child: a ratio
near 1 means the children really ran concurrently (in-process, asyncio).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import yaml

from agents.assembly import build_session
from agents.config import load_settings


def write_script(path: Path, children: int, latency_ms: int, calls: int) -> None:
    child_turns = [{"text": f"step {n}", "sleep_ms": latency_ms, "tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]} for n in range(calls - 1)]
    child_turns.append({"text": "child result", "sleep_ms": latency_ms})
    script = {
        "turns": [
            {"tool_calls": [{"name": "Agent", "input": {"description": f"child {i}", "prompt": f"Investigate part {i}."}} for i in range(children)]},
            {"text": "All children reported."},
        ],
        "subagents": {f"child {i}": {"turns": child_turns} for i in range(children)},
    }
    path.write_text(yaml.safe_dump(script))


async def wall_seconds(workspace: Path, children: int, latency_ms: int, calls: int) -> float:
    script = workspace / f"fanout-{children}.yaml"
    write_script(script, children, latency_ms, calls)
    settings = load_settings(
        workspace, {"model": f"scripted:{script}", "home": str(workspace / ".home"), "permissions": {"mode": "bypass"}}
    )
    session = build_session(settings, workspace)
    started = time.perf_counter()
    outcome = await session.run_turn("Fan out.")
    elapsed = time.perf_counter() - started
    assert outcome.reason == "end_turn", outcome
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=8)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one = asyncio.run(wall_seconds(Path(tmp), 1, args.latency_ms, args.calls))
        many = asyncio.run(wall_seconds(Path(tmp), args.children, args.latency_ms, args.calls))
    print(f"1 subagent:  {one * 1000:8.1f} ms")
    print(f"{args.children} subagents: {many * 1000:8.1f} ms")
    print(f"wall-time ratio {args.children}/1: {many / one:.2f}  (in-process)")


if __name__ == "__main__":
    main()
