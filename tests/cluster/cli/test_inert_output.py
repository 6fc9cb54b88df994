"""What reaches a terminal or a report is inert: escape sequences, C1 controls, BEL,
backspace, a carriage return over the line and bidirectional overrides in tool output,
model text, file names and errors are shown as escapes (agents.visible), never sent raw,
and never read as rich markup. One test per surface, through its real entry point."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from agents.events import PermissionRequested, SubagentStarted
from agents.sources._memory import MemoryStore
from cluster.eval.progress import ProgressReporter
from cluster.terminal._cli import main
from cluster.terminal._repl import SLASH_COMMANDS, Repl
from cluster.terminal._tree_view import TreeWatch
from tests.support import ROOT
from tests.support.builders import workspace
from tests.support.eval_support import tasks_file

# A hostile text: clipboard write (OSC 52), window titles (OSC 0 and 2), a hyperlink
# (OSC 8), erase / scroll region / cursor up (CSI), DCS, a one-byte C1 CSI, BEL,
# backspace, a carriage return that would print over the line, a right-to-left override,
# and rich markup that must stay text.
ATTACK = (
    "\x1b]52;c;aGVsbG8=\x07"
    "\x1b]0;owned\x07"
    "\x1b]2;owned\x1b\\"
    "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"
    "\x1b[2J\x1b[1;3r\x1b[5A"
    "\x1bPq#0\x1b\\"
    "\x9b6n"
    "\x07\x08"
    "\rall fine"
    "\u202e"
    "[bold]:smile:"
)
# The same in a file name (no "/"), for Glob and trace files.
NAME_ATTACK = "evil\x1b]52;c;aGVsbG8=\x07\x1b]0;owned\x07\x9b2J\rok\u202e[bold]"
CLIPBOARD = "\\u001b]52;c;aGVsbG8=\\u0007"  # how the OSC 52 sequence shows
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _assert_inert(text: str) -> None:
    found = RAW.search(text)
    assert found is None, (
        f"raw {found.group()!r} reached the output: {text[max(found.start() - 40, 0) : found.end() + 40]!r}"
    )


def _shows(text: str, *parts: str) -> bool:
    flat = "".join(text.split())  # rich wraps lines at the console's width
    return all("".join(part.split()) in flat for part in parts)


def _printf(text: str) -> str:
    """A Bash command that prints `text` (its bytes as printf octal escapes)."""
    return "printf '" + "".join(f"\\{b:03o}" for b in text.encode()) + "'"


def _script(tmp_path: Path, turns: list[dict], **extra) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns, **extra}))
    return path


def _workspace_with_a_hostile_name(tmp_path: Path) -> Path:
    ws = workspace(tmp_path)
    (ws / f"{NAME_ATTACK}.txt").write_text("x")
    return ws


def _repl(ws: Path, script: Path, lines: str) -> subprocess.CompletedProcess:
    """The REPL as a person runs it (stdin not a terminal), in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "cluster.terminal._cli", "run", "--cwd", str(ws), "--model", f"scripted:{script}"],
        input=lines,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_run_shows_a_bash_results_escape_sequences_as_text(tmp_path, capsys):
    script = _script(
        tmp_path,
        [{"tool_calls": [{"name": "Bash", "input": {"command": _printf(ATTACK)}}]}],
        final_text=f"done {ATTACK}",
    )
    assert (
        main(
            [
                "run",
                "go",
                "--cwd",
                str(_workspace_with_a_hostile_name(tmp_path)),
                "--model",
                f"scripted:{script}",
                "--permission-mode",
                "bypass",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    _assert_inert(captured.out + captured.err)
    assert _shows(captured.out, CLIPBOARD, "\\u009b6n\\u0007\\u0008\\rall fine\\u202e[bold]:smile:", "exit code: 0")


def test_run_json_carries_the_same_values_without_a_raw_control_character(tmp_path, capsys):
    script = _script(tmp_path, [{"tool_calls": [{"name": "Bash", "input": {"command": _printf(ATTACK)}}]}])
    assert (
        main(
            [
                "run",
                "go",
                "--cwd",
                str(_workspace_with_a_hostile_name(tmp_path)),
                "--model",
                f"scripted:{script}",
                "--json",
                "--permission-mode",
                "bypass",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    _assert_inert(out)
    (result,) = [e for e in map(json.loads, out.splitlines()) if e["type"] == "tool_result"]
    assert result["content"].startswith(ATTACK)  # decoded, the value is what the tool printed


def test_the_repl_shows_a_file_name_and_its_own_messages_revealed(tmp_path):
    script = _script(tmp_path, [{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}, {"text": ATTACK}])
    proc = _repl(_workspace_with_a_hostile_name(tmp_path), script, f"list\n/goal {ATTACK}\n/exit\n")
    assert proc.returncode == 0, proc.stderr
    _assert_inert(proc.stdout + proc.stderr)
    assert _shows(proc.stdout, f"evil{CLIPBOARD}", f"goal set: {CLIPBOARD}")


def test_the_approval_prompt_shows_a_commands_escape_sequences_as_text(tmp_path):
    script = _script(
        tmp_path, [{"tool_calls": [{"name": "Bash", "input": {"command": f"echo '{ATTACK}'"}}]}, {"text": "denied"}]
    )
    proc = _repl(_workspace_with_a_hostile_name(tmp_path), script, "go\nn\n/exit\n")
    assert proc.returncode == 0, proc.stderr
    _assert_inert(proc.stdout)
    prompt = proc.stdout[proc.stdout.index("Permission needed") :]
    assert _shows(prompt, f"Bash command=\"echo '{CLIPBOARD}", "invisible, bidirectional or control character")


async def test_slash_tree_shows_a_childs_description_revealed(capsys):
    watch = TreeWatch()
    watch(
        SubagentStarted(session_id="root", child_session_id="root.1", description=ATTACK, depth=1, child_path=[ATTACK])
    )
    watch(
        PermissionRequested(
            session_id="root.1", tool_use_id="t1", name=f"mcp{ATTACK}", input={}, reason="asks", path=[ATTACK]
        )
    )
    handler, _ = SLASH_COMMANDS["tree"]
    assert await handler(Repl(session=None, trees=watch), "")  # type: ignore[arg-type]  # /tree reads no session
    out = capsys.readouterr().out
    _assert_inert(out)
    assert _shows(out, f"└─ {CLIPBOARD}", f"asking (mcp{CLIPBOARD}")


def test_the_eval_console_and_report_show_task_ids_and_errors_revealed(tmp_path, capsys):
    task_id = f"t{ATTACK}|x\ny"
    repo = tmp_path / f"missing{NAME_ATTACK}"
    tasks = tasks_file(
        tmp_path / "tasks.jsonl", [{"id": task_id, "repo": str(repo), "instruction": "x", "test_command": "true"}]
    )
    script = _script(tmp_path, [])
    assert main(["eval", str(tasks), "--model", f"scripted:{script}", "--out", str(tmp_path / "out"), "--local"]) == 1
    captured = capsys.readouterr()
    _assert_inert(captured.out + captured.err)
    assert _shows(captured.out, f"error t{CLIPBOARD}", f"missingevil{CLIPBOARD}")
    report = (tmp_path / "out" / "report.md").read_text()
    _assert_inert(report)
    (row,) = [line for line in report.splitlines() if line.startswith(f"| t{CLIPBOARD}")]
    assert len(re.findall(r"(?<!\\)\|", row)) == 11  # ten cells: the id's pipe and line break did not split it


def test_the_live_progress_shows_a_retried_tasks_id_and_reason_revealed():
    console = Console(file=io.StringIO(), force_terminal=False, width=400)
    reporter = ProgressReporter(console)
    reporter.event("eval_started", to_run=1, skipped=0, tasks=1, out="/tmp/out")
    reporter.event("task_retry", task_id=ATTACK, reason=f"node lost {ATTACK}")
    reporter.close()
    out = console.file.getvalue()
    _assert_inert(out)
    assert _shows(out, f"↻ {CLIPBOARD}", f"node lost {CLIPBOARD}")


def test_sessions_show_export_and_history_print_stored_text_revealed(tmp_path, capsys):
    ws = _workspace_with_a_hostile_name(tmp_path)
    script = _script(tmp_path, [{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}], final_text=ATTACK)
    assert main(["run", "list", "--cwd", str(ws), "--model", f"scripted:{script}", "--json"]) == 0
    session_id = json.loads(capsys.readouterr().out.splitlines()[0])["session_id"]
    outputs = {}
    for name, argv in {
        "show": ["show", session_id],
        "history": ["history", session_id],
        "list": ["list"],
        "markdown": ["export", session_id, "--format", "markdown"],
        "json": ["export", session_id],
    }.items():
        assert main(["sessions", "--cwd", str(ws), *argv]) == 0
        captured = capsys.readouterr()
        _assert_inert(captured.out + captured.err)
        outputs[name] = captured.out
    assert f"evil{CLIPBOARD}" in outputs["markdown"] and CLIPBOARD in outputs["markdown"]
    results = [
        b["content"]
        for m in json.loads(outputs["json"])["conversation"]
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert results == [f"{NAME_ATTACK}.txt"]  # decoded, the export holds the stored values


def test_memory_list_and_show_print_a_records_text_revealed(tmp_path, capsys):
    ws = tmp_path / "ws"
    ws.mkdir()
    MemoryStore(ws, Path.home() / ".workingset").write("note", "project", f"desc {ATTACK}", f"body\n{ATTACK}\nend")
    for argv in (["list"], ["show", "note"]):
        assert main(["memory", "--cwd", str(ws), *argv]) == 0
        out = capsys.readouterr().out
        _assert_inert(out)
        assert _shows(out, f"desc {CLIPBOARD}")


def test_the_compaction_benchmark_shows_trace_names_and_errors_revealed(tmp_path, capsys):
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / f"broken{NAME_ATTACK}.json").write_text("{not json")
    (folder / f"good{NAME_ATTACK}.json").write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": f"fix it {ATTACK}"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}],
                    },
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": f"src/{NAME_ATTACK}.py"}],
                    },
                    {"role": "assistant", "content": f"Edit src/{NAME_ATTACK}.py next."},
                ]
            }
        )
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "bench",
                "compaction",
                "--local",
                "--resamples",
                "200",
                "--traces",
                str(folder),
                "--strategies",
                "truncate",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    _assert_inert(captured.out + captured.err)
    assert _shows(captured.err, f"brokenevil{CLIPBOARD}")
    report = (out / "report.md").read_text()
    _assert_inert(report)
    assert f"goodevil{CLIPBOARD}" in report and f"brokenevil{CLIPBOARD}" in report
