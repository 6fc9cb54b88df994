"""What the bubblewrap sandbox adds to one Bash call, in milliseconds.

    python -m benchmarks.sandbox_overhead [--calls 100] [--warmup 5] [--command true]
                                          [--harness-mb 160] [--gap-ms 100] [--merge-calls 5]
                                          [--merge-dir /var/tmp]

Four series of the same trivial command, the plain and the sandboxed call of each path
taking turns (so that a machine whose speed drifts slows both alike):
- raw:  subprocess.run(["bash", "-c", CMD]) against subprocess.run of a BubblewrapRunner launch
  (per call: its cgroup, idmapped workspace, workspace layer, seccomp filter, view);
- Bash: BashTool with PlainCommandRunner against BashTool with BubblewrapRunner.
Each reports median and p90 ms per call, and the CPU ms per call of this process and its
children together (the mean; on a loaded machine a call's wall time is mostly waiting
for a CPU, its CPU time is not). The sandbox's cost is the difference of the medians
(the target is at most 20 ms). `--harness-mb` makes this process as large as a harness
(touched memory it keeps), since what it costs to start a process can grow with the
size of the one that starts it. `--gap-ms` pauses between calls (untimed), as a model's
turn does: some kernel costs show only then (moving a process through cgroup.procs waits
for an RCU grace period unless another move happened within the last one). The header
names the sandbox's launcher (the C build, or the slower Python one). Then what writing a call's layer back into the
workspace costs (the merge, timed alone, after the command ran): for 1,000 files of
1 KiB, and for one file of 200 MB, into a workspace on `--merge-dir`'s disk (a tmpfs
there shows the merge's own cost, without the disk's). Local processes only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tools import BashTool, ToolContext
from tools.base import CommandRunner, PlainCommandRunner
from tools.bash import BashInput
from tools.sandbox import BubblewrapRunner, SandboxWatch, launcher

TARGET_MS = 20.0


def percentile(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass
class Series:
    """One kind of call's wall times (ms) and CPU time (s, this process and its children)."""

    wall_ms: list[float] = field(default_factory=list)
    cpu_s: float = 0.0

    def time(self, call: Callable[[], None]) -> None:
        cpu, started = _cpu_seconds(), time.perf_counter()
        call()
        self.wall_ms.append((time.perf_counter() - started) * 1000)
        self.cpu_s += _cpu_seconds() - cpu

    @property
    def cpu_ms_per_call(self) -> float:
        return self.cpu_s * 1000 / len(self.wall_ms)


def time_pair(
    bare: Callable[[], None], boxed: Callable[[], None], calls: int, warmup: int, gap_s: float
) -> tuple[Series, Series]:
    """Both kinds of call, taking turns, `gap_s` apart."""
    for _ in range(warmup):
        bare()
        boxed()
    series = Series(), Series()
    for _ in range(calls):
        for one, call in zip(series, (bare, boxed), strict=True):
            time.sleep(gap_s)
            one.time(call)
    return series


def raw_call(runner: CommandRunner, command: str, workspace: Path) -> Callable[[], None]:
    """One launch per call (the sandbox's cgroup, idmapped mount, layer and filter are per
    call), run with subprocess.run; no polling of limits; the layer merged after."""

    def call() -> None:
        launch = runner.launch(command, workspace)
        if isinstance(launch.watch, SandboxWatch):
            launch.watch.run_unwatched()  # nothing polls it here
        try:
            subprocess.run(
                launch.argv,
                cwd=workspace,
                env=launch.env,
                pass_fds=launch.pass_fds,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                check=True,
            )
            if isinstance(launch.watch, SandboxWatch) and launch.watch.layer is not None:
                merge = launch.watch.layer.detach()
                if merge is not None:
                    merge()
        finally:
            if launch.watch is not None:
                launch.watch.close()

    return call


def bash_tool_call(loop: asyncio.Runner, runner: CommandRunner, command: str, workspace: Path) -> Callable[[], None]:
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
            launch.argv,
            cwd=workspace,
            env=launch.env,
            pass_fds=launch.pass_fds,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=True,
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


def harness_sized(megabytes: int) -> bytearray:
    """Memory this process keeps, every page touched (a harness holds about 160 MB)."""
    ballast = bytearray(megabytes * 1024**2)
    for offset in range(0, len(ballast), 4096):
        ballast[offset] = 1
    return ballast


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--command", default="true")
    parser.add_argument("--harness-mb", type=int, default=160, help="memory this process holds, as a harness would")
    parser.add_argument("--gap-ms", type=float, default=100, help="pause before each timed call (untimed)")
    parser.add_argument("--merge-calls", type=int, default=5)
    parser.add_argument("--merge-dir", default="/var/tmp", help="where the merge's workspaces are made (its disk)")
    args = parser.parse_args()

    ballast = harness_sized(args.harness_mb)
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
        build = "C" if sandbox.host().launcher == (launcher.BUILT,) else "Python"
        print(
            f"{args.calls} calls of {args.command!r} each (after {args.warmup} warm-up calls, {args.gap_ms:g} ms "
            f"apart), from a process holding {len(ballast) // 1024**2} MB more; the sandbox's {build} launcher; "
            f"load average {os.getloadavg()[0]:.1f}\n"
        )
        print(f"{'path':<16} {'runner':<12} {'median ms':>10} {'p90 ms':>8} {'CPU ms':>8}")
        added = {}
        for label, bare_call, sandboxed_call in pairs:
            bare, boxed = time_pair(bare_call, sandboxed_call, args.calls, args.warmup, args.gap_ms / 1000)
            for name, series in (("plain", bare), ("bubblewrap", boxed)):
                samples = series.wall_ms
                print(
                    f"{label:<16} {name:<12} {statistics.median(samples):>10.2f} {percentile(samples, 90):>8.2f} "
                    f"{series.cpu_ms_per_call:>8.2f}"
                )
            added[label] = (
                statistics.median(boxed.wall_ms) - statistics.median(bare.wall_ms),
                percentile(boxed.wall_ms, 90) - percentile(bare.wall_ms, 90),
                boxed.cpu_ms_per_call - bare.cpu_ms_per_call,
            )
        print(f"\n(load average {os.getloadavg()[0]:.1f} at the end)")
        for label, (median_ms, p90_ms, cpu_ms) in added.items():
            verdict = "ok" if median_ms <= TARGET_MS else "OVER"
            print(
                f"sandbox adds {median_ms:6.2f} ms/call median, {p90_ms:6.2f} ms p90, {cpu_ms:5.2f} ms CPU "
                f"({label}; target <= {TARGET_MS:g} ms: {verdict})"
            )
    if args.merge_calls:
        merge_costs(sandbox, args.merge_calls, args.merge_dir)


if __name__ == "__main__":
    main()
