"""The live experiment's plan: `<out>/plan.json`, written before its first task runs, so
what was compared, on what, and how it is judged is fixed before any outcome exists.

The plan holds the arms and the default arm, every task with the digest of its row and
the task file's SHA-256, the model, the repeats and the seed of each, the test with its
alpha and non-inferiority margin, how an error counts, the command line and the commit.

A rerun with the same --out reads the stored plan: if its registered fields (everything
but the command line and the time) equal the new one's, the run continues (each eval
batch skips the tasks it finished); if not, it refuses with one line that names what
differs and the fix. The plan is written atomically (a temporary file renamed), so a
killed run never leaves half a plan.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.errors import ConfigError

__all__ = ["PLAN_FILE", "LivePlan", "PlannedTask", "register_plan", "seeds_for"]

PLAN_FILE = "plan.json"
_NOT_REGISTERED = {"command", "registered_at"}  # may differ between a run and its continuation


class PlannedTask(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    digest: str = Field(description="Digest of the task's row in the task file (cluster.eval.provenance.task_digest).")


class LivePlan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    about: str = (
        "pre-registration of a live compaction experiment (benchmarks/compaction/live_plan.py): "
        "written before the first task ran; a rerun with other registered fields refuses"
    )
    arms: list[str]
    default_arm: str
    tasks_file: str
    tasks_file_sha256: str
    tasks: list[PlannedTask]
    model: str | None = Field(description="--model, `{seed}` replaced per repeat; None: each task's own model.")
    repeats: int
    seeds: list[int] = Field(description="The seed of each repeat, the same under every arm and task.")
    outcome: str = "solved = the run's status is `passed`; any other status of a run that ended counts as not solved"
    test: str = (
        "McNemar per pair (the default arm vs each other arm): exact binomial below 25 discordant pairs, "
        "else chi-square with continuity correction; Holm across the pairs; difference in solve rate "
        "with a bootstrap interval clustered by task; Durkalski's clustered McNemar reported beside it"
    )
    alpha: float
    margin: float = Field(description="Non-inferiority margin on the solve rate difference (default − other).")
    resamples: int
    commit: str | None
    dirty: bool | None
    command: list[str]
    registered_at: str


def seeds_for(seed: int, repeats: int) -> list[int]:
    """Repeat r runs with seed `seed + r`: one seed per repeat, readable in the plan."""
    return [seed + r for r in range(repeats)]


def _differences(stored: dict, new: dict) -> list[str]:
    return sorted(k for k in new.keys() | stored.keys() if k not in _NOT_REGISTERED and stored.get(k) != new.get(k))


def register_plan(out: Path, plan: LivePlan) -> LivePlan:
    """Write `plan` to `<out>/plan.json`, or check it against the plan stored there.
    Returns the plan in force (the stored one on a continuation)."""
    path = out / PLAN_FILE
    new = plan.model_dump(mode="json")
    if path.exists():
        try:
            stored = LivePlan.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValidationError, ValueError) as exc:
            raise ConfigError(
                f"{path} is not a plan this benchmark wrote ({type(exc).__name__}); "
                "use another --out, or remove it to register a new plan"
            ) from exc
        differ = _differences(stored.model_dump(mode="json"), new)
        if differ:
            raise ConfigError(
                f"{path} registers another experiment ({', '.join(differ)} differ); use another --out "
                f"for this one, or remove {path} and the results beside it to start over"
            )
        return stored
    out.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{PLAN_FILE}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(new, indent=1) + "\n", encoding="utf-8")
    partial.replace(path)
    return plan
