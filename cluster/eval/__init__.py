"""Batch evaluation: `workingset eval TASKS.jsonl --model SPEC --out DIR`.

One agent session per task (on Ray through a SessionPool, or in-process with
`--local`), each in a fresh workspace cloned from a trusted base of the task's
repository, graded in a fresh copy of the base with only the agent's patch and then the
hidden tests applied, by the task's test command in the sandbox; one result row per
task in `results.jsonl`, plus a summary, a report and SWE-bench predictions.

    tasks.py        the task file: schema, loading, clear per-line errors
    swebench.py     SWE-bench rows -> tasks (repositories available locally)
    settings.py     the batch's settings (headless permissions) and each task's
    layout.py       what the out directory holds
    errors.py       the workspace and patch exceptions
    trusted_git.py  host-side git, always with a git directory the harness made
    base_repo.py    a task's trusted base (bare, private) and clones of it
    patches.py      the agent's patch, taken on the host against the base; applied to a copy
    hidden_tests.py the test patch's files computed from the base; placed without following links
    patch_audit.py  which patched files are test infrastructure (what a patch may still do)
    workspaces.py   a task's base, workspace and grading copy, and their cleanup
    grading.py      setup and test commands in the sandbox
    grade_stage.py  grading one task in a fresh copy
    stats.py        per-task event log and usage totals
    hosts.py        where sessions run: a SessionPool on Ray, or this process
    results.py      results.jsonl (append, skip, retry, repair) and predictions
    durable.py      appends and replacements of out-dir files that survive kill -9
    provenance.py   the settings that produced an out dir (run.json) and each task's digest
    selection.py    --filter and --slice
    spend.py        the batch's total cost cap
    report.py       summary.json and report.md
    task_flow.py    one task: workspace, setup, session, patch, grade -> a row
    runner.py       the batch: concurrency, rerun, infrastructure retries, Ctrl-C, the summary
    leftovers.py    the batch's processes die with its driver (a mark, a keeper); the next run names survivors
    progress.py     live rich progress, or a JSON event stream
    cli.py          the `eval` subcommand
"""
