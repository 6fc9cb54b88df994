import pytest

from agents.errors import Overloaded
from agents.messages import TextBlock, ToolUseBlock, is_protocol_complete
from agents.session._loop import Session
from agents.settings._config import AgentSettings, SessionSettings
from tests.support.builders import tool_use
from tests.support.fakes import RecordingModel, RendezvousTool, local_session
from tools import ToolRegistry


def _session(tmp_path, model, registry=None, max_turns=10) -> tuple[Session, list]:
    return local_session(
        tmp_path, model, registry=registry, settings=SessionSettings(agent=AgentSettings(max_turns=max_turns))
    )


async def test_reads_edits_and_runs_then_ends_naturally(tmp_path):
    (tmp_path / "a.txt").write_text("hello wrld\n")
    model = RecordingModel(
        [
            [tool_use("1", "Read", path="a.txt")],
            [tool_use("2", "Edit", path="a.txt", old_string="wrld", new_string="world")],
            [tool_use("3", "Bash", command="cat a.txt")],
            [TextBlock(text="all good")],
        ]
    )
    session, _ = _session(tmp_path, model)
    outcome = await session.run_turn("fix the typo")
    assert (outcome.reason, outcome.final_text, outcome.model_calls) == ("end_turn", "all good", 4)
    assert (tmp_path / "a.txt").read_text() == "hello world\n"
    bash_result = session.conversation[-2].tool_results_in[0]
    assert "hello world" in bash_result.content and "exit code: 0" in bash_result.content
    assert is_protocol_complete(session.conversation)


async def test_each_request_carries_the_whole_conversation_so_far(tmp_path):
    model = RecordingModel([[tool_use("1", "Glob", pattern="*")], [TextBlock(text="ok")]])
    session, _ = _session(tmp_path, model)
    await session.run_turn("list")
    assert [len(r.messages) for r in model.requests] == [1, 3]
    assert model.requests[0].system.startswith("sys") and {t.name for t in model.requests[0].tools} >= {"Read", "Bash"}


async def test_unknown_tool_becomes_an_error_result_and_the_loop_continues(tmp_path):
    model = RecordingModel([[tool_use("1", "Teleport", where="mars")], [TextBlock(text="sorry")]])
    session, _ = _session(tmp_path, model)
    outcome = await session.run_turn("go")
    result = session.conversation[2].tool_results_in[0]
    assert result.is_error and "Teleport" in result.content and "Read" in result.content
    assert outcome.final_text == "sorry"


async def test_invalid_input_becomes_an_error_result_naming_the_field(tmp_path):
    model = RecordingModel([[tool_use("1", "Read", pth="a.txt")], [TextBlock(text="oops")]])
    session, _ = _session(tmp_path, model)
    await session.run_turn("go")
    result = session.conversation[2].tool_results_in[0]
    assert result.is_error and "path" in result.content


async def test_parallel_tool_calls_run_concurrently_and_keep_their_order(tmp_path):
    registry = ToolRegistry([RendezvousTool(expected=3)])  # one after another, they would never all meet
    model = RecordingModel(
        [[tool_use(str(i), "Meet", seconds=0.03 - i * 0.01, label=f"L{i}") for i in range(3)], [TextBlock(text="ok")]]
    )
    session, _ = _session(tmp_path, model, registry=registry)
    await session.run_turn("go")
    results = session.conversation[2].tool_results_in
    assert [(r.content, r.is_error) for r in results] == [("L0", False), ("L1", False), ("L2", False)]


async def test_turn_limit_stops_a_model_that_never_finishes(tmp_path):
    model = RecordingModel([[tool_use(str(i), "Glob", pattern="*")] for i in range(10)])
    session, _ = _session(tmp_path, model, max_turns=3)
    outcome = await session.run_turn("go")
    assert (outcome.reason, outcome.model_calls) == ("turn_limit", 3)
    assert is_protocol_complete(session.conversation)


async def test_events_report_calls_results_and_text_in_order(tmp_path):
    model = RecordingModel([[TextBlock(text="look"), tool_use("1", "Glob", pattern="*")], [TextBlock(text="ok")]])
    session, events = _session(tmp_path, model)
    await session.run_turn("go")
    assert [e.type for e in events] == [
        "model_call",
        "assistant_text",
        "tool_call",
        "permission_decided",
        "tool_result",
        "model_call",
        "assistant_text",
    ]
    assert events[0].estimated_input_tokens > 0 and events[0].usage.input_tokens == 10


async def test_model_errors_propagate_to_the_caller(tmp_path):
    class Broken(RecordingModel):
        async def create(self, request):
            raise Overloaded("still overloaded", status_code=529, attempts=5)

    session, _ = _session(tmp_path, Broken([]))
    with pytest.raises(Overloaded):
        await session.run_turn("go")


async def test_two_edits_of_one_file_in_one_reply_apply_in_order_not_in_a_race(tmp_path):
    (tmp_path / "f.py").write_text("a = 1\nb = 2\n")
    model = RecordingModel(
        [
            [
                tool_use("1", "Edit", path="f.py", old_string="a = 1", new_string="a = 10"),
                tool_use("2", "Edit", path="f.py", old_string="a = 10\nb = 2", new_string="a = 10\nb = 20"),
            ],
            [TextBlock(text="ok")],
        ]
    )
    session, _ = _session(tmp_path, model)
    await session.run_turn("edit twice")
    assert [r.is_error for r in session.conversation[2].tool_results_in] == [False, False]
    assert (tmp_path / "f.py").read_text() == "a = 10\nb = 20\n"


def test_mutating_local_calls_run_alone_and_the_rest_in_between_run_together():
    from agents.session._tool_batch import waves
    from agents.session._tool_calls import PreparedCall
    from tools import EditTool, ReadTool
    from tools.base import ExecutionDomain

    class Delegated:
        name, is_read_only, execution_domain = "Agent", False, ExecutionDomain.DELEGATED_RUNTIME

    tools = [ReadTool(), ReadTool(), EditTool(), EditTool(), ReadTool(), Delegated(), Delegated()]
    calls = [PreparedCall(ToolUseBlock(id=str(i), name=t.name, input={}), t, None) for i, t in enumerate(tools)]
    assert [[c.use.id for c in wave] for wave in waves(calls)] == [["0", "1"], ["2"], ["3"], ["4", "5", "6"]]
