"""A Python virtual environment commands run in, instead of the harness's Python.

The sandbox shows the environment read-only with its `bin` first on PATH and
VIRTUAL_ENV set, and its base interpreter's prefix read-only without that prefix's
site-packages (an empty directory stands there): the environment's `python` works,
and nothing installed into the base interpreter — the harness's own packages, when
the base is the harness's interpreter — can be imported or run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tools.sandbox.errors import SandboxUnavailable

__all__ = ["VirtualEnv"]


def _config(root: Path) -> dict[str, str]:
    values = {}
    for line in (root / "pyvenv.cfg").read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


@dataclass(frozen=True)
class VirtualEnv:
    root: Path  # the environment (holds pyvenv.cfg, bin/, lib/)
    base: Path  # the prefix of its base interpreter

    @classmethod
    def of(cls, root: Path) -> VirtualEnv:
        """Reads `pyvenv.cfg`; raises SandboxUnavailable when `root` is not a virtualenv."""
        root = root.resolve()
        try:
            home = _config(root).get("home")
        except OSError as exc:
            raise SandboxUnavailable(
                f"sandbox.virtualenv {root} is not a virtual environment (no readable "
                f"pyvenv.cfg: {exc.strerror}); create it with python -m venv"
            ) from None
        if not home:
            raise SandboxUnavailable(
                f"{root}/pyvenv.cfg names no base interpreter (home = ...); recreate the environment"
            )
        bindir = Path(home).resolve()
        return cls(root, bindir.parent if bindir.name == "bin" else bindir)

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def site_packages(self) -> tuple[Path, ...]:
        """The environment's own site-packages directories."""
        return _site_dirs(self.root)

    def hidden(self) -> tuple[Path, ...]:
        """The base prefix's site-packages directories."""
        return _site_dirs(self.base)


def _site_dirs(prefix: Path) -> tuple[Path, ...]:
    found = []
    for lib in ("lib", "lib64"):
        found += sorted((prefix / lib).glob("python3*/site-packages"))
    return tuple(dict.fromkeys(p.resolve() for p in found if p.is_dir()))
