"""Where a session's tool calls run on Ray: the file tools and Bash in the session's own
process when the workspace is on its node (with every refusal of tools.files._beneath intact;
Bash in its sandbox, within the node's tool slots), every other tool, and every tool
whose workspace is on another node, as a Ray task on the workspace's node."""

from __future__ import annotations

import pytest

from cluster.tool_tasks import RayToolExecutor
from tools import FILE_TOOLS, BashTool, ReadTool, ToolContext, WriteTool
from tools.bash import BashInput
from tools.files._read import ReadInput
from tools.files._write import WriteInput


@pytest.mark.parametrize("tool_class", FILE_TOOLS, ids=lambda c: c.__name__)
def test_a_file_tool_runs_in_this_process_when_the_workspace_is_on_its_node(ray_cluster, tool_class):
    assert RayToolExecutor(ray_cluster.head_node_id).runs_here(tool_class())


def test_bash_runs_in_this_process_when_the_workspace_is_on_its_node(ray_cluster):
    assert RayToolExecutor(ray_cluster.head_node_id).runs_here(BashTool())


def test_bash_runs_as_a_task_on_the_workspace_node_when_that_is_another_node(ray_cluster):
    assert not RayToolExecutor(ray_cluster.other_node_id).runs_here(BashTool())


async def test_bash_run_in_this_process_answers_from_the_workspace(ray_cluster, tmp_path):
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    out = await RayToolExecutor(ray_cluster.head_node_id).execute(
        BashTool(), BashInput(command="wc -l < notes.txt"), ToolContext(workspace=tmp_path)
    )
    assert not out.is_error and out.content.splitlines()[0] == "2"


def test_a_file_tool_runs_as_a_task_on_the_workspace_node_when_that_is_another_node(ray_cluster):
    assert not RayToolExecutor(ray_cluster.other_node_id).runs_here(ReadTool())


async def test_a_read_run_in_this_process_still_refuses_a_symlink_out_of_the_workspace(ray_cluster, tmp_path):
    (tmp_path / "secret").write_text("token\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link").symlink_to(tmp_path / "secret")
    out = await RayToolExecutor(ray_cluster.head_node_id).execute(
        ReadTool(), ReadInput(path="link"), ToolContext(workspace=ws)
    )
    assert out.is_error and "token" not in out.content


async def test_a_write_run_in_this_process_refuses_a_path_above_the_workspace(ray_cluster, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    out = await RayToolExecutor(ray_cluster.head_node_id).execute(
        WriteTool(), WriteInput(path="../escaped.txt", content="x"), ToolContext(workspace=ws)
    )
    assert out.is_error and not (tmp_path / "escaped.txt").exists()


async def test_a_read_run_in_this_process_returns_the_file(ray_cluster, tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    out = await RayToolExecutor(ray_cluster.head_node_id).execute(
        ReadTool(), ReadInput(path="a.txt"), ToolContext(workspace=tmp_path)
    )
    assert not out.is_error and out.content == "     1\thello"
