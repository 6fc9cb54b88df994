"""Cost of the file tools: Read of a 2,000-line file and a Grep over this repository.

    python -m benchmarks.file_tools [--repeats 50] [--grep-root DIR]
    python -m benchmarks.file_tools --grep [--repeats 5] [--grep-root DIR] [--ignored-files 20000]

Run it with another checkout first on PYTHONPATH to compare two versions of tools/
(the script only needs `tools`): `PYTHONPATH=/path/to/old python3 benchmarks/file_tools.py`.
Each figure is the median of one tool call, as the loop would make it: wall time, and
the CPU time of this process (steadier on a shared machine; it counts Grep's worker thread).

`--grep` measures Grep alone, with two patterns, over the tree as it is and over a copy of
it holding a `node_modules/` of `--ignored-files` small JavaScript files that a .gitignore
excludes (as in a real project, they hold matches too). Beside each Grep, ripgrep (`rg`,
if installed) on the same tree: the wall time and its CPU time as a child process, for
reference.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from tools import GrepTool, ReadTool, ToolContext
from tools.files import GrepInput, ReadInput

REPO = Path(__file__).resolve().parents[1]
LINE = "    result = compute_something(alpha, beta, gamma)  # a typical line of code"
GREP_PATTERNS = ("def ", r"class \w+\(")
JS_FILE = """\
'use strict';
// def helper: what the package exports
class Widget{n}(Base) {{
  constructor(options) {{ super(options); this.size = {n}; }}
}}
module.exports = {{ Widget{n} }};
"""


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


def rg_median_ms(pattern: str, root: Path, repeats: int) -> tuple[float, float] | None:
    """Median (wall ms, child CPU ms) of `rg -n PATTERN` over `root`; None without rg."""
    rg = shutil.which("rg")
    if rg is None:
        return None
    # .gitignore applies without a .git, as in Grep (the copy below has none).
    argv = [rg, "--no-config", "--no-require-git", "-n", pattern, str(root)]
    subprocess.run(argv, capture_output=True)
    wall, cpu = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, capture_output=True)
        wall.append((time.perf_counter() - started) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
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


def with_ignored_tree(source: Path, dest: Path, files: int) -> Path:
    """A copy of `source` (less .git) plus a .gitignore'd node_modules/ of `files` files."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    gitignore = dest / ".gitignore"
    existing = gitignore.read_text() if gitignore.exists() else ""
    gitignore.write_text(existing + "node_modules/\n")
    for n in range(files):
        package = dest / "node_modules" / f"pkg-{n // 10:04d}" / "lib"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"m{n % 10}.js").write_text(JS_FILE.format(n=n))
    return dest


Row = tuple[str, tuple[float, float] | None, str]  # call, median (wall, CPU) ms, what it found


def found(content: str) -> str:
    """ "N matches, M of the shown ones in node_modules/" from a Grep result."""
    shown = [line for line in content.splitlines() if re.match(r"[^\[\s].*:\d+:", line)]
    cut = re.search(r"\[(\d+) more matches", content)
    in_modules = sum(line.startswith("node_modules/") for line in shown)
    return (
        f"{len(shown) + (int(cut.group(1)) if cut else 0)} matches, {in_modules} of {len(shown)} shown in node_modules/"
    )


async def grep_rows(root: Path, label: str, repeats: int) -> list[Row]:
    """Grep and rg per pattern over `root`."""
    ctx = ToolContext(workspace=root)
    rows: list[Row] = []
    for pattern in GREP_PATTERNS:
        call = functools.partial(GrepTool().run, GrepInput(pattern=pattern), ctx)
        result = found((await call()).content)
        rows.append((f"Grep '{pattern}', {label}", await median_ms(call, repeats), result))
        rows.append((f"rg   '{pattern}', {label}", rg_median_ms(pattern, root, repeats), ""))
    return rows


async def measure_grep(repeats: int, root: Path, ignored_files: int) -> list[Row]:
    rows = await grep_rows(root, f"{root.name}/", repeats)
    with tempfile.TemporaryDirectory() as tmp:
        copy = with_ignored_tree(root, Path(tmp) / root.name, ignored_files)
        rows += await grep_rows(copy, f"+ node_modules/ ({ignored_files:,} files, ignored)", repeats)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=None, help="calls per figure (default: 50; 5 with --grep)")
    parser.add_argument("--grep-root", type=Path, default=REPO, help="tree to Grep (default: this repository)")
    parser.add_argument(
        "--grep",
        action="store_true",
        help="Grep alone: two patterns, with and without an ignored node_modules/, and rg",
    )
    parser.add_argument("--ignored-files", type=int, default=20_000, help="files in the ignored node_modules/ (--grep)")
    args = parser.parse_args()
    root = args.grep_root.resolve()
    if args.grep:
        repeats = args.repeats or 5
        print(f"{'call':<62} {'wall ms':>9} {'CPU ms':>9}   (medians of {repeats})")
        for label, figures, result in asyncio.run(measure_grep(repeats, root, args.ignored_files)):
            if figures is not None:
                print(f"{label:<62} {figures[0]:>9.1f} {figures[1]:>9.1f}   {result}")
        return
    repeats = args.repeats or 50
    print(f"{'call':<40} {'wall ms':>9} {'CPU ms':>9}   (medians of {repeats})")
    for label, (wall, cpu) in asyncio.run(measure(repeats, root)):
        print(f"{label:<40} {wall:>9.3f} {cpu:>9.3f}")


if __name__ == "__main__":
    main()
