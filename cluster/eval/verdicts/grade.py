"""What a grade checked, as the result row carries it (`grade`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from cluster.eval.verdicts.outcomes import PASSING, Outcome, PytestRun

__all__ = ["Grade"]


class Grade(BaseModel):
    verdict: Literal["per-test", "log-parser", "exit-code"] = Field(
        description="per-test: every required test's outcome, from the grader's own pytest reporter; log-parser: "
        "every required test's outcome as swebench's parser read the test output (a SWE-bench repository whose "
        "tests are not pytest: the output is the test command's, which code under test can print to); exit-code: "
        "the test command's exit code alone (any other command)."
    )
    passed: bool
    required_from: str = Field("", description="Where the required tests came from.")
    required: dict[str, Outcome] = Field(
        default_factory=dict,
        description="Each required test id and its outcome (passed, failed, error, skipped, "
        "xfailed, xpassed, missing); passed, xfailed and xpassed count as passing.",
    )
    groups: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="Per named group of required tests (FAIL_TO_PASS, PASS_TO_PASS): "
        "how many are passing and how many there are.",
    )
    others: dict[str, int] = Field(
        default_factory=dict, description="Outcomes of the tests that ran but were not required, counted."
    )
    reasons: list[str] = Field(default_factory=list, description="Why it did not pass.")
    collection_errors: dict[str, str] = Field(default_factory=dict, description="Files that failed to collect.")
    outcome_hooks: list[str] = Field(
        default_factory=list,
        description="Implementations of outcome-deciding pytest hooks from outside pytest "
        "(a conftest's makereport, say): what besides the tests could have shaped the outcomes.",
    )
    pytest_config: str | None = Field(None, description="The pytest configuration the grade ran with.")
    python: str | None = None
    pytest: str | None = None
    exit_code: int | None = Field(
        None, description="The test command's exit code (for the record; per-test verdicts do not use it)."
    )

    @property
    def required_passing(self) -> int:
        return sum(1 for outcome in self.required.values() if outcome in PASSING)

    @classmethod
    def from_run(
        cls,
        run: PytestRun,
        required: list[str],
        *,
        required_from: str,
        groups: dict[str, list[str]],
        reasons: list[str],
        config: str | None,
        exit_code: int | None,
        verdict: Literal["per-test", "log-parser"] = "per-test",
    ) -> Grade:
        outcomes = {t: run.outcome(t) for t in required}
        others: dict[str, int] = {}
        wanted = set(required)
        for test_id, outcome in run.outcomes.items():
            if test_id not in wanted and test_id.split(" ", 1)[0] not in wanted:
                others[outcome] = others.get(outcome, 0) + 1
        counted = {
            name: {"passing": sum(1 for t in ids if outcomes.get(t) in PASSING), "total": len(ids)}
            for name, ids in groups.items()
        }
        return cls(
            verdict=verdict,
            passed=not reasons,
            required_from=required_from,
            required=outcomes,
            groups=counted,
            others=others,
            reasons=reasons,
            collection_errors=run.collect_errors,
            outcome_hooks=run.hooks,
            pytest_config=config,
            python=run.python,
            pytest=run.pytest,
            exit_code=exit_code,
        )
