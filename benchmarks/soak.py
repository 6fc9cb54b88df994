"""A long session stays flat: one session of thousands of model calls, compacted many times.

    python -m benchmarks.soak [--calls 2000] [--ray] [--per-turn 10] [--bash-every 10]
                              [--context-window 100000]

One session, one scripted model that calls a real tool on every call but the last of
each outer turn: Read and Grep over the workspace's modules, an Edit that bumps a
module's version line, and every `--bash-every`-th call a Bash command through the
real bubblewrap sandbox. Each outer turn is `--per-turn` model calls; the session
saves a snapshot after every tool batch and every turn, as it always does. The context
window (`compact.context_window`) is set small enough that the default strategy
compacts every ~100 calls, so the conversation grows past its budget many times.
In process (default) the session runs in this process; with `--ray` it runs on a
SessionActor of the embedded cluster, its tools in sandboxed Ray tasks.

Reported:
- CPU ms per model call of the first and of the last 200 calls (the aim: the last at
  most 1.2 × the first), and per 200-call window: CPU seconds of this process and
  every process under it (`benchmarks.cpu_tree`: sandboxes, and on Ray the raylet,
  GCS and workers), sampled between turns, the samplings' own CPU left out. A warm-up
  session runs first, so one-time costs (imports, caches, worker start-up) are not
  charged to the first calls. Beside it, per window: the median turn's CPU per call
  (`median`: steady state, without the turn a compaction ran in or one a burst of
  load on the machine slowed), the CPU of the process hosting the session alone
  (`host`: this one, or the SessionActor) and the wall time per call. On Ray, idle
  processes (tool workers, summarizer actors, Ray's own) spend CPU by the second, so
  the tree's CPU per call moves with the wall time per call, which on a shared machine
  moves with its load; and on a machine whose load is many times its cores, CPU time
  itself varies by a fifth or more between runs of the same code;
- RSS of the process hosting the session (this one, or the SessionActor) over time:
  its peak, and whether it plateaus (grew less than 5 % over the second half);
- the size of the snapshot directory over time (bounded by `snapshots.max_history`
  versions per session) and of the session's own directory (its artifacts: every
  cleared result's full body, kept for Recall, so that one grows with the session);
- a resume at the end, through the same lifecycle `--resume` uses (a new in-process
  session, or a new session on the same SessionActor, restored from the snapshot),
  its wall and CPU time, and one more turn run on it.

The load average is printed: on a shared machine wall time depends on it, CPU much less.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml

from agents.compaction.ledger import CompactionEvent
from agents.config import WorkingsetSettings, load_settings
from agents.events import ModelCall, SnapshotSaved
from agents.lifecycle import OpenSpec, SessionRuntime, open_or_resume
from benchmarks.cpu_tree import CpuSample, load_average, sample_tree

MODULES = 20
WINDOW = 200  # calls per reported window
AIM = 1.2  # the last window's CPU per call over the first's, at most


# -- the workspace and the script ---------------------------------------------------------


def module_text(m: int, version: int) -> str:
    lines = [f'"""Module {m}: request handlers of part {m}."""', "", f"VERSION = {version}", ""]
    for f in range(12):
        lines += [f"def handle_{m}_{f}(request):", f"    return dispatch(request, {m * 100 + f})  # route {f}", ""]
    return "\n".join(lines) + "\n"


def make_workspace(path: Path) -> Path:
    """Modules under src/, committed as a git repository (a snapshot records its head)."""
    (path / "src").mkdir(parents=True)
    for m in range(MODULES):
        (path / "src" / f"module_{m:02d}.py").write_text(module_text(m, 0))
    git = ["git", "-c", "user.name=soak", "-c", "user.email=soak@localhost"]
    subprocess.run([*git, "init", "-q"], cwd=path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=path, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=path, check=True)
    return path


def script_turns(calls: int, per_turn: int, bash_every: int) -> list[dict]:
    """The replies, in order: every `per_turn`-th ends its outer turn with text, the
    others call one tool. The first outer turn only reads, so a resumed session (whose
    scripted model starts again from the top) replays a turn that changes nothing."""
    versions = [0] * MODULES
    turns: list[dict] = []
    for c in range(calls):
        if c % per_turn == per_turn - 1:
            turns.append({"text": f"Turn {c // per_turn} done: the handlers route as expected."})
            continue
        m = (c // 3) % MODULES
        path = f"src/module_{m:02d}.py"
        kind = "Bash" if c % bash_every == bash_every // 2 else ("Read", "Grep", "Edit")[c % 3]
        if kind == "Edit" and c < per_turn:
            kind = "Grep"
        if kind == "Read":
            call: dict[str, Any] = {"name": "Read", "input": {"path": path}}
        elif kind == "Grep":
            call = {"name": "Grep", "input": {"pattern": f"def handle_{m}_\\d+|VERSION", "path": "src"}}
        elif kind == "Edit":
            old, versions[m] = versions[m], versions[m] + 1
            call = {"name": "Edit", "input": {"path": path, "old_string": f"VERSION = {old}\n",
                                              "new_string": f"VERSION = {versions[m]}\n"}}
        else:
            call = {"name": "Bash", "input": {"command": f"wc -l {path}"}}
        turns.append({"text": f"Step {c}: {kind} on {path} to follow the request through part {m}.",
                      "tool_calls": [call]})
    return turns


def soak_settings(root: Path, tag: str, turns: list[dict], context_window: int) -> WorkingsetSettings:
    script = root / f"script-{tag}.yaml"
    script.write_text(yaml.safe_dump({"turns": turns}, sort_keys=False))
    return load_settings(root, {
        "model": f"scripted:{script}",
        "home": str(root / f"home-{tag}"),
        "agent": {"max_turns": 1_000, "max_output_tokens": 4_096},
        "compact": {"context_window": context_window},
        "permissions": {"mode": "default", "headless": "deny-asks",
                        "allow": ["Read", "Grep", "Edit(src/**)", "Bash(wc:*)"]},
    })


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
        point = Point(calls, wall, cpu, host_cpu, rss, tree_bytes(self.home / "snapshots"),
                      tree_bytes(self.home / "sessions" / session_id), messages)
        self.points.append(point)
        self.sampling_s += time.thread_time() - started


# -- the two places a session runs ---------------------------------------------------------


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


async def drive(session: Any, turns: int, recorder: Recorder, messages: Callable[[], int]) -> None:
    recorder.sample(0, session.session_id, messages())
    calls = 0
    for t in range(turns):
        outcome = await session.run_turn(f"Go on with part {t % MODULES}.")
        if outcome.reason != "end_turn":
            raise SystemExit(f"turn {t} ended {outcome.reason}: {outcome.detail}")
        calls += outcome.model_calls
        recorder.sample(calls, session.session_id, messages())


async def soak_in_process(root: Path, args: argparse.Namespace) -> Soaked:
    turns = script_turns(args.calls, args.per_turn, args.bash_every)
    # A warm-up session first: its one-time costs (imports, caches) are not the soak's.
    warm_settings = soak_settings(root, "warm", turns[: args.per_turn], args.context_window)
    warm = await open_or_resume(OpenSpec(warm_settings, make_workspace(root / "ws-warm")), SessionRuntime())
    await warm.run_turn("Warm up.")
    await warm.aclose()

    settings = soak_settings(root, "local", turns, args.context_window)
    workspace = make_workspace(root / "ws-local")
    tally = Tally()
    session = await open_or_resume(OpenSpec(settings, workspace), SessionRuntime(emit=tally))
    recorder = Recorder(settings.home, psutil.Process)
    started = time.perf_counter()
    await drive(session, args.calls // args.per_turn, recorder, lambda: len(session.conversation))
    wall = time.perf_counter() - started
    saved, budget, sid = len(session.conversation), session.budget_tokens, session.session_id
    await session.aclose()

    async def reopen() -> tuple[Any, int]:
        resumed = await open_or_resume(OpenSpec(settings, workspace, session_id=sid, resume=True), SessionRuntime())
        return resumed, len(resumed.conversation)

    return await resumed_soak("local", reopen, recorder, tally, budget, saved, wall)


async def resumed_soak(where: str, reopen: Callable[[], Awaitable[tuple[Any, int]]], recorder: Recorder, tally: Tally,
                       budget: int, saved: int, wall: float) -> Soaked:
    cpu_before, wall_before = sample_tree(), time.perf_counter()
    resumed, messages = await reopen()
    resume_wall = time.perf_counter() - wall_before
    resume_cpu = (sample_tree() - cpu_before).total
    outcome = await resumed.run_turn("Resumed: go on.")
    await resumed.aclose()
    return Soaked(where, recorder.points, tally, budget, resume_wall * 1000, resume_cpu * 1000, messages, saved,
                  outcome.reason, wall)


async def soak_on_ray(root: Path, args: argparse.Namespace) -> Soaked:
    # Imported here: an in-process soak never loads Ray.
    from benchmarks.concurrency import settle
    from cluster.remote_session import RemoteSession
    from cluster.session_actor import SessionSpec
    from cluster.session_pool import SessionPool

    turns = script_turns(args.calls, args.per_turn, args.bash_every)
    settings = soak_settings(root, "ray", turns, args.context_window)
    warm_settings = soak_settings(root, "ray-warm", turns[: args.per_turn], args.context_window)
    pool = SessionPool(settings, actors=1)
    try:
        await pool.ready()
        warm = await pool.open(make_workspace(root / "ws-ray-warm"), settings=warm_settings)
        await warm.run_turn("Warm up.")
        await pool.close(warm)
        await settle()
        host = _session_actor_process()

        workspace = make_workspace(root / "ws-ray")
        tally = Tally()
        remote = await pool.open(workspace, emit=tally)
        recorder = Recorder(settings.home, lambda: host)
        started = time.perf_counter()
        await drive(remote, args.calls // args.per_turn, recorder, lambda: remote.message_count)
        wall = time.perf_counter() - started
        saved, sid = remote.message_count, remote.session_id
        await pool.close(remote)

        async def reopen() -> tuple[Any, int]:
            opening = OpenSpec(settings, workspace, session_id=sid, resume=True)
            resumed = RemoteSession(pool.links[0], SessionSpec.of(opening, interactive=False), emit=lambda e: None,
                                    approver=None, model_name=settings.model, services=pool.services)
            await resumed.open()
            return resumed, resumed.message_count

        budget = _budget_tokens(settings)
        return await resumed_soak("ray", reopen, recorder, tally, budget, saved, wall)
    finally:
        pool.shutdown()


def _session_actor_process() -> psutil.Process:
    actors = [p for p in psutil.Process().children(recursive=True) if p.name() == "ray::SessionActor"]
    if len(actors) != 1:
        raise SystemExit(f"expected one SessionActor process under this one, found {len(actors)}")
    return actors[0]


def _budget_tokens(settings: WorkingsetSettings) -> int:
    from agents.compaction import compact_budget
    from agents.providers import load_model_client

    model = load_model_client(settings.model, role="root", settings=settings.providers)
    return compact_budget(model, settings.agent.max_output_tokens, settings.compact, settings.session().models)


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
        turns = [(q.cpu - p.cpu).total * 1000 / (q.calls - p.calls)
                 for p, q in zip(self.points, self.points[1:], strict=False) if q.calls > p.calls]
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
        print(f"{w.a.calls:>5}-{w.b.calls:<5} {w.cpu_ms():>11.2f} {w.median_turn_ms():>6.2f} {w.host_ms():>6.2f} "
              f"{w.wall_ms():>6.1f}  {split_text(w.spent, w.calls)}")
    first, last = window(points, 0, WINDOW), window(points, total - WINDOW, total)
    ratio = last.cpu_ms() / first.cpu_ms()
    print(f"CPU per call: first {WINDOW} {first.cpu_ms():.2f} ms, last {WINDOW} {last.cpu_ms():.2f} ms: {ratio:.2f}x "
          f"(aim <= {AIM}x: {'met' if ratio <= AIM else 'MISSED'}); median turn {first.median_turn_ms():.2f} -> "
          f"{last.median_turn_ms():.2f} ms: {last.median_turn_ms() / first.median_turn_ms():.2f}x; host process "
          f"{first.host_ms():.2f} -> {last.host_ms():.2f} ms: {last.host_ms() / first.host_ms():.2f}x")


def report_growth(points: list[Point]) -> None:
    mb, last = 1e6, points[-1]
    marks = sorted({at_calls(points, c).calls for c in (0, WINDOW, last.calls // 4, last.calls // 2,
                                                         3 * last.calls // 4, last.calls)})
    print(f"{'calls':>11} {'host RSS MB':>11} {'snapshots MB':>12} {'session dir MB':>14}")
    for c in marks:
        p = at_calls(points, c)
        print(f"{p.calls:>11} {p.host_rss / mb:>11.1f} {p.snapshot_bytes / mb:>12.2f} {p.session_bytes / mb:>14.2f}")
    half = at_calls(points, last.calls // 2)
    early = [p for p in points if p.calls <= half.calls]
    late = [p for p in points if p.calls >= half.calls]
    peak = max(p.host_rss for p in points)
    grew = max(p.host_rss for p in late) / max(p.host_rss for p in early) - 1
    print(f"host RSS: peak {peak / mb:.1f} MB; second half's peak {grew * 100:+.1f} % over the first half's "
          f"({'plateaus' if grew < 0.05 else 'still growing'})")
    snap_half, snap_peak = max(p.snapshot_bytes for p in early), max(p.snapshot_bytes for p in points)
    print(f"snapshot dir: peak {snap_peak / mb:.2f} MB, {snap_half / mb:.2f} MB by the half "
          f"({'bounded' if snap_peak <= 1.25 * snap_half else 'still growing'})")


def report(run: Soaked) -> None:
    points, tally = run.points, run.tally
    gaps = [b - a for a, b in zip(tally.compacted_at, tally.compacted_at[1:], strict=False)]
    print(f"\n== {run.where}: {points[-1].calls} model calls in {len(points) - 1} turns, {run.wall_s:.0f} s wall; "
          f"{load_average()}")
    every = f", one every {sum(gaps) / len(gaps):.0f} calls" if gaps else ""
    print(f"compactions: {len(tally.compacted_at)} (budget {run.budget_tokens} tokens{every}); "
          f"conversation {min(p.messages for p in points[1:])}..{max(p.messages for p in points)} messages; "
          f"{tally.snapshots} snapshots saved ({tally.failed_saves} failed)")
    report_cpu(points)
    report_growth(points)
    print(f"resume: {run.resume_wall_ms:.0f} ms wall, {run.resume_cpu_ms:.0f} ms CPU; "
          f"{run.resumed_messages} messages restored of {run.saved_messages} saved; "
          f"a turn on it ended {run.resumed_turn}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000, help="model calls in the session (>= 2 x 200)")
    parser.add_argument("--ray", action="store_true", help="run the session on a SessionActor of the embedded cluster")
    parser.add_argument("--per-turn", type=int, default=10, help="model calls per outer turn")
    parser.add_argument("--bash-every", type=int, default=10, help="every Nth call runs Bash in the sandbox")
    parser.add_argument("--context-window", type=int, default=64_000, help="compact.context_window (tokens)")
    args = parser.parse_args()
    if args.calls < 2 * WINDOW or args.calls % args.per_turn:
        parser.error(f"--calls must be at least {2 * WINDOW} and a multiple of --per-turn")
    with tempfile.TemporaryDirectory(prefix="workingset-soak-") as tmp:
        runner = soak_on_ray if args.ray else soak_in_process
        report(asyncio.run(runner(Path(tmp), args)))


if __name__ == "__main__":
    main()
