"""The pytest configuration a grade runs with: the base's, never the patch's.

pytest reads its configuration from the first of pytest.toml, .pytest.toml, pytest.ini,
.pytest.ini, pyproject.toml, tox.ini and setup.cfg that holds a pytest section, in the
directory of each argument and its parents — so a patch could add a `pytest.toml` or
`tests/pytest.ini` with `addopts = --collect-only` and pass everything. The grader
instead gives pytest `-c FILE`, which turns that search off, where FILE holds what the
trusted inputs say: the base commit's configuration file at the repository's top (as
the hidden tests have it, if the test patch changes it), found by pytest's own order,
or the one the task's command names with `-c`.

FILE is written at the top of the grading copy, so paths in it mean what they meant
in the original (pytest resolves some of them against the file's directory), under a
name of the grader's whose suffix tells pytest how to read it; a pytest.toml keeps its
own name (pytest reads its `[pytest]` table only under that name). With no pytest
configuration in the base, FILE is an empty `[pytest]` section.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = ["CONFIG_NAMES", "PytestConfig", "base_config"]

CONFIG_NAMES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
_RESERVED = ".workingset-grader"


@dataclass(frozen=True)
class PytestConfig:
    path: str  # where it is written in the grading copy, relative to its top
    data: bytes
    source: str  # what it came from, for the row: "pyproject.toml of the base", "none"


def _section(data: bytes, header: str) -> bool:
    return re.search(rb"(?m)^\[" + re.escape(header.encode()) + rb"\][ \t]*$", data) is not None


def _toml_tool_pytest(data: bytes) -> bool:
    try:
        return "pytest" in tomllib.loads(data.decode("utf-8", "replace")).get("tool", {})
    except tomllib.TOMLDecodeError:
        return False


def holds_pytest_config(name: str, data: bytes) -> bool:
    """Whether pytest would take its configuration from this file."""
    suffix = PurePosixPath(name).suffix
    if name in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"):
        return True
    if suffix == ".ini":
        return _section(data, "pytest")
    if suffix == ".cfg":
        return _section(data, "tool:pytest")
    if suffix == ".toml":
        return _toml_tool_pytest(data)
    return False


def _written(name: str, data: bytes, source: str) -> PytestConfig:
    base = PurePosixPath(name).name
    if base in ("pytest.toml", ".pytest.toml"):
        return PytestConfig(base, data, source)
    suffix = PurePosixPath(name).suffix if PurePosixPath(name).suffix in (".ini", ".cfg", ".toml") else ".ini"
    return PytestConfig(f"{_RESERVED}{suffix}", data, source)


def base_config(read: Callable[[str], bytes | None], *, named: str | None = None, use: bool = True) -> PytestConfig:
    """The configuration to grade with. `read(path)`: a file of the base (with the test
    patch), None if absent; `named`: the file the command names with -c; `use=False`:
    the task asked for no repository configuration at all."""
    if use and named is not None:
        data = read(named.removeprefix("./"))
        if data is not None:
            return _written(named, data, f"{named} of the base (named by the test command)")
    elif use:
        for name in CONFIG_NAMES:
            data = read(name)
            if data is not None and holds_pytest_config(name, data):
                return _written(name, data, f"{name} of the base")
    return PytestConfig(f"{_RESERVED}.ini", b"[pytest]\n", "none (an empty configuration)")
