"""What a model call costs the harness, beside mini-swe-agent and a bare loop.

    python -m benchmarks.per_call [--calls 500] [--rounds 3] [--loops workingset ray mini bare] [--sandbox]

Four loops do the same work (`benchmarks.per_call_loops`): one task of `--calls` replies
from the same fake model, each running one shell command (`wc -l notes.txt`), then one
reply that ends it. `workingset` is a session in one process, exactly as `workingset run`
builds it (snapshots after every tool batch included); `ray` is the same session on a
SessionActor of an embedded cluster (its Bash runs in that process, as every Bash call
whose workspace is on the session's node does: cluster.tool_tasks); `mini` is
mini-swe-agent's DefaultAgent with its LocalEnvironment and its test model
(`pip install -e '.[bench]'`);
`bare` is a plain asyncio loop (a list of dicts, a subprocess per command): the floor.
Workingset's Bash is a plain subprocess like the others' (`--sandbox`: in bubblewrap;
`benchmarks.sandbox_overhead` measures what that adds).

Each loop runs in a fresh process, after a warm-up run of its own; the loops of a round
run one after the other, in an order that rotates every round, so the rounds pair them
under the same load. CPU is the loop process's own (its threads, not the shell commands
it starts); on Ray, the whole process tree's less the shell commands. Reported, as the
median over rounds: CPU ms per call over calls 1–50 and over 51–N, the growth (51–N
over 1–50: 1.00 is flat), and the ratios to mini-swe-agent and to the bare loop (each
round's own ratio, then the median), and Ray over in process.

Aims: Workingset in process at most mini-swe-agent's per call at 50 and at N calls,
growth within 10 %; on Ray at most 1.5 × in process.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys

from benchmarks.cpu_tree import load_average
from benchmarks.per_call_loops import MARK, MINI_MISSING

LOOPS = ("workingset", "ray", "mini", "bare")


def run_loop(loop: str, calls: int, sandbox: bool) -> dict:
    command = [sys.executable, "-m", "benchmarks.per_call_loops", loop, "--calls", str(calls)]
    if sandbox:
        command.append("--sandbox")
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "MSWEA_SILENT_STARTUP": "1"})
    # Ray's driver may print its raylet's messages to stdout too: the result is the JSON line.
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"loop"')]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"the {loop} loop failed: {tail}")
    return json.loads(lines[-1])


def per_call_ms(result: dict) -> tuple[float, float]:
    """CPU ms per call over calls 1..MARK and MARK+1..N (the last span holds the final reply)."""
    early = result["cpu_50"] / MARK * 1000
    late = (result["cpu_total"] - result["cpu_50"]) / (result["calls"] - MARK) * 1000
    return early, late


def _mini_installed() -> bool:
    return importlib.util.find_spec("minisweagent") is not None  # not imported here: it prints a banner


def report(rounds: list[dict[str, dict]], calls: int) -> None:
    loops = [loop for loop in LOOPS if loop in rounds[0]]
    figures = {loop: [per_call_ms(r[loop]) for r in rounds] for loop in loops}

    def med(values: list[float]) -> float:
        return statistics.median(values)

    print(f"\nCPU ms per model call, median of {len(rounds)} paired rounds ({load_average()}):")
    print(f"{'loop':<12}{'calls 1-50':>12}{f'51-{calls}':>12}{'growth':>9}{'wall s':>9}")
    for loop in loops:
        early = med([e for e, _ in figures[loop]])
        late = med([lt for _, lt in figures[loop]])
        growth = med([lt / e for e, lt in figures[loop]])
        wall = med([r[loop]["wall"] for r in rounds])
        print(f"{loop:<12}{early:>12.2f}{late:>12.2f}{growth:>9.2f}{wall:>9.1f}")

    def ratio(a: str, b: str) -> str:
        if a not in figures or b not in figures:
            return ""
        early = med([fa[0] / fb[0] for fa, fb in zip(figures[a], figures[b], strict=True)])
        late = med([fa[1] / fb[1] for fa, fb in zip(figures[a], figures[b], strict=True)])
        return f"{a} / {b}: {early:.2f} (calls 1-50)  {late:.2f} (51-{calls})"

    print("\nratios, each round's own, median:")
    for a, b in (("workingset", "mini"), ("workingset", "bare"), ("ray", "workingset"), ("mini", "bare")):
        line = ratio(a, b)
        if line:
            print("  " + line)
    if "ray" in figures:
        parts = [r["ray"].get("parts", {}) for r in rounds]
        names = sorted({name for p in parts for name in p}, key=lambda name: -med([p.get(name, 0.0) for p in parts]))
        shares = ", ".join(f"{name} {med([p.get(name, 0.0) for p in parts]):.2f}" for name in names)
        print(f"\non Ray, CPU ms per call by process (all calls, median): {shares}")
    if "workingset" in figures:
        print("\naims: workingset / mini <= 1.00 at both spans, workingset growth <= 1.10, ray / workingset <= 1.50")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help=f"replies that run a command (more than {MARK})")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds (each runs every loop once)")
    parser.add_argument("--loops", nargs="+", choices=LOOPS, default=list(LOOPS))
    parser.add_argument("--sandbox", action="store_true", help="Workingset's Bash in bubblewrap")
    args = parser.parse_args()
    if args.calls <= MARK:
        parser.error(f"--calls must be more than {MARK}")
    loops = list(dict.fromkeys(args.loops))
    if "mini" in loops and not _mini_installed():
        raise SystemExit(MINI_MISSING)
    rounds: list[dict[str, dict]] = []
    for r in range(args.rounds):
        order = loops[r % len(loops) :] + loops[: r % len(loops)]
        results = {}
        for loop in order:
            results[loop] = run_loop(loop, args.calls, args.sandbox)
            early, late = per_call_ms(results[loop])
            print(
                f"round {r + 1}: {loop:<11} {early:6.2f} ms/call (1-50)  {late:6.2f} (51-{args.calls})  "
                f"wall {results[loop]['wall']:.1f} s",
                flush=True,
            )
        rounds.append(results)
    report(rounds, args.calls)


if __name__ == "__main__":
    main()
