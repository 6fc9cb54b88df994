"""`workingset eval`: run a task file as a batch of agent sessions and grade them.

    workingset eval TASKS.jsonl --model SPEC --out DIR [--concurrency N] [--local | --address ADDR]
                    [--summarizer SPEC] [--strategy NAME] [--json] [--strict] [--retry-failed]
                    [--keep-workspaces] [--repos DIR] [--max-turns N] [--max-tokens N]
                    [--max-cost USD] [--batch-max-cost USD] [--wall-s S] [--actors N]
                    [--grade-concurrency N] [--filter PATTERN] [--slice START:END] [--redo]
                    [--allow RULE] [--deny RULE] [--no-sandbox] [--trust-workspace]
                    [--swebench-runner CMD] [--predictions FILE] [--reject-test-changes]
                    [--setup-network] [--setup-host HOST] [--env-cache DIR]

Headless permissions and settings: see settings.py. What a rerun into the same --out
compares (and refuses on): provenance.py. The batch cost cap: spend.py.

Exit codes: 0 every task ran; 1 some task lines were invalid, some task ended in
status error, or the batch cost cap stopped the batch (the rest ran), or the embedded
Ray cluster did not start (twice; nothing ran, no summary); 2 a usage error (bad flag,
unreadable task file, invalid lines with --strict, an --out that other settings
produced, a task id another task file of the --out holds with other content, an
--address where no Ray cluster this process can join answers); 130 interrupted by
Ctrl-C, 143 stopped by SIGTERM (`ray job stop`): the results so far are kept and the
same command resumes.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.errors import ConfigError
from cluster.eval.environments import DEFAULT_HOSTS, registry_host
from cluster.eval.selection import Selection, parse_slice
from cluster.eval.swebench import DEFAULT_RUNNER
from cluster.terminal import add_setting_flags, add_trust_flag, claim_stdout, positive_float, positive_int, say

if TYPE_CHECKING:
    from cluster.eval.swebench import Prediction
    from cluster.eval.tasks import Task

__all__ = ["COMMAND", "EvalCommand"]


async def _stoppable(batch):
    """SIGTERM (`ray job stop`, `kill`) stops the batch the way Ctrl-C does: the running
    tasks are cancelled and cleaned up, the summary is written."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None  # called from inside the batch's event loop
    # Once: a stop signal sent again (to the job's process and its group) must not cancel the cleanup.
    loop.add_signal_handler(signal.SIGTERM, lambda: main.cancelling() or main.cancel())
    try:
        return await batch
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def _check_cluster_address(address: str | None) -> None:
    """A wrong --address (or RAY_ADDRESS) is one line, in seconds, before --out is made."""
    from cluster.connection import check_address, given_address

    given = given_address(address)
    if given is not None:
        check_address(given[0], source=given[1])


