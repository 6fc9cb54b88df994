"""The benchmark's Ray path: one remote task per trace x strategy gives exactly what the
in-process run gives (on the session-scoped `ray_cluster`, which run_on_ray's connect() reuses)."""

from __future__ import annotations

import pytest

from benchmarks.compaction.runner import BenchConfig, run_local, run_on_ray
from benchmarks.traces import load_trace_file
from benchmarks.traces.corpus import corpus_dir

TOY = (
    corpus_dir()
    / "swe-agent"
    / "tests"
    / "test_data"
    / "trajectories"
    / "gpt4__swe-agent__test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1"
    / "swe-agent__test-repo-i1.traj"
)


def test_ray_tasks_give_the_same_metrics_as_in_process(ray_cluster):
    if not TOY.is_file():
        pytest.fail(f"trace corpus not found: {TOY} (these tests need ../shared/traces)", pytrace=False)
    traces = [("toy", load_trace_file(TOY)[0])]
    config = BenchConfig(strategies=["raw", "mask:keep=1", "nope"], context_window=8_000)
    seen = []
    on_ray = run_on_ray(traces, config, seen.append)
    local = run_local(traces, config)
    assert len(seen) == 3
    strip = lambda runs: [r.model_dump(exclude={"seconds"}) for r in runs]  # noqa: E731
    assert strip(on_ray.runs) == strip(local.runs)
    assert on_ray.tokens == local.tokens and on_ray.tokens[0].trace == "toy"  # the per-trace check, once
    runs = on_ray.runs
    assert [r.strategy for r in runs] == ["raw", "mask:keep=1", "nope"]
    assert runs[0].error is None and runs[1].compactions and "nope" in runs[2].error
