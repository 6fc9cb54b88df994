"""Workspace paths: what a call names, where it leads, and what rules and guards see."""

import pickle
from pathlib import Path

import pytest

from tools import ReadTool, ToolContext, ToolError, WriteTool
from tools.files._read import ReadInput
from tools.files._write import WriteInput
from tools.workspace import (
    Target,
    open_workspace,
    path_permission_subject,
    path_subject,
    refuse_protected_write,
    relative_display,
    resolve_target,
)


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    return workspace, outside


def real(workspace: Path, path: str) -> str:
    with open_workspace(workspace) as root:
        return resolve_target(root, workspace, path, missing_ok=True).real


def test_relative_path_leads_to_itself(layout, beneath_mode):
    workspace, _ = layout
    assert real(workspace, "./src//a.py") == "src/a.py"


def test_absolute_path_inside_workspace_is_accepted(layout, beneath_mode):
    workspace, _ = layout
    assert real(workspace, str(workspace / "a.txt")) == "a.txt"


def test_absolute_path_through_the_resolved_workspace_is_accepted(layout, tmp_path):
    workspace, _ = layout
    (tmp_path / "alias").symlink_to(workspace)
    assert real(tmp_path / "alias", str(workspace / "a.txt")) == "a.txt"


def test_dotdot_escape_is_refused(layout, beneath_mode):
    workspace, _ = layout
    with pytest.raises(ToolError, match="must stay inside the workspace"):
        real(workspace, "../outside/secret.txt")


def test_absolute_path_outside_is_refused(layout):
    workspace, outside = layout
    with pytest.raises(ToolError, match="outside the workspace"):
        real(workspace, str(outside / "secret.txt"))


def test_symlink_pointing_outside_is_refused(layout, beneath_mode):
    workspace, outside = layout
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="link.txt"):
        real(workspace, "link.txt")


def test_symlinked_directory_pointing_outside_is_refused(layout, beneath_mode):
    workspace, outside = layout
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolError, match="must stay inside the workspace"):
        real(workspace, "linkdir/secret.txt")


def test_symlink_inside_leads_to_its_target(layout, beneath_mode):
    workspace, _ = layout
    (workspace / "docs").mkdir()
    (workspace / "docs" / "guide.md").write_text("g")
    (workspace / "src").mkdir()
    (workspace / "src" / "guide").symlink_to("../docs/guide.md")
    assert real(workspace, "src/guide") == "docs/guide.md"


def test_a_path_that_does_not_exist_yet_keeps_its_missing_names(layout, beneath_mode):
    workspace, _ = layout
    (workspace / "pkg").mkdir()
    (workspace / "alias").symlink_to("pkg")
    assert real(workspace, "alias/new/mod.py") == "pkg/new/mod.py"


def test_a_path_with_an_unpaired_surrogate_is_a_clear_error(layout):
    workspace, _ = layout
    with pytest.raises(ToolError, match="surrogate"):
        real(workspace, "a\ud800.txt")


async def test_read_through_outside_symlink_is_refused(layout):
    workspace, outside = layout
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        await ReadTool().run(ReadInput(path="link.txt"), ToolContext(workspace=workspace))


def test_relative_display_shows_workspace_relative_posix_path(layout):
    workspace, _ = layout
    assert relative_display(workspace, workspace / "src" / "a.py") == "src/a.py"
    assert relative_display(workspace, workspace) == "."


def test_permission_subject_is_the_real_target_of_an_in_workspace_link(layout, beneath_mode):
    workspace, _ = layout
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "key").write_text("k")
    (workspace / "notes").symlink_to("secrets/key")
    assert path_subject(workspace, "notes") == "secrets/key"


def test_permission_subject_of_a_path_that_leaves_is_absolute(layout, beneath_mode):
    workspace, outside = layout
    (workspace / "out").symlink_to(outside)
    assert path_subject(workspace, "out/secret.txt").startswith("/")
    assert path_subject(workspace, "../outside/secret.txt") == str(outside / "secret.txt")


def test_a_write_naming_a_protected_directory_passes_the_guard(tmp_path):
    refuse_protected_write(ToolContext(workspace=tmp_path), Target(".git/config", ".git/config"))


def test_a_write_reaching_a_protected_directory_through_a_link_is_refused(tmp_path):
    with pytest.raises(ToolError, match=r"protected directory \.git/"):
        refuse_protected_write(ToolContext(workspace=tmp_path), Target("hooks/pre-commit", ".git/hooks/pre-commit"))


def test_a_dotdot_path_into_a_protected_directory_does_not_count_as_naming_it(tmp_path):
    with pytest.raises(ToolError, match="protected directory"):
        refuse_protected_write(ToolContext(workspace=tmp_path), Target(".git/../.git/config", ".git/config"))


async def test_a_call_runs_on_the_path_its_permission_check_matched(layout, beneath_mode):
    workspace, _ = layout
    (workspace / "approved.txt").write_text("approved\n")
    (workspace / "other.txt").write_text("other\n")
    (workspace / "link").symlink_to("approved.txt")
    args = WriteInput(path="link", content="new\n")
    assert path_permission_subject(WriteTool(), args, workspace) == "approved.txt"
    (workspace / "link").unlink()
    (workspace / "link").symlink_to("other.txt")  # re-pointed between decision and run
    await WriteTool().run(args, ToolContext(workspace=workspace))
    assert (workspace / "approved.txt").read_text() == "new\n"
    assert (workspace / "other.txt").read_text() == "other\n"


def test_the_pinned_path_travels_with_the_call_to_another_process(layout):
    workspace, _ = layout
    args = ReadInput(path="a.txt")
    path_permission_subject(ReadTool(), args, workspace)
    assert pickle.loads(pickle.dumps(args)).pinned_target() == Target("a.txt", "a.txt")


def test_without_the_workspace_on_this_node_rules_match_the_path_as_named(tmp_path):
    elsewhere = tmp_path / "on-another-node"
    assert path_subject(elsewhere, "src/./a.py") == "src/a.py"
    assert path_subject(elsewhere, "../x") == str(tmp_path / "x")


async def test_a_call_whose_path_led_out_when_checked_stays_refused(layout, beneath_mode):
    workspace, outside = layout
    (workspace / "link").symlink_to(outside / "secret.txt")
    args = WriteInput(path="link", content="x")
    assert path_permission_subject(WriteTool(), args, workspace).startswith("/")
    (workspace / "link").unlink()
    (workspace / "link").symlink_to("protected-by-a-rule.txt")  # inside now, but never checked
    with pytest.raises(ToolError, match="outside the workspace"):
        await WriteTool().run(args, ToolContext(workspace=workspace))
    assert not (workspace / "protected-by-a-rule.txt").exists()
