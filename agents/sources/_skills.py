"""Skills: task instructions in SKILL.md files, disclosed progressively.

A skill is a directory holding a SKILL.md whose YAML front-matter names it and says
when to use it (`name`, `description`); the markdown body is the instructions. Only
name + description enter the system prompt (the Skill Catalog); `LoadSkill(name)`
returns the body when the model decides the skill applies.

Where skills are found, highest precedence first (same name: the first one wins):

    <workspace>/.workingset/skills/*/SKILL.md    scope "project"
    <workspace>/.claude/skills/*/SKILL.md        scope "claude" (compatibility)
    <home>/skills/*/SKILL.md                     scope "global" (home: ~/.workingset)
    <plugin skills dir>/*/SKILL.md               scope "plugin", named "<plugin>:<name>"

A SKILL.md with bad front-matter is reported as a problem and skipped. The workspace is
written by the agent, so every SKILL.md is read through a handle on the directory it was
found from — the workspace, the home directory, the plugin's skills directory (see
tools.files._host_read): a SKILL.md, or a skills directory, that is a link leading out of it (to
~/.ssh/id_rsa) yields nothing but a problem line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.sources._memory import FrontMatterError, split_front_matter
from agents.sources._system_prompt import Section
from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput
from tools.files import is_present, list_beneath, read_text_beneath

__all__ = [
    "LoadSkillInput",
    "LoadSkillTool",
    "SKILL_CATALOG_MAX_ENTRIES",
    "Skill",
    "SkillScope",
    "discover_skills",
    "skill_catalog_section",
    "skill_dirs",
]

SkillScope = Literal["project", "claude", "global", "plugin"]
SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")  # fullmatch: "$" would let "name\n" through
CATALOG_DESCRIPTION_MAX = 300  # chars of one description shown in the catalog
SKILL_CATALOG_MAX_ENTRIES = 100  # skills the catalog lists; LoadSkill loads any of them
SKILL_MAX_BYTES = 1_000_000

CATALOG_INTRO = (
    "Skills are instructions for specific kinds of task. When a task matches a skill's "
    "description, call LoadSkill(name) and follow it before you start; do not guess its contents."
)


class Skill(BaseModel):
    """One discovered skill; the body stays on disk until LoadSkill reads it."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="The skill's name from its front-matter.")
    description: str = Field(description="When to use the skill, from its front-matter.")
    path: Path = Field(description="The SKILL.md file.")
    scope: SkillScope = Field(description="project, claude (.claude/skills), global or plugin.")
    root: Path = Field(description="The directory it is read beneath (a link never leads out of it).")

    def body(self) -> str:
        """Read the instructions now; ToolError if the file changed into something unreadable."""
        text = read_text_beneath(self.root, str(self.path.relative_to(self.root)), SKILL_MAX_BYTES)
        if text is None:
            raise ToolError(
                f"skill {self.name!r} cannot be read from {self.path}: it is gone, not a regular file, "
                f"or a link leading outside {self.root}"
            )
        try:
            _, body = split_front_matter(text)
        except FrontMatterError as exc:
            raise ToolError(f"skill {self.name!r} cannot be read from {self.path}: {exc}") from None
        return body


def skill_dirs(workspace: Path, home: Path | None = None) -> list[tuple[SkillScope, Path]]:
    """The skill roots in precedence order, whether or not they exist."""
    home = home if home is not None else Path.home() / ".workingset"
    return [
        ("project", workspace / ".workingset" / "skills"),
        ("claude", workspace / ".claude" / "skills"),
        ("global", home / "skills"),
    ]


def _load(root: Path, path: Path, scope: SkillScope, prefix: str = "") -> Skill:
    """Parse one SKILL.md; ValueError with the reason if it cannot be read or its front-matter is bad."""
    text = read_text_beneath(root, str(path.relative_to(root)), SKILL_MAX_BYTES)
    if text is None:
        raise ValueError(f"not read: a link leading outside {root} or not a regular file")
    meta, _ = split_front_matter(text)
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ValueError(f"front-matter 'name' must be 1-64 letters, digits, '-', '_', '.' or ':' (got {name!r})")
    if not isinstance(description, str) or not description.strip():
        raise ValueError("front-matter 'description' is missing or empty; say when to use the skill")
    return Skill(name=prefix + name, description=" ".join(description.split()), path=path, scope=scope, root=root)


