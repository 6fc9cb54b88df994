"""Baseline strategies by spec: the built-ins registered, spec errors that say what is valid,
user strategies by import path and entry point, and a mask spec running in a session."""

import importlib.metadata
import sys

import pytest

from agents.compaction import STRATEGIES, make_strategy
from agents.compaction import specs as specs_module
from agents.compaction.strategies import (
    BUILTIN_STRATEGIES,
    ClearToolUses,
    HybridMaskSummarize,
    ObservationMasking,
    SlidingWindow,
)
from agents.errors import ConfigError
from agents.messages import TextBlock, ToolUseBlock
from agents.settings._config import AgentSettings, CompactSettings, SessionSettings
from tests.support.fakes import compaction_env as _env
from tests.support.fakes import compaction_request as _request
from tests.support.fakes import local_session, same_messages
from tests.support.fakes import tool_conversation as _conversation
from tools.artifacts import ArtifactStore

# -- specs and loading ------------------------------------------------------------------------------


def test_builtin_strategies_are_registered():
    assert (
        set(BUILTIN_STRATEGIES)
        == set(STRATEGIES)
        == {
            "current",
            "clear-then-summarize",
            "raw",
            "truncate",
            "mask",
            "window",
            "summarize",
            "amortized",
            "clear-tool-uses",
            "hybrid",
        }
    )
    assert make_strategy("window:first=1,last=30") == SlidingWindow(first=1, last=30)
    assert make_strategy(" hybrid:every=3 , keep=7 ") == HybridMaskSummarize(keep=7, every=3)
    assert make_strategy("clear-tool-uses:exclude_tools=Read|Grep,trigger=none,clear_tool_inputs=yes") == ClearToolUses(
        exclude_tools=("Read", "Grep"), clear_tool_inputs=True
    )
    assert make_strategy("summarize:max_tokens=5000").max_tokens == 5_000


@pytest.mark.parametrize(
    ("spec", "needles"),
    [
        (
            "nope",
            [
                "unknown compaction strategy 'nope'",
                "mask",
                "window",
                "clear-then-summarize",
                "pkg.module:Factory",
            ],
        ),
        ("mask:kep=3", ["no parameter 'kep'", "keep: int = 5"]),
        (
            "window:last=abc",
            ["invalid value 'abc' for last: int", "first: int = 1, last: int = 20"],
        ),
        ("window:last=0", ["last must be >= 1", "last: int = 20"]),
        ("mask:keep", ["expected key=value"]),
        ("mask:keep=1,keep=2", ["given twice"]),
        (
            "clear-tool-uses:clear_tool_inputs=maybe",
            ["clear_tool_inputs: bool", "expected true or false"],
        ),
        ("summarize:max_events=x", ["max_events: int | None", "max_tokens: int | None = None"]),
        ("raw:keep=1", ["no parameter 'keep'", "takes no parameters"]),
        ("no_such_module_xyz:Factory", ["cannot import", "no_such_module_xyz"]),
        ("agents.compaction.strategies:Nope", ["has no compaction strategy factory 'Nope'"]),
        ("agents.compaction.strategies:BUILTIN_STRATEGIES", ["not callable"]),
    ],
)
def test_spec_errors_say_what_is_valid(spec, needles):
    with pytest.raises(ConfigError) as info:
        make_strategy(spec)
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))


USER_STRATEGY = """
from dataclasses import dataclass
from agents.compaction import CompactionResult


@dataclass
class KeepLast:
    name = "keep-last"
    n: int = 3
    loud: bool = False

    async def compact(self, request, env):
        return CompactionResult(list(request.messages))


def make(n: int = 1):
    return KeepLast(n=n)


def broken():
    return object()
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "my_strategies_mod.py").write_text(USER_STRATEGY)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_strategies_mod"
    sys.modules.pop("my_strategies_mod", None)


async def test_user_strategy_by_import_path(user_module):
    strategy = make_strategy(f"{user_module}:KeepLast:n=7,loud=on")
    assert (strategy.name, strategy.n, strategy.loud) == ("keep-last", 7, True)
    assert make_strategy(f"{user_module}:make").n == 1
    messages = _conversation(pairs=2)
    assert same_messages((await strategy.compact(_request(messages), _env())).messages, messages)
    with pytest.raises(ConfigError, match="did not build a compaction strategy"):
        make_strategy(f"{user_module}:broken")
    with pytest.raises(ConfigError, match="no parameter 'x'.*n: int = 3"):
        make_strategy(f"{user_module}:KeepLast:x=1")


def test_user_strategy_by_entry_point(user_module, monkeypatch):
    group = specs_module.STRATEGY_ENTRY_POINT_GROUP
    assert group == "workingset.strategies"
    points = (
        importlib.metadata.EntryPoint(name="keep-last", value=f"{user_module}:KeepLast", group=group),
        importlib.metadata.EntryPoint(name="mask", value=f"{user_module}:KeepLast", group=group),
        importlib.metadata.EntryPoint(name="broken-ep", value="no_such_module_xyz:X", group=group),
    )
    monkeypatch.setattr(specs_module, "installed_strategy_entry_points", lambda: points)
    assert make_strategy("keep-last:n=4").n == 4
    assert isinstance(make_strategy("mask"), ObservationMasking)  # built-ins win
    with pytest.raises(ConfigError) as info:
        make_strategy("nope")
    assert "keep-last" in str(info.value)
    with pytest.raises(ConfigError, match="cannot load compaction strategy entry point 'broken-ep'"):
        make_strategy("broken-ep")


# -- in the loop --------------------------------------------------------------------------------------


async def test_mask_spec_runs_in_the_session_and_recall_returns_elided_bodies(tmp_path):
    from tests.support.fakes import RecordingModel
    from tools import ToolRegistry, default_workspace_tools
    from tools.recall import RecallTool

    for i in range(3):
        (tmp_path / f"f{i}.txt").write_text(f"file {i} " * 200)
    model = RecordingModel(
        [[ToolUseBlock(id=f"r{i}", name="Read", input={"path": f"f{i}.txt"})] for i in range(3)]
        + [[ToolUseBlock(id="rc", name="Recall", input={"id": "r0"})], [TextBlock(text="done")]]
    )
    settings = SessionSettings(agent=AgentSettings(max_turns=10), compact=CompactSettings(strategy="mask:keep=1"))
    session, _ = local_session(
        tmp_path,
        model,
        registry=ToolRegistry([*default_workspace_tools(), RecallTool()]),
        settings=settings,
        artifacts=ArtifactStore(tmp_path / ".artifacts"),
    )
    try:
        outcome = await session.run_turn("read the files")
        assert outcome.reason == "end_turn"
        # The fourth call saw r0 and r1 elided, r2 verbatim.
        seen = [b.content for m in model.requests[3].messages for b in m.tool_results_in]
        assert seen[0] == f'[observation elided: {len(session.kit.artifacts.get("r0"))} chars; Recall(id="r0")]'
        assert seen[1].startswith("[observation elided") and "file 2" in seen[2]
        recalled = session.conversation[-2].tool_results_in[0].content
        assert "file 0 file 0" in recalled
    finally:
        session.kit.artifacts.close()
