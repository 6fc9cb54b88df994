"""What the bubblewrap sandbox adds to one Bash call, in milliseconds.

    python -m benchmarks.sandbox_overhead [--calls 100] [--warmup 5] [--command true]
                                          [--merge-calls 5] [--merge-dir /var/tmp]

Four series of the same trivial command, run one call after another:
- raw:  subprocess.run(["bash", "-c", CMD]) against subprocess.run of a BubblewrapRunner launch
  (per call: its cgroup, idmapped workspace, workspace layer, seccomp filter, view);
- Bash: BashTool with PlainCommandRunner against BashTool with BubblewrapRunner.
Each reports median and p90 ms per call; the sandbox's cost is the difference of the
medians (the target is at most 20 ms). Then what writing a call's layer back into the
workspace costs (the merge, timed alone, after the command ran): for 1,000 files of
1 KiB, and for one file of 200 MB, into a workspace on `--merge-dir`'s disk (a tmpfs
there shows the merge's own cost, without the disk's). Local processes only.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tools import BashTool, ToolContext
from tools.base import CommandRunner, PlainCommandRunner
from tools.bash import BashInput
from tools.sandbox import BubblewrapRunner
from tools.sandbox.watch import SandboxWatch

TARGET_MS = 20.0


def percentile(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def time_calls(call: Callable[[], None], calls: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def raw_call(runner: CommandRunner, command: str, workspace: Path) -> Callable[[], None]:
    """One launch per call (the sandbox's cgroup, idmapped mount, layer and filter are per
    call), run with subprocess.run; no polling of limits; the layer merged after."""

    def call() -> None:
        launch = runner.launch(command, workspace)
        if isinstance(launch.watch, SandboxWatch):
            launch.watch.run_unwatched()  # nothing polls it here
        try:
            subprocess.run(
                launch.argv, cwd=workspace, env=launch.env, pass_fds=launch.pass_fds,
                preexec_fn=launch.preexec_fn, stdin=subprocess.DEVNULL, capture_output=True, check=True,
            )
            if isinstance(launch.watch, SandboxWatch) and launch.watch.layer is not None:
                merge = launch.watch.layer.detach()
                if merge is not None:
                    merge()
        finally:
            if launch.watch is not None:
                launch.watch.close()

    return call


def bash_tool_call(
    loop: asyncio.Runner, runner: CommandRunner, command: str, workspace: Path
) -> Callable[[], None]:
    ctx = ToolContext(workspace=workspace, runner=runner)
    args = BashInput(command=command)
    tool = BashTool()

    def call() -> None:
        out = loop.run(tool.run(args, ctx))
        if out.is_error or not out.content.endswith("exit code: 0"):
            raise RuntimeError(f"Bash failed: {out.content}")

    return call


MERGE_CASES = {
    "1,000 files of 1 KiB": "for i in $(seq 1000); do head -c 1024 /dev/urandom > f$i; done",
    "one file of 200 MB": "head -c 200M /dev/urandom > big",
}


def merge_ms(runner: BubblewrapRunner, command: str, workspace: Path) -> float:
    """Run `command` in the sandbox, then time the merge of its layer alone."""
    launch = runner.launch(command, workspace)
    assert isinstance(launch.watch, SandboxWatch) and launch.watch.layer is not None
    launch.watch.run_unwatched()
    try:
        subprocess.run(
            launch.argv, cwd=workspace, env=launch.env, pass_fds=launch.pass_fds,
            preexec_fn=launch.preexec_fn, stdin=subprocess.DEVNULL, capture_output=True, check=True,
        )
        merge = launch.watch.layer.detach()
        assert merge is not None
        started = time.perf_counter()
        report = merge()
        elapsed = (time.perf_counter() - started) * 1000
        if report.failed:
            raise RuntimeError(f"the merge failed: {report.failures}")
        return elapsed
    finally:
        launch.watch.close()


def merge_costs(runner: BubblewrapRunner, calls: int, directory: str) -> None:
    print(f"\nmerge of a call's layer into a workspace in {directory} ({calls} calls each)")
    print(f"{'written':<22} {'median ms':>10} {'max ms':>8}")
    for label, command in MERGE_CASES.items():
        samples = []
        for _ in range(calls):
            with tempfile.TemporaryDirectory(dir=directory) as tmp:
                workspace = Path(tmp).resolve()
                samples.append(merge_ms(runner, command, workspace))
        print(f"{label:<22} {statistics.median(samples):>10.1f} {max(samples):>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--command", default="true")
    parser.add_argument("--merge-calls", type=int, default=5)
    parser.add_argument("--merge-dir", default="/var/tmp", help="where the merge's workspaces are made (its disk)")
    args = parser.parse_args()

    plain, sandbox = PlainCommandRunner(), BubblewrapRunner()
    with tempfile.TemporaryDirectory() as tmp, asyncio.Runner() as loop:
        workspace = Path(tmp).resolve()
        pairs = [
            ("raw subprocess", raw_call(plain, args.command, workspace), raw_call(sandbox, args.command, workspace)),
            (
                "BashTool",
                bash_tool_call(loop, plain, args.command, workspace),
                bash_tool_call(loop, sandbox, args.command, workspace),
            ),
        ]
        print(f"{args.calls} calls of {args.command!r} each (after {args.warmup} warm-up calls)\n")
        print(f"{'path':<16} {'runner':<12} {'median ms':>10} {'p90 ms':>8}")
        added = {}
        for label, bare_call, sandboxed_call in pairs:
            bare = time_calls(bare_call, args.calls, args.warmup)
            boxed = time_calls(sandboxed_call, args.calls, args.warmup)
            for name, samples in (("plain", bare), ("bubblewrap", boxed)):
                print(f"{label:<16} {name:<12} {statistics.median(samples):>10.2f} {percentile(samples, 90):>8.2f}")
            added[label] = (
                statistics.median(boxed) - statistics.median(bare),
                percentile(boxed, 90) - percentile(bare, 90),
            )
        print()
        for label, (median_ms, p90_ms) in added.items():
            verdict = "ok" if median_ms <= TARGET_MS else "OVER"
            print(
                f"sandbox adds {median_ms:6.2f} ms/call median, {p90_ms:6.2f} ms p90 "
                f"({label}; target <= {TARGET_MS:g} ms: {verdict})"
            )
    if args.merge_calls:
        merge_costs(sandbox, args.merge_calls, args.merge_dir)


if __name__ == "__main__":
    main()
