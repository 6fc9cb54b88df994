"""Every byte a model, a tool or the file system can produce round-trips: a real
`workingset run` against the fake Messages and Chat Completions servers (real SDKs) with a
lone surrogate in a reply, a file name that is not UTF-8 listed by Glob, a prompt that is
not UTF-8 — each goes on to the next request, shown as a visible escape, and every
snapshot saves; the store keeps a path that is not UTF-8 exactly."""

import io
import json
import os
from pathlib import Path

import pytest

from agents.events import Notice
from agents.snapshots._store import DiskSnapshotStore
from cluster.terminal._cli import main
from cluster.terminal._render import JsonRenderer
from tests.support.fakes import session_state
from tests.support.snapshot_support import growing_conversation

CAFE = os.fsdecode(b"caf\xe9.txt")  # é as the Latin-1 byte 0xE9: no UTF-8


@pytest.fixture
def run(tmp_path, monkeypatch, capsys):
    """`workingset run PROMPT` in a fresh workspace holding a.txt and CAFE, against the
    server `base_url` points at; returns (exit code, JSON events)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    (ws / CAFE).write_text("brewed\n")
    monkeypatch.setenv("WORKINGSET_HOME", str(tmp_path / "home"))

    def go(prompt: str, model: str) -> tuple[int, list[dict]]:
        code = main(
            ["run", prompt, "--cwd", str(ws), "--model", model, "--permission-mode", "bypass", "--json", "--local"]
        )
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
        return code, [json.loads(line) for line in captured.out.splitlines() if line.startswith("{")]

    return go


@pytest.fixture
def anthropic_run(run, messages_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    return lambda prompt="go": run(prompt, "anthropic:claude-sonnet-4-5")


def _saved(events: list[dict], home: Path) -> list:
    """The conversation the session's last snapshot holds; every save succeeded."""
    assert [e for e in events if e["type"] == "snapshot"] and all(e["saved"] for e in events if e["type"] == "snapshot")
    store = DiskSnapshotStore(home / "snapshots")
    try:
        return store.load(events[0]["session_id"]).state.conversation
    finally:
        store.close()


def _sent_blocks(body: dict) -> list[dict]:
    return [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]


def test_a_lone_surrogate_in_a_reply_goes_back_as_visible_text_and_every_save_succeeds(
    anthropic_run, messages_server, tmp_path
):
    messages_server.push_content(
        [
            {"type": "text", "text": "thinking \ud800 aloud"},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.txt"}},
        ],
        stop_reason="tool_use",
    )
    messages_server.push_text("Done.")
    code, events = anthropic_run()
    assert code == 0 and events[-1]["final_text"] == "Done."
    assert {"type": "text", "text": "thinking \\ud800 aloud"} in _sent_blocks(messages_server.bodies[1])
    assert _saved(events, tmp_path / "home")[1].text == "thinking \\ud800 aloud"


def test_a_lone_surrogate_in_an_openai_reply_goes_back_as_visible_text(run, openai_server, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{openai_server.url}/v1")
    openai_server.push_tool_calls([{"name": "Read", "input": {"path": "a.txt"}}], text="half \udc80 a pair")
    openai_server.push_text("Done.")
    code, events = run("go", "openai:gpt-4o")
    assert code == 0 and events[-1]["final_text"] == "Done."
    [assistant] = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "assistant"]
    assert assistant["content"] == "half \\x80 a pair"
    assert _saved(events, tmp_path / "home")[1].text == "half \\x80 a pair"


def test_a_file_name_that_is_not_utf8_reaches_the_model_and_the_name_it_shows_opens_the_file(
    anthropic_run, messages_server, tmp_path
):
    messages_server.push_tool_use("Glob", {"pattern": "c*"})
    messages_server.push_tool_use("Read", {"path": "caf\\xe9.txt"})  # the name as the listing showed it
    messages_server.push_text("Done.")
    code, events = anthropic_run()
    assert code == 0 and events[-1]["final_text"] == "Done."
    [listing] = [b for b in _sent_blocks(messages_server.bodies[1]) if b["type"] == "tool_result"][-1:]
    assert listing["content"] == "caf\\xe9.txt"
    read = [b for b in _sent_blocks(messages_server.bodies[2]) if b["type"] == "tool_result"][-1]
    assert "brewed" in read["content"] and not read.get("is_error")
    assert len(_saved(events, tmp_path / "home")) == 6


def test_a_prompt_that_is_not_utf8_is_sent_with_its_byte_escaped(anthropic_run, messages_server, tmp_path):
    messages_server.push_text("Read it.")
    code, events = anthropic_run(os.fsdecode(b"open caf\xe9.txt"))  # as Python decodes such an argument
    assert code == 0
    assert _sent_blocks(messages_server.bodies[0])[-1]["text"].endswith("open caf\\xe9.txt")
    assert _saved(events, tmp_path / "home")[0].text.endswith("open caf\\xe9.txt")


def test_a_snapshot_of_a_workspace_whose_path_is_not_utf8_loads_back_exactly(tmp_path):
    cwd = os.fsdecode(b"/work/caf\xe9")
    store = DiskSnapshotStore(tmp_path / "snapshots")
    store.save(session_state(growing_conversation(2)).model_copy(update={"cwd": cwd}))
    store.close()
    assert DiskSnapshotStore(tmp_path / "snapshots").load("sess01").state.cwd == cwd


def test_the_json_event_stream_writes_a_surrogate_as_a_json_escape_of_it():
    out = io.StringIO()
    JsonRenderer(out)(Notice(session_id="s", text=f"skipped {CAFE}"))
    line = out.getvalue()
    line.encode("utf-8")
    assert "\\udce9" in line and json.loads(line)["text"] == f"skipped {CAFE}"
