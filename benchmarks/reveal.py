"""What showing untrusted text inertly costs, on the tool results real agents saw.

    python -m benchmarks.reveal [--traces /work/shared/traces] [--repeat 5]

Every tool result of the recorded trajectories is revealed (agents.visible.reveal, as
every display does) once per repeat. Reported: how many results hold a hidden
character at all (ANSI colours, carriage-return progress bars, ...) and which ones
most often, and the throughput (MB/s, best of the repeats) on the whole corpus, on
the results that hold none, and on a colourised `pytest` log (every line in ANSI).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from agents.messages import ToolResultBlock
from agents.visible import hidden_characters, reveal
from benchmarks.traces import find_trace_files, load_trace_file

COLOURED_LOG = "\x1b[32mPASSED\x1b[0m tests/test_calc.py::test_add_%d \x1b[1m[ 42%%]\x1b[0m\r\n"


def tool_results(root: Path) -> list[str]:
    traces = []
    for path in find_trace_files(root):
        with contextlib.suppress(ValueError):  # a file no loader reads fully: left out
            traces += load_trace_file(path)
    return [b.content for t in traces for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]


def _mb_per_s(texts: Sequence[str], repeat: int) -> float:
    size = sum(len(t.encode()) for t in texts) / 1e6
    best = min(_seconds(texts) for _ in range(repeat))
    return size / best if best else float("inf")


def _seconds(texts: Sequence[str]) -> float:
    started = time.perf_counter()
    for text in texts:
        reveal(text)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=Path("/work/shared/traces"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    results = tool_results(args.traces)
    hidden = [hidden_characters(t) for t in results]
    holding = [t for t, h in zip(results, hidden, strict=True) if h]
    clean = [t for t, h in zip(results, hidden, strict=True) if not h]
    common = Counter(ch for h in hidden for ch in h).most_common(5)
    print(
        f"{len(results):,} tool results, {sum(len(t) for t in results) / 1e6:.1f} M characters; "
        f"{len(holding):,} hold a hidden character ({len(holding) / max(len(results), 1):.1%})"
    )
    print("most common: " + (", ".join(f"{reveal(ch, one_line=True)} ×{n:,}" for ch, n in common) or "none"))
    print(f"reveal, whole corpus:        {_mb_per_s(results, args.repeat):8.0f} MB/s")
    print(f"reveal, results with none:   {_mb_per_s(clean, args.repeat):8.0f} MB/s")
    log = "".join(COLOURED_LOG % i for i in range(20_000))
    print(f"reveal, coloured pytest log: {_mb_per_s([log], args.repeat):8.0f} MB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