def _setup_host(text: str) -> str:
    try:
        return registry_host(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class EvalCommand:
    name = "eval"

    def add_parser(self, subparsers) -> argparse.ArgumentParser:
        p = subparsers.add_parser(
            "eval",
            help="run a task file as a batch of agent sessions, grade them, report",
            description=(__doc__ or "").split("\n\n")[0],
            epilog="Permissions: cluster/eval/settings.py; exit codes: cluster/eval/cli.py.",
        )
        p.add_argument("tasks", help="task file: JSON Lines (or one JSON array), one task per row")
        p.add_argument("--out", required=True, help="results directory; rerunning the same command resumes it")
        p.add_argument("--concurrency", type=positive_int, default=4, help="tasks at once (default 4)")
        p.add_argument(
            "--actors",
            type=positive_int,
            help="SessionActors per node on Ray (default: one per 16 concurrent, at most one per CPU)",
        )
        p.add_argument(
            "--grade-concurrency",
            type=positive_int,
            help="setup and test commands at once (default: 2 per core, at least 4)",
        )
        p.add_argument("--json", action="store_true", help="stream per-task events as JSON lines instead of progress")
        p.add_argument("--strict", action="store_true", help="refuse to start when any task line is invalid")
        p.add_argument(
            "--retry-failed", action="store_true", help="run again the tasks whose last result is not passed"
        )
        p.add_argument(
            "--keep-workspaces",
            action="store_true",
            help="keep each task's workspace under OUT/workspaces and its grading copy under OUT/grading",
        )
        p.add_argument(
            "--reject-test-changes",
            action="store_true",
            help="fail a patch that changes test infrastructure (conftest.py, tests, pytest configuration) "
            "instead of grading it, unless the task sets grading.reject_test_changes",
        )
        p.add_argument("--repos", type=Path, help="SWE-bench rows: directory holding owner__name or name clones")
        p.add_argument(
            "--swebench-runner", default=DEFAULT_RUNNER, help=f"SWE-bench rows: test runner (default: {DEFAULT_RUNNER})"
        )
        p.add_argument(
            "--wall-s", type=positive_float, help="agent wall clock per task, unless the task sets budgets.wall_s"
        )
        p.add_argument(
            "--batch-max-cost",
            type=positive_float,
            metavar="USD",
            help="total cost of the batch (every row in --out): once reached, no new task starts "
            "(--max-cost is per task)",
        )
        p.add_argument(
            "--filter",
            action="append",
            default=[],
            metavar="PATTERN",
            help="run only the tasks whose id matches this glob (repeatable: any may match)",
        )
        p.add_argument(
            "--slice",
            type=parse_slice,
            metavar="START:END",
            help="run only this Python slice of the task file's tasks (after --filter), e.g. 0:10 or --slice=-5:",
        )
        p.add_argument(
            "--redo",
            action="store_true",
            help="start over: move the --out directory's earlier rows and reports to OUT/previous/<time>/",
        )
        p.add_argument(
            "--setup-network",
            action="store_true",
            help="building a task's environment may reach the package registries (through an allow-list "
            "proxy), unless the task sets environment.network; never the agent's turns or the grade",
        )
        p.add_argument(
            "--setup-host",
            action="append",
            default=[],
            metavar="HOST",
            type=_setup_host,
            help=f"one more host such a build may reach on port 443 (default: {', '.join(DEFAULT_HOSTS)})",
        )
        p.add_argument(
            "--env-cache",
            type=Path,
            metavar="DIR",
            help="this machine's cache of task environments (default: OUT/state/envs)",
        )
        p.add_argument(
            "--predictions",
            type=Path,
            metavar="FILE",
            help="grade these patches instead of running an agent (SWE-bench's predictions format: "
            "instance_id, model_patch, model_name_or_path); tasks without one are not run",
        )
        add_setting_flags(p, "eval")
        add_trust_flag(p)
        return p

    def run(self, args: argparse.Namespace) -> int:
        # The batch's machinery loads here, not with the parser (`workingset --help` stays quick).
        from agents.settings import output_directory
        from cluster.eval.progress import JsonReporter, ProgressReporter
        from cluster.eval.runner import EvalOptions, EvalRunner
        from cluster.eval.settings import eval_settings, preflight
        from cluster.eval.swebench import load_predictions
        from cluster.eval.task_file import load_tasks

        loaded = load_tasks(Path(args.tasks), repos_dir=args.repos, swebench_runner=args.swebench_runner)
        invalid = loaded.problem_lines()
        if invalid and args.strict:
            shown = "; ".join(invalid[:3]) + (f"; and {len(invalid) - 3} more" if len(invalid) > 3 else "")
            raise ConfigError(f"{len(invalid)} invalid task line(s), nothing was run (--strict): {shown}")
        if not loaded.tasks:
            raise ConfigError(f"no valid task in {args.tasks}" + (f": {invalid[0]}" if invalid else ""))
        task_file = str(Path(args.tasks).resolve())
        selection = Selection(task_file, filters=args.filter, part=args.slice)
        tasks = selection.apply(loaded.tasks)
        predictions, digest = load_predictions(args.predictions) if args.predictions else (None, None)
        if predictions is not None:
            tasks = _predicted(tasks, predictions, args.predictions)
        settings = eval_settings(args)
        if settings.runtime != "local":
            _check_cluster_address(settings.cluster.address)
        output_directory(args.out, "--out")
        if predictions is None:
            preflight(settings, tasks)
        reporter = JsonReporter(stream=claim_stdout()) if args.json else ProgressReporter()
        for problem, text in zip(loaded.problems, invalid, strict=True):
            reporter.event("task_invalid", line=problem.line, field=problem.field, message=problem.message, text=text)
        if settings.runtime == "local":
            from cluster.eval.hosts import LocalHost

            host: Any = LocalHost()
        else:
            from cluster.eval.ray_host import RayHost  # imports Ray: only when the batch is on it

            host = RayHost(actors=args.actors, concurrency=args.concurrency)
        options = EvalOptions(
            out=Path(args.out),
            concurrency=args.concurrency,
            keep_workspaces=args.keep_workspaces,
            retry_failed=args.retry_failed,
            wall_s=args.wall_s,
            invalid=invalid,
            command_slots=args.grade_concurrency,
            reject_test_changes=args.reject_test_changes,
            redo=args.redo,
            batch_max_cost=args.batch_max_cost,
            task_file=task_file,
            digests=loaded.digests,
            selection=selection,
            swebench_runner=args.swebench_runner,
            setup_network=args.setup_network,
            environment_cache=args.env_cache,
            egress_hosts=(*DEFAULT_HOSTS, *args.setup_host),
            predictions=predictions,
            predictions_digest=digest,
        )
        runner = EvalRunner(settings, tasks, options, host=host, reporter=reporter)
        try:
            summary = asyncio.run(_stoppable(runner.run()))
        except (KeyboardInterrupt, asyncio.CancelledError) as exc:
            reporter.close()
            say(
                f"workingset: interrupted; the results so far are in {runner.out.root}; "
                "run the same command again to resume",
                file=sys.stderr,
            )
            return 130 if isinstance(exc, KeyboardInterrupt) else 143
        if not args.json:
            say(f"results: {runner.out.results}\nreport:  {runner.out.report}")
        return 1 if invalid or summary["statuses"]["error"] or summary["stopped"] else 0


def _predicted(tasks: list[Task], predictions: dict[str, Prediction], path: Path) -> list[Task]:
    """The tasks that have a prediction; what the two files do not share is said once."""
    chosen = [t for t in tasks if t.id in predictions]
    unknown = sorted(set(predictions) - {t.id for t in tasks})
    if not chosen:
        raise ConfigError(
            f"--predictions {path}: none of its {len(predictions)} instance ids is a task of this "
            "task file (and selection); predictions are matched to tasks by instance_id"
        )
    if len(chosen) < len(tasks):
        say(
            f"workingset: {len(tasks) - len(chosen)} of {len(tasks)} tasks have no prediction in {path}: not run",
            file=sys.stderr,
        )
    if unknown:
        shown = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
        say(f"workingset: {len(unknown)} predictions name no task here ({shown}): ignored", file=sys.stderr)
    return chosen


COMMAND = EvalCommand()
