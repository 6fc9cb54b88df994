"""Fan-out of parallel subagents vs one, with a scripted model of fixed latency.

    python -m benchmarks.fanout [--children 8] [--latency-ms 200] [--calls 3] [--ray]
    python -m benchmarks.fanout --budget [--children 8] [--calls 6] [--ray]

The root's first reply makes N Agent calls at once; each subagent makes `--calls`
model calls, every one sleeping `--latency-ms` (the scripted model's `sleep_ms`),
then answers. Compares the wall time of N children with that of 1 child: a ratio
near 1 means the children really ran concurrently — in-process (asyncio) by
default, or with `--ray` as SubagentActors of a SessionActor (after one warm-up
run, so actor start-up is reported separately from fan-out).

`--budget` measures the tree budget instead: the same fan-out runs once unlimited to
learn what it uses, then again with `subagents.tree_max_tokens` set so the budget runs
out about half-way through the children's work; it prints how far past the limit the
tree went, in tokens and in the tree's largest model calls (the design's bound is one
in-flight call per child).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import yaml

from agents.opening import OpenSpec, build_session
from agents.settings import load_settings


def write_script(path: Path, children: int, latency_ms: int, calls: int, rounds: int = 1) -> None:
    child_turns = [
        {"text": f"step {n}", "sleep_ms": latency_ms, "tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}
        for n in range(calls - 1)
    ]
    child_turns.append({"text": "child result", "sleep_ms": latency_ms})
    script = {
        "turns": [
            {
                "tool_calls": [
                    {"name": "Agent", "input": {"description": f"child {i}", "prompt": f"Investigate part {i}."}}
                    for i in range(children)
                ]
            },
            {"text": "All children reported."},
        ]
        * rounds,
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


async def tree_tokens(workspace: Path, children: int, calls: int, *, on_ray: bool, limit: int | None) -> list:
    """The fan-out's model_call events (every session's), run with a tree token limit."""
    from cluster.ray_run import open_remote_session

    script = workspace / f"fanout-budget-{children}-{limit}.yaml"
    write_script(script, children, 20, calls)
    overrides = {
        "model": f"scripted:{script}",
        "home": str(workspace / ".home"),
        "permissions": {"mode": "bypass"},
        "subagents": {"tree_max_tokens": limit},
    }
    settings = load_settings(workspace, overrides)
    events: list = []
    if on_ray:
        remote = await open_remote_session(OpenSpec(settings, workspace), emit=events.append, approver=None)
        await remote.run_turn("Fan out.")
    else:
        await build_session(settings, workspace, emit=events.append).run_turn("Fan out.")
    return [e for e in events if e.type == "model_call"]


def _total(calls: list) -> int:
    return sum(e.usage.input_tokens + e.usage.output_tokens for e in calls)


async def budget_overshoot(workspace: Path, children: int, calls: int, *, on_ray: bool) -> None:
    free = await tree_tokens(workspace, children, calls, on_ray=on_ray, limit=None)
    root_id = min((e.session_id for e in free), key=len)
    root_first = next(e for e in free if e.session_id == root_id)
    child_tokens = _total([e for e in free if e.session_id != root_id])
    limit = _total([root_first]) + child_tokens // 2
    limited = await tree_tokens(workspace, children, calls, on_ray=on_ray, limit=limit)
    used = _total(limited)
    largest = max(e.usage.input_tokens + e.usage.output_tokens for e in limited)
    over = max(used - limit, 0)
    where = "Ray actors" if on_ray else "in-process"
    print(f"tree of {children} parallel children x {calls} calls ({where}): unlimited {_total(free)} tokens")
    print(
        f"  tree_max_tokens {limit}: used {used} tokens in {len(limited)} calls, overshoot {over} tokens "
        f"= {over / largest:.2f} x the largest call ({largest} tokens); bound {children} calls "
        f"(one in flight per child)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=8)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--calls", type=int, help="model calls per child (default 3; 6 with --budget)")
    parser.add_argument("--ray", action="store_true", help="subagents as actors on the embedded Ray cluster")
    parser.add_argument("--budget", action="store_true", help="measure the tree budget's overshoot instead")
    args = parser.parse_args()
    if args.budget:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(budget_overshoot(Path(tmp), args.children, args.calls or 6, on_ray=args.ray))
        return
    args.calls = args.calls or 3
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
