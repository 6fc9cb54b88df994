"""What progressive disclosure saves: system-prompt tokens with memory and skills
shown as an index + catalog (bodies loaded on demand) vs. with every body inlined.

    python -m benchmarks.disclosure [--records 50] [--skills 30] [--seed 7]

Records and skills are generated deterministically into a temp dir (memory bodies
~400-1500 chars, skill bodies ~2-6 KB) and read back through the real MemoryStore,
discover_skills and the section functions. Both prompts hold the same base
instructions, tool catalog and memory rules; only the memory and skill parts differ.
Tokens are estimated with CharRatioEstimator (characters / 4).
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from agents.sources import (
    MEMORY_TYPES,
    LoadSkillTool,
    MemoryStore,
    Section,
    Skill,
    SystemPrompt,
    base_section,
    discover_skills,
    memory_section,
    memory_tools,
    skill_catalog_section,
    tool_catalog_section,
)
from agents.tokens import CharRatioEstimator
from tools.recall import RecallTool
from tools.registry import default_workspace_tools

TOPICS = [
    "the payments service",
    "the CI pipeline",
    "database migrations",
    "the release process",
    "the feature-flag system",
    "API versioning",
    "the search indexer",
    "integration tests",
    "the on-call rotation",
    "error budgets",
    "the mobile client",
    "the data warehouse",
]
SENTENCES = [
    "Run the {t} checks with `make verify` before pushing; the pre-commit hook skips them.",
    "The team decided in Q3 that {t} must stay backwards compatible for two minor releases.",
    "Ask before touching {t}: changes there need a review from the platform group.",
    "Flaky failures in {t} usually come from the shared fixture cache; clear it with `make clean-cache`.",
    "Logs for {t} are in the observability dashboard under the service name, not in the repo.",
    "The user prefers small, reviewable commits when working on {t}, each with a test.",
    "Do not mock the database in tests for {t}; a mocked test once hid a broken migration.",
    "Configuration for {t} lives in the deploy repository, so edits here have no effect in prod.",
    "The owner of {t} is on the infrastructure team; tickets go to the INFRA tracker.",
    "Timeouts in {t} are set per environment; staging is deliberately stricter than production.",
]
STEPS = [
    "Read the relevant module and its tests before changing anything.",
    "Run `python -m pytest -q {p}` and record the failing tests with their first error line.",
    "Check `git log -n 20 -- {p}` for recent changes that could explain the behaviour.",
    "Write the smallest change that makes the failing test pass; keep the public API unchanged.",
    "Update the changelog entry under Unreleased with one line describing the user-visible effect.",
    "If the change touches configuration, update the example file and the settings documentation.",
    "Run the linters (`ruff check .` and `mypy {p}`) and fix what they report in changed lines.",
    "Summarize what changed, which commands verified it, and anything left for a follow-up.",
]


def _text(rng: random.Random, pool: list[str], low: int, high: int, **fmt: str) -> str:
    target = rng.randint(low, high)
    parts: list[str] = []
    while sum(len(p) + 1 for p in parts) < target:
        parts.append(rng.choice(pool).format(**fmt))
    return " ".join(parts)[:target]


def populate(workspace: Path, home: Path, records: int, skills: int, seed: int) -> None:
    rng = random.Random(seed)
    store = MemoryStore(workspace, home)
    for i in range(records):
        topic = rng.choice(TOPICS)
        kind = MEMORY_TYPES[i % len(MEMORY_TYPES)]
        description = f"{kind.capitalize()} note {i} on {topic}"
        store.write(f"{kind}-{i:02d}", kind, description, _text(rng, SENTENCES, 400, 1500, t=topic))
    for i in range(skills):
        topic = rng.choice(TOPICS)
        name = f"skill-{i:02d}"
        path = workspace / ".workingset" / "skills" / name / "SKILL.md"
        path.parent.mkdir(parents=True)
        body = f"# {name}\n\nUse this skill for {topic}.\n\n"
        target = rng.randint(2_000, 6_000)
        while len(body) < target:
            steps = "\n".join(f"{n}. {_text(rng, STEPS, 80, 200, p=f'src/{name}')}" for n in range(1, 6))
            body += f"## Step group {body.count('## Step') + 1}\n\n{steps}\n\n"
        body = body[:target]
        path.write_text(f"---\nname: {name}\ndescription: How to work on {topic} safely (variant {i})\n---\n\n{body}")


def inlined_sections(store: MemoryStore, skills: list[Skill]) -> tuple[Section, Section]:
    """The same two sections with every body written out in full."""
    records, _ = store.list()
    rules = memory_section(store).text.split("\n\n## Index\n", 1)[0]
    memory = "\n\n".join(f"## {r.name} ({r.type}): {r.description}\n{r.body}" for r in records)
    skill_text = "\n\n".join(f"## {s.name}: {s.description}\n{s.body()}" for s in skills)
    return (
        Section("skills", "Skills", "inlined", skill_text),
        Section("memory", "Memory", "inlined", f"{rules}\n\n{memory}"),
    )


def measure(records: int, skills: int, seed: int) -> dict[str, int]:
    counter = CharRatioEstimator()
    with tempfile.TemporaryDirectory() as tmp:
        workspace, home = Path(tmp) / "project", Path(tmp) / "home"
        workspace.mkdir()
        populate(workspace, home, records, skills, seed)
        store = MemoryStore(workspace, home)
        found, problems = discover_skills(workspace, home)
        assert not problems, problems
        tools = [*default_workspace_tools(), RecallTool(), *memory_tools(store), LoadSkillTool(found)]
        common = [base_section(), tool_catalog_section(tools)]
        capped = memory_section(store)
        index = capped.text.split("\n## Index\n", 1)[1]
        shown = sum(1 for line in index.splitlines() if line.startswith("- "))
        disclosed = SystemPrompt.assemble([*common, skill_catalog_section(found), capped])
        uncapped = SystemPrompt.assemble([*common, skill_catalog_section(found, 10**9), memory_section(store, 10**9)])
        inlined = SystemPrompt.assemble([*common, *inlined_sections(store, found)])
        return {
            "disclosed": counter.count_text(disclosed.text),
            "uncapped": counter.count_text(uncapped.text),
            "inlined": counter.count_text(inlined.text),
            "shown": shown,
            "memory_body_chars": sum(len(r.body) for r in store.list()[0]) // max(records, 1),
            "skill_body_chars": sum(len(s.body()) for s in found) // max(skills, 1),
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=50)
    parser.add_argument("--skills", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    m = measure(args.records, args.skills, args.seed)
    saved = m["inlined"] - m["disclosed"]
    print(
        f"{args.records} memory records (bodies avg {m['memory_body_chars']:,} chars), {args.skills} skills "
        f"(bodies avg {m['skill_body_chars']:,} chars); tokens by CharRatioEstimator (chars/4)"
    )
    rows = [
        (f"index + catalog (default cap; {m['shown']}/{args.records} records listed)", m["disclosed"]),
        ("index + catalog (no index cap)", m["uncapped"]),
        ("full bodies inlined", m["inlined"]),
    ]
    width = max(len(label) for label, _ in rows)
    for label, tokens in rows:
        print(f"  system prompt, {label:<{width}}  {tokens:>7,} tokens")
    print(f"  saving: {saved:,} tokens per request ({saved / m['inlined']:.0%} of the inlined prompt)")


if __name__ == "__main__":
    main()
