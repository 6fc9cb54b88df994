"""CLAUDE.md as Claude Code reads it: `@path` imports, CLAUDE.local.md and .claude/CLAUDE.md
beside it, and nested CLAUDE.md / AGENTS.md read when a file tool first reaches their
directory — each through no link out of the workspace, capped as project instructions are."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.messages import TextBlock
from agents.opening._assembly import build_session
from agents.settings._config import load_settings
from agents.sources._instructions import import_paths, read_project_instructions
from agents.sources._system_prompt import INSTRUCTIONS_MAX_CHARS
from tests.support.fakes import script_file

SECRET = "TOPSECRET-5a4b"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def _prompt_and_notices(ws: Path, tmp_path: Path) -> tuple[str, str]:
    events: list = []
    session = build_session(load_settings(ws, {"model": f"scripted:{script_file(tmp_path)}"}), ws, emit=events.append)
    return session.prompt.text, " ".join(e.text for e in events if e.type == "notice")


def test_imports_are_read_relative_to_the_importing_file_and_follow_it(ws, tmp_path):
    (ws / "docs").mkdir()
    (ws / "CLAUDE.md").write_text("Read @docs/guide.md first.\nThen the rest.\n")
    (ws / "docs" / "guide.md").write_text("GUIDE: see @style.md\n")
    (ws / "docs" / "style.md").write_text("STYLE: four spaces\n")
    found, problems = read_project_instructions(ws)
    assert [p.relative_to(ws).as_posix() for p, _ in found] == ["CLAUDE.md", "docs/guide.md", "docs/style.md"]
    assert problems == []
    prompt, _ = _prompt_and_notices(ws, tmp_path)
    assert prompt.index("Read @docs/guide.md") < prompt.index("GUIDE:") < prompt.index("STYLE: four spaces")


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("@../outside.md", "it leads outside"),
        ("@~/outside.md", "imports from the home directory are not followed"),
        ("@linked.md", "it is reached through a symbolic link"),
        ("@inner-link.md", "it is reached through a symbolic link"),
        ("@missing/file.md", "no such file"),
    ],
)
def test_an_import_leading_outside_or_through_a_link_is_not_followed_and_is_named(ws, tmp_path, line, why):
    (tmp_path / "outside.md").write_text(SECRET)
    (Path.home() / "outside.md").write_text(SECRET)
    (ws / "linked.md").symlink_to(tmp_path / "outside.md")
    (ws / "plain.md").write_text("plain")
    (ws / "inner-link.md").symlink_to("plain.md")  # even a link that stays inside
    (ws / "CLAUDE.md").write_text(f"Instructions. {line}\n")
    prompt, notices = _prompt_and_notices(ws, tmp_path)
    assert SECRET not in prompt and "Instructions." in prompt
    assert f"{line} in {ws / 'CLAUDE.md'} was not imported: {why}" in notices


def test_imports_stop_five_hops_deep(ws):
    for i in range(7):
        (ws / f"f{i}.md").write_text(f"FILE{i} @f{i + 1}.md\n")
    (ws / "CLAUDE.md").write_text("@f0.md\n")
    found, problems = read_project_instructions(ws)
    assert [p.name for p, _ in found] == ["CLAUDE.md", "f0.md", "f1.md", "f2.md", "f3.md", "f4.md"]
    assert problems == [f"@f5.md in {ws / 'f4.md'} was not imported: imports go at most 5 deep"]


def test_a_file_imported_twice_or_in_a_cycle_comes_once(ws):
    (ws / "a.md").write_text("A @b.md\n")
    (ws / "b.md").write_text("B @a.md @CLAUDE.md\n")
    (ws / "CLAUDE.md").write_text("@a.md @b.md\n")
    found, _ = read_project_instructions(ws)
    assert [p.name for p, _ in found] == ["CLAUDE.md", "a.md", "b.md"]


def test_at_words_in_code_emails_and_mentions_are_not_imports():
    text = "Mail me@example.com, ask @alice.\nRun `@not/this.md` or\n```\n@nor/this.md\n```\nbut @docs/a.md.\n"
    assert list(import_paths(text)) == ["alice", "docs/a.md"]


def test_claude_local_md_and_dot_claude_claude_md_are_read_beside_claude_md(ws, tmp_path):
    (ws / "CLAUDE.md").write_text("SHARED rules\n")
    (ws / "CLAUDE.local.md").write_text("MINE only\n")
    (ws / ".claude").mkdir()
    (ws / ".claude" / "CLAUDE.md").write_text("PROJECT memory\n")
    prompt, _ = _prompt_and_notices(ws, tmp_path)
    assert prompt.index("SHARED rules") < prompt.index("MINE only") < prompt.index("PROJECT memory")


def test_claude_local_md_linked_out_of_the_workspace_yields_nothing(ws, tmp_path):
    (tmp_path / "key").write_text(SECRET)
    (ws / "CLAUDE.local.md").symlink_to(tmp_path / "key")
    prompt, notices = _prompt_and_notices(ws, tmp_path)
    assert SECRET not in prompt and f"{ws / 'CLAUDE.local.md'} was not read" in notices


# -- nested instructions ------------------------------------------------------------------------


def _nested_ws(ws: Path) -> None:
    (ws / "pkg" / "deep").mkdir(parents=True)
    (ws / "pkg" / "CLAUDE.md").write_text("PKG rules @notes.md\n")
    (ws / "pkg" / "notes.md").write_text("PKG notes\n")
    (ws / "pkg" / "deep" / "AGENTS.md").write_text("DEEP rules\n")
    (ws / "pkg" / "deep" / "x.py").write_text("x = 1\n")
    (ws / "pkg" / "y.py").write_text("y = 1\n")


async def _run(ws: Path, tmp_path: Path, *calls: dict) -> tuple[list, list]:
    events: list = []
    settings = load_settings(ws, {"model": f"scripted:{script_file(tmp_path, *calls)}"})
    session = build_session(settings, ws, emit=events.append)
    await session.run_turn("go")
    told = [
        (i, b.text)
        for i, m in enumerate(session.conversation)
        if m.role == "user"
        for b in m.content
        if isinstance(b, TextBlock) and b.text.startswith("[Project instructions")
    ]
    return told, events


async def test_nested_instructions_are_told_after_the_first_file_tool_call_that_reaches_their_directory(ws, tmp_path):
    _nested_ws(ws)
    told, _ = await _run(
        ws,
        tmp_path,
        {"name": "Read", "input": {"path": "pkg/deep/x.py"}},
        {"name": "Read", "input": {"path": "pkg/y.py"}},
        {"name": "Glob", "input": {"pattern": "*"}},
    )
    assert [text.splitlines()[0] for _, text in told] == [
        "[Project instructions of pkg/, read when a file tool first reached it]",
        "[Project instructions of pkg/deep/, read when a file tool first reached it]",
    ]
    assert "PKG rules" in told[0][1] and "PKG notes" in told[0][1] and "DEEP rules" in told[1][1]
    assert told[0][0] == told[1][0]  # both follow the results of the call that reached them


async def test_nested_instructions_are_not_in_the_system_prompt_and_untouched_ones_stay_unread(ws, tmp_path):
    _nested_ws(ws)
    told, _ = await _run(ws, tmp_path, {"name": "Read", "input": {"path": "pkg/y.py"}})
    assert [text.splitlines()[0] for _, text in told] == [
        "[Project instructions of pkg/, read when a file tool first reached it]"
    ]
    prompt, _ = _prompt_and_notices(ws, tmp_path)
    assert "PKG rules" not in prompt and "DEEP rules" not in prompt


async def test_a_nested_claude_md_linked_out_of_its_directory_yields_nothing(ws, tmp_path):
    (tmp_path / "key").write_text(SECRET)
    (ws / "pkg").mkdir()
    (ws / "pkg" / "y.py").write_text("y = 1\n")
    (ws / "pkg" / "CLAUDE.md").symlink_to(tmp_path / "key")
    told, events = await _run(ws, tmp_path, {"name": "Read", "input": {"path": "pkg/y.py"}})
    assert told == [] and f"{ws / 'pkg' / 'CLAUDE.md'} was not read" in " ".join(
        e.text for e in events if e.type == "notice"
    )


async def test_a_nested_directory_that_is_a_link_out_of_the_workspace_is_not_read(ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "CLAUDE.md").write_text(SECRET)
    (ws / "pkg").mkdir()
    (ws / "pkg" / "y.py").write_text("y = 1\n")
    (ws / "pkg" / "out").symlink_to(outside)
    told, _ = await _run(
        ws,
        tmp_path,
        {"name": "Read", "input": {"path": "pkg/y.py"}},
        {"name": "Grep", "input": {"pattern": "TOPSECRET", "path": "pkg/out"}},
    )
    assert all(SECRET not in text for _, text in told)


async def test_nested_instructions_are_capped_as_project_instructions_are(ws, tmp_path):
    (ws / "pkg").mkdir()
    (ws / "pkg" / "y.py").write_text("y = 1\n")
    (ws / "pkg" / "CLAUDE.md").write_text("z" * (INSTRUCTIONS_MAX_CHARS + 5_000))
    told, _ = await _run(ws, tmp_path, {"name": "Read", "input": {"path": "pkg/y.py"}})
    ((_, text),) = told
    assert len(text) < INSTRUCTIONS_MAX_CHARS + 500 and "more chars of" in text
