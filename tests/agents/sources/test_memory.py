from pathlib import Path

import pytest

from agents.ports import SubagentRequest
from agents.sources._memory import (
    MemoryNotFound,
    MemoryStore,
    MemoryStoreError,
    memory_section,
    project_slug,
)
from agents.sources._memory_tools import MemoryShowInput, MemoryWriteInput, memory_tools
from agents.subagents._spawner import child_registry
from tools.base import ToolContext, ToolError
from tools.registry import ToolRegistry, validate_input


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    workspace = tmp_path / "my-project"
    workspace.mkdir()
    return MemoryStore(workspace, home=tmp_path / "home")


def tool(store: MemoryStore, name: str):
    return next(t for t in memory_tools(store) if t.name == name)


def test_records_live_under_home_projects_slug_memory(store, tmp_path):
    store.write("db-choice", "project", "We use Postgres 16", "Chosen for JSONB.")
    slug = project_slug(tmp_path / "my-project")
    assert slug.startswith("my-project-") and len(slug) == len("my-project-") + 10
    assert (tmp_path / "home" / "projects" / slug / "memory" / "db-choice.md").is_file()


def test_record_file_is_markdown_with_front_matter(store):
    record = store.write("db-choice", "project", "We use Postgres 16", "Chosen for JSONB.")
    text = record.path.read_text()
    assert text.startswith("---\nname: db-choice\ntype: project\ndescription: We use Postgres 16\n")
    assert "created: " in text and "updated: " in text and text.endswith("---\n\nChosen for JSONB.\n")


def test_update_keeps_created_and_replaces_body(store):
    first = store.write("style", "feedback", "Prefer small diffs", "v1")
    second = store.write("style", "feedback", "Prefer small diffs", "v2")
    shown = store.show("style")
    assert shown.created == first.created and shown.updated >= second.created and shown.body == "v2"


def test_section_holds_the_index_not_the_bodies(store):
    store.write("db-choice", "project", "We use Postgres 16", "SECRET-BODY-TEXT about JSONB.")
    section = memory_section(store)
    assert section.name == "memory" and section.title == "Memory" and section.source == str(store.directory)
    assert "- db-choice (project): We use Postgres 16" in section.text
    assert "SECRET-BODY-TEXT" not in section.text


async def test_memory_show_loads_the_body(store, tmp_path):
    store.write("db-choice", "project", "We use Postgres 16", "SECRET-BODY-TEXT about JSONB.")
    out = await tool(store, "MemoryShow").run(MemoryShowInput(name="db-choice"), ToolContext(workspace=tmp_path))
    assert "SECRET-BODY-TEXT about JSONB." in out.content and not out.is_error


async def test_memory_show_unknown_name_lists_available(store, tmp_path):
    store.write("db-choice", "project", "We use Postgres 16", "body")
    with pytest.raises(ToolError, match="available: db-choice"):
        await tool(store, "MemoryShow").run(MemoryShowInput(name="nope"), ToolContext(workspace=tmp_path))


def test_rules_say_current_evidence_wins_and_stale_records_are_updated(store):
    text = memory_section(store).text
    assert "Current evidence wins over memory" in text
    assert "update or delete (MemoryDelete) a record that proved stale" in text


def test_rules_name_the_four_types_and_what_not_to_keep(store):
    text = memory_section(store).text
    assert all(f"- {t}:" in text for t in ("user", "feedback", "project", "reference"))
    assert "temporary task state" in text and "MemoryShow(name)" in text


def test_child_rules_say_memory_is_read_only(store):
    text = memory_section(store, is_root=False).text
    assert "memory is read-only for you" in text and "MemoryWrite(" not in text


def test_write_and_delete_are_root_only_and_dropped_for_subagents(store):
    tools = {t.name: t for t in memory_tools(store)}
    assert tools["MemoryWrite"].root_only and tools["MemoryDelete"].root_only
    assert not tools["MemoryList"].root_only and tools["MemoryList"].is_read_only
    assert not tools["MemoryShow"].root_only and tools["MemoryShow"].is_read_only
    ToolRegistry(tools.values())  # the registry accepts their declarations
    child = child_registry(list(tools.values()), SubagentRequest(description="d", prompt="p", depth=1), None)
    assert sorted(t.name for t in child) == ["MemoryList", "MemoryShow"]


async def test_memory_write_tool_creates_then_updates(store, tmp_path):
    write = tool(store, "MemoryWrite")
    ctx = ToolContext(workspace=tmp_path)
    args = {"name": "role", "type": "user", "description": "Backend engineer", "body": "Knows Go."}
    assert (await write.run(MemoryWriteInput(**args), ctx)).content.startswith("Created")
    assert (await write.run(MemoryWriteInput(**{**args, "body": "Knows Rust."}), ctx)).content.startswith("Updated")
    assert store.show("role").body == "Knows Rust."


def test_failed_write_leaves_old_record_intact_and_no_temp_file(store):
    store.write("role", "user", "Backend engineer", "Knows Go.")
    before = store.show("role").path.read_bytes()
    # A lone surrogate cannot be encoded as UTF-8: the write fails after the temp file exists.
    with pytest.raises(MemoryStoreError, match="could not write memory record 'role'"):
        store.write("role", "user", "Backend engineer", "broken \ud800 body")
    assert store.show("role").path.read_bytes() == before
    assert sorted(p.name for p in store.directory.iterdir()) == ["role.md"]


