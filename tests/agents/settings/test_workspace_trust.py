"""Workspace trust as the user meets it: the trust list and its commands, the question in
the REPL, --trust-workspace, what an untrusted workspace may still set, and the notice."""

from __future__ import annotations

import io
import json
import sys
import tomllib
from pathlib import Path

import pytest

from agents.errors import ConfigError
from agents.settings._config import load_settings, load_workspace_settings
from agents.settings._trust import TrustList
from cluster.terminal._cli import main
from tests.support.builders import workspace_config
from tests.support.eval_support import script
from tests.support.fakes import trust_workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def _hook_config(ws: Path, marker: Path) -> None:
    workspace_config(
        ws,
        f"""
        [[hooks]]
        event = "SessionStart"
        command = "touch {marker}"
        """,
    )


def test_a_trusted_workspace_gets_all_its_settings(ws, tmp_path):
    workspace_config(
        ws,
        f"""
        model = "scripted:own.yaml"
        home = {json.dumps(str(tmp_path / "own-home"))}
        [sandbox]
        enabled = false
        [permissions]
        allow = ["Bash"]
        [[hooks]]
        event = "SessionStart"
        command = "true"
        """,
    )
    loaded = load_workspace_settings(trust_workspace(ws))
    s = loaded.settings
    assert loaded.trusted and loaded.notice is None and s.trusted_workspace == ws.resolve()
    assert s.model == "scripted:own.yaml" and s.home == tmp_path / "own-home"
    assert s.sandbox.enabled is False and s.permissions.allow == ["Bash"] and len(s.hooks) == 1


def test_the_trust_flag_trusts_for_one_load_without_remembering(ws):
    workspace_config(ws, 'model = "scripted:own.yaml"\n')
    assert load_settings(ws, trusted=True).model == "scripted:own.yaml"
    assert TrustList.for_user().entries() == []
    assert load_settings(ws).model != "scripted:own.yaml"


def test_the_notice_names_every_ignored_key_and_how_to_trust(ws, tmp_path, capsys):
    workspace_config(
        ws,
        """
        model = "scripted:own.yaml"
        bundle = ["Read"]
        [sandbox]
        enabled = false
        [compact]
        ratio = 0.5
        strategy = "evil.module:Factory"
        [[mcp_servers]]
        name = "x"
        command = "x"
        """,
    )
    (ws / ".workingset" / "plugins" / "lint").mkdir(parents=True)
    (ws / ".workingset" / "plugins" / "lint" / "workingset-plugin.toml").write_text('name = "lint"\n')
    assert main(["run", "go", "--cwd", str(ws), "--model", f"scripted:{script(tmp_path, 'script', [])}", "--json"]) == 0
    notices = [line for line in capsys.readouterr().err.splitlines() if "notice" in line]
    assert len(notices) == 1
    assert "ignored: model, bundle, sandbox.enabled, compact.strategy, mcp_servers" in notices[0]
    assert "plugins in .workingset/plugins were not loaded: lint" in notices[0]
    assert f"`workingset trust {ws}`" in notices[0] and "--trust-workspace" in notices[0]


def test_an_untrusted_workspace_without_requests_gets_no_notice(ws):
    workspace_config(ws, "[compact]\nratio = 0.5\npreserve_recent_messages = 6\n[summarizer]\nwindow_tokens = 50000\n")
    loaded = load_workspace_settings(ws)
    assert loaded.notice is None
    c = loaded.settings.compact
    assert c.ratio == 0.5 and c.preserve_recent_messages == 6 and loaded.settings.summarizer.window_tokens == 50_000


def test_an_untrusted_workspace_may_lower_limits_but_not_raise_them(ws):
    workspace_config(ws, "[agent]\nmax_turns = 5\n[tools]\nbash_timeout_s = 99999\n[compact]\ncontext_window = 50000\n")
    loaded = load_workspace_settings(ws)
    assert loaded.settings.agent.max_turns == 5 and loaded.settings.tools.bash_timeout_s == 120
    assert loaded.settings.compact.context_window is None  # the model's own: nothing to lower from
    assert loaded.ignored == (
        "tools.bash_timeout_s (above your 120.0)",
        "compact.context_window (unset in your settings)",
    )


def test_a_lowered_limit_still_yields_to_a_flag(ws):
    workspace_config(ws, "[agent]\nmax_turns = 5\n")
    assert load_settings(ws, {"agent": {"max_turns": 20}}).agent.max_turns == 20


