"""What a result needs to be reproduced: the project commit, package versions, the
command line, and a SHA-256 of every input trace file."""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "project_commit", "provenance", "trace_hashes"]

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("workingset", "pydantic", "numpy", "scipy", "matplotlib", "ray", "mistral-common", "anthropic", "rich")


def project_commit() -> dict[str, Any]:
    """HEAD of the checkout the benchmark ran from, and whether tracked files differ from it."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None, "repo": str(REPO)}


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def trace_hashes(paths: Iterable[str]) -> dict[str, str]:
    """sha256 of each trace file; a Workingset trace dir hashes its files in name order."""
    out = {}
    for raw in sorted(set(paths)):
        path = Path(raw)
        if path.is_dir():
            digest = hashlib.sha256()
            for f in sorted(p for p in path.rglob("*") if p.is_file()):
                digest.update(f.relative_to(path).as_posix().encode() + b"\0" + _hash_file(f).encode())
            out[raw] = digest.hexdigest()
        elif path.is_file():
            out[raw] = _hash_file(path)
    return out


def provenance(trace_paths: Iterable[str], argv: list[str] | None = None) -> dict[str, Any]:
    return {
        "project": project_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": _versions(),
        "argv": list(sys.argv if argv is None else argv),
        "trace_sha256": trace_hashes(trace_paths),
    }
