"""Test commands that are not pytest (Django's runtests.py, SymPy's bin/test, tox):
each test's outcome as swebench's own log parser for the repository reads the output.

This is weaker than the per-test reporter and the row says so (`grade.verdict:
log-parser`): the outcomes come from lines the test command printed, and code under
test can print such lines too. It is still per test — the exit code decides nothing —
and it is what the SWE-bench harness itself checks for these repositories.
"""

from __future__ import annotations

from cluster.eval.swebench.specs import swebench_modules
from cluster.eval.verdicts import Outcome, PytestRun

__all__ = ["parsed_run"]

# swebench's TestStatus values -> outcomes (PASSED and XFAIL count as passing there too)
_OUTCOMES: dict[str, Outcome] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "SKIPPED": "skipped",
    "ERROR": "error",
    "XFAIL": "xfailed",
}


def parsed_run(repo: str, log: str) -> PytestRun | None:
    """The outcomes swebench's parser for `repo` reads in `log`, as a run that finished;
    None when the package or a parser for the repository is missing."""
    modules = swebench_modules()
    if modules is None:
        return None
    parser = modules[2].MAP_REPO_TO_PARSER.get(repo)
    if parser is None:
        return None
    statuses = parser(log, None)
    run = PytestRun(booted=True, started=True, finished=True)
    run.outcomes = {test_id: _OUTCOMES.get(str(status), "error") for test_id, status in statuses.items()}
    run.collected = list(run.outcomes)
    return run
