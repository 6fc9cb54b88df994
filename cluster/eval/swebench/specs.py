"""The `swebench` package's specification of a row's repository and version, as a task.

The SWE-bench harness keeps, per repository and version (`MAP_REPO_VERSION_TO_SPECS`),
how to build the environment and run the tests; this maps it onto a task, offline and
without Docker or conda:

    python         environment.python_version: an interpreter of that version found on
                   this host (pyenv, uv, the system's); none is an error row naming it
    packages       "requirements.txt": the repository's requirement files at the
                   environment commit (`MAP_REPO_TO_REQS_PATHS`, else every top-level
                   requirements*.txt); a list of names: pip packages; "environment.yml"
                   (a conda environment): refused, naming it
    pip_packages   more pip packages
    pre_install    environment.pre_install: run in the build, each allowed to fail (most
                   need root: apt-get, locale-gen)
    install        environment.install, in the repository at the environment commit
    eval_commands  `export NAME=value` lines become assignments before the test command;
                   the others are not run, and the task's metadata says so
    test_cmd       run on the test directives SWE-bench computes from the test patch (the
                   test files, or Django's test modules) — not on the test ids, which the
                   dataset sometimes cuts at a space; a pytest command is graded per test by
                   the grader's own reporter, any other through swebench's log parser for
                   the repository (`MAP_REPO_TO_PARSER`)

Rows of a repository or version the package does not know are graded as before: pytest
on the test ids, in the harness's Python unless the row brings an environment.
"""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from cluster.eval.tasks import RowError
from cluster.eval.verdicts import PytestCommand
from tools.host_git import git_command, git_environment

__all__ = ["SweSpec", "spec_for", "swebench_modules"]

_EXPORT = re.compile(r"^export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


@functools.cache
def swebench_modules() -> tuple[ModuleType, ModuleType, ModuleType] | None:
    """(constants, test_spec.python, log_parsers) of the installed `swebench`, or None.
    Imported on first use: the package imports much (1.9 s of CPU)."""
    try:
        from swebench.harness import constants, log_parsers
        from swebench.harness.test_spec import python as test_spec_python
    except ImportError:
        return None
    return constants, test_spec_python, log_parsers


@dataclass(frozen=True)
class SweSpec:
    environment: dict[str, Any]
    test_command: str
    log_parser: str | None  # the repository whose parser reads the output (not pytest)
    notes: list[str] = field(default_factory=list)


def _exists(repo_dir: Path, commit: str, path: str) -> bool:
    done = subprocess.run(
        git_command("-C", str(repo_dir), "cat-file", "-e", f"{commit}:{path}"),
        env=git_environment(),
        capture_output=True,
        timeout=60,
    )
    return done.returncode == 0


def _requirements(repo: str, repo_dir: Path, commit: str, constants: ModuleType) -> list[str] | None:
    candidates = getattr(constants, "MAP_REPO_TO_REQS_PATHS", {}).get(repo)
    if not candidates:
        return None  # every top-level requirements*.txt
    found = [p for p in candidates if _exists(repo_dir, commit, p)][:1]
    if not found:
        raise RowError(
            "environment_setup_commit",
            f"none of SWE-bench's requirement files for {repo} "
            f"({', '.join(candidates)}) is in the repository at {commit[:12]}",
        )
    return found


def _eval_assignments(commands: list[str]) -> tuple[list[str], list[str]]:
    """(`NAME=value` words from `export` lines, the commands not run)."""
    words, skipped = [], []
    for command in commands:
        match = _EXPORT.match(command.strip())
        if match:
            words.append(f"{match.group(1)}={match.group(2)}")
        else:
            skipped.append(command)
    return words, skipped


def spec_for(row: dict[str, Any], repo_dir: Path | None) -> SweSpec | None:
    """The row's task fields from swebench's spec; None where the package or the spec is
    missing. Raises RowError for a spec this harness cannot follow."""
    modules = swebench_modules()
    version = row.get("version")
    if modules is None or version is None:
        return None
    constants, test_spec_python, _ = modules
    spec = constants.MAP_REPO_VERSION_TO_SPECS.get(row["repo"], {}).get(str(version))
    if spec is None:
        return None
    packages = spec.get("packages", "")
    if packages == "environment.yml":
        raise RowError(
            "version",
            f"SWE-bench's spec for {row['repo']} {version} builds a conda environment "
            "(environment.yml), which Workingset does not make; give the row its own `environment`",
        )
    commit = str(row.get("environment_setup_commit") or row["base_commit"])
    test_cmd = spec["test_cmd"] if isinstance(spec["test_cmd"], str) else " && ".join(spec["test_cmd"])
    directives = test_spec_python.get_test_directives({"repo": row["repo"], "test_patch": row.get("test_patch") or ""})
    assignments, skipped = _eval_assignments(list(spec.get("eval_commands", [])))
    command = " ".join([*assignments, test_cmd, *(shlex.quote(d) for d in directives)])
    pytest = PytestCommand.parse(command) is not None
    environment: dict[str, Any] = {
        "python_version": str(spec["python"]) if spec.get("python") else None,
        # the grader needs pytest in the environment; SWE-bench's images have it whatever the spec says
        "packages": [
            *([] if packages in ("", "requirements.txt") else packages.split()),
            *spec.get("pip_packages", []),
            *(["pytest"] if pytest else []),
        ],
        "pre_install": list(spec.get("pre_install", [])),
        "install": spec.get("install"),
    }
    if packages == "requirements.txt" and repo_dir is not None:
        environment["requirements"] = _requirements(row["repo"], repo_dir, commit, constants)
    notes = [f"SWE-bench spec: {row['repo']} {version}"]
    if skipped:
        notes.append(f"eval_commands not run (they need root): {'; '.join(skipped)}")
    return SweSpec(environment, command, None if pytest else row["repo"], notes)
