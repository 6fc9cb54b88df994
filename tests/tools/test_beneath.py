"""Beneath: every open stays inside its root, whatever the path or a racing swap does."""

from __future__ import annotations

import contextlib
import os
import threading

import pytest

from tools.files import _tree_walk as tree_walk
from tools.files._beneath import Beneath, BeneathError, relative_path
from tools.files._tree_walk import walk_files


def test_reads_a_file_inside(tmp_path, beneath_mode):
    (tmp_path / "a.txt").write_text("hello")
    with Beneath(tmp_path) as root:
        assert root.read_regular("a.txt") == b"hello"


def test_dotdot_out_of_the_root_is_refused(tmp_path, beneath_mode):
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret").write_text("s")
    with Beneath(tmp_path / "ws") as root, pytest.raises(BeneathError, match="outside the workspace"):
        root.read_regular("../secret")


def test_symlink_out_of_the_root_is_refused(tmp_path, beneath_mode):
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret").write_text("s")
    (tmp_path / "ws" / "link").symlink_to(tmp_path / "secret")
    with Beneath(tmp_path / "ws") as root, pytest.raises(BeneathError):
        root.read_regular("link")


def test_fifo_is_refused_without_blocking(tmp_path, beneath_mode):
    os.mkfifo(tmp_path / "pipe")
    with Beneath(tmp_path) as root, pytest.raises(BeneathError, match="FIFO"):
        root.read_regular("pipe")


def test_nul_byte_is_a_clear_error(tmp_path):
    with pytest.raises(BeneathError, match="NUL"):
        relative_path(tmp_path, "a\0b")


def test_absolute_path_outside_is_refused(tmp_path):
    with pytest.raises(BeneathError, match="outside the workspace"):
        relative_path(tmp_path, "/etc/passwd")


def test_write_atomic_replaces_a_symlink_instead_of_following_it(tmp_path, beneath_mode):
    (tmp_path / "ws").mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (tmp_path / "ws" / "f").symlink_to(outside)
    with Beneath(tmp_path / "ws") as root:
        root.write_atomic("f", b"new")
    assert outside.read_text() == "keep"
    assert (tmp_path / "ws" / "f").read_text() == "new" and not (tmp_path / "ws" / "f").is_symlink()


def test_a_racing_directory_swap_never_reaches_outside(tmp_path, beneath_mode):
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "f").write_text("inside")
    outside = tmp_path / "out"
    outside.mkdir()
    (outside / "f").write_text("SECRET")
    stop = threading.Event()

    def swap():
        while not stop.is_set():
            try:
                os.rename(ws / "d", ws / "d.real")
                os.symlink(outside, ws / "d")
                os.unlink(ws / "d")
                os.rename(ws / "d.real", ws / "d")
            except OSError:
                pass

    thread = threading.Thread(target=swap)
    thread.start()
    seen = set()
    try:
        with Beneath(ws) as root:
            for _ in range(3000):
                with contextlib.suppress(BeneathError, OSError):
                    seen.add(root.read_regular("d/f"))
    finally:
        stop.set()
        thread.join()
    assert b"SECRET" not in seen


def test_walk_lists_regular_files_and_skips_links_out(tmp_path, beneath_mode):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x")
    (ws / "src" / "in").symlink_to("a.py")
    (ws / "out").symlink_to(tmp_path)
    (tmp_path / "b.py").write_text("y")
    os.mkfifo(ws / "pipe")
    with Beneath(ws) as root:
        found = [f.path for f in walk_files(root)]
    assert "src/a.py" in found and "pipe" not in found and not any(f.startswith("out") for f in found)
    assert "src/in" in found


def test_real_path_follows_links_that_stay_inside(tmp_path, beneath_mode):
    (tmp_path / "docs" / "v1").mkdir(parents=True)
    (tmp_path / "docs" / "v1" / "guide.md").write_text("g")
    (tmp_path / "latest").symlink_to("docs/v1")
    (tmp_path / "docs" / "up").symlink_to("..")
    with Beneath(tmp_path) as root:
        assert root.real_path("latest/guide.md") == "docs/v1/guide.md"
        assert root.real_path("docs/up/latest/../v1") == "docs/v1"
        assert root.real_path("latest/new/file.py", missing_ok=True) == "docs/v1/new/file.py"


def test_a_symlink_loop_is_an_error_not_a_hang(tmp_path, beneath_mode):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with Beneath(tmp_path) as root, pytest.raises(BeneathError, match="symbolic link"):
        root.read_regular("a")


def test_an_open_that_forbids_links_refuses_one_anywhere_on_the_path(tmp_path, beneath_mode):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("x")
    (tmp_path / "alias").symlink_to("real")
    with Beneath(tmp_path) as root:
        assert root.read_regular("real/f", follow_links=False) == b"x"
        with pytest.raises(BeneathError, match="symbolic link"):
            root.read_regular("alias/f", follow_links=False)


def test_write_atomic_keeps_the_permission_bits_of_the_file_it_replaces(tmp_path, beneath_mode):
    (tmp_path / "run.sh").write_text("old")
    (tmp_path / "run.sh").chmod(0o750)
    with Beneath(tmp_path) as root:
        assert root.write_atomic("run.sh", b"new") is True
    assert (tmp_path / "run.sh").read_text() == "new"
    assert (tmp_path / "run.sh").stat().st_mode & 0o777 == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]  # no temporary file left


def test_walk_does_not_enter_directories_deeper_than_its_cap(tmp_path, beneath_mode, monkeypatch):
    monkeypatch.setattr(tree_walk, "MAX_WALK_DEPTH", 2)
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    for rel in ("top.txt", "a/1.txt", "a/b/2.txt", "a/b/c/3.txt"):
        (tmp_path / rel).write_text("x")
    with Beneath(tmp_path) as root:
        assert [f.path for f in walk_files(root)] == ["top.txt", "a/1.txt", "a/b/2.txt"]


def test_an_absolute_link_to_a_place_under_the_root_is_followed(tmp_path, beneath_mode):
    (tmp_path / "ws" / "build").mkdir(parents=True)
    (tmp_path / "ws" / "build" / "compile_commands.json").write_text("[]")
    (tmp_path / "ws" / "compile_commands.json").symlink_to(tmp_path / "ws" / "build" / "compile_commands.json")
    (tmp_path / "ws" / "escape").symlink_to(tmp_path / "ws" / ".." / "secret")
    (tmp_path / "secret").write_text("s")
    with Beneath(tmp_path / "ws") as root:
        assert root.real_path("compile_commands.json") == "build/compile_commands.json"
        assert root.read_regular("compile_commands.json") == b"[]"
        with pytest.raises(BeneathError, match="outside the workspace"):
            root.read_regular("escape")
