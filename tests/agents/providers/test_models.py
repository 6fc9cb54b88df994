"""The model table: windows and prices known, configured, or admitted as unknown."""

from __future__ import annotations

import pytest

from agents.compaction import compact_budget, context_window_for
from agents.errors import ConfigError
from agents.ports import Usage
from agents.providers._catalog import (
    ModelEntry,
    cost_usd,
    input_price_per_mtok,
    model_info,
    nearest_known,
    usage_cost_usd,
)
from agents.settings._config import CompactSettings, load_settings
from agents.subagents._budgets import Budget, BudgetExceeded, ScopeLimits


@pytest.mark.parametrize(
    "spec, window, input_price",
    [
        ("anthropic:claude-sonnet-4-5", 200_000, 3.0),
        ("anthropic:claude-sonnet-4-5-20250929", 200_000, 3.0),
        ("anthropic:claude-opus-4-5-20251101", 200_000, 5.0),
        ("anthropic:claude-opus-4-20250514", 200_000, 15.0),
        ("anthropic:claude-3-5-haiku-latest", 200_000, 0.8),
        ("openai:gpt-4o-mini-2024-07-18", 128_000, 0.15),
        ("openai:gpt-4o", 128_000, 2.5),
        ("openai:gpt-4.1-mini", 1_047_576, 0.4),
        ("openai:o3-mini", 200_000, 1.1),
    ],
)
def test_known_models_have_their_window_and_list_price(spec, window, input_price):
    info = model_info(spec)
    assert (info.context_window, info.prices.input, info.pricing) == (window, input_price, "list")


@pytest.mark.parametrize(
    "spec", ["anthropic:claude-opus-4-6", "openai:o3-pro", "openai:Qwen/Qwen2.5-Coder-32B-Instruct"]
)
def test_a_model_the_table_does_not_name_is_unknown_not_a_neighbour(spec):
    info = model_info(spec)
    assert (info.context_window, info.prices, info.pricing) == (None, None, "unknown")


def test_a_scripted_model_has_a_window_but_no_price():
    info = model_info("scripted:/tmp/s.yaml")
    assert (info.context_window, info.prices, info.pricing) == (200_000, None, "scripted")


def test_the_models_setting_names_a_model_by_spec_or_by_name():
    models = {"Qwen/Qwen3-32B": ModelEntry(context_window=32_768, input_usd_per_mtok=0.1, output_usd_per_mtok=0.3)}
    info = model_info("openai:Qwen/Qwen3-32B", models)
    assert (info.context_window, info.pricing, info.prices.cache_read) == (32_768, "configured", 0.1)


def test_the_models_setting_can_correct_one_figure_of_a_known_model():
    info = model_info("openai:gpt-4o", {"openai:gpt-4o": ModelEntry(context_window=64_000)})
    assert (info.context_window, info.prices.input, info.pricing) == (64_000, 2.5, "list")


def test_the_models_setting_loads_from_the_users_toml(tmp_path):
    home = tmp_path / "home"
    (home / ".workingset").mkdir(parents=True)
    (home / ".workingset" / "config.toml").write_text(
        '[models."openai:local"]\ncontext_window = 16384\ninput_usd_per_mtok = 0\noutput_usd_per_mtok = 0\n'
    )
    settings = load_settings(tmp_path, home=home)
    assert model_info("openai:local", settings.models).context_window == 16_384


def test_an_untrusted_workspace_cannot_set_windows_or_prices(tmp_path):
    (tmp_path / ".workingset").mkdir()
    (tmp_path / ".workingset" / "config.toml").write_text('[models."openai:local"]\ncontext_window = 999999\n')
    assert load_settings(tmp_path, home=tmp_path / "home").models == {}


def test_an_unknown_window_is_asked_for_in_one_line_naming_the_setting():
    with pytest.raises(ConfigError) as info:
        context_window_for("openai:mystery")
    message = str(info.value)
    assert "\n" not in message and "openai:mystery" in message and "compact.context_window" in message


def test_compact_context_window_is_the_answer_to_an_unknown_window():
    assert (
        compact_budget("openai:mystery", 8_192, CompactSettings(context_window=32_768, ratio=0.5))
        == (32_768 - 8_192) // 2
    )


