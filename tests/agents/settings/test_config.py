import pytest

from agents.errors import ConfigError
from agents.settings._config import load_settings
from tests.support.builders import write_file
from tests.support.fakes import trust_workspace


def test_defaults_apply_without_any_source(tmp_path):
    settings = load_settings(tmp_path, home=tmp_path / "home")
    assert settings.agent.max_turns == 50 and settings.model.startswith("anthropic:")


def test_project_file_beats_user_file(tmp_path):
    home = tmp_path / "home"
    write_file(home / ".workingset/config.toml", 'model = "scripted:user.yaml"\n[agent]\nmax_turns = 7\n')
    write_file(tmp_path / ".workingset/config.toml", 'model = "scripted:project.yaml"\n')
    settings = load_settings(trust_workspace(tmp_path, home), home=home)
    assert settings.model == "scripted:project.yaml"
    assert settings.agent.max_turns == 7


def test_environment_beats_files_and_nests_with_double_underscore(tmp_path, monkeypatch):
    write_file(tmp_path / ".workingset/config.toml", "[agent]\nmax_turns = 7\n")
    monkeypatch.setenv("WORKINGSET_AGENT__MAX_TURNS", "9")
    assert load_settings(tmp_path, home=tmp_path).agent.max_turns == 9


def test_flags_beat_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKINGSET_AGENT__MAX_TURNS", "9")
    settings = load_settings(tmp_path, {"agent": {"max_turns": 3}}, home=tmp_path)
    assert settings.agent.max_turns == 3


def test_bad_value_names_the_setting_and_its_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKINGSET_TOOLS__BASH_TIMEOUT_S", "-1")
    with pytest.raises(ConfigError, match=r"'tools\.bash_timeout_s' \(WORKINGSET_TOOLS__BASH_TIMEOUT_S\)"):
        load_settings(tmp_path, home=tmp_path)


def test_broken_toml_names_the_file(tmp_path):
    write_file(tmp_path / ".workingset/config.toml", "model = \n")
    with pytest.raises(ConfigError, match=r"config\.toml cannot be read"):
        load_settings(trust_workspace(tmp_path, tmp_path / "home"), home=tmp_path / "home")


def test_unknown_key_in_file_is_refused(tmp_path):
    write_file(tmp_path / ".workingset/config.toml", "modle = 'x'\n")
    with pytest.raises(ConfigError, match="modle"):
        load_settings(trust_workspace(tmp_path, tmp_path / "home"), home=tmp_path / "home")
