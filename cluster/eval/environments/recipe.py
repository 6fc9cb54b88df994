"""What goes into a task's environment, resolved against its repository: the recipe and its key.

The key is a hash of everything the environment depends on: the repository, the tree
it is built from (the commit's content, so the same directory committed twice by two
tasks is one environment), the requirement files, whether the project's dependencies
go in, the extra packages and commands, the label (SWE-bench's version) and the base
interpreter (its path, size and modification time: reinstalling it makes a new
environment). Whether the build had the network is not part of it: a build that
succeeded without it made the same environment.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import sys
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from cluster.eval.base_repo import Base
from cluster.eval.errors import GitError, TaskEnded
from cluster.eval.tasks import Environment, Task
from cluster.eval.trusted_git import git

__all__ = ["Recipe", "base_interpreter", "find_python", "installed_versions", "resolve_recipe"]

_BUILD_FILES = ("setup.py", "setup.cfg")


def base_interpreter(configured: Path | None = None) -> Path:
    """The interpreter environments are made from: the configured one, or the base
    interpreter of the Python running the harness (never a virtualenv's own)."""
    if configured is not None:
        return configured.expanduser().resolve()
    return Path(getattr(sys, "_base_executable", None) or sys.executable).resolve()


def _version_places() -> list[Path]:
    """Where installed interpreters are looked for, in order: PATH (pyenv's shims aside:
    they answer only for the version pyenv is set to), pyenv's and uv's versions, and
    the system's directories."""
    places = [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p and "shims" not in Path(p).parts]
    homes = [Path.home()]
    with contextlib.suppress(KeyError):  # the account's own home, whatever HOME says
        homes.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    roots = [Path(os.environ["PYENV_ROOT"])] if os.environ.get("PYENV_ROOT") else []
    for root in dict.fromkeys([*roots, *(home / ".pyenv" for home in homes)]):
        places += sorted((root / "versions").glob("*/bin"), reverse=True)
    for home in dict.fromkeys(homes):
        places += sorted((home / ".local/share/uv/python").glob("cpython-*/bin"), reverse=True)
    return [*places, Path("/usr/local/bin"), Path("/usr/bin")]


def find_python(version: str) -> Path | None:
    """An installed interpreter of this version (`3.9`): the harness's own when it is
    that version, else the first `python3.9` found in `_version_places`."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return base_interpreter()
    for place in _version_places():
        candidate = place / f"python{version}"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.resolve()
    return None


def installed_versions() -> list[str]:
    """The Python 3 versions `find_python` can find, for an error message."""
    found = {f"{sys.version_info.major}.{sys.version_info.minor}"}
    for place in _version_places():
        found.update(
            p.name.removeprefix("python") for p in place.glob("python3.*") if p.name.removeprefix("python3.").isdigit()
        )
    return sorted(found, key=lambda v: int(v.split(".")[1]))


def _interpreter(spec: Environment) -> Path:
    if spec.python is not None or spec.python_version is None:
        return base_interpreter(spec.python)
    found = find_python(spec.python_version)
    if found is None:
        raise TaskEnded(
            f"this task needs Python {spec.python_version} (environment.python_version), which this host "
            f"does not have (it has {', '.join(installed_versions())}): install python"
            f"{spec.python_version} (pyenv install {spec.python_version}, or the distribution's package), "
            "or name an interpreter with environment.python"
        )
    return found


@dataclass(frozen=True)
class Recipe:
    repo: str
    commit: str  # recorded, not keyed: the tree is
    tree: str
    requirements: tuple[str, ...]
    project: bool
    packages: tuple[str, ...]
    commands: tuple[str, ...]
    install: str | None
    pre_install: tuple[str, ...]
    label: str | None
    python: str
    python_stamp: str  # size and mtime of the interpreter

    @property
    def key(self) -> str:
        fields = {k: v for k, v in asdict(self).items() if k != "commit"}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:20]

    def describe(self) -> dict:
        return {**asdict(self), "key": self.key}


async def _commit_at(base: Base, ref: str | None, repo: str) -> str:
    if ref is None:
        return base.commit
    try:
        return (
            (await git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", git_dir=base.git_dir)).decode().strip()
        )
    except GitError:
        raise TaskEnded(f"environment.ref {ref!r} is not a commit of {repo}") from None


async def _wants_project(base: Base, commit: str, names: set[str]) -> bool:
    if names & set(_BUILD_FILES):
        return True
    if "pyproject.toml" not in names:
        return False
    # A pyproject.toml that only configures tools (ruff, pytest) describes no project.
    try:
        text = (await git("show", f"{commit}:pyproject.toml", git_dir=base.git_dir)).decode("utf-8")
        data = tomllib.loads(text)
    except (GitError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True  # let pip say what is wrong with it, in the build log
    return "project" in data or "build-system" in data


async def resolve_recipe(task: Task, base: Base) -> Recipe:
    """The recipe of `task.environment` at its commit; TaskEnded names what is missing."""
    spec = task.environment or Environment()
    commit = await _commit_at(base, spec.ref, task.repo)
    tree = (await git("rev-parse", f"{commit}^{{tree}}", git_dir=base.git_dir)).decode().strip()
    listing = await git("ls-tree", "--name-only", "-z", commit, git_dir=base.git_dir)
    names = {n.decode("utf-8", "replace") for n in listing.split(b"\0") if n}
    if spec.requirements is None:
        requirements = tuple(sorted(n for n in names if n.startswith("requirements") and n.endswith(".txt")))
    else:
        requirements = tuple(spec.requirements)
        missing = [
            r
            for r in requirements
            if not (await git("ls-tree", "--name-only", commit, "--", r, git_dir=base.git_dir)).strip()
        ]
        if missing:
            raise TaskEnded(f"environment.requirements: {', '.join(missing)} not in {task.repo} at {commit[:12]}")
    project = (
        spec.project
        if spec.project is not None
        else (spec.install is not None or await _wants_project(base, commit, names))
    )
    python = _interpreter(spec)
    try:
        st = python.stat()
    except OSError as exc:
        raise TaskEnded(
            f"environment.python {python} cannot be used ({exc.strerror}); give an installed interpreter"
        ) from None
    return Recipe(
        repo=task.repo,
        commit=commit,
        tree=tree,
        requirements=requirements,
        project=project,
        packages=tuple(spec.packages),
        commands=tuple(spec.commands),
        install=spec.install,
        pre_install=tuple(spec.pre_install),
        label=spec.label,
        python=str(python),
        python_stamp=f"{st.st_size}:{st.st_mtime_ns}",
    )
