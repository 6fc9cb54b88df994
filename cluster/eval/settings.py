"""The batch's settings, and each task's.

Headless permissions: nobody answers a question during a batch, so the sessions run
with `permissions.headless = "deny-asks"`, `permissions.mode = "accept-edits"` (file
edits in the workspace are allowed) and the allow rules `Bash` and `Agent` (any
command, inside the bubblewrap sandbox: the workspace the only writable place, no
network; subagents under the same rules). Anything else that would ask is denied with
a result the model sees. `--allow` adds rules; `--deny` rules win over all of them.

Settings otherwise come from flags, WORKINGSET_* variables, ./.workingset/config.toml
and ~/.workingset/config.toml; `home` is always `<out>/home`, so the sessions'
snapshots and artifacts stay with the results. ./.workingset/config.toml applies in full
only when this directory is trusted (`workingset trust`, or `--trust-workspace`).
Task repositories are never trusted, whatever the flags or the trust list say: their
.workingset/config.toml is never read and their .workingset/plugins never scanned
(`trusted_workspace` is cleared in every task's settings).

A task's `model`, `strategy` and `budgets` (turns -> agent.max_turns, tokens ->
subagents.tree_max_tokens, cost_usd -> subagents.tree_max_cost_usd) override the
batch's; `budgets.wall_s` is enforced by the runner around the agent's turn. A task with
its own environment runs every command — the agent's Bash, the setup and the grader —
with `sandbox.virtualenv` set to it (`with_environment`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import ValidationError

from agents.errors import ConfigError
from agents.settings import WorkingsetSettings, load_workspace_settings
from cluster.eval.layout import OutDir
from cluster.eval.tasks import Task
from cluster.terminal import say, setting_overrides

__all__ = ["EVAL_ALLOW", "eval_settings", "preflight", "task_settings", "with_environment"]

EVAL_ALLOW = ["Bash", "Agent"]


def eval_settings(args: argparse.Namespace) -> WorkingsetSettings:
    """The batch's settings: flags over environment and config files, headless."""
    cwd = Path.cwd()
    flags = setting_overrides(args, "eval", cwd)
    flags["home"] = str(OutDir(Path(args.out)).home)
    permissions = flags.setdefault("permissions", {})
    permissions.update(mode="accept-edits", headless="deny-asks", allow=[*EVAL_ALLOW, *permissions.get("allow", [])])
    loaded = load_workspace_settings(cwd, flags, trusted=True if getattr(args, "trust_workspace", False) else None)
    if loaded.notice:
        say(f"workingset: notice: {loaded.notice}", file=sys.stderr)
    return loaded.settings


def preflight(settings: WorkingsetSettings, tasks: list[Task]) -> None:
    """Fail before the batch, not in every task, when the batch's own model (if a task
    uses it), summarizer or strategy cannot load. A task's own override that cannot
    load is that task's error row."""
    from agents.compaction import load_summarizer, make_strategy
    from agents.providers import load_model_client

    if any(t.model is None for t in tasks):
        load_model_client(settings.model, settings=settings.providers)
    load_summarizer(settings.summarizer)
    make_strategy(settings.compact.strategy)


def task_settings(base: WorkingsetSettings, task: Task) -> WorkingsetSettings:
    """The batch's settings with the task's model, strategy and budgets; the task's
    repository is never a trusted workspace."""
    data = base.model_dump(mode="json")
    data["trusted_workspace"] = None
    if task.model:
        data["model"] = task.model
    if task.strategy:
        data["compact"]["strategy"] = task.strategy
    budgets = task.budgets
    if budgets.turns is not None:
        data["agent"]["max_turns"] = budgets.turns
    if budgets.tokens is not None:
        data["subagents"]["tree_max_tokens"] = budgets.tokens
    if budgets.cost_usd is not None:
        data["subagents"]["tree_max_cost_usd"] = budgets.cost_usd
    try:
        return WorkingsetSettings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"settings for task {task.id!r}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from exc


def with_environment(
    settings: WorkingsetSettings, venv: Path, *, extra_toolchains: tuple[Path, ...] = ()
) -> WorkingsetSettings:
    """`settings` whose commands run in `venv` (tools/sandbox/venv.py): its python and
    console scripts, not the harness's; `extra_toolchains` are visible read-only too."""
    sandbox = settings.sandbox.model_copy(update={"virtualenv": venv})
    if extra_toolchains:
        sandbox = sandbox.seeing(*extra_toolchains)
    return settings.model_copy(update={"sandbox": sandbox})