def _skill_files(base: Path, directory: Path, problems: list[str]) -> list[Path]:
    """The `directory/*/SKILL.md` that exist, sorted; listed through a handle on `base`, so
    a skills directory that is a link leading outside `base` lists nothing (a problem)."""
    names = list_beneath(base, str(directory.relative_to(base)))
    if names is None:
        if is_present(directory):
            problems.append(f"{directory} is a link leading outside {base} or not a directory; its skills are skipped")
        return []
    return [directory / name / SKILL_FILE for name in names if is_present(directory / name / SKILL_FILE)]


def discover_skills(
    workspace: Path, home: Path | None = None, *, plugin_dirs: Mapping[str, Path] | None = None
) -> tuple[list[Skill], list[str]]:
    """Skills by name (project over claude over global) and one problem line per skipped file.

    `plugin_dirs` (plugin name -> its skills directory) adds skills named `<plugin>:<name>`.
    """
    found: dict[str, Skill] = {}
    problems: list[str] = []
    home = home if home is not None else Path.home() / ".workingset"
    bases = {"project": workspace, "claude": workspace, "global": home}
    roots: list[tuple[SkillScope, Path, Path, str]] = [
        (scope, bases[scope], directory, "") for scope, directory in skill_dirs(workspace, home)
    ]
    roots += [("plugin", root, root, f"{plugin}:") for plugin, root in sorted((plugin_dirs or {}).items())]
    for scope, base, directory, prefix in roots:
        for path in _skill_files(base, directory, problems):
            try:
                skill = _load(base, path, scope, prefix)
            except (ValueError, FrontMatterError) as exc:
                problems.append(f"{path}: {exc}; skill skipped")
                continue
            first = found.get(skill.name)
            if first is None:
                found[skill.name] = skill
            elif first.scope == scope:
                problems.append(f"{path}: skill name {skill.name!r} is also used by {first.path}; skill skipped")
            # else: a higher-precedence scope already defines this name (an override)
    return sorted(found.values(), key=lambda s: s.name), problems


def skill_catalog_section(skills: Iterable[Skill], max_entries: int = SKILL_CATALOG_MAX_ENTRIES) -> Section | None:
    """The "skills" section: name + description of the first `max_entries` skills (a
    workspace may hold any number), a marker saying how many more; None when there are none."""
    skills = list(skills)
    if not skills:
        return None
    lines = [CATALOG_INTRO, ""]
    for skill in skills[:max_entries]:
        text = skill.description
        if len(text) > CATALOG_DESCRIPTION_MAX:
            text = text[: CATALOG_DESCRIPTION_MAX - 1].rstrip() + "…"
        lines.append(f"- {skill.name}: {text}")
    if len(skills) > max_entries:
        lines.append(
            f"[{len(skills) - max_entries} more skills not shown (the catalog shows the first {max_entries} "
            f"of {len(skills)}); LoadSkill with a name not listed here lists every skill's name]"
        )
    roots = dict.fromkeys(str(s.path.parent.parent) for s in skills)
    return Section("skills", "Skill Catalog", ", ".join(roots), "\n".join(lines))


class LoadSkillInput(BaseModel):
    """Input for LoadSkill."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="A skill name from the Skill Catalog.")


class LoadSkillTool:
    name = "LoadSkill"
    description = (
        "Load the full instructions of a skill from the Skill Catalog by name. Call it when a "
        "task matches the skill's description, then follow the instructions."
    )
    input_model = LoadSkillInput
    is_read_only = True
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    def __init__(self, skills: Iterable[Skill]):
        self.skills = {s.name: s for s in skills}

    def permission_subject(self, args: LoadSkillInput, workspace: Path) -> str | None:
        return args.name

    async def run(self, args: LoadSkillInput, ctx: ToolContext) -> ToolOutput:
        skill = self.skills.get(args.name)
        if skill is None:
            catalog = ", ".join(sorted(self.skills)) or "(none installed)"
            raise ToolError(f"No skill named {args.name!r}. Skills in the catalog: {catalog}")
        header = (
            f"Skill {skill.name} ({skill.scope}, {skill.path}); files it mentions are relative to {skill.path.parent}"
        )
        return ToolOutput(content=f"{header}\n\n{skill.body()}")
