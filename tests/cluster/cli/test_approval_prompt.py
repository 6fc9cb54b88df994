"""The approval prompt as text: hidden characters escaped and counted, file changes as diffs."""

import io
import json
import os
import subprocess
import sys

from rich.console import Console

from agents.events import PermissionRequested
from agents.messages import ToolUseBlock
from agents.permissions import PermissionRuntime
from agents.permissions.preview import MAX_DIFF_LINES, change_preview
from cluster.terminal._approval import describe_request
from cluster.terminal._render import HumanRenderer
from tests.support import ROOT
from tests.support.fakes import RecordingModel, local_session
from tools import WriteTool
from tools.files._edit import EditInput
from tools.files._write import WriteInput

HIDDEN = "\u202e\u200b\ufeff\u2066\x1b"  # RLO, zero-width space, BOM, LRI, ESC


def _bash_request(command: str) -> PermissionRequested:
    return PermissionRequested(session_id="s", tool_use_id="t", name="Bash", input={"command": command}, reason="asks")


async def _parked_request(tmp_path, name: str, **inp) -> PermissionRequested:
    """The question a real session parks for one call (default mode asks)."""
    use = ToolUseBlock(id="c1", name=name, input=inp)
    session, _ = local_session(
        tmp_path, RecordingModel([[use]]), permissions=PermissionRuntime.from_texts(mode="default")
    )
    outcome = await session.run_turn("go")
    assert outcome.reason == "permission"
    return outcome.request


def test_invisible_and_bidirectional_characters_are_shown_as_escapes_and_counted():
    text = describe_request(_bash_request(f"cat notes{HIDDEN}.txt"))
    assert not any(ch in text for ch in HIDDEN)
    assert "notes\\u202e\\u200b\\ufeff\\u2066\\u001b.txt" in text
    assert "this request contains 5 invisible, bidirectional or control characters" in text


def test_a_request_without_hidden_characters_carries_no_warning():
    text = describe_request(_bash_request("git status\nrm -rf x"))
    assert 'command="git status\\nrm -rf x"' in text and "!" not in text


def test_a_long_command_keeps_its_head_and_tail_and_says_how_much_is_between():
    text = describe_request(_bash_request("echo " + " " * 5000 + "; rm -rf ~"))
    assert "; rm -rf ~" in text and "characters not shown" in text


async def test_an_edit_is_shown_as_a_unified_diff_of_old_to_new(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    request = await _parked_request(tmp_path, "Edit", path="a.py", old_string="x = 1\ny = 2", new_string="x = 1\ny = 3")
    lines = describe_request(request).splitlines()
    assert (
        lines[0]
        == 'Edit path="a.py" old_string=<11 characters, in the diff below> new_string=<11 characters, in the diff below>'
    )
    assert lines[2:8] == ["  --- a/a.py", "  +++ b/a.py", "  @@ -1,2 +1,2 @@", "   x = 1", "  -y = 2", "  +y = 3"]


async def test_a_write_over_an_existing_file_is_a_diff_against_its_current_content(tmp_path):
    (tmp_path / "conf.ini").write_text("[a]\nkey = old\nother = 1\n")
    request = await _parked_request(tmp_path, "Write", path="conf.ini", content="[a]\nkey = new\nother = 1\n")
    text = describe_request(request)
    assert "  --- a/conf.ini" in text and "  -key = old" in text and "  +key = new" in text and "   other = 1" in text


def test_a_write_of_a_new_file_shows_every_line_as_added(tmp_path):
    preview = change_preview(WriteInput(path="new/f.txt", content="one\ntwo\n"), tmp_path)
    assert preview.splitlines()[:2] == ["--- /dev/null", "+++ b/new/f.txt"] and "+two" in preview


def test_a_write_over_a_fifo_shows_no_diff_and_never_blocks(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    preview = change_preview(WriteInput(path="pipe", content="x\n"), tmp_path)
    assert preview.startswith("(no diff: ") and "not a regular file" in preview.splitlines()[0]


def test_a_write_preview_shows_the_file_the_permission_check_pinned(tmp_path):
    (tmp_path / "approved.txt").write_text("approved\n")
    (tmp_path / "other.txt").write_text("other\n")
    (tmp_path / "link").symlink_to("approved.txt")
    args = WriteInput(path="link", content="new\n")
    WriteTool().permission_subject(args, tmp_path)
    (tmp_path / "link").unlink()
    (tmp_path / "link").symlink_to("other.txt")  # re-pointed before the prompt is drawn
    preview = change_preview(args, tmp_path)
    assert "-approved" in preview and "other" not in preview


def test_a_write_through_a_link_out_of_the_workspace_does_not_read_the_target(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("TOP-SECRET\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link").symlink_to(outside / "secret")
    preview = change_preview(WriteInput(path="link", content="x\n"), ws)
    assert "TOP-SECRET" not in preview and preview.startswith("(no diff: ")


def test_the_diff_is_bounded_and_says_what_it_left_out(tmp_path):
    old = "".join(f"line {i}\n" for i in range(1000))
    preview = change_preview(
        EditInput(path="big.txt", old_string=old, new_string=old.replace("line", "LINE") + "x" * 2000), tmp_path
    )
    lines = preview.splitlines()
    assert len(lines) == MAX_DIFF_LINES + 1 and lines[-1].endswith("more diff lines not shown")


def test_hidden_characters_past_the_shown_part_of_the_diff_are_still_counted(tmp_path):
    content = "".join(f"line {i}\n" for i in range(900)) + "evil\u202e\n"
    request = PermissionRequested(
        session_id="s",
        tool_use_id="t",
        name="Write",
        input={"path": "f", "content": content},
        reason="asks",
        preview=change_preview(WriteInput(path="f", content=content), tmp_path),
    )
    assert "contains 1 invisible, bidirectional or control character," in describe_request(request)


def test_hidden_characters_in_the_current_file_are_escaped_and_named(tmp_path):
    (tmp_path / "f.txt").write_text("safe\u2067line\n")
    request = PermissionRequested(
        session_id="s",
        tool_use_id="t",
        name="Write",
        input={"path": "f.txt", "content": "new\n"},
        reason="asks",
        preview=change_preview(WriteInput(path="f.txt", content="new\n"), tmp_path),
    )
    text = describe_request(request)
    assert "-safe\\u2067line" in text and "the current file contains 1 invisible" in text


def test_the_rendered_event_line_is_escaped_too():
    out = io.StringIO()
    HumanRenderer(Console(file=out, width=400, color_system=None))(_bash_request(f"ls x{HIDDEN}"))
    line = out.getvalue()
    assert not any(ch in line for ch in HIDDEN) and "x\\u202e" in line and "contains 5 invisible" in line


def test_the_repl_prompt_shows_the_diff_before_asking(tmp_path):
    (tmp_path / "greeting.py").write_text('print("Helo, " + name)\n')
    script = tmp_path / "s.yaml"
    edit = {"path": "greeting.py", "old_string": '"Helo, "', "new_string": '"Hello, \u202e"'}
    script.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "Edit", "input": edit}]}, {"text": "done"}]}))
    proc = subprocess.run(
        [sys.executable, "-m", "cluster.terminal._cli", "run", "--cwd", str(tmp_path), "--model", f"scripted:{script}"],
        input="fix it\nn\n/exit\n",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    prompt = proc.stdout[proc.stdout.index("Permission needed") :]
    assert '-"Helo, "' in prompt and '+"Hello, \\u202e"' in prompt and "\u202e" not in proc.stdout
    assert "contains 1 invisible" in prompt
    assert (tmp_path / "greeting.py").read_text() == 'print("Helo, " + name)\n'  # answered no
