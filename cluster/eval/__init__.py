"""Batch evaluation: `workingset eval TASKS.jsonl --model SPEC --out DIR`.

One agent session per task (on Ray through a SessionPool, or in-process with
`--local`), each in a fresh workspace cloned or copied from the task's repository,
graded by the task's test command in the sandbox; one result row per task in
`results.jsonl`, plus a summary, a report and SWE-bench predictions.

    tasks.py        the task file: schema, loading, clear per-line errors
    swebench.py     SWE-bench rows -> tasks (repositories available locally)
    settings.py     the batch's settings (headless permissions) and each task's
    layout.py       what the out directory holds
    workspaces.py   an isolated git workspace per task; the patch; cleanup
    grading.py      setup and test commands in the sandbox
    stats.py        per-task event log and usage totals
    hosts.py        where sessions run: a SessionPool on Ray, or this process
    results.py      results.jsonl (append, skip, retry) and predictions
    report.py       summary.json and report.md
    task_flow.py    one task: workspace, setup, session, patch, grade -> a row
    runner.py       the batch: concurrency, rerun, one retry, Ctrl-C, the summary
    progress.py     live rich progress, or a JSON event stream
    cli.py          the `eval` subcommand
"""