def test_broken_front_matter_is_reported_skipped_and_kept(store):
    store.write("good", "project", "Fine", "body")
    broken = store.directory / "broken.md"
    broken.write_text("---\nname: broken\ntype: [unclosed\n---\nbody\n")
    records, problems = store.list()
    assert [r.name for r in records] == ["good"]
    assert len(problems) == 1 and "broken.md" in problems[0] and "not valid YAML" in problems[0]
    assert broken.is_file()


def test_broken_record_is_never_overwritten_or_deleted(store):
    store.directory.mkdir(parents=True)
    broken = store.directory / "broken.md"
    broken.write_text("no front-matter here\n")
    with pytest.raises(MemoryStoreError, match="no front-matter"):
        store.write("broken", "user", "x", "y")
    with pytest.raises(MemoryStoreError, match="fix or remove the file by hand"):
        store.delete("broken")
    assert broken.read_text() == "no front-matter here\n"


def test_wrong_type_in_front_matter_is_reported(store):
    store.directory.mkdir(parents=True)
    (store.directory / "odd.md").write_text(
        "---\nname: odd\ntype: opinion\ndescription: x\ncreated: 2024-01-01T00:00:00Z\nupdated: 2024-01-01T00:00:00Z\n---\nb\n"
    )
    records, problems = store.list()
    assert records == [] and "type" in problems[0]


def test_section_mentions_skipped_records(store):
    store.directory.mkdir(parents=True)
    (store.directory / "broken.md").write_text("nothing\n")
    assert "1 record file(s) skipped" in memory_section(store).text


def test_index_shows_the_first_200_records_and_says_how_many_more_memory_list_has(store):
    store.directory.mkdir(parents=True)
    for i in range(203):  # by hand: store.write syncs every file to disk
        description = f"Decision number {i} about the build, " + "why " * 30
        (store.directory / f"note-{i:03d}.md").write_text(
            f"---\nname: note-{i:03d}\ntype: project\ndescription: {description}\n---\nbody\n"
        )
    index = memory_section(store).text.split("## Index\n", 1)[1]
    shown = [line.split(" ", 2)[1] for line in index.splitlines() if line.startswith("- ")]
    assert shown == [f"note-{i:03d}" for i in range(200)]
    assert index.endswith(
        "[3 more records not shown (the index shows the first 200 of 203); MemoryList lists them all]"
    )


def test_index_orders_by_type_then_name(store):
    store.write("zeta", "user", "u", "b")
    store.write("alpha", "reference", "r", "b")
    store.write("beta", "feedback", "f", "b")
    assert [r.name for r in store.list()[0]] == ["zeta", "beta", "alpha"]


def test_delete_removes_the_file_and_reports_missing(store):
    record = store.write("temp", "project", "x", "y")
    assert store.delete("temp") is True and not record.path.exists()
    assert store.delete("temp") is False


def test_unsafe_names_are_refused_with_a_suggestion(store):
    with pytest.raises(MemoryStoreError, match="e.g. 'db-choice'"):
        store.write("DB Choice", "project", "x", "y")
    with pytest.raises(MemoryStoreError, match="invalid memory name"):
        store.show("../etc/passwd")


def test_show_unknown_raises_not_found_listing_names(store):
    store.write("a", "user", "x", "y")
    with pytest.raises(MemoryNotFound, match="available: a"):
        store.show("b")


def test_hand_written_record_without_timestamps_is_read(store):
    store.directory.mkdir(parents=True)
    (store.directory / "by-hand.md").write_text(
        "---\nname: by-hand\ntype: user\ndescription: Written by hand\n---\nHi\n"
    )
    records, problems = store.list()
    assert problems == [] and records[0].name == "by-hand" and records[0].body == "Hi"


@pytest.mark.parametrize("name", ["name\n", "../etc/passwd", "a/b", "..", "", "x" * 65, "nul\0", "Caps"])
@pytest.mark.parametrize("tool_name", ["MemoryShow", "MemoryWrite", "MemoryDelete"])
def test_a_memory_tool_refuses_a_name_that_is_no_record_name_naming_the_rule(store, tool_name, name):
    raw = (
        {"name": name, "type": "user", "description": "d", "body": "b"}
        if tool_name == "MemoryWrite"
        else {"name": name}
    )
    with pytest.raises(ToolError, match=r"(?s)- name: Value error, invalid memory name .*use 1-64 characters"):
        validate_input(tool(store, tool_name), raw)


def test_writing_a_name_with_a_trailing_newline_is_a_store_error_and_writes_nothing(store):
    with pytest.raises(MemoryStoreError, match=r"invalid memory name 'name\\n'"):
        store.write("name\n", "user", "d", "b")
    assert not store.directory.exists()


def test_a_record_file_whose_name_holds_a_newline_is_reported_not_read(store):
    store.directory.mkdir(parents=True)
    (store.directory / "odd.md").write_text('---\nname: "odd\\n"\ntype: user\ndescription: x\n---\nb\n')
    records, problems = store.list()
    assert records == [] and "invalid memory name 'odd\\n'" in problems[0]
