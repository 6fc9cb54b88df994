import time
from pathlib import Path

from tools import BashTool, ToolContext, ToolLimits
from tools.bash import BashInput, OutputCapture


def ctx(workspace: Path, **limits) -> ToolContext:
    return ToolContext(workspace=workspace, limits=ToolLimits(**limits))


async def bash(workspace: Path, command: str, timeout_s: float | None = None, **limits):
    return await BashTool().run(BashInput(command=command, timeout_s=timeout_s), ctx(workspace, **limits))


def process_gone(pid: int) -> bool:
    """Gone, or a zombie waiting for a reaper (it no longer runs either way)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


async def test_output_ends_with_exit_code(tmp_path):
    out = await bash(tmp_path, "echo hello")
    assert out.content == "hello\nexit code: 0"
    assert not out.is_error


async def test_output_bytes_that_are_not_utf8_are_shown_as_byte_escapes(tmp_path):
    out = await bash(tmp_path, r"printf 'caf\351.txt\n'")
    assert out.content == "caf\\xe9.txt\nexit code: 0"


async def test_nonzero_exit_is_reported_not_an_error(tmp_path):
    out = await bash(tmp_path, "echo oops >&2; exit 3")
    assert out.content == "oops\nexit code: 3"
    assert not out.is_error


async def test_runs_in_the_workspace(tmp_path):
    out = await bash(tmp_path, "pwd")
    assert out.content.splitlines()[0] == str(tmp_path.resolve())


async def test_timeout_kills_and_reports_partial_output(tmp_path):
    started = time.monotonic()
    out = await bash(tmp_path, "echo before; sleep 60 & echo $! > bg.pid; sleep 60", timeout_s=0.5)
    assert time.monotonic() - started < 30  # at its timeout, not after the 60 s sleep
    assert out.is_error
    assert "timed out after 0.5 s" in out.content
    assert "before" in out.content
    pid = int((tmp_path / "bg.pid").read_text())
    deadline = time.monotonic() + 30
    while not process_gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_gone(pid)


async def test_timeout_is_capped_by_limits(tmp_path):
    out = await bash(tmp_path, "sleep 5", timeout_s=60, bash_timeout_s=0.3)
    assert out.is_error
    assert "timed out after 0.3 s" in out.content


async def test_background_process_does_not_hold_the_call_open(tmp_path):
    started = time.monotonic()
    out = await bash(tmp_path, "sleep 60 & echo done", timeout_s=50)
    assert time.monotonic() - started < 30  # bash's exit, not the background sleep's
    assert not out.is_error
    assert out.content.startswith("done\n")
    assert out.content.endswith("exit code: 0")


async def test_output_cap_keeps_head_and_tail(tmp_path):
    out = await bash(
        tmp_path,
        "echo FIRST; for i in $(seq 1 2000); do echo filler-$i; done; echo LAST",
        bash_output_max_chars=300,
    )
    assert out.content.startswith("FIRST")
    assert "chars of output removed" in out.content
    assert out.content.endswith("LAST\nexit code: 0")
    assert len(out.content) < 500


def test_capture_counts_removed_chars_exactly():
    capture = OutputCapture(30)
    for _ in range(10):
        capture.feed("0123456789")
    assert capture.removed == 70
    assert capture.text().startswith("0123456789\n[... 70 chars")
    assert capture.text().endswith("01234567890123456789")
