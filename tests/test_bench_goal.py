"""The goal table read back from a bench document (`benchmarks.compaction.goal`)."""

from benchmarks.compaction.goal import _compared, _runs, goal_rows


def _run(trace: str, strategy: str, cost: float, *, recall: float = 1.0, infeasible: int = 0) -> dict:
    return {"trace": trace, "strategy": strategy, "cost_usd": cost, "tool_evidence_recall": recall,
            "infeasible_calls": infeasible, "oracle_ratio": 2.0, "error": None}


def _doc() -> dict:
    traces = [{"label": f"t{i}", "path": f"/traces/{'held' if i < 3 else 'tuned'}/t{i}.json", "source": "x"} for i in range(6)]
    runs = [r for i in range(6) for r in (_run(f"t{i}", "raw", 1.0, infeasible=3), _run(f"t{i}", "current", 0.5),
                                          _run(f"t{i}", "peer", 0.8 if i < 3 else 0.4, recall=0.9))]
    return {"traces": traces, "runs": runs}


def test_the_paired_column_is_the_default_strategys_cost_over_the_other_per_trace():
    rows = {r["strategy"]: r for r in goal_rows(_runs(_doc(), [], []), ["raw", "current", "peer"])}
    assert rows["raw"]["vs_default"].value == 0.5 and rows["current"]["vs_default"] is None
    assert rows["current"]["cost_pooled"] == 0.5 and rows["raw"]["infeasible"] == 18


def test_excluded_folders_leave_only_the_held_out_traces():
    runs = _runs(_doc(), [], ["/traces/tuned"])
    (peer,) = (r for r in goal_rows(runs, ["raw", "current", "peer"]) if r["strategy"] == "peer")
    assert peer["traces"] == 3 and peer["vs_default"].value == 0.625


def test_a_variant_checked_as_the_default_is_the_paired_reference_and_the_other_variants_leave():
    doc = _doc()
    doc["runs"] += [_run(f"t{i}", "current:keep=1", 0.4) for i in range(6)]
    doc["summary"] = [{"strategy": s} for s in ("raw", "current", "peer", "current:keep=1")]
    names = _compared(doc, "current:keep=1")
    assert names == ["raw", "peer", "current:keep=1"]
    rows = {r["strategy"]: r for r in goal_rows(_runs(doc, [], []), names, "current:keep=1")}
    # 0.4 ÷ the peer's 0.8 on three traces and 0.4 on three: the median of 0.5 and 1.0
    assert rows["peer"]["vs_default"].value == 0.75 and rows["current:keep=1"]["vs_default"] is None
