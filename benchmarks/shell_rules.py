"""How the Bash permission reader treats real agents' commands, and how fast it is.

    python -m benchmarks.shell_rules [--traces /work/shared/traces] [--show 5]

Every command a recorded agent ran (a tool call with a `command` string, in any trace
format the loaders read) is read once as a permission rule would read it. Reported:
- how many are one simple command of literal words (what an allow rule can cover);
- how many are unknowable (a deny or ask rule on Bash then matches them: the cost of
  failing closed), with the most common reasons, and how many of those bash itself
  accepts (`bash -n`, which parses without running anything);
- how many a `deny: Bash(rm:*)` rule denies, split into lines that do run rm and lines
  denied only because they are unknowable;
- the time per read (median and p99, cache bypassed).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import time
from collections import Counter
from pathlib import Path

from agents.messages import ToolUseBlock
from agents.permissions import parse_rule, read_line
from benchmarks.traces import find_trace_files, load_trace_file


def trace_commands(root: Path) -> list[str]:
    commands = []
    for path in find_trace_files(root):
        try:
            traces = load_trace_file(path)
        except ValueError:
            continue
        for trace in traces:
            for message in trace.messages:
                for block in message.content:
                    if isinstance(block, ToolUseBlock) and isinstance(block.input.get("command"), str):
                        commands.append(block.input["command"])
    return commands


def _bash_accepts(command: str) -> bool:
    """Whether bash parses `command` (-n: read commands, execute none)."""
    bash = shutil.which("bash")
    if bash is None:
        return False
    proc = subprocess.run([bash, "-n", "-c", command], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    return proc.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=Path("/work/shared/traces"))
    parser.add_argument("--show", type=int, default=5, help="how many reasons and examples to print")
    args = parser.parse_args(argv)
    commands = trace_commands(args.traces)
    if not commands:
        print(f"no commands found under {args.traces}")
        return 1
    pattern = parse_rule("Bash(rm:*)", "deny").command
    assert pattern is not None  # a Bash rule with a command pattern
    reasons: Counter[str] = Counter()
    simple = denied = runs_rm = bash_parses = 0
    samples = []
    for command in commands:
        started = time.perf_counter()
        line = read_line.__wrapped__(command)  # uncached: every read is timed
        samples.append((time.perf_counter() - started) * 1e6)
        simple += line.simple is not None
        if line.unknowable:
            reasons[line.unknowable] += 1
            bash_parses += _bash_accepts(command)
        if pattern.catches(line):
            denied += 1
            runs_rm += pattern.names(line, literally=True)
    n = len(commands)
    unknowable = sum(reasons.values())
    print(f"{n} commands from {args.traces}")
    print(f"simple (an allow rule can cover them): {simple} ({simple / n:.1%})")
    print(f"unknowable (a Bash deny/ask rule matches them): {unknowable} ({unknowable / n:.1%})")
    for why, count in reasons.most_common(args.show):
        print(f"  {count:5d}  {why}")
    print(f"  of which bash -n accepts {bash_parses} (the rest are not bash at all)")
    print(
        f"deny Bash(rm:*): {denied} denied, {runs_rm} of them run rm literally, {denied - runs_rm} only by failing closed"
    )
    samples.sort()
    print(
        f"read time: median {statistics.median(samples):.0f} us, p99 {samples[int(0.99 * (n - 1))]:.0f} us, max {samples[-1]:.0f} us"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
