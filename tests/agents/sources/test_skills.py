from pathlib import Path

import pytest

from agents.sources._skills import LoadSkillInput, LoadSkillTool, discover_skills, skill_catalog_section
from tools.base import ToolContext, ToolError
from tools.registry import ToolRegistry


def make_skill(root: Path, dirname: str, name: str, description: str, body: str = "Step 1.\nStep 2.") -> Path:
    path = root / dirname / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
    return path


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    return workspace, home


def test_catalog_lists_name_and_description_only(dirs):
    workspace, home = dirs
    make_skill(workspace / ".workingset/skills", "release", "release", "Cut a release", "BODY-SECRET steps")
    skills, problems = discover_skills(workspace, home)
    section = skill_catalog_section(skills)
    assert problems == [] and section is not None
    assert section.name == "skills" and section.title == "Skill Catalog"
    assert section.source == str(workspace / ".workingset/skills")
    assert "- release: Cut a release" in section.text and "BODY-SECRET" not in section.text


def test_no_skills_no_section(dirs):
    assert skill_catalog_section(discover_skills(*dirs)[0]) is None


async def test_load_skill_returns_the_body(dirs):
    workspace, home = dirs
    make_skill(workspace / ".workingset/skills", "release", "release", "Cut a release", "BODY-SECRET steps")
    tool = LoadSkillTool(discover_skills(workspace, home)[0])
    out = await tool.run(LoadSkillInput(name="release"), ToolContext(workspace=workspace))
    assert "BODY-SECRET steps" in out.content and "description:" not in out.content


def test_load_skill_declares_read_only_local(dirs):
    tool = LoadSkillTool([])
    assert tool.name == "LoadSkill" and tool.is_read_only and not tool.root_only
    assert tool.execution_domain.value == "local"
    ToolRegistry([tool])  # the registry accepts the declaration


async def test_unknown_skill_lists_the_catalog(dirs):
    workspace, home = dirs
    make_skill(workspace / ".workingset/skills", "a", "alpha", "A")
    make_skill(home / "skills", "b", "beta", "B")
    tool = LoadSkillTool(discover_skills(workspace, home)[0])
    with pytest.raises(ToolError, match="No skill named 'gamma'. Skills in the catalog: alpha, beta"):
        await tool.run(LoadSkillInput(name="gamma"), ToolContext(workspace=workspace))


def test_project_overrides_global(dirs):
    workspace, home = dirs
    make_skill(home / "skills", "review", "review", "Global review")
    project = make_skill(workspace / ".workingset/skills", "review", "review", "Project review")
    skills, problems = discover_skills(workspace, home)
    assert problems == []
    assert [(s.name, s.description, s.scope, s.path) for s in skills] == [
        ("review", "Project review", "project", project)
    ]


def test_claude_skills_are_found_for_compatibility(dirs):
    workspace, home = dirs
    make_skill(workspace / ".claude/skills", "pdf", "pdf", "Work with PDF files")
    skills, _ = discover_skills(workspace, home)
    assert [(s.name, s.scope) for s in skills] == [("pdf", "claude")]


def test_claude_skills_override_global_but_not_project(dirs):
    workspace, home = dirs
    make_skill(home / "skills", "x", "x", "global")
    make_skill(workspace / ".claude/skills", "x", "x", "claude")
    assert discover_skills(workspace, home)[0][0].scope == "claude"
    make_skill(workspace / ".workingset/skills", "x", "x", "project")
    assert discover_skills(workspace, home)[0][0].scope == "project"


def test_bad_front_matter_is_reported_and_skipped(dirs):
    workspace, home = dirs
    root = workspace / ".workingset/skills"
    make_skill(root, "good", "good", "Fine")
    bad = root / "bad" / "SKILL.md"
    bad.parent.mkdir()
    bad.write_text("---\nname: bad\ndescription: [oops\n---\nbody\n")
    skills, problems = discover_skills(workspace, home)
    assert [s.name for s in skills] == ["good"]
    assert len(problems) == 1 and str(bad) in problems[0] and "not valid YAML" in problems[0]
    assert bad.is_file()


def test_missing_description_is_reported(dirs):
    workspace, home = dirs
    path = workspace / ".workingset/skills/x/SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nname: x\n---\nbody\n")
    skills, problems = discover_skills(workspace, home)
    assert skills == [] and "'description' is missing" in problems[0]


def test_duplicate_name_in_one_scope_is_reported(dirs):
    workspace, home = dirs
    root = workspace / ".workingset/skills"
    make_skill(root, "a", "same", "first")
    make_skill(root, "b", "same", "second")
    skills, problems = discover_skills(workspace, home)
    assert [s.description for s in skills] == ["first"] and "also used by" in problems[0]


def test_long_descriptions_are_cut_in_the_catalog(dirs):
    workspace, home = dirs
    make_skill(workspace / ".workingset/skills", "a", "a", "word " * 200)
    section = skill_catalog_section(discover_skills(workspace, home)[0])
    assert section is not None and section.text.splitlines()[-1].endswith("…")
    assert len(section.text.splitlines()[-1]) < 320


def test_plugin_skills_are_namespaced(dirs, tmp_path):
    workspace, home = dirs
    make_skill(tmp_path / "plugin-skills", "lint", "lint", "Lint the repo")
    skills, _ = discover_skills(workspace, home, plugin_dirs={"acme": tmp_path / "plugin-skills"})
    assert [(s.name, s.scope) for s in skills] == [("acme:lint", "plugin")]


def test_catalog_lists_the_first_100_skills_and_says_how_many_more(dirs):
    workspace, home = dirs
    for i in range(130):
        make_skill(workspace / ".workingset/skills", f"s{i:03d}", f"skill-{i:03d}", f"Use for task {i}")
    section = skill_catalog_section(discover_skills(workspace, home)[0])
    assert section is not None
    listed = [line.split(":")[0][2:] for line in section.text.splitlines() if line.startswith("- ")]
    assert listed == [f"skill-{i:03d}" for i in range(100)]
    assert section.text.endswith(
        "[30 more skills not shown (the catalog shows the first 100 of 130); "
        "LoadSkill with a name not listed here lists every skill's name]"
    )


async def test_a_skill_beyond_the_catalog_cap_still_loads(dirs):
    workspace, home = dirs
    for i in range(130):
        make_skill(workspace / ".workingset/skills", f"s{i:03d}", f"skill-{i:03d}", f"Use for task {i}", f"BODY {i}")
    tool = LoadSkillTool(discover_skills(workspace, home)[0])
    out = await tool.run(LoadSkillInput(name="skill-129"), ToolContext(workspace=workspace))
    assert "BODY 129" in out.content


def test_a_skill_name_with_a_trailing_newline_is_skipped_as_a_problem(dirs):
    workspace, home = dirs
    make_skill(workspace / ".workingset/skills", "odd", '"odd\\n"', "Looks fine")
    skills, problems = discover_skills(workspace, home)
    assert skills == [] and "front-matter 'name' must be" in problems[0]
