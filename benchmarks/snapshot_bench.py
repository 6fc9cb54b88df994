"""Snapshot costs: CPU per save at any history length, disk size of a session's history, resume time.

    python -m benchmarks.snapshot_bench [--sizes 1000 5000 20000] [--saves 50] [--versions 100]

Conversations are realistic tool interactions: an assistant message (text + a Read
tool_use), then a user message holding its ~2 KB tool_result, every body distinct.
Costs are CPU time of this process (`time.process_time`, every thread), so they hold on
a busy machine; wall-clock p50 is shown beside them.

1. Save cost: a store holding one version of an N-message conversation; then `saves`
   times, append one tool interaction and save. Reported as p50/p95 CPU ms of
   `DiskSnapshotStore.save`, twice: while the history fills (no version is dropped) and
   at steady state (history full, so every save drops the oldest version; every
   max_history/4 saves one collection deletes what no kept version refers to — that
   save is the p95). `Session.save_snapshot` adds `snapshot_of` (a copy of the
   session's SessionState, git head, settings fingerprint); its p50 is shown at
   steady state. "asave on the loop" is the CPU the event loop's own thread spends per
   `await store.asave(...)` (the store's work runs on its writer thread). "first save"
   is a new session's first save of a 10-message conversation: it creates the store file.
2. Disk size: `versions` versions of a growing conversation (one interaction added per
   version, all versions kept) against a fresh store holding only the final version.
   Bytes are the sum of the file sizes in the session's diskcache directory after the
   cache is closed, as written and after SQLite VACUUM (which drops free pages).
3. Resume: what `--resume ID` does at N messages — build the session for the current
   environment, load the snapshot, restore it (CPU ms).
4. Open: what opening a session's store file costs before anything is read from it
   (`StoreReader` and its session record: what every load, and the first save of a
   resumed session in a process, pays; the header check's own CPU µs shown apart), at
   each size, next to what SQLite's
   `PRAGMA quick_check` and `integrity_check` of the file would add to it (`sessions
   doctor` runs the latter; a load runs `quick_check` only when a version fails its
   checks).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.opening import build_session
from agents.session import Session, SessionState
from agents.settings import load_settings
from agents.snapshots import DiskSnapshotStore, StoreReader, header_damage

SID = "bench"
BODY_LINES = 40  # ~2 KB per tool result


def interaction(n: int) -> list[Message]:
    body = "\n".join(f"{n:6d}:{line:3d}\tdef function_{n}_{line}(x):  # source" for line in range(BODY_LINES))
    use = ToolUseBlock(id=f"toolu_{n:06d}", name="Read", input={"path": f"src/module_{n}.py"})
    return [
        Message.assistant(TextBlock(text=f"Reading module {n} to find the failing call."), use),
        Message.tool_results([ToolResultBlock(tool_use_id=use.id, content=body)]),
    ]


def conversation(size: int) -> list[Message]:
    messages = [Message.user("Investigate the failing test and fix it.")]
    n = 0
    while len(messages) < size:
        messages += interaction(n)
        n += 1
    return messages[:size]


def state(messages: list[Message]) -> SessionState:
    return SessionState(session_id=SID, cwd="/bench/ws", model="scripted:bench", conversation=list(messages))


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed_saves(
    store: DiskSnapshotStore, messages: list[Message], first_id: int, saves: int
) -> tuple[list[float], list[float]]:
    """(CPU ms, wall ms) of each save."""
    cpu, wall = [], []
    for n in range(first_id, first_id + saves):
        messages += interaction(n)
        snapshot = state(messages)
        started, started_cpu = time.perf_counter(), time.process_time()
        store.save(snapshot)
        cpu.append((time.process_time() - started_cpu) * 1000)
        wall.append((time.perf_counter() - started) * 1000)
    return cpu, wall


def write_times(root: Path, size: int, saves: int) -> dict[str, float]:
    """p50/p95 of store.save while the history fills, then with the history full."""
    store = DiskSnapshotStore(root / f"write-{size}", max_history=saves)
    messages = conversation(size)
    store.save(state(messages))
    filling, _ = timed_saves(store, messages, 1_000_000, saves - 1)  # history reaches max_history
    steady, steady_wall = timed_saves(store, messages, 2_000_000, saves)  # every save drops one version
    store.close()
    return {
        "fill_p50": statistics.median(filling),
        "fill_p95": percentile(filling, 0.95),
        "steady_p50": statistics.median(steady),
        "steady_p95": percentile(steady, 0.95),
        "wall_p50": statistics.median(steady_wall),
    }


def asave_loop_cpu(root: Path, size: int, saves: int) -> float | None:
    """p50 CPU ms of the event loop's thread per `await store.asave(...)`."""
    store = DiskSnapshotStore(root / f"async-{size}", max_history=saves)
    if not hasattr(store, "asave"):
        return None  # a store without the asynchronous API

    async def run() -> list[float]:
        messages = conversation(size)
        await store.asave(state(messages))
        samples = []
        for n in range(saves):
            messages.extend(interaction(4_000_000 + n))
            snapshot = state(messages)
            started = time.thread_time()
            await store.asave(snapshot)
            samples.append((time.thread_time() - started) * 1000)
        await store.aclose()
        return samples

    return statistics.median(asyncio.run(run()))


