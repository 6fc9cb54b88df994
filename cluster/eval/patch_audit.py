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

Counted as test infrastructure:
- `conftest.py`, `pytest.ini`, `sitecustomize.py`, `usercustomize.py`, `*.pth`;
- test modules (`test_*.py`, `*_test.py`) and anything under a `tests/`, `test/` or
  `testing/` directory;
- `setup.cfg`, `tox.ini` and `pyproject.toml` when their pytest section changed
  (`[tool:pytest]`, `[pytest]`, `[tool.pytest.*]`);
- every file the task's test patch also touches (its hidden version replaces the
  agent's, but the agent's change is still worth knowing about).
"""

from __future__ import annotations

import configparser
import json
import tomllib
from pathlib import PurePosixPath

__all__ = ["CONFIG_FILES", "touched_test_files"]

CONFIG_FILES = frozenset({"setup.cfg", "tox.ini", "pyproject.toml"})
_ALWAYS = frozenset({"conftest.py", "pytest.ini", "sitecustomize.py", "usercustomize.py"})
_TEST_DIRS = frozenset({"tests", "test", "testing"})
_INI_SECTIONS = {"setup.cfg": ("tool:pytest",), "tox.ini": ("pytest", "tool:pytest")}


def _is_test_file(path: str) -> bool:
    pure = PurePosixPath(path)
    name = pure.name
    if name in _ALWAYS or name.endswith(".pth"):
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


def touched_test_files(files: list[str], contents: dict[str, tuple[bytes | None, bytes | None]],
                        hidden: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The changed files (of `files`) that are test infrastructure, sorted.
    `contents`: (before, after) of the changed CONFIG_FILES; `hidden`: the test patch's paths."""
    touched = []
    for path in files:
        name = PurePosixPath(path).name
        if path in hidden or _is_test_file(path):
            touched.append(path)
        elif name in CONFIG_FILES:
            before, after = contents.get(path, (None, b""))
            if _pytest_section(name, before) != _pytest_section(name, after):
                touched.append(path)
    return sorted(touched)
