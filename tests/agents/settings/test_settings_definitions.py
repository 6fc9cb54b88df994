"""Each limit is defined once: the settings' sections are the tools' and the sandbox's own models."""

from __future__ import annotations

from agents.settings._config import SandboxSettings, WorkingsetSettings, load_settings
from tools.base import ToolLimits
from tools.sandbox import BubblewrapRunner, SandboxLimits, SandboxOptions


def test_the_tools_section_is_the_tools_own_limits():
    assert WorkingsetSettings.model_fields["tools"].annotation is ToolLimits


def test_a_tools_setting_is_the_limit_a_tool_call_gets(tmp_path):
    limits = load_settings(tmp_path, {"tools": {"bash_timeout_s": 7, "result_max_tokens": 1_000}}).tools
    assert isinstance(limits, ToolLimits)
    assert (limits.bash_timeout_s, limits.recall_max_chars) == (7, 3_600)


def test_the_sandbox_section_is_the_runners_limits_and_options_and_the_switch():
    assert issubclass(SandboxSettings, SandboxLimits) and issubclass(SandboxSettings, SandboxOptions)
    own = set(SandboxSettings.model_fields) - set(SandboxLimits.model_fields) - set(SandboxOptions.model_fields)
    assert own == {"enabled"}


def test_the_runner_holds_exactly_the_options_and_the_limits():
    assert set(BubblewrapRunner.model_fields) == set(SandboxOptions.model_fields) | {"limits"}
