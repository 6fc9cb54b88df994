"""The benchmark's verdict (`verdict.py`) read back from a finished run, on all its traces or
on a subset (held-out traces): the same three aims, computed the same way.

    python -m benchmarks.compaction.goal bench-results/compaction/results.json
    python -m benchmarks.compaction.goal RESULTS.json --exclude /work/shared/traces/openhands \\
        --exclude /work/shared/traces/mini-swe-agent-pr816-deepseek

RESULTS.json is a run's top document: one window's (its runs are in it) or a run over
several windows (each window's runs are read from the file `per_window` names).
`--default SPEC` judges a variant of the default run in the same bench as if it were the
default.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .presets import family_members
from .report import verdict_lines
from .verdict import compute_verdict

__all__ = ["main", "runs_of", "subset_verdict"]


def runs_of(doc: dict[str, Any], where: Path) -> list[dict[str, Any]]:
    if "runs" in doc:
        return doc["runs"]
    runs: list[dict[str, Any]] = []
    for path in doc["per_window"].values():
        runs += json.loads((where / path).read_text(encoding="utf-8"))["runs"]
    return runs


def subset_verdict(
    doc: dict[str, Any],
    runs: list[dict[str, Any]],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    default: str | None = None,
) -> dict[str, Any]:
    """The verdict over the traces whose path starts with an `include` (all when none) and
    with no `exclude`."""
    paths = {t["label"]: t["path"] for t in doc["traces"]}

    def chosen(label: str) -> bool:
        path = paths.get(label, "")
        return (not include or any(path.startswith(p) for p in include)) and not any(
            path.startswith(p) for p in exclude
        )

    settings = doc["settings"]
    key = {"instance": "task_id", "framework": "source"}.get(settings.get("cluster", "instance"))
    clusters = {t["label"]: (t[key] if key else t["label"]) for t in doc["traces"]}
    verdict = doc["verdict"]
    return compute_verdict(
        [r for r in runs if chosen(r["trace"])],
        windows=verdict["windows"],
        pricings=verdict["pricings"],
        families=family_members(settings["strategies"]),
        clusters=clusters,
        default=default or verdict["default"],
        resamples=settings["resamples"],
        seed=settings["seed"],
    ).model_dump()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("results", type=Path, help="results.json of a bench compaction run")
    parser.add_argument("--include", action="append", default=[], help="only traces whose path starts so (repeatable)")
    parser.add_argument(
        "--exclude", action="append", default=[], help="leave out traces whose path starts so (repeatable)"
    )
    parser.add_argument("--default", help="the strategy judged as the default (default: the run's)")
    args = parser.parse_args(argv)
    doc = json.loads(args.results.read_text(encoding="utf-8"))
    verdict = subset_verdict(
        doc, runs_of(doc, args.results.parent), include=args.include, exclude=args.exclude, default=args.default
    )
    print("\n".join(verdict_lines({"verdict": verdict, "tuning_grid": doc.get("tuning_grid")})))


if __name__ == "__main__":
    main()
