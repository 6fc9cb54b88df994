"""Resume through the CLI, the REPL and `workingset sessions`: `--resume`, `--continue`,
`/clear` and `/resume`, a corrupted or unwritable store, and clear errors for unknown
sessions and versions."""

import asyncio
import json
from pathlib import Path

import diskcache

import cluster.terminal._console
import cluster.terminal._repl
from agents.settings._config import load_settings
from cluster.terminal._cli import main
from tests.support.builders import json_events
from tests.support.fakes import trust_workspace
from tests.support.resume_support import (
    built_session,
    corrupt_current,
    make_workspace,
    snapshot_store,
    write_call,
    write_script,
)


def _cli_config(ws: Path, tmp_path: Path, permissions: str = 'mode = "bypass"') -> None:
    """A workspace config, so the CLI and build_session see the same settings (the
    workspace is trusted: its model, home and permission mode are not inert settings)."""
    trust_workspace(ws)
    (ws / ".workingset").mkdir(exist_ok=True)
    (ws / ".workingset" / "config.toml").write_text(
        f'model = "scripted:{tmp_path / "script.json"}"\nhome = "{tmp_path / "home"}"\n\n[permissions]\n{permissions}\n'
    )


def _cli_session(tmp_path: Path, ws: Path, capsys, prompt: str = "hello") -> str:
    assert main(["run", prompt, "--cwd", str(ws), "--json"]) == 0
    return json_events(capsys.readouterr().out)[0]["session_id"]


def _feed_lines(monkeypatch, lines: list[str]) -> list[str]:
    """Answers the REPL's and the permission prompt's questions, in order; end of input after."""
    queue = list(lines)
    asked: list[str] = []

    async def ask_line(prompt: str) -> str | None:
        asked.append(prompt)
        return queue.pop(0) if queue else None

    monkeypatch.setattr(cluster.terminal._repl, "ask_line", ask_line)
    monkeypatch.setattr(cluster.terminal._console, "ask_line", ask_line)
    return asked


# -- through the CLI -------------------------------------------------------------------------


def test_cli_resume_continues_the_saved_conversation(tmp_path, capsys):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    write_script(tmp_path, [{"text": "first answer"}])
    sid = _cli_session(tmp_path, ws, capsys, "remember 42")

    write_script(tmp_path, [{"text": "you said 42"}])
    assert main(["run", "what did I say?", "--cwd", str(ws), "--resume", sid, "--json"]) == 0
    events = json_events(capsys.readouterr().out)
    assert events[0]["session_id"] == sid and events[-1]["final_text"] == "you said 42"
    texts = [m.text for m in snapshot_store(tmp_path).load(sid).state.conversation]
    assert texts == ["remember 42", "first answer", "what did I say?", "you said 42"]


def test_cli_continue_picks_the_latest_session_of_this_workspace(tmp_path, capsys):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    write_script(tmp_path, [])
    _cli_session(tmp_path, ws, capsys, "older")
    latest = _cli_session(tmp_path, ws, capsys, "newer")
    other = (tmp_path / "other").resolve()
    other.mkdir()
    _cli_config(other, tmp_path)
    _cli_session(tmp_path, other, capsys, "elsewhere")

    assert main(["run", "again", "--cwd", str(ws), "--continue", "--json"]) == 0
    assert json_events(capsys.readouterr().out)[0]["session_id"] == latest
    assert [m.text for m in snapshot_store(tmp_path).load(latest).state.conversation][:1] == ["newer"]


def test_cli_continue_without_a_saved_session_is_a_clear_error(tmp_path, capsys):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    write_script(tmp_path, [])
    assert main(["run", "x", "--cwd", str(ws), "--continue"]) == 2
    assert f"no saved session for {ws}" in capsys.readouterr().err


