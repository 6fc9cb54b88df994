"""SWE-bench rows as tasks, graded as the SWE-bench harness grades them, offline.

    rows.py         a dataset row -> a Task (repository found locally, hidden tests, required tests)
    specs.py        the `swebench` package's per-repository specs -> environment, test command, parser
    log_verdict.py  test commands that are not pytest: outcomes from swebench's own log parsers
    predictions.py  someone else's predictions (SWE-bench's format) graded without an agent
"""

from cluster.eval.swebench.rows import DEFAULT_RUNNER, is_swebench_row, swebench_task, test_ids

__all__ = ["DEFAULT_RUNNER", "is_swebench_row", "swebench_task", "test_ids"]
