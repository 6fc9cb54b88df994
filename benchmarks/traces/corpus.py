"""Where the shared corpus of real trajectories is: `shared/traces` beside the checkout.

The main checkout sits at `<root>/main` with the corpus at `<root>/shared/traces`, while a
git worktree may sit one level deeper (`<root>/wt/<name>`), so the corpus is looked for in
every ancestor of the repository rather than at one fixed depth. `WORKINGSET_TRACES`
overrides the search.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CORPUS_ENV", "corpus_dir", "shared_dir"]

CORPUS_ENV = "WORKINGSET_TRACES"
_REPO = Path(__file__).resolve().parents[2]


def shared_dir(name: str) -> Path:
    """`<ancestor>/shared/<name>` for the nearest ancestor of the repository that has one;
    the sibling of the repository when none has (so the error names the usual place)."""
    for ancestor in _REPO.parents:
        candidate = ancestor / "shared" / name
        if candidate.is_dir():
            return candidate
    return _REPO.parent / "shared" / name


def corpus_dir() -> Path:
    """The trace corpus: $WORKINGSET_TRACES, else the nearest `shared/traces`."""
    override = os.environ.get(CORPUS_ENV)
    return Path(override) if override else shared_dir("traces")
