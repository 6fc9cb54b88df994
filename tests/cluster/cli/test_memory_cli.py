import argparse
from pathlib import Path

import pytest

from agents.sources._memory import MemoryStore
from cluster.terminal._cli import main
from cluster.terminal._memory_cli import add_memory_parser, run_memory_command


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="workingset")
    add_memory_parser(parser.add_subparsers(dest="command"))
    return run_memory_command(parser.parse_args(["memory", *argv]))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def store(workspace: Path) -> MemoryStore:
    # HOME is a tmp dir (tests/conftest.py), so this is where the CLI looks too.
    return MemoryStore(workspace, Path.home() / ".workingset")


def test_list_prints_name_type_and_description(workspace, store, capsys):
    store.write("db-choice", "project", "We use Postgres 16", "body text")
    assert cli("--cwd", str(workspace), "list") == 0
    out = capsys.readouterr().out
    assert str(store.directory) in out
    assert "db-choice" in out and "project" in out and "We use Postgres 16" in out and "body text" not in out


def test_list_with_no_records_says_so(workspace, capsys):
    assert cli("--cwd", str(workspace), "list") == 0
    assert "No memory records yet." in capsys.readouterr().out


def test_list_warns_about_broken_records(workspace, store, capsys):
    store.directory.mkdir(parents=True)
    (store.directory / "broken.md").write_text("no front-matter\n")
    assert cli("--cwd", str(workspace), "list") == 0
    assert "skipped" in capsys.readouterr().err and (store.directory / "broken.md").exists()


def test_show_prints_the_body(workspace, store, capsys):
    store.write("db-choice", "project", "We use Postgres 16", "Chosen for JSONB.")
    assert cli("--cwd", str(workspace), "show", "db-choice") == 0
    out = capsys.readouterr().out
    assert "db-choice (project): We use Postgres 16" in out and "Chosen for JSONB." in out


def test_rm_deletes_the_record(workspace, store, capsys):
    record = store.write("db-choice", "project", "We use Postgres 16", "body")
    assert cli("--cwd", str(workspace), "rm", "db-choice") == 0
    assert "Deleted memory record db-choice" in capsys.readouterr().out and not record.path.exists()


@pytest.mark.parametrize("command", ["show", "rm"])
def test_unknown_name_is_one_line_listing_available_exit_2(workspace, store, capsys, command):
    store.write("db-choice", "project", "x", "y")
    store.write("role", "user", "x", "y")
    assert cli("--cwd", str(workspace), command, "nope") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("workingset: error: no memory record named 'nope'; available: db-choice, role")


def test_missing_cwd_is_exit_2(tmp_path, capsys):
    assert cli("--cwd", str(tmp_path / "missing"), "list") == 2
    assert "is not an existing directory" in capsys.readouterr().err


def test_no_subcommand_lists(workspace, store, capsys):
    store.write("role", "user", "Backend engineer", "y")
    assert cli("--cwd", str(workspace)) == 0
    assert "Backend engineer" in capsys.readouterr().out


def test_cwd_may_follow_the_subcommand(workspace, store, capsys):
    store.write("role", "user", "Backend engineer", "Knows Go.")
    assert cli("show", "role", "--cwd", str(workspace)) == 0
    assert "Knows Go." in capsys.readouterr().out


@pytest.mark.parametrize("command", ["show", "rm"])
@pytest.mark.parametrize("name", ["name\n", "../secrets", "a/b", "", "x" * 65, "tab\there"])
def test_a_name_that_is_no_record_name_is_one_line_exit_2(workspace, capsys, command, name):
    assert main(["memory", command, name, "--cwd", str(workspace)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("workingset: error: invalid memory name ")
    assert "use 1-64 characters of lowercase letters" in err
