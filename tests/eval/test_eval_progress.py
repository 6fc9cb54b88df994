"""The live progress display: what Ray logs while it is up is printed above the bar
through the same console, not across it on stderr, and Ray's logging is left as it was;
a batch on the embedded cluster, on a terminal, shows no line of Ray's own."""

import io
import logging
import os
import pty
import re
import subprocess
import sys
import time

import pytest
from rich.console import Console

from cluster.eval.progress import ProgressReporter
from tests.support import ROOT
from tests.support.eval_support import calc_repo, fix_turns, script, task, tasks_file

pytestmark = pytest.mark.own_ray_cluster  # conftest: these run in the Ray group under xdist


def test_rays_log_records_print_above_the_progress_bar_not_across_it(capsys):
    ray_log = logging.getLogger("ray")
    before = (list(ray_log.handlers), ray_log.propagate)
    console = Console(file=io.StringIO(), force_terminal=False, width=120)
    reporter = ProgressReporter(console)
    reporter.event("eval_started", to_run=1, skipped=0, tasks=1, out="/tmp/out")
    logging.getLogger("ray._private.worker").warning("Task sleepy failed. There are 3 retries remaining\nmore")
    reporter.close()

    assert "ray: Task sleepy failed. There are 3 retries remaining" in console.file.getvalue()
    assert "retries remaining" not in capsys.readouterr().err
    assert (ray_log.handlers, ray_log.propagate) == before


# What Ray writes itself: its C++ core's lines ("[2026-12-01 15:34:20,916 I 18096 18096] logging.cc:303: ...")
# and its Python loggers' ("2026-12-01 15:22:32,769	WARNING authentication_token_setup.py:85 -- ...").
_RAY_LINE = re.compile(
    r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [DIWEF] \d+ \d+\]"
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+(?:DEBUG|INFO|WARNING|ERROR)\s+\S+\.py:\d+ --"
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _terminal_output(command: list[str], env: dict[str, str], timeout_s: float) -> tuple[int, str]:
    """Run `command` on a pseudo-terminal (its stdout and stderr, as in a real one)."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary, env=env)
    os.close(secondary)
    chunks, deadline = [], time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: every writer closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(primary)
        if proc.poll() is None:
            proc.kill()
    return proc.wait(), b"".join(chunks).decode(errors="replace")


def test_no_line_of_rays_own_crosses_the_progress_display(tmp_path):
    repo = calc_repo(tmp_path)
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task(f"t{i}", repo) for i in range(3)])
    model = script(tmp_path, "fix", fix_turns())
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAY_")},
        "PYTHONPATH": str(ROOT),
        "WORKINGSET_RUNTIME": "ray",
        "COLUMNS": "140",
        "TERM": "xterm",
    }
    code, shown = _terminal_output(
        [
            sys.executable,
            "-m",
            "cluster.terminal._cli",
            "eval",
            str(tasks),
            "--model",
            f"scripted:{model}",
            "--out",
            str(tmp_path / "out"),
            "--concurrency",
            "3",
        ],
        env,
        timeout_s=300,
    )
    lines = [line for line in re.split(r"[\r\n]+", _ANSI.sub("", shown)) if line.strip()]
    assert code == 0, shown[-3000:]
    assert sum("eval" in line and "running" in line for line in lines) >= 2  # the live display was up
    assert [line for line in lines if _RAY_LINE.search(line)] == []