def first_save_cpu(root: Path, repeats: int = 20) -> float:
    """p50 CPU ms of a new session's first save (it creates the session's store file)."""
    store = DiskSnapshotStore(root / "first")
    messages = conversation(10)
    samples = []
    for n in range(repeats):
        snapshot = state(messages).model_copy(update={"session_id": f"new{n}"})
        started = time.process_time()
        store.save(snapshot)
        samples.append((time.process_time() - started) * 1000)
    store.close()
    return statistics.median(samples)


def disk_store(session: Session) -> DiskSnapshotStore:
    """The store build_session gave the session: a DiskSnapshotStore, which can be closed."""
    store = session.ports.snapshots
    assert isinstance(store, DiskSnapshotStore)
    return store


async def session_save_p50(root: Path, size: int, saves: int) -> tuple[float, float]:
    """Session.save_snapshot (snapshot_of + store.asave): p50 while the history fills, then full."""
    workspace = root / f"ws-{size}"
    workspace.mkdir()
    script = root / "script.json"
    script.write_text(json.dumps({"turns": []}))
    settings = load_settings(
        workspace,
        {
            "model": f"scripted:{script}",
            "home": str(root / f"home-session-{size}"),
            "snapshots": {"max_history": saves},
        },
    )
    session = build_session(settings, workspace)
    session.conversation = conversation(size)
    await session.save_snapshot("bench")
    samples: list[float] = []
    for n in range(2 * saves - 1):
        session.conversation += interaction(3_000_000 + n)
        started = time.process_time()
        await session.save_snapshot("bench")
        samples.append((time.process_time() - started) * 1000)
    disk_store(session).close()
    return statistics.median(samples[: saves - 1]), statistics.median(samples[saves - 1 :])


def directory_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def vacuumed_bytes(directory: Path) -> int:
    connection = sqlite3.connect(directory / "cache.db")
    connection.execute("VACUUM")
    connection.close()
    return directory_bytes(directory)


@dataclass(frozen=True)
class DiskSizes:
    kept: int  # versions the history kept
    final: int  # messages in the last version
    raw: tuple[int, int]  # bytes: (the history, only the final version)
    vacuumed: tuple[int, int]  # the same after sqlite VACUUM


def disk_sizes(root: Path, start: int, versions: int) -> DiskSizes:
    messages = conversation(start)
    history_store = DiskSnapshotStore(root / f"history-{start}", max_history=versions)
    for n in range(versions):
        messages += interaction(5_000_000 + n)
        history_store.save(state(messages))
    kept = len(history_store.history(SID))
    history_store.close()
    fresh_store = DiskSnapshotStore(root / f"fresh-{start}")
    fresh_store.save(state(messages))
    fresh_store.close()
    history_dir, fresh_dir = root / f"history-{start}" / SID, root / f"fresh-{start}" / SID
    raw = (directory_bytes(history_dir), directory_bytes(fresh_dir))
    vacuumed = (vacuumed_bytes(history_dir), vacuumed_bytes(fresh_dir))
    return DiskSizes(kept=kept, final=len(messages), raw=raw, vacuumed=vacuumed)


async def resume_ms(root: Path, size: int, repeats: int) -> dict[str, float]:
    workspace = root / f"resume-ws-{size}"
    workspace.mkdir()
    script = root / "script.json"
    script.write_text(json.dumps({"turns": []}))
    settings = load_settings(workspace, {"model": f"scripted:{script}", "home": str(root / f"home-resume-{size}")})
    first = build_session(settings, workspace)
    first.conversation = conversation(size)
    await first.save_snapshot("bench")
    disk_store(first).close()
    build, load_restore = [], []
    for _ in range(repeats):
        started = time.process_time()
        session = build_session(settings, workspace, session_id=first.session_id)
        built = time.process_time()
        store = disk_store(session)
        loaded = await store.aload(first.session_id)
        session.restore(loaded.state)
        done = time.process_time()
        assert len(session.conversation) == size and loaded.problem is None
        store.close()
        build.append((built - started) * 1000)
        load_restore.append((done - built) * 1000)
    return {"build": statistics.median(build), "load_restore": statistics.median(load_restore)}


