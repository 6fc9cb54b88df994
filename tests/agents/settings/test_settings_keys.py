"""A key that matches no setting is refused at every level, naming the nearest one."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest
from pydantic import BaseModel

from agents.errors import ConfigError
from agents.settings._config import WorkingsetSettings, load_settings, load_workspace_settings
from agents.settings._keys import NON_SETTING_VARIABLES, unknown_variables
from benchmarks.traces.corpus import corpus_dir
from cluster.terminal._cli import main
from tests.support import ROOT
from tests.support.builders import write_file
from tests.support.fakes import trust_workspace

SECTIONS = [
    n
    for n, f in WorkingsetSettings.model_fields.items()
    if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


def _refusal_of_user_file(ws: Path, text: str) -> str:
    """The one line that loading refuses the user's config.toml holding `text` with."""
    write_file(Path.home() / ".workingset/config.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_settings(ws)
    return str(caught.value)


@pytest.mark.parametrize("section", SECTIONS)
def test_a_misspelt_key_in_each_section_of_the_user_file_is_refused_with_the_nearest(ws, section):
    key = next(iter(WorkingsetSettings.model_fields[section].annotation.model_fields))
    assert _refusal_of_user_file(ws, f"[{section}]\n{key}x = 1\n") == (
        f"setting '{section}.{key}x' in ~/.workingset/config.toml is unknown; did you mean '{section}.{key}'?"
    )


def test_the_example_typo_max_turn_is_refused(ws):
    refusal = _refusal_of_user_file(ws, "[agent]\nmax_turn = 80\n")
    assert refusal.endswith("'agent.max_turn' in ~/.workingset/config.toml is unknown; did you mean 'agent.max_turns'?")


def test_a_misspelt_section_is_refused_with_the_nearest(ws):
    assert _refusal_of_user_file(ws, "[agnet]\nmax_turns = 80\n").endswith(
        "'agnet' in ~/.workingset/config.toml is unknown; did you mean 'agent'?"
    )


def test_a_key_outside_its_section_is_pointed_to_its_section(ws):
    assert _refusal_of_user_file(ws, "max_turns = 80\n").endswith("did you mean 'agent.max_turns'?")


def test_a_misspelt_key_in_an_array_of_tables_is_refused(ws):
    refusal = _refusal_of_user_file(ws, '[[hooks]]\nevnt = "Stop"\ncommand = "true"\n')
    assert refusal.startswith("setting 'hooks[0].evnt' in") and refusal.endswith("did you mean 'hooks[0].event'?")


def test_a_key_far_from_any_lists_the_keys_of_its_section(ws):
    assert _refusal_of_user_file(ws, "[snapshots]\nzzz = 1\n").endswith(
        "'snapshots.zzz' in ~/.workingset/config.toml is unknown; the settings in snapshots are: max_history, max_age_days"
    )


def test_a_misspelt_key_in_a_trusted_workspace_file_is_refused_naming_that_file(ws):
    write_file(ws / ".workingset/config.toml", "[compact]\nratoi = 0.5\n")
    with pytest.raises(
        ConfigError, match=rf"'compact\.ratoi' in {re.escape(str(ws))}/\.workingset/config\.toml .* 'compact\.ratio'"
    ):
        load_settings(trust_workspace(ws))


def test_a_misspelt_key_in_an_untrusted_workspace_is_named_as_a_typo_and_the_run_goes_on(ws):
    write_file(ws / ".workingset/config.toml", "[agent]\nmax_turn = 3\n")
    loaded = load_workspace_settings(ws)
    assert loaded.settings.agent.max_turns == 50 and not loaded.ignored and not loaded.asks_for_more
    assert loaded.notice == (
        f"workspace {ws}: unknown settings in .workingset/config.toml were ignored: "
        "'agent.max_turn' (did you mean 'agent.max_turns'?)"
    )


def test_an_untrusted_workspace_names_its_typos_apart_from_what_trust_would_apply(ws):
    write_file(ws / ".workingset/config.toml", 'model = "scripted:x.yaml"\n[agnet]\nmax_turns = 3\n')
    notice = load_workspace_settings(ws).notice
    assert "ignored: model. To apply them, trust it" in notice
    assert notice.endswith(
        "Also, unknown settings in .workingset/config.toml were ignored: 'agnet' (did you mean 'agent'?)"
    )


def test_a_misspelt_environment_variable_is_refused_with_the_nearest_name(ws, monkeypatch):
    monkeypatch.setenv("WORKINGSET_AGENT__MAX_TURN", "80")
    with pytest.raises(ConfigError) as caught:
        load_settings(ws)
    assert str(caught.value) == "WORKINGSET_AGENT__MAX_TURN is not a setting; did you mean WORKINGSET_AGENT__MAX_TURNS?"


def test_a_misspelt_section_in_an_environment_variable_is_refused(ws, monkeypatch):
    monkeypatch.setenv("WORKINGSET_TOOL__BASH_TIMEOUT_S", "5")
    with pytest.raises(ConfigError, match="did you mean WORKINGSET_TOOLS__BASH_TIMEOUT_S"):
        load_settings(ws)


def test_a_variable_near_no_setting_says_how_setting_variables_are_named(ws, monkeypatch):
    monkeypatch.setenv("WORKINGSET_QQQ", "1")
    with pytest.raises(
        ConfigError, match=r"WORKINGSET_QQQ is not a setting: .* WORKINGSET_AGENT__MAX_TURNS\); unset it"
    ):
        load_settings(ws)


def test_a_misspelt_key_in_an_override_is_refused_with_the_nearest(ws):
    with pytest.raises(
        ConfigError,
        match=r"'agent\.max_turn' \(WORKINGSET_AGENT__MAX_TURN\) is unknown; did you mean 'agent\.max_turns'",
    ):
        load_settings(ws, {"agent": {"max_turn": 3}})


@pytest.mark.parametrize("name", sorted(NON_SETTING_VARIABLES))
def test_the_workingset_variables_that_are_no_setting_are_accepted(ws, monkeypatch, name):
    monkeypatch.setenv(name, str(ws))
    assert load_settings(ws).agent.max_turns == 50


def test_the_trace_corpus_variable_still_points_the_benchmarks_at_a_corpus(ws, monkeypatch):
    monkeypatch.setenv("WORKINGSET_TRACES", str(ws))
    load_settings(ws)
    assert corpus_dir() == ws


def test_every_workingset_variable_the_code_names_is_a_setting_or_allow_listed():
    rooms = ("agents", "tools", "cluster", "benchmarks", "tests")
    sources = [p for room in rooms for p in (ROOT / room).rglob("*.py") if p != Path(__file__).resolve()]
    named = {m for p in sources for m in re.findall(r"\bWORKINGSET_[A-Z][A-Z0-9_]*[A-Z0-9]\b", p.read_text())}
    assert named, "the scan found nothing"
    assert unknown_variables(WorkingsetSettings, dict.fromkeys(named, ""), "WORKINGSET_") == []


def _models_in(annotation) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def test_every_model_in_the_settings_forbids_unknown_keys():
    seen, todo = set(), [WorkingsetSettings]
    while todo:
        model = todo.pop()
        assert model.model_config.get("extra") == "forbid", f"{model.__name__} ignores unknown keys"
        seen.add(model)
        todo.extend(m for f in model.model_fields.values() for m in _models_in(f.annotation) if m not in seen)
    assert len(seen) > len(SECTIONS)


def test_the_cli_ends_a_misspelt_setting_in_one_line_and_exit_2(ws, monkeypatch, capsys):
    monkeypatch.setenv("WORKINGSET_AGENT__MAX_TURN", "80")
    assert main(["run", "hello", "--cwd", str(ws), "--model", "scripted:none.yaml"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "workingset: error: WORKINGSET_AGENT__MAX_TURN is not a setting; did you mean WORKINGSET_AGENT__MAX_TURNS?\n"
    )
