"""Which files of the agent's patch are test infrastructure (`patch_touches_tests`).

What grading cannot stop. Grading a fresh copy with only the patch applied, and the
hidden tests placed last, defeats whatever the agent left outside its patch (a
rewritten `.git`, ignored files, build junk, shims in a venv, a process still writing)
and any edit of the hidden test files themselves. But the patch's own code runs in the
grader's process, and the verdict is the test command's exit code, so a patch may still:
- add or change a `conftest.py`, pytest configuration or plugin that changes outcomes;
- add a `sitecustomize.py`, `usercustomize.py` or `.pth` file that runs at interpreter
  start (where the test command puts it on the path), or code that calls `os._exit(0)`;
- change test helpers, fixtures or data the hidden tests import, or packaging files
  that decide what gets installed;
- special-case the code paths only the tests exercise (detecting the test run).
None of that can be told from an honest fix by a rule, so the grader names the files in
the row, the report counts the passed rows among them, and a task
(`grading.reject_test_changes`) or the batch (`--reject-test-changes`) can fail such
patches instead of grading them. Code-path special cases are left to review.

Counted as test infrastructure (what can change what runs, or how it is judged):
- `conftest.py`, `sitecustomize.py`, `usercustomize.py`, `*.pth`, `*.egg-link`, and
  anything inside a `*.dist-info` or `*.egg-info` directory (entry points: plugins);
- every file name pytest reads configuration from (pytest.toml, .pytest.toml,
  pytest.ini, .pytest.ini) and `setup.cfg`, `tox.ini` and `pyproject.toml` when their
  pytest section changed (`[tool:pytest]`, `[pytest]`, `[tool.pytest.*]`);
- a top-level module (at the top of the repository or of `src/`) that the base does not
  have, named like a standard-library module or one installed where the tests run
  (`argparse.py`, `pytest/`): it would stand in for the real one;
- test modules (`test_*.py`, `*_test.py`) and anything under a `tests/`, `test/` or
  `testing/` directory;
- every file the task's test patch also touches (its hidden version replaces the
  agent's, but the agent's change is still worth knowing about).

The per-test grader (verdicts/) makes the configuration files, a shadowing module and a
registered plugin inert for the grade itself; they are still named here, because the
agent's own runs of the tests did see them.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import tomllib
from pathlib import Path, PurePosixPath

__all__ = ["CONFIG_FILES", "MODULE_ROOTS", "importable_names", "top_level_module", "touched_test_files"]

CONFIG_FILES = frozenset({"setup.cfg", "tox.ini", "pyproject.toml"})
_ALWAYS = frozenset(
    {"conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "sitecustomize.py", "usercustomize.py"}
)
_METADATA_DIRS = (".dist-info", ".egg-info")
_MODULE_SUFFIX = re.compile(r"\.(?:py|pyc|pyw|pyd|so|(?:cpython|abi3|pypy)[^/]*\.so)$")
MODULE_ROOTS = ("", "src")  # where a top-level module stands in a repository
_TEST_DIRS = frozenset({"tests", "test", "testing"})
_INI_SECTIONS = {"setup.cfg": ("tool:pytest",), "tox.ini": ("pytest", "tool:pytest")}


def _is_test_file(path: str) -> bool:
    pure = PurePosixPath(path)
    name = pure.name
    if name in _ALWAYS or name.endswith((".pth", ".egg-link")):
        return True
    if any(part.endswith(_METADATA_DIRS) for part in pure.parts[:-1]):
        return True
    if name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")):
        return True
    return any(part in _TEST_DIRS for part in pure.parts[:-1])


def _pytest_section(name: str, data: bytes | None) -> str:
    """The file's pytest configuration, normalised; a file that does not parse counts as
    its whole text (so any change to it counts)."""
    text = (data or b"").decode("utf-8", "replace")  # a file added or deleted: empty on that side
    if name == "pyproject.toml":
        try:
            return json.dumps(tomllib.loads(text).get("tool", {}).get("pytest"), sort_keys=True)
        except tomllib.TOMLDecodeError:
            return text
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return text
    sections = {s: dict(parser.items(s)) for s in _INI_SECTIONS[name] if parser.has_section(s)}
    return json.dumps(sections, sort_keys=True)


def top_level_module(path: str) -> tuple[str, str] | None:
    """(root, module name) when `path` is a top-level module or inside one: `argparse.py`,
    `src/pytest/__init__.py`; None otherwise."""
    parts = PurePosixPath(path).parts
    for root in reversed(MODULE_ROOTS):  # the deepest first: src/json.py is json, not src
        depth = len(PurePosixPath(root).parts) if root else 0
        if len(parts) <= depth or tuple(parts[:depth]) != PurePosixPath(root).parts:
            continue
        rest = parts[depth:]
        if len(rest) > 1:
            return root, rest[0]
        stem = _MODULE_SUFFIX.sub("", rest[0])
        if stem != rest[0]:
            return root, stem
    return None


def importable_names(site_dirs: list[Path]) -> frozenset[str]:
    """Top-level module names installed in these site-packages directories."""
    names: set[str] = set()
    for site in site_dirs:
        try:
            entries = os.listdir(site)
        except OSError:
            continue
        for entry in entries:
            stem = _MODULE_SUFFIX.sub("", entry)
            if stem != entry or ("." not in entry and (site / entry).is_dir()):
                names.add(stem.split(".", 1)[0])
    return frozenset(names - {"__pycache__"})


def _shadows(path: str, base_tops: dict[str, set[str]], shadowed: frozenset[str]) -> bool:
    found = top_level_module(path)
    if found is None:
        return False
    root, name = found
    kept = {_MODULE_SUFFIX.sub("", entry) for entry in base_tops.get(root, set())}
    return name in shadowed and name not in kept


def touched_test_files(
    files: list[str],
    contents: dict[str, tuple[bytes | None, bytes | None]],
    hidden: set[str] | frozenset[str] = frozenset(),
    *,
    base_tops: dict[str, set[str]] | None = None,
    shadowed: frozenset[str] = frozenset(),
) -> list[str]:
    """The changed files (of `files`) that are test infrastructure, sorted.
    `contents`: (before, after) of the changed CONFIG_FILES; `hidden`: the test patch's paths;
    `base_tops`: the base's entries at each of MODULE_ROOTS; `shadowed`: module names a new
    top-level module must not take (the standard library's and those installed)."""
    touched = []
    for path in files:
        name = PurePosixPath(path).name
        if path in hidden or _is_test_file(path) or _shadows(path, base_tops or {}, shadowed):
            touched.append(path)
        elif name in CONFIG_FILES:
            before, after = contents.get(path, (None, b""))
            if _pytest_section(name, before) != _pytest_section(name, after):
                touched.append(path)
    return sorted(touched)