def test_cli_resume_of_an_unknown_session_is_a_clear_error(tmp_path, capsys):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    write_script(tmp_path, [])
    assert main(["run", "x", "--cwd", str(ws), "--resume", "nosuchsession"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot resume nosuchsession: no snapshot of session nosuchsession" in err


def test_cli_resume_from_another_workspace_is_refused_naming_both(tmp_path, capsys):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    write_script(tmp_path, [])
    sid = _cli_session(tmp_path, ws, capsys)
    other = (tmp_path / "other").resolve()
    other.mkdir()
    _cli_config(other, tmp_path)
    before = [v.version for v in snapshot_store(tmp_path).history(sid)]

    assert main(["run", "x", "--cwd", str(other), "--resume", sid]) == 2
    err = capsys.readouterr().err
    assert f"belongs to workspace {ws}, not {other}" in err and "Traceback" not in err
    assert [v.version for v in snapshot_store(tmp_path).history(sid)] == before


def _two_turn_session_with_a_corrupted_current(tmp_path, capsys, replies=({"text": "one"}, {"text": "two"})):
    """A CLI session of two turns ("first" → "one", "second" → current; `replies` are the
    model's) whose current version is then damaged; returns (workspace, session id,
    current version, its bytes)."""
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    write_script(tmp_path, list(replies))
    sid = _cli_session(tmp_path, ws, capsys, "first")
    main(["run", "second", "--cwd", str(ws), "--resume", sid, "--json"])
    capsys.readouterr()
    current, damaged = corrupt_current(tmp_path, sid)
    return ws, sid, current, damaged


def test_cli_resume_of_a_corrupted_current_says_so_and_uses_the_newest_intact_version(tmp_path, capsys):
    ws, sid, current, damaged = _two_turn_session_with_a_corrupted_current(tmp_path, capsys)

    write_script(tmp_path, [{"text": "three"}])
    assert main(["run", "third", "--cwd", str(ws), "--resume", sid, "--json"]) == 0
    notices = [e["text"] for e in json_events(capsys.readouterr().out) if e["type"] == "notice"]
    assert len(notices) == 1 and current in notices[0] and "newest intact version" in notices[0]
    store = snapshot_store(tmp_path)
    assert [m.text for m in store.load(sid).state.conversation] == ["first", "one", "third", "three"]
    history = store.history(sid)
    assert history[1].version == current and history[1].reason == "(corrupt)"
    with diskcache.Cache(str(tmp_path / "home" / "snapshots" / sid)) as cache:
        assert cache.get("v:" + current) == damaged


def test_cli_human_output_shows_the_fallback_notice(tmp_path, capsys):
    ws, sid, current, _ = _two_turn_session_with_a_corrupted_current(tmp_path, capsys, replies=[])

    assert main(["run", "third", "--cwd", str(ws), "--resume", sid]) == 0
    out = " ".join(capsys.readouterr().out.split())  # undo the console's line wrapping
    assert current in out and "newest intact version" in out


def test_cli_says_the_state_was_not_saved_when_the_store_cannot_be_written(tmp_path, capsys):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "snapshots").write_text("not a directory")
    write_script(tmp_path, [{"text": "answered anyway"}])
    assert main(["run", "hello", "--cwd", str(ws)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "answered anyway" in out and "state not saved" in out


def test_cli_json_reports_a_failed_save_as_a_snapshot_event(tmp_path, capsys):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "snapshots").write_text("not a directory")
    write_script(tmp_path, [{"text": "answered anyway"}])
    assert main(["run", "hello", "--cwd", str(ws), "--json"]) == 0
    [event] = [e for e in json_events(capsys.readouterr().out) if e["type"] == "snapshot"]
    assert event["saved"] is False and event["error"].startswith("state not saved:")


def test_repl_resume_of_a_parked_session_asks_first_and_runs_the_call_on_approval(tmp_path, capsys, monkeypatch):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path, 'mode = "default"')
    write_script(tmp_path, [{"text": "Writing.", "tool_calls": [write_call()]}])
    first, _ = built_session(load_settings(ws), ws)
    asyncio.run(first.run_turn("write out.txt"))
    assert first.pending is not None

    write_script(tmp_path, [{"text": "written."}])
    asked = _feed_lines(monkeypatch, ["y", "/exit"])
    assert main(["run", "--cwd", str(ws), "--resume", first.session_id]) == 0
    assert asked[0].startswith("Allow?")
    assert (ws / "out.txt").read_text() == "written after approval"
    assert snapshot_store(tmp_path).load(first.session_id).state.pending is None


def test_repl_clear_is_persisted_and_restore_undoes_it(tmp_path, capsys, monkeypatch):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    write_script(tmp_path, [{"text": "hi!"}])
    _feed_lines(monkeypatch, ["hello", "/clear", "/exit"])
    assert main(["run", "--cwd", str(ws), "--json"]) == 0
    sid = json_events(capsys.readouterr().out)[0]["session_id"]
    store = snapshot_store(tmp_path)
    history = store.history(sid)
    assert [(v.reason, v.messages) for v in history] == [("clear", 0), ("end_turn", 2)]
    store.close()

    assert main(["sessions", "--cwd", str(ws), "restore", sid, history[1].version]) == 0
    assert f"version {history[1].version} is current again" in capsys.readouterr().out
    write_script(tmp_path, [{"text": "welcome back"}])
    assert main(["run", "still there?", "--cwd", str(ws), "--continue", "--json"]) == 0
    texts = [m.text for m in snapshot_store(tmp_path).load(sid).state.conversation]
    assert texts == ["hello", "hi!", "still there?", "welcome back"]


def test_repl_resume_after_clear_returns_to_the_conversation_before_it(tmp_path, capsys, monkeypatch):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    write_script(tmp_path, [{"text": "hi!"}, {"text": "welcome back"}])
    _feed_lines(monkeypatch, ["hello", "/clear", "/resume", "still there?", "/exit"])
    assert main(["run", "--cwd", str(ws), "--json"]) == 0
    out, said = capsys.readouterr()  # --json: the events on stdout, the REPL's notices on stderr
    assert "conversation cleared (the previous one stays in the session's history; /resume returns to it)" in said
    assert "is a /clear; resuming the conversation before it" in said and "2 messages" in said
    sid = json_events(out)[0]["session_id"]
    texts = [m.text for m in snapshot_store(tmp_path).load(sid).state.conversation]
    assert texts == ["hello", "hi!", "still there?", "welcome back"]


def test_repl_resume_command_loads_the_latest_snapshot(tmp_path, capsys, monkeypatch):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    write_script(tmp_path, [{"text": "noted"}])
    sid = _cli_session(tmp_path, ws, capsys, "remember 7")
    _feed_lines(monkeypatch, [f"/resume {sid}", "/exit"])
    assert main(["run", "--cwd", str(ws)]) == 0
    out = capsys.readouterr().out
    assert f"resumed {sid} (version " in out and "2 messages, mode default" in out


# -- `workingset sessions` -------------------------------------------------------------------


def test_sessions_list_show_export_and_history(tmp_path, capsys):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    write_script(tmp_path, [{"text": "the final answer"}])
    sid = _cli_session(tmp_path, ws, capsys, "a question")

    assert main(["sessions", "--cwd", str(ws), "list"]) == 0
    listing = capsys.readouterr().out
    assert sid in listing and "2 msgs" in listing and "the final answer" in listing

    assert main(["sessions", "--cwd", str(ws), "show", sid]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["session_id"], shown["messages"], shown["cwd"]) == (sid, 2, str(ws))

    assert main(["sessions", "--cwd", str(ws), "export", sid]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert [m["content"][0]["text"] for m in exported["conversation"]] == ["a question", "the final answer"]

    assert main(["sessions", "--cwd", str(ws), "export", sid, "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert f"# Session {sid}" in markdown and "## assistant\nthe final answer" in markdown

    assert main(["sessions", "--cwd", str(ws), "history", sid]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("* ") and "end_turn" in lines[0]


def test_sessions_show_of_a_corrupted_current_warns_and_shows_the_intact_version(tmp_path, capsys):
    ws, sid, current, _ = _two_turn_session_with_a_corrupted_current(tmp_path, capsys, replies=[])

    assert main(["sessions", "--cwd", str(ws), "show", sid]) == 0
    out = capsys.readouterr().out
    warning, _, body = out.partition("\n")
    assert warning.startswith("warning: ") and current in warning
    assert json.loads(body)["messages"] == 2


def test_sessions_commands_on_an_unknown_session_are_clear_errors(tmp_path, capsys):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    for action in (["show", "nope"], ["export", "nope"], ["history", "nope"], ["restore", "nope", "1"]):
        assert main(["sessions", "--cwd", str(ws), *action]) == 2
        err = capsys.readouterr().err
        assert "no snapshot of session nope" in err and "sessions list --all" in err


def test_sessions_restore_of_an_unknown_version_changes_nothing(tmp_path, capsys):
    ws = make_workspace(tmp_path)
    _cli_config(ws, tmp_path)
    write_script(tmp_path, [])
    sid = _cli_session(tmp_path, ws, capsys)
    before = [v.version for v in snapshot_store(tmp_path).history(sid)]
    assert main(["sessions", "--cwd", str(ws), "restore", sid, "00000000000000000001"]) == 2
    assert "00000000000000000001" in capsys.readouterr().err
    assert [v.version for v in snapshot_store(tmp_path).history(sid)] == before


def test_cli_export_of_a_corrupted_current_warns_on_stderr_and_exports_the_intact_version(tmp_path, capsys):
    ws, sid, current, _ = _two_turn_session_with_a_corrupted_current(tmp_path, capsys)

    assert main(["sessions", "--cwd", str(ws), "export", sid]) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and current in captured.err
    exported = json.loads(captured.out)
    assert [m["content"][0]["text"] for m in exported["conversation"]] == ["first", "one"]
