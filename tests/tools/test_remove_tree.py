"""Removing a tree an agent wrote: any depth, any path length, locked directories, links."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.support.fakes import deep_tree
from tools.files._remove_tree import remove_tree


def test_a_tree_five_thousand_directories_deep_is_removed(tmp_path):
    deep_tree(tmp_path / "ws", 5_000)
    remove_tree(tmp_path / "ws")
    assert not (tmp_path / "ws").exists()


def test_a_path_longer_than_path_max_is_removed(tmp_path):
    deep_tree(tmp_path / "ws", 20, name="n" * 255)  # 20 x 256 bytes: over PATH_MAX (4096)
    remove_tree(tmp_path / "ws")
    assert not (tmp_path / "ws").exists()


def test_a_symlink_inside_is_removed_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    (tmp_path / "ws" / "sub" / "link").symlink_to(outside)
    remove_tree(tmp_path / "ws")
    assert not (tmp_path / "ws").exists() and (outside / "keep.txt").read_text() == "x"


def test_a_link_given_as_the_tree_is_removed_not_followed(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "keep.txt").write_text("x")
    (tmp_path / "ws").symlink_to(tmp_path / "real")
    remove_tree(tmp_path / "ws")
    assert not (tmp_path / "ws").is_symlink() and (tmp_path / "real" / "keep.txt").exists()


def test_a_missing_tree_is_nothing_to_do(tmp_path):
    remove_tree(tmp_path / "nope")
    assert list(tmp_path.iterdir()) == []


def test_unreadable_and_read_only_directories_inside_are_removed(tmp_path):
    # Root may read a chmod-000 directory anyway; without capabilities it is held to the
    # mode bits like the owner of a workspace is, so the removal runs in such a process.
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root to drop its capabilities")
    ws = tmp_path / "ws"
    for rel in ["locked/inner/file.txt", "readonly/sub/file.txt", "plain/file.txt"]:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x")
    (ws / "locked" / "inner").chmod(0o000)
    (ws / "locked").chmod(0o000)
    (ws / "readonly" / "sub").chmod(0o555)
    (ws / "readonly").chmod(0o500)
    code = f"from tools.files._remove_tree import remove_tree; remove_tree({str(ws)!r})"
    done = subprocess.run(
        ["setpriv", "--inh-caps=-all", "--bounding-set=-all", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert done.returncode == 0, done.stderr
    assert not ws.exists()
