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
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psutil
import yaml

from agents.opening import OpenSpec, SessionRuntime, open_or_resume
from agents.settings import WorkingsetSettings, load_settings
from benchmarks.cpu_tree import sample_tree
from benchmarks.soak_report import WINDOW, Recorder, Soaked, Tally, report

MODULES = 20


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
            call = {
                "name": "Edit",
                "input": {"path": path, "old_string": f"VERSION = {old}\n", "new_string": f"VERSION = {versions[m]}\n"},
            }
        else:
            call = {"name": "Bash", "input": {"command": f"wc -l {path}"}}
        turns.append(
            {"text": f"Step {c}: {kind} on {path} to follow the request through part {m}.", "tool_calls": [call]}
        )
    return turns


def soak_settings(root: Path, tag: str, turns: list[dict], context_window: int) -> WorkingsetSettings:
    script = root / f"script-{tag}.yaml"
    script.write_text(yaml.safe_dump({"turns": turns}, sort_keys=False))
    return load_settings(
        root,
        {
            "model": f"scripted:{script}",
            "home": str(root / f"home-{tag}"),
            "agent": {"max_turns": 1_000, "max_output_tokens": 4_096},
            "compact": {"context_window": context_window},
            "permissions": {
                "mode": "default",
                "headless": "deny-asks",
                "allow": ["Read", "Grep", "Edit(src/**)", "Bash(wc:*)"],
            },
        },
    )


# -- the two places a session runs ---------------------------------------------------------


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


async def resumed_soak(
    where: str,
    reopen: Callable[[], Awaitable[tuple[Any, int]]],
    recorder: Recorder,
    tally: Tally,
    budget: int,
    saved: int,
    wall: float,
) -> Soaked:
    cpu_before, wall_before = sample_tree(), time.perf_counter()
    resumed, messages = await reopen()
    resume_wall = time.perf_counter() - wall_before
    resume_cpu = (sample_tree() - cpu_before).total
    outcome = await resumed.run_turn("Resumed: go on.")
    await resumed.aclose()
    return Soaked(
        where,
        recorder.points,
        tally,
        budget,
        resume_wall * 1000,
        resume_cpu * 1000,
        messages,
        saved,
        outcome.reason,
        wall,
    )


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
            resumed = RemoteSession(
                pool.links[0],
                SessionSpec.of(opening, interactive=False),
                emit=lambda e: None,
                approver=None,
                model_name=settings.model,
                services=pool.services,
            )
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
