from pathlib import Path

import pytest

from tools import ReadTool, ToolContext, ToolError, resolve_in_workspace
from tools.read import ReadInput
from tools.workspace import relative_display


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    return workspace, outside


def test_relative_path_resolves_inside_workspace(layout):
    workspace, _ = layout
    assert resolve_in_workspace(workspace, "src/a.py") == workspace.resolve() / "src" / "a.py"


def test_absolute_path_inside_workspace_is_accepted(layout):
    workspace, _ = layout
    target = workspace / "a.txt"
    assert resolve_in_workspace(workspace, str(target)) == target.resolve()


def test_dotdot_escape_is_refused(layout):
    workspace, _ = layout
    with pytest.raises(ToolError, match="must stay inside the workspace"):
        resolve_in_workspace(workspace, "../outside/secret.txt")


def test_absolute_path_outside_is_refused(layout):
    workspace, outside = layout
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(workspace, str(outside / "secret.txt"))


def test_symlink_pointing_outside_is_refused(layout):
    workspace, outside = layout
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="link.txt"):
        resolve_in_workspace(workspace, "link.txt")


def test_symlinked_directory_pointing_outside_is_refused(layout):
    workspace, outside = layout
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolError, match="must stay inside the workspace"):
        resolve_in_workspace(workspace, "linkdir/secret.txt")


async def test_read_through_outside_symlink_is_refused(layout):
    workspace, outside = layout
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        await ReadTool().run(ReadInput(path="link.txt"), ToolContext(workspace=workspace))


def test_relative_display_shows_workspace_relative_posix_path(layout):
    workspace, _ = layout
    assert relative_display(workspace, workspace / "src" / "a.py") == "src/a.py"
    assert relative_display(workspace, workspace) == "."
