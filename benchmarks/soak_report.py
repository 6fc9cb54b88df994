"""What a soak (`benchmarks.soak`) records between turns, and its report.

A sample after every outer turn: the process tree's CPU (`benchmarks.cpu_tree`, the
samplings' own CPU left out), the CPU and RSS of the process hosting the session, and
the sizes of the snapshot directory and of the session's own directory. The report
turns them into CPU per call by 200-call window, growth of memory and disk, and the
resume's figures.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from agents.compaction import CompactionEvent
from agents.events import ModelCall, SnapshotSaved
from benchmarks.cpu_tree import CpuSample, load_average, sample_tree

__all__ = ["AIM", "WINDOW", "Point", "Recorder", "Soaked", "Tally", "report"]

WINDOW = 200  # calls per reported window
AIM = 1.2  # the last window's CPU per call over the first's, at most


# -- what a run records --------------------------------------------------------------------


@dataclass
class Tally:
    """The session's events, counted as they arrive."""

    calls: int = 0
    compacted_at: list[int] = field(default_factory=list)  # call numbers whose request was compacted
    snapshots: int = 0
    failed_saves: int = 0

    def __call__(self, event: Any) -> None:
        if isinstance(event, ModelCall):
            self.calls += 1
        elif isinstance(event, CompactionEvent) and event.applied:
            if not self.compacted_at or self.compacted_at[-1] != self.calls + 1:
                self.compacted_at.append(self.calls + 1)
        elif isinstance(event, SnapshotSaved):
            self.snapshots += 1
            self.failed_saves += not event.saved


@dataclass(frozen=True)
class Point:
    calls: int
    wall: float  # perf_counter seconds
    cpu: CpuSample  # the tree's CPU so far, less the samplings' own
    host_cpu: float  # CPU seconds of the process hosting the session (less the samplings' own, when it is this one)
    host_rss: int
    snapshot_bytes: int
    session_bytes: int
    messages: int


def tree_bytes(path: Path) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except FileNotFoundError:
                continue  # a SQLite journal gone between the listing and the stat
    return total


class Recorder:
    """Samples between turns. Sampling walks the process tree and the directories; its
    CPU (on this thread) is measured and left out of the driver's."""

    def __init__(self, home: Path, host: Callable[[], psutil.Process]):
        self.home = home
        self.host = host
        self.points: list[Point] = []
        self.sampling_s = 0.0
        self.start = sample_tree()

    def sample(self, calls: int, session_id: str, messages: int) -> None:
        started, wall = time.thread_time(), time.perf_counter()
        cpu = (sample_tree() - self.start).less_driver(self.sampling_s)
        host = self.host()
        with host.oneshot():
            times, rss = host.cpu_times(), host.memory_info().rss
        host_cpu = times.user + times.system - (self.sampling_s if host.pid == os.getpid() else 0.0)
        point = Point(
            calls,
            wall,
            cpu,
            host_cpu,
            rss,
            tree_bytes(self.home / "snapshots"),
            tree_bytes(self.home / "sessions" / session_id),
            messages,
        )
        self.points.append(point)
        self.sampling_s += time.thread_time() - started


@dataclass
class Soaked:
    where: str
    points: list[Point]
    tally: Tally
    budget_tokens: int
    resume_wall_ms: float
    resume_cpu_ms: float
    resumed_messages: int
    saved_messages: int
    resumed_turn: str
    wall_s: float


# -- the report ----------------------------------------------------------------------------


def at_calls(points: list[Point], calls: int) -> Point:
    """The first sample at or after `calls` model calls."""
    return next((p for p in points if p.calls >= calls), points[-1])


@dataclass(frozen=True)
class Window:
    """CPU and wall time per model call between two samples."""

    a: Point
    b: Point
    points: list[Point]  # every sample from a to b

    @property
    def calls(self) -> int:
        return self.b.calls - self.a.calls

    @property
    def spent(self) -> CpuSample:
        return self.b.cpu - self.a.cpu

    def cpu_ms(self) -> float:
        return self.spent.total * 1000 / self.calls

    def host_ms(self) -> float:
        return (self.b.host_cpu - self.a.host_cpu) * 1000 / self.calls

    def wall_ms(self) -> float:
        return (self.b.wall - self.a.wall) * 1000 / self.calls

    def median_turn_ms(self) -> float:
        """The median turn's CPU per call: what a call costs in steady state, with neither
        a compaction's turn nor a turn slowed by a burst of load on the machine in it."""
        turns = [
            (q.cpu - p.cpu).total * 1000 / (q.calls - p.calls)
            for p, q in zip(self.points, self.points[1:], strict=False)
            if q.calls > p.calls
        ]
        return statistics.median(turns)


