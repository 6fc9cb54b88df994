"""Currentness: what a call reads and writes (from its input alone), and which results a
later call made stale."""

from agents.compaction.currentness import Effects, Supersession, effects_of, superseded_results
from agents.messages import Message, ToolResultBlock, ToolUseBlock
from tests.support.builders import tool_use


def _calls(*uses: tuple[str, dict]) -> list[Message]:
    messages = [Message.user("task")]
    for k, (name, input) in enumerate(uses):
        use = ToolUseBlock(id=f"t{k}", name=name, input=input)
        messages += [Message.assistant(use), Message.tool_results([ToolResultBlock(tool_use_id=use.id, content="out")])]
    return messages


def test_a_read_tool_reads_its_file_whole():
    assert effects_of(tool_use("toolu_x", "Read", file_path="src/a.py")) == Effects(reads=frozenset({"src/a.py"}))


def test_a_ranged_read_reads_in_part():
    assert effects_of(tool_use("toolu_x", "Read", file_path="src/a.py", offset=10)) == Effects(
        partial_reads=frozenset({"src/a.py"})
    )


def test_an_editor_create_writes_and_str_replace_edits():
    assert effects_of(tool_use("toolu_x", "str_replace_editor", command="create", path="a.py")).writes == {"a.py"}
    assert effects_of(tool_use("toolu_x", "str_replace_editor", command="str_replace", path="a.py")).edits == {"a.py"}


def test_cat_in_a_shell_reads_whole_and_a_pipe_reads_in_part():
    assert effects_of(tool_use("toolu_x", "bash", command="cat src/a.py")).reads == {"src/a.py"}
    assert effects_of(tool_use("toolu_x", "bash", command="cat src/a.py | head -5")).partial_reads == {"src/a.py"}


def test_a_cd_prefix_makes_absolute_paths_relative():
    assert effects_of(tool_use("toolu_x", "bash", command="cd /repo && cat /repo/src/a.py")).reads == {"src/a.py"}


def test_a_redirection_writes_and_an_append_edits():
    assert effects_of(tool_use("toolu_x", "bash", command="echo x > out.txt")).writes == {"out.txt"}
    assert effects_of(tool_use("toolu_x", "bash", command="echo x >> out.txt")).edits == {"out.txt"}


def test_sed_in_place_edits_and_sed_n_reads_in_part():
    assert effects_of(tool_use("toolu_x", "bash", command="sed -i 's/a/b/' src/a.py")).edits == {"src/a.py"}
    assert effects_of(tool_use("toolu_x", "bash", command="sed -n '1,20p' src/a.py")).partial_reads == {"src/a.py"}


def test_an_unrecognised_command_has_no_effects():
    assert effects_of(tool_use("toolu_x", "bash", command="python -m pytest -q")) == Effects()


def test_a_command_line_too_long_to_parse_claims_no_effects():
    assert effects_of(tool_use("toolu_x", "bash", command="cat a.py > " + "x" * 10_000)) == Effects()


def test_a_re_run_of_the_same_command_supersedes_the_earlier_run():
    stale = superseded_results(_calls(("bash", {"command": "pytest -q"}), ("bash", {"command": "pytest -q"})))
    assert stale == {"t0": Supersession("t0", by="t1", reason="re-run")}


def test_a_different_command_supersedes_nothing():
    assert superseded_results(_calls(("bash", {"command": "pytest -q"}), ("bash", {"command": "pytest -x"}))) == {}


def test_a_read_of_a_file_written_later_is_rewritten():
    messages = _calls(("Read", {"file_path": "a.py"}), ("Write", {"file_path": "a.py", "content": "x"}))
    assert superseded_results(messages)["t0"].reason == "rewritten"


def test_a_read_of_a_file_read_again_whole_is_re_read():
    messages = _calls(("bash", {"command": "cat a.py"}), ("Read", {"file_path": "a.py"}))
    assert superseded_results(messages)["t0"] == Supersession("t0", by="t1", reason="re-read")


def test_a_partial_edit_supersedes_a_read_only_when_asked():
    messages = _calls(
        ("Read", {"file_path": "a.py"}), ("Edit", {"file_path": "a.py", "old_string": "a", "new_string": "b"})
    )
    assert superseded_results(messages) == {}
    assert superseded_results(messages, edits=True)["t0"].reason == "edited"


def test_the_nearest_later_call_is_named():
    run = ("bash", {"command": "ls"})
    assert superseded_results(_calls(run, run, run))["t0"].by == "t1"


def test_an_unanswered_call_supersedes_nothing():
    messages = _calls(("bash", {"command": "ls"}))
    messages.append(Message.assistant(ToolUseBlock(id="t9", name="bash", input={"command": "ls"})))
    assert superseded_results(messages) == {}