def test_untrusted_deny_and_ask_rules_add_to_the_users_and_never_replace_them(ws):
    (Path.home() / ".workingset").mkdir(parents=True)
    (Path.home() / ".workingset" / "config.toml").write_text('[permissions]\ndeny = ["Bash(rm:*)"]\n')
    workspace_config(ws, '[permissions]\ndeny = ["Write"]\nask = ["Edit"]\n')
    permissions = load_settings(ws).permissions
    assert permissions.deny == ["Bash(rm:*)", "Write"] and permissions.ask == ["Edit"]


def test_trusted_workspace_is_decided_by_the_loader_alone(ws, monkeypatch):
    monkeypatch.setenv("WORKINGSET_TRUSTED_WORKSPACE", str(ws))
    assert load_settings(ws).trusted_workspace is None
    assert load_settings(ws, {"trusted_workspace": str(ws)}).trusted_workspace is None


def test_trust_list_and_untrust_commands_round_trip(ws, capsys):
    assert main(["trust", str(ws)]) == 0
    assert main(["trust", str(ws)]) == 0
    assert main(["trust", "--list"]) == 0
    out = capsys.readouterr().out
    assert f"Trusted {ws}" in out and "already trusted" in out and f"{ws}  trusted " in out
    data = tomllib.loads((Path.home() / ".workingset" / "trusted.toml").read_text())
    assert data["version"] == 1 and [w["path"] for w in data["workspace"]] == [str(ws)]
    assert main(["untrust", str(ws)]) == 0 and TrustList.for_user().entries() == []
    assert "no longer trusted" in capsys.readouterr().out


def test_trust_is_keyed_by_the_resolved_path(ws, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(ws)
    TrustList.for_user().trust(link)
    assert TrustList.for_user().is_trusted(ws) and TrustList.for_user().entries()[0].path == ws


def test_trusting_a_missing_directory_is_a_usage_error(tmp_path, capsys):
    assert main(["trust", str(tmp_path / "nope")]) == 2
    assert "is not an existing directory" in capsys.readouterr().err


def test_a_broken_trust_list_is_one_error_naming_the_file(ws):
    (Path.home() / ".workingset").mkdir(parents=True)
    (Path.home() / ".workingset" / "trusted.toml").write_text("[[workspace]\n")
    with pytest.raises(ConfigError, match=r"trusted\.toml cannot be read .*workingset trust PATH"):
        load_settings(ws)


@pytest.mark.parametrize(
    ("answer", "applied", "remembered"), [("y", True, True), ("o", True, False), ("n", False, False)]
)
def test_the_repl_asks_about_an_untrusted_workspace(ws, tmp_path, monkeypatch, capsys, answer, applied, remembered):
    marker = tmp_path / "hook-ran"
    _hook_config(ws, marker)
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{answer}\nhello\n/exit\n"))
    assert main(["run", "--cwd", str(ws), "--model", f"scripted:{script(tmp_path, 'script', [])}"]) == 0
    out = capsys.readouterr()
    assert "settings in .workingset/config.toml: hooks" in out.out
    assert marker.exists() is applied and TrustList.for_user().is_trusted(ws) is remembered
    assert ("notice" in out.err) is not applied


def test_the_repl_does_not_ask_about_a_trusted_workspace(ws, tmp_path, monkeypatch, capsys):
    _hook_config(trust_workspace(ws), tmp_path / "hook-ran")
    monkeypatch.setattr(sys, "stdin", io.StringIO("hello\n/exit\n"))
    assert main(["run", "--cwd", str(ws), "--model", f"scripted:{script(tmp_path, 'script', [])}"]) == 0
    assert "Trust it?" not in capsys.readouterr().out and (tmp_path / "hook-ran").exists()


def test_run_with_the_trust_flag_applies_the_workspace_without_asking(ws, tmp_path, capsys):
    _hook_config(ws, tmp_path / "hook-ran")
    model = f"scripted:{script(tmp_path, 'script', [])}"
    assert main(["run", "go", "--cwd", str(ws), "--model", model, "--trust-workspace", "--json"]) == 0
    assert (tmp_path / "hook-ran").exists() and TrustList.for_user().entries() == []
    assert "notice" not in capsys.readouterr().err
