"""The workspace layer: what a Bash command writes lands in the workspace when it ends,
exactly as the command left it, and nothing else changes.

Real bwrap through BashTool, as the model's calls run. The command writes to its layer
(an overlayfs upper on a capped tmpfs); the merge after it applies creations, changes,
deletions, replaced directories, links, FIFOs, modes and times. Attacks on the layer and
its merge are in test_sandbox_attacks.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat

import pytest

from tests.support.sandbox_support import (
    SMALL,
    MiB,
    as_user,
    exit_code,
    runner,
    sandboxed,
    unique_sleep,
    user_workspace,
    wait_for_host_pid,
)
from tools import ToolContext
from tools.files._write import WriteInput, WriteTool
from tools.sandbox import SandboxLimits


async def ran(ws, command: str, limits: SandboxLimits | None = None) -> str:
    out = await sandboxed(ws, command, limits)
    assert not out.is_error and exit_code(out) == 0, out.content
    return out.content


async def test_created_changed_and_deleted_files_land(ws):
    (ws / "changed.txt").write_text("one\n")
    (ws / "deleted.txt").write_text("gone\n")
    await ran(ws, "echo new > created.txt; echo two >> changed.txt; rm deleted.txt; mkdir -p a/b; echo x > a/b/c")
    assert (ws / "created.txt").read_text() == "new\n"
    assert (ws / "changed.txt").read_text() == "one\ntwo\n"
    assert not (ws / "deleted.txt").exists()
    assert (ws / "a" / "b" / "c").read_text() == "x\n"


async def test_a_directory_deleted_and_made_again_holds_only_its_new_content(ws):
    (ws / "d" / "old").mkdir(parents=True)
    (ws / "d" / "old" / "file").write_text("old")
    (ws / "d" / "kept-name").write_text("old")
    await ran(ws, "rm -r d; mkdir d; echo new > d/kept-name")
    assert sorted(p.name for p in (ws / "d").iterdir()) == ["kept-name"]
    assert (ws / "d" / "kept-name").read_text() == "new\n"


async def test_a_deleted_directory_tree_is_gone(ws):
    deep = ws / "tree" / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "f").write_text("x")
    await ran(ws, "rm -r tree")
    assert not (ws / "tree").exists()


async def test_a_renamed_directory_lands_under_its_new_name(ws):
    (ws / "before" / "inner").mkdir(parents=True)
    (ws / "before" / "inner" / "f").write_text("content")
    await ran(ws, "mv before after")
    assert not (ws / "before").exists()
    assert (ws / "after" / "inner" / "f").read_text() == "content"


async def test_symlinks_land_as_links(ws):
    (ws / "target.txt").write_text("t")
    await ran(ws, "ln -s target.txt rel; ln -s /etc/hostname abs; ln -s missing dangling")
    assert os.readlink(ws / "rel") == "target.txt"
    assert os.readlink(ws / "abs") == "/etc/hostname"
    assert os.readlink(ws / "dangling") == "missing"


async def test_a_fifo_lands_as_a_fifo(ws):
    await ran(ws, "mkfifo pipe")
    assert stat.S_ISFIFO((ws / "pipe").lstat().st_mode)


async def test_an_executable_bit_lands(ws):
    (ws / "run.sh").write_text("#!/bin/sh\necho hi\n")
    await ran(ws, "chmod +x run.sh; echo x > private; chmod 600 private")
    assert (ws / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (ws / "private").stat().st_mode & 0o777 == 0o600


async def test_modification_times_land(ws):
    await ran(ws, "mkdir old-dir; touch -d '2001-02-03 04:05:06 UTC' old.txt old-dir")
    expected = 981173106
    assert (ws / "old.txt").stat().st_mtime == expected
    assert (ws / "old-dir").stat().st_mtime == expected


async def test_a_name_that_is_not_utf8_lands(ws):
    await ran(ws, "echo x > $(printf 'bad\\xff\\xfename')")
    assert os.listdir(os.fsencode(ws)) == [b"bad\xff\xfename"]


async def test_hard_links_land_as_one_file(ws):
    await ran(ws, "echo shared > first; ln first second")
    assert (ws / "first").stat().st_ino == (ws / "second").stat().st_ino
    assert (ws / "first").stat().st_nlink == 2


async def test_a_sparse_file_lands_sparse(ws):
    await ran(ws, "truncate -s 40M sparse; echo end >> sparse")
    st = (ws / "sparse").stat()
    assert st.st_size == 40 * MiB + 4
    assert st.st_blocks * 512 < MiB


async def test_blocks_fallocated_past_the_end_stay_behind(ws):
    await ran(ws, "echo data > f; fallocate --keep-size -o 4096 -l 8M f")
    st = (ws / "f").stat()
    assert (ws / "f").read_text() == "data\n"
    assert st.st_blocks * 512 < MiB


async def test_a_file_tool_write_during_a_bash_call_survives_it(ws):
    """Write and Edit may run while Bash does (parallel tool calls): the merge applies
    what the command changed, and leaves alone what it did not."""
    (ws / "shared").mkdir()
    duration = unique_sleep()
    call = asyncio.create_task(
        sandboxed(ws, f"echo bash > shared/from-bash; sleep {duration}; echo done", timeout_s=30)
    )
    pid = await wait_for_host_pid(["sleep", duration])
    ctx = ToolContext(workspace=ws, runner=runner())
    for path in ("from-tool", "shared/from-tool"):
        await WriteTool().run(WriteInput(path=path, content="tool\n"), ctx)
    os.kill(pid, signal.SIGKILL)
    out = await call
    assert "done" in out.content, out.content
    assert (ws / "shared" / "from-bash").read_text() == "bash\n"
    assert (ws / "from-tool").read_text() == "tool\n"
    assert (ws / "shared" / "from-tool").read_text() == "tool\n"


async def test_writes_of_a_call_cancelled_midway_land(ws):
    """However a call ends (exit, timeout, a limit, cancellation), what it wrote lands."""
    duration = unique_sleep()
    call = asyncio.create_task(sandboxed(ws, f"echo early > early.txt; sleep {duration}", timeout_s=30))
    await wait_for_host_pid(["sleep", duration])
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert (ws / "early.txt").read_text() == "early\n"


async def test_the_command_sees_its_cap_as_the_free_space(ws):
    out = await ran(ws, "df -B1M --output=size . | tail -1", SMALL)
    assert out.splitlines()[0].strip() == str(SMALL.workspace_growth_mb)


async def test_a_non_root_harness_caps_its_writes_with_a_layer_of_its_own(outside_tmp):
    """As an ordinary user the child makes the layer in a user namespace of its own and
    hands it back: the cap holds, what lands is the user's, protected names stay absent."""
    user = 4322
    script = "\n".join(
        [
            "import asyncio, sys",
            "from pathlib import Path",
            "from tests.support.sandbox_support import SMALL, runner, sandboxed",
            "command = 'echo made > f; mkdir .workingset; head -c 64M /dev/zero > big'",
            "print(asyncio.run(sandboxed(Path(sys.argv[1]), command, sandbox=runner(SMALL, weak_limits=True))).content)",
        ]
    )
    workspace = user_workspace(outside_tmp, user)
    text = as_user(user, script, str(workspace), scratch=outside_tmp)
    assert "workspace growth limit of 16 MB reached (the kernel refused" in text, text
    assert (workspace / "f").read_text() == "made\n"
    assert {p.stat().st_uid for p in workspace.iterdir()} == {user}
    assert (workspace / "big").stat().st_size <= 16 * MiB
    assert not (workspace / ".workingset").exists()


async def test_a_call_that_only_reads_changes_nothing(ws):
    (ws / "sub").mkdir()
    (ws / "sub" / "f").write_text("x")
    before = {p: p.stat().st_mtime_ns for p in (ws, ws / "sub", ws / "sub" / "f")}
    await ran(ws, "ls -laR; cat sub/f; git status 2>/dev/null; true")
    assert {p: p.stat().st_mtime_ns for p in before} == before
    assert sorted(p.name for p in ws.rglob("*")) == ["f", "sub"]
