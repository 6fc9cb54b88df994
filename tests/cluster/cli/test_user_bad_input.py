"""A user's broken file is one clear line and the run goes on without it (a broken config,
which decides how the run goes, stops it with exit 2 and names the file; so does a home
that cannot be written, before any work): a real `workingset run` in a trusted workspace
holding each kind of broken file."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agents.sources._memory import MemoryStore
from cluster.terminal._cli import main
from tests.support import ROOT
from tests.support.fakes import trust_workspace


def _broken_skill(ws: Path, home: Path) -> str:
    (ws / ".workingset" / "skills" / "deploy").mkdir(parents=True)
    (ws / ".workingset" / "skills" / "deploy" / "SKILL.md").write_text("---\nname: [unclosed\n---\nBody.\n")
    return "SKILL.md"


def _broken_memory(ws: Path, home: Path) -> str:
    directory = MemoryStore(ws, home).directory
    directory.mkdir(parents=True)
    (directory / "notes.md").write_text("---\ndescription: [unclosed\n---\nRemember this.\n")
    return "notes"


def _crashing_mcp_server(ws: Path, home: Path) -> str:
    with (ws / ".workingset" / "config.toml").open("a") as config:
        config.write(
            f'\n[[mcp_servers]]\nname = "dead"\ncommand = "{sys.executable}"\nargs = ["-c", "raise SystemExit(1)"]\n'
        )
    return "dead"


BROKEN = {
    "a SKILL.md with bad front matter": _broken_skill,
    "a memory record with bad front matter": _broken_memory,
    "an MCP server that crashes at start": _crashing_mcp_server,
}


def _trusted_workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".workingset").mkdir(parents=True)
    trust_workspace(ws)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "Working anyway."}]}))
    (ws / ".workingset" / "config.toml").write_text(
        f'model = "scripted:{script}"\nhome = "{home}"\nruntime = "local"\n'
    )
    return ws, home


@pytest.mark.parametrize("broken", list(BROKEN))
def test_a_broken_user_file_is_one_notice_and_the_run_goes_on(tmp_path, capsys, broken):
    ws, home = _trusted_workspace(tmp_path)
    named = BROKEN[broken](ws, home)
    code = main(["run", "go", "--cwd", str(ws), "--json"])
    captured = capsys.readouterr()
    events = [json.loads(line) for line in captured.out.splitlines() if line.startswith("{")]
    assert code == 0 and "Traceback" not in captured.err
    assert events[-1]["reason"] == "end_turn" and events[-1]["final_text"] == "Working anyway."
    notices = [e["text"] for e in events if e["type"] == "notice"]
    assert len([t for t in notices if named in t]) == 1, notices


def test_a_broken_config_file_stops_the_run_in_one_line_naming_it(tmp_path, capsys):
    ws, _ = _trusted_workspace(tmp_path)
    (ws / ".workingset" / "config.toml").write_text("model = \n")
    assert main(["run", "go", "--cwd", str(ws), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "config.toml" in err and "Traceback" not in err


def test_a_user_config_toml_that_is_a_directory_stops_the_run_in_one_line_naming_it(tmp_path, capsys):
    ws, _ = _trusted_workspace(tmp_path)
    (Path.home() / ".workingset" / "config.toml").mkdir(parents=True)
    assert main(["run", "go", "--cwd", str(ws), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"config file {Path.home() / '.workingset' / 'config.toml'} is not a file" in err


def test_a_home_that_names_a_file_is_one_line_before_any_work(tmp_path, capsys, monkeypatch):
    ws, _ = _trusted_workspace(tmp_path)
    (tmp_path / "not-a-dir").write_text("")
    monkeypatch.setenv("WORKINGSET_HOME", str(tmp_path / "not-a-dir"))
    assert main(["run", "go", "--cwd", str(ws), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert f"home (WORKINGSET_HOME) {tmp_path / 'not-a-dir'} is a file, not a directory" in captured.err
    assert "set WORKINGSET_HOME (or `home` in config.toml) to a directory you can write" in captured.err


def test_a_home_on_a_read_only_mount_is_one_line_before_any_work(tmp_path):
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a read-only directory")
    ws, _ = _trusted_workspace(tmp_path)
    home = tmp_path / "read-only-home"
    home.mkdir()
    run = f"{sys.executable} -m cluster.terminal._cli run go --cwd {ws} --json"
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount --bind {home} {home} && mount -o remount,ro,bind {home} && {run}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "WORKINGSET_HOME": str(home)},
    )
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert f"home (WORKINGSET_HOME) {home} cannot be written: read-only file system" in done.stderr
