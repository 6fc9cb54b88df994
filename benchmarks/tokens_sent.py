"""Tokens sent with the default strategy vs no compaction, on the real trajectories.

    python -m benchmarks.tokens_sent [--traces ../shared/traces] [--windows 200000 32000]

Each trace is replayed through the real loop twice per context window: `raw` (no
compaction and no per-result budget) and `clear-then-summarize` (the default, with
the extractive summarizer). Figures are Workingset's token estimates of every
request the recorded agent would have sent: the sum over all calls and the peak.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from benchmarks.replay import replay_trace
from benchmarks.traces import find_trace_files, load_trace_file

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
NO_BUDGET = 10_000_000


async def compare(traces_dir: Path, windows: list[int]) -> None:
    traces = [t for path in find_trace_files(traces_dir) for t in load_trace_file(path)]
    for window in windows:
        print(f"\ncontext window {window:,} tokens")
        print(
            f"{'trace':<44} {'calls':>5} {'raw total':>11} {'default total':>13} {'saved':>6} {'raw peak':>9} {'def. peak':>9}"
        )
        sums = [0, 0]
        for trace in traces:
            raw = await replay_trace(trace, strategy="raw", context_window=NO_BUDGET, result_max_tokens=NO_BUDGET)
            default = await replay_trace(trace, context_window=window)
            sums[0] += raw.total_tokens
            sums[1] += default.total_tokens
            saved = 1 - default.total_tokens / raw.total_tokens if raw.total_tokens else 0.0
            label = f"{trace.source}:{trace.task_id}"[:44]
            print(
                f"{label:<44} {len(raw.estimated_tokens):>5} {raw.total_tokens:>11,} {default.total_tokens:>13,} "
                f"{saved:>6.1%} {raw.peak_tokens:>9,} {default.peak_tokens:>9,}"
            )
        print(f"{'all traces':<44} {'':>5} {sums[0]:>11,} {sums[1]:>13,} {1 - sums[1] / sums[0]:>6.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--windows", type=int, nargs="+", default=[200_000, 32_000])
    args = parser.parse_args()
    asyncio.run(compare(args.traces, args.windows))


if __name__ == "__main__":
    main()
