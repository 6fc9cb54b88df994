"""Someone else's predictions, graded without an agent (`workingset eval TASKS --predictions FILE`).

FILE is in SWE-bench's own format — JSON Lines, or a JSON list, of objects with
`instance_id`, `model_patch` and `model_name_or_path` (the format `predictions.jsonl`
is written in, so a batch's own predictions can be graded again). For each task with a
prediction, the patch is applied to a fresh workspace by host-side git against the
trusted base (as the grading copy is made), taken back as any agent's patch would be,
and graded; a prediction that does not apply fails its task with the reason. Tasks
without a prediction are not run; predictions for ids the task file does not have are
named and ignored.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from agents.errors import ConfigError

__all__ = ["Prediction", "load_predictions"]


@dataclass(frozen=True)
class Prediction:
    instance_id: str
    model: str
    patch: str


def _objects(path: Path, text: str) -> list[tuple[str, object]]:
    """(where, object) for each prediction in the file."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); predictions are SWE-bench's "
                "format: a JSON list or JSON Lines of {instance_id, model_patch, model_name_or_path}"
            ) from None
        return [(f"{path} item {n}", item) for n, item in enumerate(items, 1)]
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                found.append((f"{path} line {n}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path} line {n}: not valid JSON ({exc.msg})") from None
    return found


def load_predictions(path: Path) -> tuple[dict[str, Prediction], str]:
    """The predictions by instance id, and the file's digest (part of the run's record).
    Raises ConfigError naming the line and the field for a malformed one."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"--predictions {path}: cannot be read ({exc.strerror})") from None
    predictions: dict[str, Prediction] = {}
    for where, item in _objects(path, data.decode("utf-8", "replace")):
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: a prediction is an object with instance_id, model_patch, model_name_or_path")
        values = {k: item.get(k) for k in ("instance_id", "model_patch", "model_name_or_path")}
        missing = [k for k, v in values.items() if not isinstance(v, str) or (k == "instance_id" and not v)]
        if missing:
            raise ConfigError(f"{where}: {', '.join(missing)} missing or not a string")
        instance_id = str(values["instance_id"])
        if instance_id in predictions:
            raise ConfigError(f"{where}: a second prediction for {instance_id!r}; keep one per instance")
        predictions[instance_id] = Prediction(
            instance_id, str(values["model_name_or_path"]), str(values["model_patch"])
        )
    return predictions, hashlib.sha256(data).hexdigest()