def window(points: list[Point], start: int, end: int) -> Window:
    a, b = at_calls(points, start), at_calls(points, end)
    return Window(a, b, [p for p in points if a.calls <= p.calls <= b.calls])


def split_text(spent: CpuSample, calls: int) -> str:
    kinds = [f"{k} {v * 1000 / calls:.2f}" for k, v in spent.seconds.items() if abs(v) > 1e-9]
    titles = [f"{t.removeprefix('ray::')} {v * 1000 / calls:.2f}" for t, v in spent.by_title().items() if v > 1e-9]
    return ", ".join(kinds) + (f" (workers: {', '.join(titles[:3])})" if titles else "")


def report_cpu(points: list[Point]) -> None:
    total = points[-1].calls
    print(f"{'calls':>11} {'CPU ms/call':>11} {'median':>6} {'host':>6} {'wall':>6}  tree's CPU by kind (ms/call)")
    for start in range(0, total, WINDOW):
        w = window(points, start, min(start + WINDOW, total))
        print(
            f"{w.a.calls:>5}-{w.b.calls:<5} {w.cpu_ms():>11.2f} {w.median_turn_ms():>6.2f} {w.host_ms():>6.2f} "
            f"{w.wall_ms():>6.1f}  {split_text(w.spent, w.calls)}"
        )
    first, last = window(points, 0, WINDOW), window(points, total - WINDOW, total)
    ratio = last.cpu_ms() / first.cpu_ms()
    print(
        f"CPU per call: first {WINDOW} {first.cpu_ms():.2f} ms, last {WINDOW} {last.cpu_ms():.2f} ms: {ratio:.2f}x "
        f"(aim <= {AIM}x: {'met' if ratio <= AIM else 'MISSED'}); median turn {first.median_turn_ms():.2f} -> "
        f"{last.median_turn_ms():.2f} ms: {last.median_turn_ms() / first.median_turn_ms():.2f}x; host process "
        f"{first.host_ms():.2f} -> {last.host_ms():.2f} ms: {last.host_ms() / first.host_ms():.2f}x"
    )


def report_growth(points: list[Point]) -> None:
    mb, last = 1e6, points[-1]
    marks = sorted(
        {
            at_calls(points, c).calls
            for c in (0, WINDOW, last.calls // 4, last.calls // 2, 3 * last.calls // 4, last.calls)
        }
    )
    print(f"{'calls':>11} {'host RSS MB':>11} {'snapshots MB':>12} {'session dir MB':>14}")
    for c in marks:
        p = at_calls(points, c)
        print(f"{p.calls:>11} {p.host_rss / mb:>11.1f} {p.snapshot_bytes / mb:>12.2f} {p.session_bytes / mb:>14.2f}")
    half = at_calls(points, last.calls // 2)
    early = [p for p in points if p.calls <= half.calls]
    late = [p for p in points if p.calls >= half.calls]
    peak = max(p.host_rss for p in points)
    grew = max(p.host_rss for p in late) / max(p.host_rss for p in early) - 1
    print(
        f"host RSS: peak {peak / mb:.1f} MB; second half's peak {grew * 100:+.1f} % over the first half's "
        f"({'plateaus' if grew < 0.05 else 'still growing'})"
    )
    snap_half, snap_peak = max(p.snapshot_bytes for p in early), max(p.snapshot_bytes for p in points)
    print(
        f"snapshot dir: peak {snap_peak / mb:.2f} MB, {snap_half / mb:.2f} MB by the half "
        f"({'bounded' if snap_peak <= 1.25 * snap_half else 'still growing'})"
    )


def report(run: Soaked) -> None:
    points, tally = run.points, run.tally
    gaps = [b - a for a, b in zip(tally.compacted_at, tally.compacted_at[1:], strict=False)]
    print(
        f"\n== {run.where}: {points[-1].calls} model calls in {len(points) - 1} turns, {run.wall_s:.0f} s wall; "
        f"{load_average()}"
    )
    every = f", one every {sum(gaps) / len(gaps):.0f} calls" if gaps else ""
    print(
        f"compactions: {len(tally.compacted_at)} (budget {run.budget_tokens} tokens{every}); "
        f"conversation {min(p.messages for p in points[1:])}..{max(p.messages for p in points)} messages; "
        f"{tally.snapshots} snapshots saved ({tally.failed_saves} failed)"
    )
    report_cpu(points)
    report_growth(points)
    print(
        f"resume: {run.resume_wall_ms:.0f} ms wall, {run.resume_cpu_ms:.0f} ms CPU; "
        f"{run.resumed_messages} messages restored of {run.saved_messages} saved; "
        f"a turn on it ended {run.resumed_turn}"
    )
