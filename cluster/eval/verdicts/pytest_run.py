"""One run of a pytest command under the grader: the rewritten line, the sandbox, the records.

The report file is made by the boot module in the grading copy's top directory under a
name nobody can guess in advance (so a patch cannot have planted it), and read back on
the host without following a link, only if it is a regular file, and only up to a cap.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from cluster.eval.grading import CommandResult, SandboxedShell, write_log
from cluster.eval.verdicts.command import PytestCommand
from cluster.eval.verdicts.files import GraderFiles
from cluster.eval.verdicts.outcomes import PytestRun, read_run

__all__ = ["MAX_REPORT_BYTES", "PytestRunResult", "run_pytest"]

MAX_REPORT_BYTES = 256 * 1024**2


@dataclass(frozen=True)
class PytestRunResult:
    run: PytestRun
    result: CommandResult
    line: str  # what ran in the sandbox


def _read_report(root: Path, name: str) -> bytes:
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=root_fd)
    except OSError:
        return b""  # never made: the boot module did not run
    finally:
        os.close(root_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        chunks, size = [], 0
        while size < MAX_REPORT_BYTES and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)[:MAX_REPORT_BYTES]
    finally:
        os.close(fd)


async def run_pytest(
    shell: SandboxedShell,
    command: PytestCommand,
    copy: Path,
    *,
    config: str,
    timeout_s: float,
    log: Path,
    plugins: tuple[str, ...] = (),
    extra: tuple[str, ...] = (),
    original: str = "",
) -> PytestRunResult:
    """Run `command` in `copy` with the grader's machinery; its output goes to `log`
    (headed by `original`, the command as the task wrote it)."""
    files = GraderFiles.here()
    report = f".workingset-grade-{secrets.token_hex(8)}.jsonl"
    line = command.line(
        bootstrap=files.bootstrap,
        report=str(copy / report),
        config=config,
        root=str(copy),
        plugins=plugins,
        extra=extra,
    )
    result = await shell.seeing(files.directory).run(line, copy, timeout_s)
    write_log(log, line, result, note=f"the test command {original!r}, graded per test, ran as:" if original else "")
    return PytestRunResult(read_run(_read_report(copy, report)), result, line)