def open_costs(root: Path, size: int, repeats: int) -> dict[str, float]:
    """p50 CPU ms of opening a stored session's file and reading its record, and of the
    same followed by each of SQLite's checks of the whole file."""
    store = DiskSnapshotStore(root / f"open-{size}")
    store.save(state(conversation(size)))
    store.close()
    directory = root / f"open-{size}" / SID

    def opened(check: str | None) -> float:
        samples = []
        for _ in range(repeats):
            started = time.process_time()
            with StoreReader(SID, directory) as reader:
                reader.record()
                if check is not None:
                    reader.check(full=check == "integrity_check")
            samples.append((time.process_time() - started) * 1000)
        return statistics.median(samples)

    started = time.process_time()
    for _ in range(1_000):
        header_damage(directory / "cache.db")
    header_us = (time.process_time() - started) * 1000

    return {
        "file_kib": (directory / "cache.db").stat().st_size / 1024,
        "header_us": header_us,
        "open": opened(None),
        "quick_check": opened("quick_check"),
        "integrity_check": opened("integrity_check"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 5_000, 20_000])
    parser.add_argument("--saves", type=int, default=50, help="saves measured per size (also max_history)")
    parser.add_argument("--versions", type=int, default=100, help="versions in the disk-size comparison")
    parser.add_argument("--resume-size", type=int, default=1_000)
    parser.add_argument("--resume-repeats", type=int, default=20)
    parser.add_argument("--open-repeats", type=int, default=20)
    parser.add_argument("--only-open", action="store_true", help="measure only the cost of opening a store")
    args = parser.parse_args()
    if args.only_open:
        with tempfile.TemporaryDirectory() as tmp:
            print_open_costs(Path(tmp), args.sizes, args.open_repeats)
        return

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print(
            f"snapshot save, CPU ms per save (p50 / p95), {args.saves} saves, one tool interaction (~2 KB) appended before each"
        )
        print(f"{'':>8}  {'DiskSnapshotStore.save':^38}  {'Session.save_snapshot p50':^26}  {'asave on':>9}")
        print(
            f"{'messages':>8}  {'history filling':>17}  {'history full':>17}  {'wall':>6}  {'filling':>12}  {'full':>12}  {'the loop':>9}"
        )
        for size in args.sizes:
            t = write_times(root, size, args.saves)
            session_fill, session_full = asyncio.run(session_save_p50(root, size, args.saves))
            on_loop = asave_loop_cpu(root, size, args.saves)
            loop_text = f"{on_loop:>9.3f}" if on_loop is not None else f"{'-':>9}"
            print(
                f"{size:>8}  {t['fill_p50']:>7.2f} / {t['fill_p95']:>7.2f}  "
                f"{t['steady_p50']:>7.2f} / {t['steady_p95']:>7.2f}  {t['wall_p50']:>6.2f}  "
                f"{session_fill:>12.2f}  {session_full:>12.2f}  {loop_text}"
            )
        print(f"first save of a new session (creates its store file): {first_save_cpu(root):.1f} ms CPU (p50 of 20)")

        print()
        print(
            f"disk size of one session: {args.versions} versions of a growing conversation vs. only the final version"
        )
        print(
            f"{'start':>6}  {'final':>6}  {'kept':>5}  {'history KiB':>12}  {'final only KiB':>15}  {'ratio':>6}  {'after VACUUM':>22}"
        )
        for start in (1, 1_000):
            d = disk_sizes(root, start, args.versions)
            (h, f), (hv, fv) = d.raw, d.vacuumed
            print(
                f"{start:>6}  {d.final:>6}  {d.kept:>5}  {h / 1024:>12.0f}  {f / 1024:>15.0f}  {h / f:>5.2f}x  "
                f"{hv / 1024:>6.0f} / {fv / 1024:>5.0f} KiB {hv / fv:>4.2f}x"
            )

        print()
        r = asyncio.run(resume_ms(root, args.resume_size, args.resume_repeats))
        print(
            f"resume at {args.resume_size} messages, CPU ms, p50 of {args.resume_repeats}: "
            f"build_session {r['build']:.1f} ms + load & restore {r['load_restore']:.1f} ms "
            f"= {r['build'] + r['load_restore']:.1f} ms"
        )

        print()
        print_open_costs(root, args.sizes, args.open_repeats)


def print_open_costs(root: Path, sizes: list[int], repeats: int) -> None:
    print(
        f"opening a session's store file and reading its record, CPU ms (p50 of {repeats}),"
        " and with SQLite's check of the whole file"
    )
    print(
        f"{'messages':>8}  {'file MiB':>8}  {'open':>7}  {'its header check µs':>19}  {'+ quick_check':>13}  "
        f"{'+ integrity_check':>17}"
    )
    for size in sizes:
        c = open_costs(root, size, repeats)
        print(
            f"{size:>8}  {c['file_kib'] / 1024:>8.1f}  {c['open']:>7.3f}  {c['header_us']:>19.1f}  "
            f"{c['quick_check']:>13.2f}  "
            f"{c['integrity_check']:>17.2f}"
        )


if __name__ == "__main__":
    main()
