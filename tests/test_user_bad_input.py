"""A user's broken file is one clear line and the run goes on without it (a broken config,
which decides how the run goes, stops it with exit 2 and names the file): a real
`workingset run` in a trusted workspace holding each kind of broken file."""

import json
import sys
from pathlib import Path

import pytest

from agents.memory import MemoryStore
from cluster.cli import main
from tests.fakes import trust_workspace


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
        config.write(f'\n[[mcp_servers]]\nname = "dead"\ncommand = "{sys.executable}"\nargs = ["-c", "raise SystemExit(1)"]\n')
    return "dead"


BROKEN = {"a SKILL.md with bad front matter": _broken_skill, "a memory record with bad front matter": _broken_memory,
          "an MCP server that crashes at start": _crashing_mcp_server}


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".workingset").mkdir(parents=True)
    trust_workspace(ws)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "Working anyway."}]}))
    (ws / ".workingset" / "config.toml").write_text(f'model = "scripted:{script}"\nhome = "{home}"\nruntime = "local"\n')
    return ws, home


@pytest.mark.parametrize("broken", list(BROKEN))
def test_a_broken_user_file_is_one_notice_and_the_run_goes_on(tmp_path, capsys, broken):
    ws, home = _workspace(tmp_path)
    named = BROKEN[broken](ws, home)
    code = main(["run", "go", "--cwd", str(ws), "--json"])
    captured = capsys.readouterr()
    events = [json.loads(line) for line in captured.out.splitlines() if line.startswith("{")]
    assert code == 0 and "Traceback" not in captured.err
    assert events[-1]["reason"] == "end_turn" and events[-1]["final_text"] == "Working anyway."
    notices = [e["text"] for e in events if e["type"] == "notice"]
    assert len([t for t in notices if named in t]) == 1, notices


def test_a_broken_config_file_stops_the_run_in_one_line_naming_it(tmp_path, capsys):
    ws, _ = _workspace(tmp_path)
    (ws / ".workingset" / "config.toml").write_text("model = \n")
    assert main(["run", "go", "--cwd", str(ws), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "config.toml" in err and "Traceback" not in err