def test_cost_uses_each_price_and_is_none_without_prices():
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=1_000_000,
        cache_read_input_tokens=1_000_000,
        cache_creation_input_tokens=1_000_000,
    )
    assert usage_cost_usd(usage, "anthropic:claude-sonnet-4-5") == pytest.approx(3 + 15 + 0.3 + 3.75)
    assert usage_cost_usd(usage, "openai:gpt-4o") == pytest.approx(2.5 + 10 + 1.25 + 2.5)
    assert cost_usd(usage, None) is None and usage_cost_usd(usage, "scripted:s.yaml") is None


def test_compaction_estimates_for_an_unknown_model_use_the_reference_price():
    assert input_price_per_mtok("openai:mystery") == 3.0 and input_price_per_mtok("openai:gpt-4o-mini") == 0.15


async def test_a_cost_budget_cannot_be_met_by_a_call_of_unknown_price():
    tree = Budget.tree(max_cost_usd=1.0)
    child = await tree.child("child", ScopeLimits(label="child"))
    with pytest.raises(BudgetExceeded, match="price of openai:mystery is unknown"):
        await child.settle(Usage(input_tokens=5), None, "openai:mystery")


async def test_a_token_budget_still_counts_calls_of_unknown_price():
    tree = Budget.tree(max_tokens=10)
    with pytest.raises(BudgetExceeded, match="token budget exceeded"):
        await tree.settle(Usage(input_tokens=11), None, "scripted:x")


def test_a_cost_budget_with_an_unpriced_model_is_refused_at_start(tmp_path):
    from agents.opening._assembly import build_session

    script = tmp_path / "s.yaml"
    script.write_text("turns: []\n")
    settings = load_settings(
        tmp_path, {"model": f"scripted:{script}", "subagents": {"tree_max_cost_usd": 1.0}}, home=tmp_path
    )
    with pytest.raises(ConfigError, match="cost budget is set but the price of scripted:.* is unknown"):
        build_session(settings, tmp_path)


def test_an_in_process_fake_that_no_provider_made_is_treated_like_a_scripted_model():
    class Fake:
        name = "fake:anything"

    assert model_info(Fake()).pricing == "scripted" and context_window_for(Fake()) == 200_000


def test_a_client_may_say_what_it_knows_about_its_model():
    from agents.providers._catalog import ModelInfo

    class Local:
        name = "openai:served-model"
        model_info = ModelInfo(context_window=65_536, prices=None, pricing="unknown")

    assert context_window_for(Local()) == 65_536


@pytest.mark.parametrize(
    "spec, meant",
    [
        ("anthropic:claude-sonet-4-5", "claude-sonnet-4-5"),
        ("anthropic:claude-sonet-4-5-20250929", "claude-sonnet-4-5"),
        ("openai:gpt-4-o", "gpt-4o"),
        ("openai:o3-mni", "o3-mini"),
    ],
)
def test_a_misspelt_model_is_refused_naming_the_table_model_it_likely_meant(spec, meant):
    with pytest.raises(ConfigError) as info:
        context_window_for(spec)
    message = str(info.value)
    assert message.startswith(f"unknown model '{spec}'; did you mean {meant}?")
    assert "\n" not in message and "compact.context_window" in message and "`models` entry" in message


@pytest.mark.parametrize(
    "spec", ["anthropic:claude-opus-4-6", "openai:gpt-5.1", "openai:Qwen/Qwen2.5-Coder-32B-Instruct"]
)
def test_a_newer_version_or_another_model_is_not_taken_for_a_typo(spec):
    assert nearest_known(spec) is None


def test_workingset_run_with_a_misspelt_model_says_which_it_likely_meant_in_one_line(
    tmp_path, monkeypatch, messages_server, capsys
):
    from cluster.terminal._cli import main

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    assert main(["run", "hi", "--cwd", str(tmp_path), "--model", "anthropic:claude-sonet-4-5"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        "workingset: error: unknown model 'anthropic:claude-sonet-4-5'; did you mean claude-sonnet-4-5?"
    )
    assert messages_server.requests == []
