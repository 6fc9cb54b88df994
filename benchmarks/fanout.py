"""Fan-out of parallel subagents vs one, with a scripted model of fixed latency.

    python -m benchmarks.fanout [--children 8] [--latency-ms 200] [--calls 3] [--ray]

The root's first reply makes N Agent calls at once; each subagent makes `--calls`
model calls, every one sleeping `--latency-ms` (the scripted model's `sleep_ms`),
then answers. Compares the wall time of N children with that of 1 child: a ratio
near 1 means the children really ran concurrently — in-process (asyncio) by
default, or with `--ray` as SubagentActors of a SessionActor (after one warm-up
run, so actor start-up is reported separately from fan-out).
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
from agents.lifecycle import OpenSpec


def write_script(path: Path, children: int, latency_ms: int, calls: int, rounds: int = 1) -> None:
    child_turns = [{"text": f"step {n}", "sleep_ms": latency_ms, "tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]} for n in range(calls - 1)]
    child_turns.append({"text": "child result", "sleep_ms": latency_ms})
    script = {
        "turns": [
            {"tool_calls": [{"name": "Agent", "input": {"description": f"child {i}", "prompt": f"Investigate part {i}."}} for i in range(children)]},
            {"text": "All children reported."},
        ] * rounds,
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


async def ray_wall_seconds(workspace: Path, children: int, latency_ms: int, calls: int) -> float:
    from agents.events import discard_events
    from cluster.ray_run import open_remote_session

    script = workspace / f"fanout-ray-{children}.yaml"
    write_script(script, children, latency_ms, calls, rounds=2)
    settings = load_settings(
        workspace, {"model": f"scripted:{script}", "home": str(workspace / ".home"), "permissions": {"mode": "bypass"}}
    )
    remote = await open_remote_session(OpenSpec(settings, workspace), emit=discard_events, approver=None)
    timings = []
    for _ in range(2):  # the first run also starts the subagent actors
        started = time.perf_counter()
        outcome = await remote.run_turn("Fan out.")
        timings.append(time.perf_counter() - started)
        assert outcome.reason == "end_turn", outcome
    print(f"  {children} on Ray: cold {timings[0] * 1000:.0f} ms, warm {timings[1] * 1000:.0f} ms")
    return timings[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=8)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--ray", action="store_true", help="subagents as actors on the embedded Ray cluster")
    args = parser.parse_args()
    measure = ray_wall_seconds if args.ray else wall_seconds
    with tempfile.TemporaryDirectory() as tmp:
        one = asyncio.run(measure(Path(tmp), 1, args.latency_ms, args.calls))
        many = asyncio.run(measure(Path(tmp), args.children, args.latency_ms, args.calls))
    where = "Ray actors, warm" if args.ray else "in-process"
    print(f"1 subagent:  {one * 1000:8.1f} ms")
    print(f"{args.children} subagents: {many * 1000:8.1f} ms")
    print(f"wall-time ratio {args.children}/1: {many / one:.2f}  ({where})")


if __name__ == "__main__":
    main()
