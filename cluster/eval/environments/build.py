"""Building one environment: a virtualenv made on the host, filled in the sandbox.

    <entry>/venv   python -m venv --without-pip, on the host (the stdlib's venv module
                   and the base interpreter only: nothing of the repository runs here)
    <entry>/src    a clone of the trusted base at the recipe's commit (host-side git)
    sandbox, workspace = <entry>, the virtualenv activated:
        python -m ensurepip; pip install -r <requirements> <packages>;
        the recipe's pre_install steps, each allowed to fail;
        the project's dependencies (its install command, default `pip install .`, then
        the project itself uninstalled: the tests import it from the workspace, see
        project_source.py);
        the recipe's commands, in src/
    <entry>/src removed

Without the network, pip gets PIP_NO_INDEX (it fails at once, naming the requirement it
could not find, instead of retrying a registry it cannot reach). With it, the build's
HTTPS_PROXY is the egress proxy's forwarder (egress.py). Either way the build runs in
the sandbox every command runs in: no network namespace of the host, the limits, an
unprivileged uid, only <entry> writable.
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess
from pathlib import Path

from cluster.eval.base_repo import Base, clone_at
from cluster.eval.environments.project_source import SCRIPT
from cluster.eval.environments.recipe import Recipe
from cluster.eval.grading import CommandResult, SandboxedShell
from tools.files import remove_tree

__all__ = ["build_script", "make_environment"]

_PIP_ENV = "export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off PIP_ROOT_USER_ACTION=ignore"


def _egress_preamble(forwarder: Path, socket: Path) -> list[str]:
    proxy = "http://127.0.0.1:$WS_EGRESS_PORT"
    return [
        f"read -r WS_EGRESS_PORT < <(python -I -S {shlex.quote(str(forwarder))} {shlex.quote(str(socket))})",
        f"export HTTPS_PROXY={proxy} https_proxy={proxy} HTTP_PROXY={proxy} http_proxy={proxy}",
        "unset NO_PROXY no_proxy",
    ]


def build_script(recipe: Recipe, *, egress: tuple[Path, Path] | None) -> str:
    """The shell script run in the sandbox, in <entry>; `egress` is (forwarder, socket)
    when the build has the network."""
    lines = ["set -euo pipefail", _PIP_ENV]
    lines += _egress_preamble(*egress) if egress else ["export PIP_NO_INDEX=1"]
    lines.append("python -m ensurepip --default-pip >/dev/null")
    args = [a for r in recipe.requirements for a in ("-r", f"src/{r}")] + list(recipe.packages)
    if args:
        lines.append(f"python -m pip install {shlex.join(args)}")
    if recipe.pre_install:
        lines.append("cd src")
        for command in recipe.pre_install:  # best effort: the build has no root and only the registries
            lines.append(f"( {command}\n) || echo {shlex.quote(f'[pre_install failed, going on: {command}]')} >&2")
        lines.append("cd ..")
    if recipe.project:
        script = shlex.quote(SCRIPT)
        lines += [
            f"(cd src && {recipe.install or 'python -m pip install .'})",
            f"python -I -c {script} installed src | xargs -r python -m pip uninstall -y",
            f"python -I -c {script} source src",
        ]
    if recipe.commands:
        lines.append("cd src")
        lines += [f"( {command}\n)" for command in recipe.commands]
    return "\n".join(lines) + "\n"


def _make_venv(python: str, venv: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python, "-I", "-m", "venv", "--without-pip", str(venv)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        timeout=120,
    )


async def make_environment(
    recipe: Recipe,
    base: Base,
    entry: Path,
    shell: SandboxedShell,
    *,
    egress: tuple[Path, Path] | None,
    timeout_s: float,
) -> tuple[str, CommandResult]:
    """Build into `entry` (made empty first) with `shell`, whose runner has `entry/venv`
    as its virtualenv (and the egress directory as a toolchain); returns (the script,
    its result). The caller removes `entry` when the result is not ok."""
    if entry.exists():
        await asyncio.to_thread(remove_tree, entry, ignore_errors=True)
    entry.mkdir(parents=True)
    entry.chmod(0o755)
    venv = entry / "venv"
    made = await asyncio.to_thread(_make_venv, recipe.python, venv)
    script = build_script(recipe, egress=egress)
    if made.returncode != 0:
        return script, CommandResult(made.returncode, False, f"{recipe.python} -m venv failed:\n{made.stderr}")
    await clone_at(Base(base.git_dir, recipe.commit), entry / "src", detach=True, timeout_s=timeout_s)
    result = await shell.run(script, entry, timeout_s)
    await asyncio.to_thread(remove_tree, entry / "src", ignore_errors=True)
    return script, result
