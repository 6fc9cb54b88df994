"""Live tree budgets: one ledger per tree, reserved before and settled after every
model call by every session of the tree, in one process and across Ray actors."""

import json
import pickle
from pathlib import Path

import pytest

from agents.errors import WorkingsetError
from agents.opening._assembly import build_session
from agents.opening._lifecycle import OpenSpec
from agents.ports import Usage
from agents.subagents._budgets import Budget, BudgetExceeded, ScopeLimits
from cluster.ray_run import open_remote_session
from tests.support.builders import scripted_settings, workspace
from tests.support.fakes import fanout_script

BYPASS = {"mode": "bypass"}


def _tokens(event) -> int:
    return event.usage.input_tokens + event.usage.output_tokens


async def _unlimited_calls(tmp_path: Path, script: Path) -> list:
    events: list = []
    session = build_session(
        scripted_settings(tmp_path, script, permissions=BYPASS), workspace(tmp_path), emit=events.append
    )
    await session.run_turn("Fan out.")
    return [e for e in events if e.type == "model_call"]


def _half_way_limit(calls: list, root_id: str) -> int:
    """Room for the root's first call and about half of what the children would use."""
    root_first = next(e for e in calls if e.session_id == root_id)
    return _tokens(root_first) + sum(_tokens(e) for e in calls if e.session_id != root_id) // 2


# -- the ledger --------------------------------------------------------------------------


async def test_a_call_is_refused_before_it_is_made_once_an_ancestor_is_spent():
    tree = Budget.tree(max_tokens=10)
    child = await tree.child("root.1", ScopeLimits(label="subagent 'a'"))
    await child.reserve()
    with pytest.raises(BudgetExceeded, match="tree token budget exceeded: 12 > 10"):
        await child.settle(Usage(input_tokens=12), 0.0)
    sibling = await tree.child("root.2", ScopeLimits(label="subagent 'b'"))
    with pytest.raises(BudgetExceeded, match="tree token budget exceeded: 12 of 10 tokens used before this call"):
        await sibling.reserve()


async def test_a_childs_usage_counts_in_its_scope_and_every_ancestor_at_once():
    tree = Budget.tree()
    child = await tree.child("root.1", ScopeLimits(label="child"))
    grandchild = await child.child("root.1.1", ScopeLimits(label="grandchild"))
    await grandchild.settle(Usage(input_tokens=5, output_tokens=2), 0.25)
    assert (grandchild.tokens, child.tokens, tree.tokens) == (7, 7, 7)
    assert tree.cost_usd == 0.25


def test_a_tree_ledger_refuses_to_be_copied_to_another_process():
    with pytest.raises(WorkingsetError, match="stays in the root's process"):
        pickle.dumps(Budget.tree())


# -- the sibling policy, in one process --------------------------------------------------


async def test_a_child_past_its_own_budget_ends_alone_and_its_siblings_go_on(tmp_path):
    script = tmp_path / "s.json"
    big = "Read every file. " * 1200  # this child's first call alone passes the per-child limit
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {
                        "tool_calls": [
                            {"name": "Agent", "input": {"description": "big", "prompt": big}},
                            {"name": "Agent", "input": {"description": "small", "prompt": "Look."}},
                        ]
                    }
                ],
                "subagents": {
                    "big": {"turns": [{"text": "step", "tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}]},
                    "small": {
                        "turns": [{"text": "step", "tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}],
                        "final_text": "small result",
                    },
                },
                "final_text": "root done",
            }
        )
    )
    free = await _unlimited_calls(tmp_path, script)
    small_calls = [e for e in free if e.session_id.endswith(".1")]
    per_child = sum(_tokens(e) for e in small_calls) + 10
    events: list = []
    settings = scripted_settings(tmp_path, script, permissions=BYPASS, subagents={"max_tokens": per_child})
    root = build_session(settings, workspace(tmp_path), emit=events.append)
    outcome = await root.run_turn("go")

    assert (outcome.reason, outcome.final_text) == ("end_turn", "root done")
    finished = {e.description: e for e in events if e.type == "subagent_finished"}
    assert (finished["big"].reason, finished["big"].model_calls) == ("budget", 1)
    assert (finished["small"].reason, finished["small"].model_calls) == ("end_turn", 2)


async def test_parallel_children_stop_at_their_next_call_once_the_tree_is_spent(tmp_path):
    script = fanout_script(tmp_path / "fan.json", children=4, calls=6, sleep_ms=20)
    free = await _unlimited_calls(tmp_path, script)
    root_id = min((e.session_id for e in free), key=len)
    limit = _half_way_limit(free, root_id)
    events: list = []
    settings = scripted_settings(tmp_path, script, permissions=BYPASS, subagents={"tree_max_tokens": limit})
    root = build_session(settings, workspace(tmp_path), emit=events.append)
    outcome = await root.run_turn("Fan out.")

    assert outcome.reason == "budget"
    finished = [e for e in events if e.type == "subagent_finished"]
    assert [e.reason for e in finished] == ["budget"] * 4
    calls = [e for e in events if e.type == "model_call"]
    assert len(calls) < len(free)
    assert limit < sum(_tokens(e) for e in calls) <= limit + 4 * max(_tokens(e) for e in calls)


# -- across actors -----------------------------------------------------------------------


async def test_eight_parallel_children_on_ray_overshoot_the_tree_budget_by_at_most_one_call_each(ray_cluster, tmp_path):
    script = fanout_script(tmp_path / "fan.json", children=8, calls=6, sleep_ms=50)
    free = await _unlimited_calls(tmp_path, script)
    root_id = min((e.session_id for e in free), key=len)
    limit = _half_way_limit(free, root_id)
    events: list = []
    settings = scripted_settings(tmp_path, script, permissions=BYPASS, subagents={"tree_max_tokens": limit})
    remote = await open_remote_session(OpenSpec(settings, workspace(tmp_path)), emit=events.append, approver=None)
    try:
        outcome = await remote.run_turn("Fan out.")
    finally:
        await remote.aclose()

    assert outcome.reason == "budget" and "tree token budget exceeded" in outcome.detail
    finished = [e for e in events if e.type == "subagent_finished"]
    # Actors start at different times: an early child may finish before the budget runs out.
    assert len(finished) == 8 and "budget" in {e.reason for e in finished}
    calls = [e for e in events if e.type == "model_call"]
    used = sum(_tokens(e) for e in calls)
    assert len(calls) < len(free) and used > limit  # the budget ran out mid-way
    # What passed the limit were calls already under way: at most one per child.
    largest_per_child = [
        max((_tokens(e) for e in calls if e.session_id == child.child_session_id), default=0) for child in finished
    ]
    assert used - limit <= sum(largest_per_child)
