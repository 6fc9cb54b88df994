"""From the reporter's records to each test's outcome, and from those to a verdict.

A test's outcome folds its three phases as pytest's own summary does, and as the
SWE-bench harness counts them:

    setup failed -> error        call failed -> failed       teardown failed -> error
    skipped (no xfail) -> skipped    an expected failure -> xfailed
    call passed while marked xfail -> xpassed    call passed -> passed
    no record at all -> missing (not collected, deselected, or pytest stopped)

passed, xfailed and xpassed count as passing. A call reported "passed" although the
call raised (a plugin or conftest rewrote the report) is `failed`, and the row names it.

The verdict is per test: the task passes when pytest's session finished (its
end-of-session record arrived) and every required test is passing. The exit code is
kept for the record but decides nothing — a failing test outside the required ones does
not fail the task, and an `os._exit(0)` does not pass it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["PASSING", "Outcome", "PytestRun", "read_run", "reasons_for"]

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed", "missing"]
PASSING: frozenset[str] = frozenset({"passed", "xfailed", "xpassed"})
_SHOWN = 5


@dataclass
class PytestRun:
    """What the reporter wrote during one run."""

    booted: bool = False
    started: bool = False
    finished: bool = False
    boot_error: str | None = None
    python: str | None = None
    pytest: str | None = None
    inifile: str | None = None
    exit_status: int | None = None
    collected: list[str] = field(default_factory=list)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    overridden: list[str] = field(default_factory=list)  # reported passed after the call raised
    collect_errors: dict[str, str] = field(default_factory=dict)  # node id -> pytest's message
    hooks: list[str] = field(default_factory=list)  # "hook in plugin" outside pytest
    unreadable: int = 0

    def outcome(self, test_id: str) -> Outcome:
        """A test's outcome. An id that is not a node id may be one the SWE-bench harness
        cut at the first space (its log parser splits lines on blanks): the tests whose
        node ids it begins then decide — passing only if all of them are."""
        found = self.outcomes.get(test_id)
        if found is not None:
            return found
        cut = [o for t, o in self.outcomes.items() if " " in t and t.split(" ", 1)[0] == test_id]
        if not cut:
            return "missing"
        return next((o for o in cut if o not in PASSING), cut[0])


def _fold(run: PytestRun, record: dict) -> None:
    test_id, when, outcome = str(record.get("id")), record.get("when"), record.get("outcome")
    xfail = bool(record.get("xfail"))
    current = run.outcomes.get(test_id)
    if current in ("failed", "error"):
        return  # the first failure is the outcome
    if outcome == "failed":
        run.outcomes[test_id] = "failed" if when == "call" else "error"
    elif outcome == "skipped":
        run.outcomes[test_id] = "xfailed" if xfail else "skipped"
    elif when == "call" and outcome == "passed":
        if record.get("raised"):
            run.outcomes[test_id] = "failed"
            run.overridden.append(test_id)
        else:
            run.outcomes[test_id] = "xpassed" if xfail else "passed"
    elif when == "setup" and current is None:
        run.outcomes[test_id] = "passed"  # until its call says otherwise


def _take(run: PytestRun, record: dict) -> None:
    kind = record.get("event")
    if kind == "boot":
        run.booted, run.python = True, record.get("python")
    elif kind == "error":
        run.boot_error = f"{record.get('stage')}: {record.get('error')}"
    elif kind == "start":
        run.started, run.pytest, run.inifile = True, record.get("pytest"), record.get("inifile")
    elif kind == "collected":
        run.collected = [str(i) for i in record.get("ids") or []]
    elif kind == "collect-error":
        run.collect_errors[str(record.get("id"))] = str(record.get("error"))[:2000]
    elif kind == "hooks":
        run.hooks = [f"{h.get('hook')} in {h.get('plugin')}" for h in record.get("hooks") or [] if isinstance(h, dict)]
    elif kind == "test":
        _fold(run, record)
    elif kind == "finish":
        run.finished, run.exit_status = True, record.get("exitstatus")


def read_run(data: bytes) -> PytestRun:
    """The records of one report file (lines that are not records are counted, not read)."""
    run = PytestRun()
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            run.unreadable += 1
            continue
        if isinstance(record, dict):
            _take(run, record)
        else:
            run.unreadable += 1
    return run


def _named(ids: list[str]) -> str:
    return ", ".join(ids[:_SHOWN]) + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def reasons_for(run: PytestRun, required: list[str]) -> list[str]:
    """Why the required tests do not pass (empty: they do)."""
    reasons = []
    if not run.finished:
        reasons.append(
            "pytest did not finish its session (no end-of-session record)"
            if run.started
            else "pytest stopped before its session started"
        )
    if not required:
        reasons.append("no required test: the task names none and none was found to require")
    by_outcome: dict[str, list[str]] = {}
    for test_id in required:
        outcome = run.outcome(test_id)
        if outcome not in PASSING:
            by_outcome.setdefault(outcome, []).append(test_id)
    for kind, ids in by_outcome.items():
        what = "were not run (not collected, or pytest stopped)" if kind == "missing" else kind
        reasons.append(f"{len(ids)} of {len(required)} required tests {what}: {_named(ids)}")
    overridden = [t for t in run.overridden if t in required]
    if overridden:
        reasons.append(f"reported passed although the test raised (a plugin rewrote the report): {_named(overridden)}")
    return reasons
