"""Kill -9 during snapshot saves: how many saved versions are lost.

    python -m benchmarks.snapshot_faults [--trials 100] [--body-kb 200] [--max-history 50] [--seed 1]

Each trial starts a writer process on one session. Like `run --resume`, it loads the
session when there is one (so every trial after the first is a resumed process), then
appends a tool interaction whose result is a distinct `body-kb` KB and saves, again and
again, printing "saving" before each save and the version id (or journal entry name,
`<version>.<n>`) once `save` returned. Like a session, four saves in five are made inside
a turn (reason `tool_batch`: journal entries on the last version, `agents.snapshots._journal`)
and every fifth ends one (a version). Every 10 interactions the conversation drops all but
its first message and the last 10 (as a compaction would), so saves also rewrite and
garbage collection runs. The
driver kills it with SIGKILL at a random moment (uniform over 0–`--window` s after its
first save is reported), then opens the store itself and checks:

- the current version loads intact (with its journal), and it is the last version or
  entry reported or a later one (a save can commit before its id is printed);
- every reported version or entry whose version is not older than the oldest kept one
  (older ones were rotated out on purpose, `--max-history`) still loads intact
  (fall_back=False).

A version that fails the second check is lost; a failure of the first loses the session.
"Inside a save" counts the kills whose last line was "saving" — the process died between
starting a save and reporting it.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.session import SessionState
from agents.snapshots import JOURNALED_REASON, DiskSnapshotStore, SnapshotError, SnapshotNotFound, split_name

SID = "killed"
_WINDOW = 10  # interactions the writer's conversation keeps
ROOT = Path(__file__).resolve().parents[1]


def _interaction(n: int, body_kb: int) -> list[Message]:
    body = f"{n}:{os.urandom(8).hex()}:" + "y" * (body_kb * 1024)
    use = ToolUseBlock(id=f"toolu_{n}_{os.getpid()}", name="Read", input={"path": f"big_{n}.log"})
    return [
        Message.assistant(TextBlock(text=f"reading log {n}"), use),
        Message.tool_results([ToolResultBlock(tool_use_id=use.id, content=body)]),
    ]


def writer(root: Path, body_kb: int, max_history: int) -> None:
    """The process that is killed: resume (or start) the session and save forever."""
    store = DiskSnapshotStore(root, max_history=max_history)
    try:
        state = store.load(SID).state
    except SnapshotNotFound:
        state = SessionState(
            session_id=SID, cwd="/bench/ws", model="scripted:bench", conversation=[Message.user("keep saving")]
        )
    conversation = list(state.conversation)
    print("ready", flush=True)
    n = len(conversation)
    while True:
        conversation += _interaction(n, body_kb)
        n += 1
        if len(conversation) > 1 + 4 * _WINDOW:
            conversation = [conversation[0], *conversation[-2 * _WINDOW :]]
        reason = "end_turn" if n % 5 == 0 else JOURNALED_REASON
        print("saving", flush=True)
        version = store.save(state.model_copy(update={"conversation": list(conversation), "reason": reason}))
        print(version, flush=True)


def _is_name(line: str) -> bool:
    """A version id or a journal entry's name, as the writer prints them."""
    return split_name(line.strip())[0].isdigit()


@dataclass
class Trial:
    reported: list[str]
    inside_save: bool
    lost: list[str] = field(default_factory=list)
    session_lost: str = ""


def _spawn(root: Path, body_kb: int, max_history: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.snapshot_faults",
            "--writer",
            str(root),
            "--body-kb",
            str(body_kb),
            "--max-history",
            str(max_history),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )


def _check(root: Path, trial: Trial, max_history: int) -> None:
    store = DiskSnapshotStore(root, max_history=max_history)
    try:
        try:
            loaded = store.load(SID, fall_back=False)
        except SnapshotError as exc:
            trial.session_lost = str(exc)
            return
        kept = [v.version for v in store.history(SID)]
        if trial.reported and loaded.version < trial.reported[-1]:
            trial.session_lost = f"current {loaded.version} is older than the last reported save {trial.reported[-1]}"
        oldest = min(kept)
        for version in trial.reported:
            if split_name(version)[0] < oldest:
                continue  # rotated out by max_history, as configured
            try:
                store.load(SID, version, fall_back=False)
            except SnapshotError:
                trial.lost.append(version)
    finally:
        store.close()


def run_trial(root: Path, rng: random.Random, *, body_kb: int, max_history: int, window: float) -> Trial:
    proc = _spawn(root, body_kb, max_history)
    assert proc.stdout is not None and proc.stderr is not None  # both piped
    first = proc.stdout.readline().strip()
    if first != "ready":
        proc.kill()
        raise RuntimeError(f"writer did not start: {first!r} {proc.stderr.read()}")
    # The kill is timed from the writer's first completed save, not from its start: on a
    # busy machine a start-relative moment can fall before any save, which tests nothing.
    seen = []
    while not _is_name(line := proc.stdout.readline()):
        if not line:
            raise RuntimeError(f"writer stopped before its first save: {proc.stderr.read()}")
        seen.append(line)
    seen.append(line)
    time.sleep(rng.uniform(0, window))
    os.kill(proc.pid, signal.SIGKILL)
    rest, _ = proc.communicate(timeout=60)
    out = "".join(seen) + rest
    lines = out.splitlines()
    complete = lines if out.endswith("\n") else lines[:-1]
    trial = Trial(
        reported=[x for x in complete if _is_name(x)], inside_save=bool(complete) and complete[-1] == "saving"
    )
    _check(root, trial, max_history)
    return trial


def run_trials(
    root: Path, trials: int, *, body_kb: int = 200, max_history: int = 50, window: float = 0.6, seed: int = 1
) -> list[Trial]:
    """Kill a writer `trials` times on one session (each writer resumes the last)."""
    rng = random.Random(seed)
    return [run_trial(root, rng, body_kb=body_kb, max_history=max_history, window=window) for _ in range(trials)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--body-kb", type=int, default=200)
    parser.add_argument("--max-history", type=int, default=50)
    parser.add_argument("--window", type=float, default=0.6, help="kill within this many seconds of start")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--writer", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        writer(Path(args.writer), args.body_kb, args.max_history)
        return
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        results = run_trials(
            Path(tmp),
            args.trials,
            body_kb=args.body_kb,
            max_history=args.max_history,
            window=args.window,
            seed=args.seed,
        )
        elapsed = time.perf_counter() - started
        store = DiskSnapshotStore(Path(tmp))
        final = store.history(SID)
        store.close()
    saves = sum(len(t.reported) for t in results)
    lost = sum(len(t.lost) for t in results)
    sessions_lost = [t.session_lost for t in results if t.session_lost]
    print(
        f"kill -9 during snapshot saves: {len(results)} trials, {args.body_kb} KB per new message, "
        f"max_history {args.max_history}, {elapsed:.0f} s"
    )
    print(f"  saves reported: {saves}; kills inside a save: {sum(t.inside_save for t in results)}")
    print(f"  versions lost: {lost}; trials where the current version was lost: {len(sessions_lost)}")
    print(f"  at the end: {len(final)} versions kept, current has {final[0].messages} messages")
    for problem in sessions_lost[:5]:
        print(f"  - {problem}")


if __name__ == "__main__":
    main()
