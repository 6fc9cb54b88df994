import json

import pytest

from agents.errors import ConfigError, PromptTooLong
from agents.messages import Message, ToolUseBlock
from agents.ports import ModelRequest
from agents.providers import load_model_client
from agents.providers.scripted import ScriptedModelClient

REQUEST = ModelRequest(system="sys", messages=(Message.user("go"),))

SCRIPT = """
turns:
  - text: reading
    tool_calls:
      - {name: Read, input: {path: a.py}}
      - {name: Grep, input: {pattern: x}, id: toolu_fixed}
  - text: finished
final_text: nothing more
subagents:
  explore repo:
    turns:
      - text: child says hi
judge:
  - {verdict: not_met, reason: tests still fail}
"""


@pytest.fixture
def script_file(tmp_path):
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT)
    return path


async def test_turns_replay_in_order_with_generated_and_given_ids(script_file):
    model = load_model_client(f"scripted:{script_file}")
    first = await model.create(REQUEST)
    uses = [b for b in first.content if isinstance(b, ToolUseBlock)]
    assert first.stop_reason == "tool_use"
    assert [u.name for u in uses] == ["Read", "Grep"]
    assert uses[0].id.startswith("toolu_") and uses[1].id == "toolu_fixed"
    second = await model.create(REQUEST)
    assert second.stop_reason == "end_turn" and second.content[0].text == "finished"


async def test_exhausted_script_ends_with_final_text(script_file):
    model = load_model_client(f"scripted:{script_file}")
    for _ in range(2):
        await model.create(REQUEST)
    last = await model.create(REQUEST)
    assert last.content[0].text == "nothing more" and last.stop_reason == "end_turn"


async def test_same_script_replays_identically(script_file):
    a, b = (load_model_client(f"scripted:{script_file}") for _ in range(2))
    assert (await a.create(REQUEST)).content == (await b.create(REQUEST)).content


async def test_subagent_role_replays_its_own_script(script_file):
    child = ScriptedModelClient.from_file(script_file, role="subagent:explore repo")
    assert (await child.create(REQUEST)).content[0].text == "child says hi"


async def test_judge_role_answers_verdicts_as_json(script_file):
    judge = ScriptedModelClient.from_file(script_file, role="judge")
    reply = json.loads((await judge.create(REQUEST)).content[0].text)
    assert reply == {"verdict": "not_met", "reason": "tests still fail"}


async def test_json_scripts_work_like_yaml(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"turns": [{"text": "hi from json"}]}))
    model = load_model_client(f"scripted:{path}")
    assert (await model.create(REQUEST)).content[0].text == "hi from json"


async def test_scripted_error_turn_raises_the_typed_provider_error(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("turns:\n  - error: prompt_too_long\n")
    with pytest.raises(PromptTooLong):
        await load_model_client(f"scripted:{path}").create(REQUEST)


def test_missing_script_file_names_the_path(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml cannot be read"):
        load_model_client(f"scripted:{tmp_path / 'nope.yaml'}")


def test_invalid_yaml_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("turns: [unclosed")
    with pytest.raises(ConfigError, match="not valid yaml"):
        load_model_client(f"scripted:{path}")


def test_unknown_field_in_script_names_where(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("turns:\n  - txt: typo\n")
    with pytest.raises(ConfigError, match=r"'turns\.0\.txt'"):
        load_model_client(f"scripted:{path}")


def test_unknown_provider_lists_the_installed_ones():
    with pytest.raises(
        ConfigError, match="unknown model provider 'bogus'.*installed providers: anthropic, openai, scripted"
    ):
        load_model_client("bogus:gpt")


def test_spec_without_a_provider_says_the_form():
    with pytest.raises(ConfigError, match="PROVIDER:NAME"):
        load_model_client("claude")
