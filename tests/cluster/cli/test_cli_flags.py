"""The flags that set a setting come from one table (cluster.terminal._flags) for `run` and `eval`."""

from __future__ import annotations

import argparse

import pytest

from cluster.terminal._cli import build_parser
from cluster.terminal._flags import SETTING_FLAGS, setting_overrides

SHARED_ARGS = [
    "--model",
    "scripted:script.yaml",
    "--summarizer",
    "scripted:summaries.yaml",
    "--strategy",
    "raw",
    "--max-turns",
    "3",
    "--allow",
    "Read",
    "--deny",
    "Bash(rm:*)",
    "--no-sandbox",
    "--local",
    "--address",
    "ray://x:1",
]


def _subparser(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.option_strings[-1]: a for a in parser._actions if a.option_strings}


def _shape(action: argparse.Action) -> tuple:
    return (
        type(action),
        action.dest,
        action.help,
        action.type,
        action.choices,
        action.default,
        action.metavar,
        action.nargs,
        action.const,
    )


def test_run_and_eval_expose_the_shared_flags_identically():
    run, eval_ = _options(_subparser("run")), _options(_subparser("eval"))
    shared = sorted(set(run) & set(eval_) - {"-h", "--help", "--json"})  # --json prints different streams
    assert {f.flag for f in SETTING_FLAGS if f.commands == {"run", "eval"}} | {"--trust-workspace"} == set(shared)
    for flag in shared:
        assert _shape(run[flag]) == _shape(eval_[flag]), flag


def test_the_shared_flags_set_the_same_settings_for_run_and_eval(tmp_path):
    run = _subparser("run").parse_args(["do it", *SHARED_ARGS])
    eval_ = _subparser("eval").parse_args(["tasks.jsonl", "--out", "out", *SHARED_ARGS])
    assert (
        setting_overrides(run, "run", tmp_path)
        == setting_overrides(eval_, "eval", tmp_path)
        == {
            "model": f"scripted:{tmp_path / 'script.yaml'}",
            "summarizer": {"spec": f"scripted:{tmp_path / 'summaries.yaml'}"},
            "compact": {"strategy": "raw"},
            "agent": {"max_turns": 3},
            "permissions": {"allow": ["Read"], "deny": ["Bash(rm:*)"]},
            "sandbox": {"enabled": False},
            "runtime": "local",
            "cluster": {"address": "ray://x:1"},
        }
    )


@pytest.mark.parametrize("flag", SETTING_FLAGS, ids=lambda f: f.flag)
def test_every_flag_in_the_table_names_a_setting(flag):
    assert flag.field is not None  # KeyError when the path names no setting


def test_a_flag_not_given_sets_nothing(tmp_path):
    assert setting_overrides(_subparser("run").parse_args(["do it"]), "run", tmp_path) == {}


def test_a_choice_flag_takes_exactly_the_values_of_its_setting():
    assert _options(_subparser("run"))["--permission-mode"].choices == ["default", "accept-edits", "bypass", "plan"]
