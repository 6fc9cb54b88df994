"""Provider errors never echo credentials: a provider or proxy that repeats the request's
key in its 4xx body (the fake servers do it with PRESENTED_KEY) gets it redacted before
the text is shown, put in an event, handed to a model, or stored (snapshot, audit log).
Real SDKs against the fake servers, through the real CLI and REPL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from agents.errors import ModelError
from agents.messages import Message
from agents.ports import ModelRequest
from agents.providers.anthropic import AnthropicModelClient
from agents.providers.testing import PRESENTED_KEY, openai_error
from cluster.terminal._cli import main
from tests.support import ROOT

ANTHROPIC_KEY = "sk-ant-test-" + "a1" * 16
OPENAI_KEY = "sk-proj-test-" + "o2" * 16


@pytest.fixture
def anthropic_env(messages_server, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)


def _stored_files_holding(root: Path, secret: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_a_key_echoed_in_a_4xx_body_is_redacted_from_the_cli_output(anthropic_env, messages_server, tmp_path, capsys):
    messages_server.push_error(401, "authentication_error", f"invalid x-api-key: {PRESENTED_KEY}")
    code = main(["run", "hello", "--cwd", str(tmp_path), "--model", "anthropic:claude-sonnet-4-5", "--json"])
    captured = capsys.readouterr()
    ended = json.loads(captured.out.splitlines()[-1])
    assert code == 1 and ended["type"] == "session_ended" and ended["reason"] == "error"
    assert "invalid x-api-key: [redacted ANTHROPIC_API_KEY]" in ended["error"]
    assert ANTHROPIC_KEY not in captured.out + captured.err


def test_a_subagents_provider_error_reaches_the_parent_model_and_the_store_without_the_key(
    anthropic_env, messages_server, tmp_path, capsys
):
    messages_server.push_tool_use("Agent", {"description": "scout", "prompt": "Look around."})
    messages_server.push_error(400, "invalid_request_error", f"request rejected for api key {PRESENTED_KEY}")
    messages_server.push_text("The scout could not run.")
    ws = tmp_path / "ws"
    ws.mkdir()
    code = main(
        ["run", "scout it", "--cwd", str(ws), "--model", "anthropic:claude-sonnet-4-5", "--json", "--allow", "Agent"]
    )
    out = capsys.readouterr().out
    assert code == 0
    parent_second_call = json.dumps(messages_server.requests[2].body)  # what the parent model was sent
    assert "Subagent 'scout' failed: ModelResponseError" in parent_second_call and "[redacted" in parent_second_call
    assert ANTHROPIC_KEY not in parent_second_call and ANTHROPIC_KEY not in out
    home = Path(os.environ["HOME"])
    assert any(home.rglob("audit.jsonl")) and any((home / ".workingset" / "snapshots").rglob("*"))
    assert _stored_files_holding(home, ANTHROPIC_KEY) == []  # snapshot, audit log, everything stored


def test_a_failed_compact_with_a_model_summarizer_does_not_print_the_key(anthropic_env, messages_server, tmp_path):
    messages_server.push_error(403, "permission_error", f"key {PRESENTED_KEY} may not use this model")
    script = tmp_path / "s.yaml"
    script.write_text("turns: []\nfinal_text: noted\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.terminal._cli",
            "run",
            "--cwd",
            str(tmp_path),
            "--model",
            f"scripted:{script}",
            "--summarizer",
            "anthropic:claude-sonnet-4-5",
        ],
        input="one\ntwo\n/compact\n/exit\n",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "compaction failed, history unchanged: summarizer failed: AuthError" in proc.stdout
    assert "[redacted ANTHROPIC_API_KEY] may not use this model" in proc.stdout
    assert ANTHROPIC_KEY not in proc.stdout + proc.stderr
    assert messages_server.requests  # the summarizer did ask the provider


def test_an_openai_compatible_servers_echo_of_the_key_is_redacted(openai_server, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{openai_server.url}/v1")
    openai_server.push_error(
        401,
        "",
        body=openai_error(
            f"Incorrect API key provided: {PRESENTED_KEY}.", type="invalid_request_error", code="invalid_api_key"
        ),
    )
    code = main(["run", "hello", "--cwd", str(tmp_path), "--model", "openai:gpt-4o"])
    captured = capsys.readouterr()
    shown = " ".join(captured.out.split())  # rich wraps its lines at the console's width
    assert code == 1 and "Incorrect API key provided: [redacted OPENAI_API_KEY]" in shown
    assert OPENAI_KEY not in "".join((captured.out + captured.err).split())


async def test_a_key_given_in_code_is_redacted_from_the_error_and_its_traceback(messages_server):
    key = "configured-key-" + "c3" * 12  # no known shape, in no environment variable
    messages_server.push_error(400, "invalid_request_error", f"bad key {PRESENTED_KEY}")
    client = AnthropicModelClient("claude-sonnet-4-5", api_key=key, base_url=messages_server.url)
    try:
        with pytest.raises(ModelError) as caught:
            await client.create(ModelRequest(system="s", tools=(), messages=(Message.user("hi"),), max_tokens=16))
    finally:
        await client.aclose()
    printed = "".join(traceback.format_exception(caught.value))  # the SDK's error it was raised from included
    assert "bad key [redacted key]" in str(caught.value) and "anthropic" in printed
    assert key not in printed


async def test_a_key_shaped_string_the_process_does_not_hold_is_redacted_too(messages_server):
    stranger = "sk-ant-api03-" + "z9" * 20  # e.g. a proxy's own key in its error
    messages_server.push_error(400, "invalid_request_error", f"upstream refused {stranger}; Bearer tok3n-{'x' * 20}")
    client = AnthropicModelClient("claude-sonnet-4-5", api_key="k", base_url=messages_server.url)
    try:
        with pytest.raises(ModelError) as caught:
            await client.create(ModelRequest(system="s", tools=(), messages=(Message.user("hi"),), max_tokens=16))
    finally:
        await client.aclose()
    assert str(caught.value).endswith("upstream refused [redacted]; Bearer [redacted]")
    assert stranger not in "".join(traceback.format_exception(caught.value))
