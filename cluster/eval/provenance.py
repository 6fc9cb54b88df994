"""What produced an out directory's rows: the settings that determine results, kept
readable in `<out>/run.json` and as a fingerprint in every row, and each task's digest.

The settings that determine a result (and so are recorded and compared):

    model, judge, models              the batch's model spec, the goal judge, prices and windows
    agent.*, subagents.*              turn and output limits, the per-task budgets (--max-turns,
                                      --max-tokens, --max-cost)
    compact.*, summarizer.*           the compaction strategy spec and its knobs, the summarizer
    tools.*, sandbox.*                tool caps, the sandbox's limits and options (--no-sandbox)
    permissions.*                     mode, allow / deny / ask rules, the headless policy
    providers.anthropic.*, .openai.*  thinking, effort, base URL, how limits are sent
    bundle, plugins.*, hooks, mcp_servers   what tools and hooks the agent gets (hooks and
                                      MCP servers as a digest of each: they may hold secrets)
    eval.wall_s, eval.reject_test_changes, eval.swebench_runner   the batch's grading rules
    eval.setup_network, eval.setup_hosts   what a task's environment build may reach (what it installs)
    workingset.version, workingset.commit   the harness itself (commit: of a git checkout)

Left out, because they do not change a task's result: concurrency, actors, grade
concurrency, --json, --strict, --keep-workspaces, --retry-failed, --filter, --slice,
--batch-max-cost, --repos, paths (home, out, trace_dir, --env-cache), where sessions run (runtime,
cluster.*), snapshot history, and the providers' timeouts and retries.

A task's digest is a hash of its own row in the task file (the parsed JSON object, so
spacing and key order do not count): a task edited in the file is not "finished".
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from agents.errors import ConfigError
from agents.settings import WorkingsetSettings

__all__ = ["RunRecord", "SettingsChanged", "record_for", "task_digest"]

_SECTIONS = ("agent", "subagents", "compact", "summarizer", "tools", "sandbox", "permissions", "plugins")
_VALUES = ("model", "judge", "models", "bundle")
_FLAGS = {
    "model": "--model",
    "summarizer.spec": "--summarizer",
    "compact.strategy": "--strategy",
    "agent.max_turns": "--max-turns",
    "subagents.tree_max_tokens": "--max-tokens",
    "subagents.tree_max_cost_usd": "--max-cost",
    "sandbox.enabled": "--no-sandbox",
    "permissions.allow": "--allow",
    "permissions.deny": "--deny",
    "eval.wall_s": "--wall-s",
    "eval.reject_test_changes": "--reject-test-changes",
    "eval.swebench_runner": "--swebench-runner",
    "eval.setup_network": "--setup-network",
    "eval.setup_hosts": "--setup-host",
}


class SettingsChanged(ConfigError):
    """A rerun's settings are not those that produced the out directory's rows."""


def _digest(value: Any, length: int = 16) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:length]


def task_digest(row: Any) -> str:
    """The digest of one task row as it stands in the task file."""
    return _digest(row)


def _flatten(prefix: str, value: Any, into: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}", inner, into)
    else:
        into[prefix] = value


@functools.cache
def workingset_identity() -> dict[str, str | None]:
    """The installed version, and the commit when the package runs from a git checkout."""
    try:
        version: str | None = metadata.version("workingset")
    except metadata.PackageNotFoundError:
        version = None
    root = Path(__file__).resolve().parents[2]
    commit = None
    if (root / ".git").exists():
        try:
            done = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False
            )
            commit = (done.stdout.strip() or None) if done.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            commit = None
    return {"version": version, "commit": commit}


def result_settings(settings: WorkingsetSettings, grading: dict[str, Any]) -> dict[str, Any]:
    """The settings that determine results (module docstring), flat: `section.key` -> value."""
    data = settings.model_dump(mode="json")
    flat: dict[str, Any] = {}
    for key in _VALUES:
        _flatten(key, data[key], flat)
    for section in _SECTIONS:
        _flatten(section, data[section], flat)
    for provider in ("anthropic", "openai"):
        _flatten(f"providers.{provider}", data["providers"][provider], flat)
    flat["hooks"] = [_digest(h, 12) for h in data["hooks"]]
    flat["mcp_servers"] = {s["name"]: _digest(s, 12) for s in data["mcp_servers"]}
    for key, value in grading.items():
        flat[f"eval.{key}"] = value
    for key, value in workingset_identity().items():
        flat[f"workingset.{key}"] = value
    return flat


_MISSING = object()


def _shown(value: Any) -> str:
    if value is _MISSING:
        return "(not recorded)"
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


class RunRecord:
    """The settings that produced an out directory (`run.json`)."""

    def __init__(self, settings: dict[str, Any]):
        self.settings = settings
        self.fingerprint = _digest(settings)

    def to_json(self) -> str:
        return (
            json.dumps(
                {
                    "fingerprint": self.fingerprint,
                    "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "about": "the settings that determine this directory's results (cluster/eval/provenance.py); "
                    "a rerun with other settings refuses: --redo starts over, or use a different --out",
                    "settings": self.settings,
                },
                indent=2,
                sort_keys=False,
            )
            + "\n"
        )

    @classmethod
    def read(cls, path: Path) -> RunRecord | None:
        """The record in `path`, or None when there is none (or it cannot be read)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(dict(data["settings"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def differences(self, new: RunRecord) -> list[str]:
        """`name (--flag): old → new` for each setting that differs."""
        lines = []
        for key in sorted(self.settings.keys() | new.settings.keys()):
            old, now = self.settings.get(key, _MISSING), new.settings.get(key, _MISSING)
            if old != now:
                flag = f" ({_FLAGS[key]})" if key in _FLAGS else ""
                lines.append(f"{key}{flag}: {_shown(old)} → {_shown(now)}")
        return lines


def record_for(
    settings: WorkingsetSettings,
    *,
    wall_s: float | None,
    reject_test_changes: bool,
    swebench_runner: str | None,
    setup_network: bool = False,
    egress_hosts: tuple[str, ...] = (),
    predictions: str | None = None,
) -> RunRecord:
    grading = {
        "wall_s": wall_s,
        "reject_test_changes": reject_test_changes,
        "swebench_runner": swebench_runner,
        "setup_network": setup_network,
        "setup_hosts": sorted(egress_hosts),
    }
    if predictions is not None:  # graded patches instead of agents: the file is the result's source
        grading["predictions_sha256"] = predictions
    return RunRecord(result_settings(settings, grading))
