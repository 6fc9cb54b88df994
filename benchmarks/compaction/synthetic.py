"""A deterministic generator of long coding-agent trajectories (SYNTHETIC data).

Used when no `--traces` are given, so `workingset bench compaction` runs anywhere. Each
trajectory is a bash-only agent fixing several bugs in an invented Python project: it
lists files, greps for symbols, pages through numbered source, runs failing tests with
tracebacks, edits with `sed -i`, re-runs, and now and then returns to a location it saw
many steps earlier — so later actions depend on paths, line numbers, identifiers and
error strings that first appeared in old tool results. Outputs range from a few lines to
whole files and verbose test logs. Same (count, seed) -> identical traces.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

from agents.messages import ToolResultBlock, ToolUseBlock
from benchmarks.traces import ConversationBuilder, Trace

__all__ = ["SOURCE", "synthetic_traces"]

SOURCE = "synthetic"
SYSTEM = (
    "You are a software engineer working in a repository checkout. Use the bash tool to "
    "inspect files, run tests and edit code. Make the failing tests pass without breaking others."
)
_PROJECTS = ["tidewater", "quillon", "marrowind", "sablefish", "orrery", "kestrel", "lanternfly", "basalt"]
_PACKAGES = ["core", "io", "utils", "schema", "cli", "plugins", "storage"]
_MODULES = [
    "resolver",
    "loader",
    "fields",
    "registry",
    "parser",
    "cache",
    "validators",
    "render",
    "config",
    "session",
    "graph",
    "tokens",
]
_NOUNS = [
    "Field",
    "Schema",
    "Resolver",
    "Loader",
    "Registry",
    "Parser",
    "Cache",
    "Validator",
    "Renderer",
    "Node",
    "Graph",
    "Token",
    "Option",
]
_VERBS = [
    "get",
    "load",
    "resolve",
    "parse",
    "validate",
    "render",
    "build",
    "merge",
    "normalize",
    "serialize",
    "lookup",
    "bind",
]
_OBJECTS = [
    "path",
    "schema",
    "field",
    "options",
    "context",
    "value",
    "node",
    "token",
    "config",
    "entry",
    "parent",
    "index",
]
_ERRORS = [
    ("AttributeError", "'{cls}' object has no attribute '{attr}'"),
    ("KeyError", "'{attr}'"),
    ("TypeError", "{func}() got an unexpected keyword argument '{attr}'"),
    ("ValueError", "invalid {attr} for {cls}: expected mapping"),
]


@dataclass(frozen=True)
class _Def:
    path: str
    line: int
    cls: str
    func: str
    attr: str


class _Repo:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.name = rng.choice(_PROJECTS)
        modules = rng.sample([(p, m) for p in _PACKAGES for m in _MODULES], rng.randint(14, 22))
        self.paths = sorted(f"src/{self.name}/{p}/{m}.py" for p, m in modules)
        self.tests = sorted({f"tests/test_{m}.py" for _, m in modules})
        self.defs: dict[str, list[_Def]] = {}
        for path in self.paths:
            line, defs = rng.randint(20, 60), []
            for _ in range(rng.randint(8, 16)):
                cls = rng.choice(_NOUNS) + rng.choice(["", "Base", "Set", "Map", "Spec"])
                func = f"{rng.choice(_VERBS)}_{rng.choice(_OBJECTS)}"
                defs.append(_Def(path, line, cls, func, f"{rng.choice(_OBJECTS)}_{rng.choice(_OBJECTS)}"))
                line += rng.randint(18, 70)
            self.defs[path] = defs
        self.length = {p: d[-1].line + self.rng.randint(20, 80) for p, d in self.defs.items()}

    def source_line(self, path: str, n: int) -> str:
        """Line n of a file: a def where one is, else one of a few statement shapes, chosen
        by a hash of (path, n) so that the same line always reads the same."""
        defs = self.defs[path]
        here = next((d for d in defs if d.line == n), None)
        if here is not None:
            return f"    def {here.func}(self, {here.attr}, *, strict=False):"
        near = max((d for d in defs if d.line < n), default=defs[0], key=lambda d: d.line)
        h = zlib.crc32(f"{path}:{n}".encode())
        obj, noun, err = _OBJECTS[h % 12], _NOUNS[(h >> 4) % 13], _ERRORS[(h >> 8) % 4][0]
        shapes = (
            lambda: f"        {near.attr} = self._{near.func}({obj})",
            lambda: f"        if {near.attr} is None:",
            lambda: f'            raise {err}(f"missing {{{near.attr}!r}} in {near.cls}")',
            lambda: f"        return self.{obj}_map.get({near.attr}, {n})",
            lambda: f"        # {near.cls}.{near.func}: keep {obj} order stable",
            lambda: f"        for {obj} in self.{near.attr}s:",
            lambda: "",
            lambda: f"class {near.cls}({noun}):" if (h >> 12) % 20 == 0 else f"        self.{near.attr} = {near.attr}",
        )
        return shapes[(h >> 16) % len(shapes)]()

    def numbered(self, path: str, start: int, end: int) -> str:
        end = min(end, self.length[path])
        return "\n".join(f"{n:6d}\t{self.source_line(path, n)}" for n in range(start, end + 1))


def _result(output: str, code: int = 0) -> str:
    return f"<returncode>{code}</returncode>\n<output>\n{output}\n</output>"


class _Agent:
    """Plays one trajectory into a ConversationBuilder."""

    def __init__(self, rng: random.Random, repo: _Repo, task: str, tag: str):
        self.rng, self.repo, self.tag = rng, repo, tag
        self.builder = ConversationBuilder(task)
        self.seen: list[_Def] = []  # locations shown in earlier results, for later revisits
        self.steps = 0

    def step(self, thought: str, command: str, output: str, code: int = 0) -> None:
        self.steps += 1
        use = ToolUseBlock(id=f"toolu_{self.tag}_{self.steps:03d}", name="bash", input={"command": command})
        self.builder.step(thought, [use], [ToolResultBlock(tool_use_id=use.id, content=_result(output, code))])

    def explore(self) -> None:
        listing = "\n".join(f"./{p}" for p in self.repo.paths + self.repo.tests)
        self.step("Let me look at the layout of the repository first.", "find . -name '*.py' | sort", listing)

    def bug(self, number: int) -> None:
        rng, repo = self.rng, self.repo
        path = rng.choice(repo.paths)
        d = rng.choice(repo.defs[path])
        error, message = rng.choice(_ERRORS)
        message = message.format(cls=d.cls, attr=d.attr, func=d.func)
        test = rng.choice(repo.tests)
        test_name = f"test_{d.func}_{rng.choice(_OBJECTS)}"
        called = [rng.choice(repo.defs[rng.choice(repo.paths)]) for _ in range(rng.randint(2, 5))] + [d]
        frames = [(f, f.line + rng.randint(3, 15)) for f in called]
        trace_lines = "\n".join(f"{f.path}:{at}: in {f.func}\n    return self.{f.func}({f.attr})" for f, at in frames)
        passed = rng.randint(120, 900)
        log = "\n".join(
            f"{t}::test_{rng.choice(_VERBS)}_{rng.choice(_OBJECTS)} PASSED"
            for t in rng.choices(repo.tests, k=rng.randint(40, 220))
        )
        self.step(
            f"Problem {number}: run the tests to see what fails.",
            "python -m pytest -v tests",
            f"{log}\n{test}::{test_name} FAILED\n\n{'=' * 30} FAILURES {'=' * 30}\n{trace_lines}\nE   {error}: {message}\n"
            f"FAILED {test}::{test_name} - {error}: {message}\n{'=' * 8} 1 failed, {passed} passed in {rng.uniform(2, 40):.2f}s {'=' * 8}",
            code=1,
        )
        self.step(
            f"The failure is `{error}: {message}` raised from `{d.func}`. Where is it defined?",
            f"grep -rn 'def {d.func}' src/",
            "\n".join(
                f"{x.path}:{x.line}:    def {x.func}(self, {x.attr}, *, strict=False):"
                for p in repo.paths
                for x in repo.defs[p]
                if x.func == d.func
            ),
        )
        self.seen.append(d)
        for _ in range(rng.randint(1, 4)):
            other, at = rng.choice(frames)
            self.step(
                f"Look at `{other.func}` in {other.path} around line {at}.",
                f"nl -ba {other.path} | sed -n '{max(at - 20, 1)},{at + 60}p'",
                repo.numbered(other.path, max(at - 20, 1), at + 60),
            )
            self.seen.append(other)
        if rng.random() < 0.5:
            self.step(
                f"I need the whole of {path} to understand how `{d.cls}` is used.",
                f"cat -n {path}",
                repo.numbered(path, 1, repo.length[path]),
            )
        self.step(
            f"`{d.attr}` may be unset when `{d.func}` runs; check other uses.",
            f"grep -rn '{d.attr}' src/ tests/ | head -40",
            "\n".join(
                f"{x.path}:{x.line + 2}:        {d.attr} = self._{x.func}(value)"
                for x in rng.sample([x for p in repo.paths for x in repo.defs[p]], 12)
            ),
        )
        if self.seen and rng.random() < 0.7:
            back = rng.choice(self.seen[: max(len(self.seen) - 3, 1)])
            self.step(
                f"Going back to {back.path}:{back.line} (`{back.func}`), seen earlier.",
                f"nl -ba {back.path} | sed -n '{back.line},{back.line + 25}p'",
                repo.numbered(back.path, back.line, back.line + 25),
            )
        fix = d.line + rng.randint(2, 10)
        self.step(
            f"Fix: in {path} line {fix}, fall back to `self.{d.attr}` when it is missing.",
            f"sed -i '{fix}s/{d.attr}/getattr(self, \"{d.attr}\", None)/' {path}",
            "",
        )
        self.step(
            f"Re-run {test}.", f"python -m pytest -q {test}", f"{passed // 7} passed in {rng.uniform(0.5, 5):.2f}s"
        )

    def finish(self) -> None:
        diff = "\n".join(
            f"--- a/{d.path}\n+++ b/{d.path}\n@@ -{d.line},7 +{d.line},7 @@\n-        {d.attr} = self._{d.func}(value)\n"
            f'+        {d.attr} = getattr(self, "{d.attr}", None)'
            for d in self.seen[::3]
        )
        self.step("All fixed; review the diff.", "git diff", diff)
        self.builder.step("The failing tests pass now; the changes are in the diff above.")


def synthetic_traces(count: int = 8, *, seed: int = 0) -> list[Trace]:
    """`count` synthetic trajectories of 40-140 steps (about 100-500 k characters each)."""
    traces = []
    for i in range(count):
        rng = random.Random(f"workingset-synthetic:{seed}:{i}")
        repo = _Repo(rng)
        target = rng.choice(repo.paths)
        d = rng.choice(repo.defs[target])
        task = (
            f"<issue>{repo.name}: several tests fail after the refactor of `{d.cls}`. Calling "
            f"`{d.cls}.{d.func}()` with a partial config raises an exception, and other "
            "modules show similar failures. Fix the library so the test suite passes.</issue>"
        )
        agent = _Agent(rng, repo, task, f"s{seed}x{i}")
        agent.explore()
        bugs = rng.randint(5, 14)
        for n in range(1, bugs + 1):
            agent.bug(n)
        agent.finish()
        traces.append(
            Trace(
                source=SOURCE,
                task_id=f"synthetic-{seed}-{i:03d}",
                model="synthetic",
                final_status="Submitted",
                system=SYSTEM,
                messages=agent.builder.messages,
                path=f"<synthetic seed={seed} #{i}>",
            )
        )
    return traces
