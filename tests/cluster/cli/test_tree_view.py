"""A visible tree: every event of a subagent carries its path in the tree, the human
view prefixes its lines with it and draws the tree with each child's state, tokens and
cost, and a child's permission question names the child."""

import io
import json
import sys
from pathlib import Path

from rich.console import Console

from agents.events import PermissionDecided, PermissionRequested, SubagentStarted
from agents.opening._assembly import build_session
from agents.settings._config import WorkingsetSettings
from cluster.terminal._console import console_approver
from cluster.terminal._render import HumanRenderer
from cluster.terminal._repl import SLASH_COMMANDS, Repl
from cluster.terminal._tree_view import SubagentTree, TreeWatch
from tests.support.builders import approve_all


def _nested_script(tmp_path: Path) -> Path:
    """Two children; the second starts a grandchild that runs Bash (which needs approval)."""
    path = tmp_path / "tree.json"
    agent = lambda d: {"name": "Agent", "input": {"description": d, "prompt": f"Do {d}."}}  # noqa: E731
    path.write_text(
        json.dumps(
            {
                "turns": [{"tool_calls": [agent("scout"), agent("survey")]}, {"text": "all reported"}],
                "subagents": {
                    "scout": {
                        "turns": [{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}],
                        "final_text": "scouted",
                    },
                    "survey": {"turns": [{"tool_calls": [agent("count")]}], "final_text": "surveyed"},
                    "count": {
                        "turns": [{"tool_calls": [{"name": "Bash", "input": {"command": "ls | wc -l"}}]}],
                        "final_text": "3",
                    },
                },
                "final_text": "root done",
            }
        )
    )
    return path


async def _run(tmp_path: Path, *, approver=None) -> list:
    events: list = []
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    settings = WorkingsetSettings(
        model=f"scripted:{_nested_script(tmp_path)}",
        home=tmp_path / "home",
        permissions={"mode": "default", "allow": ["Agent"]},
        sandbox={"enabled": False},
    )
    root = build_session(settings, ws, emit=events.append, child_approver=approver)
    await root.run_turn("go")
    return events


async def test_every_event_of_a_subagent_carries_its_path_and_the_roots_carry_none(tmp_path):
    events = await _run(tmp_path, approver=approve_all)
    paths = {(e.type, tuple(e.path)) for e in events}
    assert ("model_call", ()) in paths  # the root's
    assert ("tool_call", ("scout",)) in paths
    assert ("tool_call", ("survey", "count")) in paths
    (started,) = [e for e in events if e.type == "subagent_started" and e.description == "count"]
    assert (started.path, started.child_path) == (["survey"], ["survey", "count"])


async def test_a_childs_permission_question_names_the_child(tmp_path, monkeypatch, capsys):
    asked: list = []

    async def answer_on_the_console(request):
        asked.append(request)
        return await console_approver(request)

    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    await _run(tmp_path, approver=answer_on_the_console)
    (request,) = asked
    assert request.path == ["survey", "count"] and request.name == "Bash"
    assert f"Permission needed [subagent survey › count · {request.session_id}]" in capsys.readouterr().out


async def test_the_tree_shows_each_child_done_with_its_calls_and_tokens(tmp_path):
    events = await _run(tmp_path, approver=approve_all)
    tree = SubagentTree()
    for event in events:
        tree.observe(event)
    lines = tree.render().splitlines()
    assert lines[0] == "subagents: 3 started, 3 done, 0 running"
    finished = {e.description: e for e in events if e.type == "subagent_finished"}
    count = finished["count"]
    tokens = count.usage.input_tokens + count.usage.output_tokens
    assert lines[1].startswith("├─ scout [") and "done (end_turn) · 2 calls" in lines[1]
    assert lines[2].startswith("└─ survey [")
    assert (
        lines[3] == f"   └─ count [{count.child_session_id}] · done (end_turn) · 2 calls · {tokens:,} tokens · unpriced"
    )


def test_the_tree_shows_a_child_asking_and_then_working_again():
    tree = SubagentTree()
    tree.observe(_started("root", "root.1", "scout"))
    request = PermissionRequested(
        session_id="root.1", tool_use_id="t1", name="Bash", input={}, reason="asks", path=["scout"]
    )
    tree.observe(request)
    assert "scout [root.1] · asking (Bash) · 0 calls" in tree.render()
    tree.observe(_decided("root.1"))
    assert "scout [root.1] · working" in tree.render() and tree.running == 1


async def test_the_human_view_prefixes_a_childs_lines_with_its_path_and_draws_the_tree_when_all_are_done(tmp_path):
    out = io.StringIO()
    renderer = HumanRenderer(Console(file=out, width=200, color_system=None))
    for event in await _run(tmp_path, approver=approve_all):
        renderer(event)
    text = out.getvalue()
    assert "[survey › count] ▸ Bash(command='ls | wc -l')" in text
    tree_at = text.index("subagents: 3 started, 3 done, 0 running")
    assert text.count("subagents: ") == 1 and "└─ count [" in text[tree_at:]


def _started(parent: str, child: str, description: str) -> SubagentStarted:
    return SubagentStarted(
        session_id=parent, child_session_id=child, description=description, depth=1, child_path=[description]
    )


def _decided(session_id: str) -> PermissionDecided:
    return PermissionDecided(
        session_id=session_id,
        tool_use_id="t1",
        name="Bash",
        effect="allow",
        source="user",
        reason="the user allowed it",
        path=["scout"],
    )


async def test_each_fan_out_is_drawn_on_its_own(tmp_path):
    out = io.StringIO()
    renderer = HumanRenderer(Console(file=out, width=200, color_system=None))
    for run in ("first", "second"):
        (tmp_path / run).mkdir()
        for event in await _run(tmp_path / run, approver=approve_all):
            renderer(event)
    assert out.getvalue().count("subagents: 3 started, 3 done, 0 running") == 2


# -- /tree in the REPL -------------------------------------------------------------------


async def test_slash_tree_shows_the_child_asking_while_the_fan_out_is_under_way(capsys):
    watch = TreeWatch()
    watch(_started("root", "root.1", "scout"))
    watch(
        PermissionRequested(session_id="root.1", tool_use_id="t1", name="Bash", input={}, reason="asks", path=["scout"])
    )
    await _slash_tree(watch)
    out = capsys.readouterr().out
    assert out.startswith("subagents: 1 started, 0 done, 1 running") and "scout [root.1] · asking (Bash)" in out


async def test_slash_tree_shows_the_last_fan_out_with_each_childs_calls_tokens_and_cost(tmp_path, capsys):
    renderer = HumanRenderer(Console(file=io.StringIO(), width=200, color_system=None))
    events = await _run(tmp_path, approver=approve_all)
    for event in events:
        renderer(event)
    await _slash_tree(renderer.trees)
    out = capsys.readouterr().out
    count = next(e for e in events if e.type == "subagent_finished" and e.description == "count")
    tokens = count.usage.input_tokens + count.usage.output_tokens
    assert out.startswith("subagents: 3 started, 3 done, 0 running")
    assert f"└─ count [{count.child_session_id}] · done (end_turn) · 2 calls · {tokens:,} tokens · unpriced" in out


async def test_slash_tree_before_any_fan_out_says_so(capsys):
    await _slash_tree(TreeWatch())
    assert capsys.readouterr().out == "no subagents have run in this session yet\n"


async def _slash_tree(watch: TreeWatch) -> None:
    handler, _ = SLASH_COMMANDS["tree"]
    assert await handler(Repl(session=None, trees=watch), "")  # type: ignore[arg-type]  # /tree reads no session
