"""Cost of the file tools: Read of a 2,000-line file and a Grep over this repository.

    python -m benchmarks.file_tools [--repeats 50] [--grep-root DIR]

Run it with another checkout first on PYTHONPATH to compare two versions of tools/
(the script only needs `tools`): `PYTHONPATH=/path/to/old python3 benchmarks/file_tools.py`.
Each figure is the median of one tool call, as the loop would make it: wall time, and
the CPU time of this process (steadier on a shared machine).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from tools import GrepTool, ReadTool, ToolContext
from tools.grep import GrepInput
from tools.read import ReadInput

REPO = Path(__file__).resolve().parents[1]
LINE = "    result = compute_something(alpha, beta, gamma)  # a typical line of code"


async def median_ms(call: Callable[[], Awaitable[object]], repeats: int) -> tuple[float, float]:
    """Median (wall ms, CPU ms) of one call."""
    await call()  # warm caches and imports once
    wall, cpu = [], []
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        await call()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return statistics.median(wall), statistics.median(cpu)


async def measure(repeats: int, grep_root: Path) -> list[tuple[str, tuple[float, float]]]:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        (workspace / "src").mkdir()
        (workspace / "src" / "module.py").write_text("".join(f"{LINE} {n}\n" for n in range(2000)))
        read_ctx = ToolContext(workspace=workspace)
        read_args = ReadInput(path="src/module.py")
        read_ms = await median_ms(lambda: ReadTool().run(read_args, read_ctx), repeats)
    grep_ctx = ToolContext(workspace=grep_root)
    grep_args = GrepInput(pattern=r"def \w+\(")
    grep_ms = await median_ms(lambda: GrepTool().run(grep_args, grep_ctx), repeats)
    return [("Read, 2,000-line file", read_ms), (f"Grep 'def \\w+\\(' over {grep_root.name}/", grep_ms)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--grep-root", type=Path, default=REPO, help="tree to Grep (default: this repository)")
    args = parser.parse_args()
    print(f"{'call':<40} {'wall ms':>9} {'CPU ms':>9}   (medians of {args.repeats})")
    for label, (wall, cpu) in asyncio.run(measure(args.repeats, args.grep_root.resolve())):
        print(f"{label:<40} {wall:>9.3f} {cpu:>9.3f}")


if __name__ == "__main__":
    main()
