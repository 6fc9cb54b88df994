"""The compaction benchmark's live mode as a pre-registered experiment: repeats with
seeds, paired McNemar tests with task-clustered intervals, billed cost, turns and Recall
per arm, and the plan written before the first task runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import chi2

from agents.errors import ConfigError
from agents.events import ToolCall
from benchmarks.compaction.live import prepare_live
from benchmarks.compaction.live_demo import write_demo
from benchmarks.compaction.live_plan import PLAN_FILE
from benchmarks.compaction.live_stats import clustered_mcnemar, compare_pairs, mcnemar
from benchmarks.compaction.live_usage import arm_usage, billed
from cluster.eval.results import ResultRow
from cluster.eval.stats import TaskStats
from cluster.terminal._cli import main
from tests.support.eval_support import calc_repo, fix_turns, script, task, tasks_file

ARMS = ["raw", "clear-then-summarize", "current"]


# -- McNemar and the paired comparison ---------------------------------------------------------


def test_mcnemar_is_the_exact_binomial_test_below_25_discordant_pairs():
    test = mcnemar(7, 1)
    assert test.method == "exact" and test.p_value == pytest.approx(2 * (1 + 8) / 256)


def test_mcnemar_is_the_continuity_corrected_chi_square_from_25_discordant_pairs():
    test = mcnemar(20, 10)
    assert test.method == "chi-square" and test.statistic == pytest.approx(81 / 30)
    assert test.p_value == pytest.approx(chi2.sf(81 / 30, 1))


def test_no_discordant_pair_is_no_evidence_of_a_difference():
    assert mcnemar(0, 0).p_value == 1.0


def test_the_difference_interval_draws_whole_tasks_not_single_repeats():
    # Task a: the default solved all 3 repeats, the other none; task b: both solved all. Two
    # tasks are two clusters, so a resample is either a twice, b twice or one of each.
    a = {(t, r): True for t in "ab" for r in range(3)}
    b = {**{("a", r): False for r in range(3)}, **{("b", r): True for r in range(3)}}
    [pair] = compare_pairs({"A": a, "B": b}, "A", ["B"], margin=0.05, alpha=0.05, resamples=400, seed=0)
    assert pair.difference.value == pytest.approx(0.5)
    assert (pair.difference.lo, pair.difference.hi) == (0.0, 1.0)


def test_the_default_is_compared_with_every_other_arm_holm_adjusted():
    units = [(f"t{i}", 0) for i in range(10)]
    default = dict.fromkeys(units, True)
    worse = {u: i >= 8 for i, u in enumerate(units)}  # 8 discordant pairs: exact p = 2/256
    same = dict.fromkeys(units, True)
    pairs = compare_pairs(
        {"A": default, "B": worse, "C": same}, "A", ["B", "C"], margin=0.05, alpha=0.05, resamples=200, seed=0
    )
    assert [(p.other, p.test.b, p.test.c) for p in pairs] == [("B", 8, 0), ("C", 0, 0)]
    assert pairs[0].p_holm == pytest.approx(2 * 2 / 256) and pairs[1].p_holm == 1.0


def test_non_inferiority_is_the_intervals_lower_end_above_minus_the_margin():
    units = [(f"t{i}", 0) for i in range(20)]
    default = {u: i != 0 for i, u in enumerate(units)}  # the default loses one task of 20
    other = dict.fromkeys(units, True)
    [loose] = compare_pairs({"A": default, "B": other}, "A", ["B"], margin=0.2, alpha=0.05, resamples=400, seed=0)
    [tight] = compare_pairs({"A": default, "B": other}, "A", ["B"], margin=0.0, alpha=0.05, resamples=400, seed=0)
    assert loose.noninferior is True and tight.noninferior is False


# -- what an arm used ---------------------------------------------------------------------------


def test_billed_cost_prices_cache_reads_and_writes_at_the_providers_rates():
    row = ResultRow(
        task_id="t",
        status="passed",
        model="anthropic:claude-sonnet-4-5",
        input_tokens=1_000_000,
        cache_read_tokens=1_000_000,
        cache_creation_tokens=1_000_000,
        output_tokens=1_000_000,
    )
    bill = billed(row, "per-trace", "claude-haiku-4-5")
    # $3 input, $0.30 cache read, $3.75 cache write (1.25x, 5-minute), $15 output per million
    assert bill.usd == pytest.approx(3 + 0.3 + 3.75 + 15) and bill.model_priced


def test_a_model_no_table_prices_is_billed_as_the_fixed_model_and_says_so():
    row = ResultRow(task_id="t", status="passed", model="scripted:/m.json", input_tokens=1_000_000)
    bill = billed(row, "per-trace", "claude-haiku-4-5")
    assert (bill.usd, bill.priced_as, bill.model_priced) == (1.0, "claude-haiku-4-5", False)


def test_an_arm_counts_its_turns_and_its_recall_calls():
    rows = [
        ResultRow(task_id="a", status="passed", turns=4, tool_calls=3, recall_calls=2),
        ResultRow(task_id="b", status="failed", turns=6, tool_calls=5),
    ]
    usage = arm_usage(rows, "per-trace", "claude-sonnet-4-5")
    assert (usage.turns, usage.turns_per_run, usage.recall_calls, usage.runs_using_recall) == (10, 5.0, 2, 1)


def test_a_tasks_row_counts_the_recall_calls_among_its_tool_calls():
    stats = TaskStats("scripted:m")
    for n, name in enumerate(["Read", "Recall", "Recall", "Bash"]):
        stats(ToolCall(session_id="s", tool_use_id=f"t{n}", name=name, input={}))
    assert (stats.tool_calls, stats.recall_calls) == (4, 2)


# -- the plan -----------------------------------------------------------------------------------


def _tasks(tmp_path: Path) -> Path:
    calc_repo(tmp_path)
    model = script(tmp_path, "fix", fix_turns())
    return tasks_file(tmp_path / "tasks.jsonl", [task("add", "calc", model=f"scripted:{model}")])


def test_the_plan_is_registered_before_any_task_runs(tmp_path):
    out = tmp_path / "out"
    prepare_live(
        _tasks(tmp_path),
        arms=ARMS,
        default="current",
        out=out,
        model=None,
        repeats=3,
        seed=7,
        argv=["workingset", "bench"],
    )
    plan = json.loads((out / PLAN_FILE).read_text())
    assert not (out / "live").exists()
    assert (plan["arms"], plan["default_arm"], plan["repeats"], plan["seeds"]) == (ARMS, "current", 3, [7, 8, 9])
    assert [t["id"] for t in plan["tasks"]] == ["add"] and len(plan["tasks_file_sha256"]) == 64
    assert (plan["alpha"], plan["margin"], plan["command"]) == (0.05, 0.05, ["workingset", "bench"])
    assert plan["commit"]


def test_a_rerun_with_the_same_plan_continues_it(tmp_path):
    tasks, out = _tasks(tmp_path), tmp_path / "out"
    first = prepare_live(tasks, arms=ARMS, default="current", out=out, model=None, argv=["first"])
    again = prepare_live(tasks, arms=ARMS, default="current", out=out, model=None, argv=["second", "--json"])
    assert again.plan == first.plan and json.loads((out / PLAN_FILE).read_text())["command"] == ["first"]


def test_a_plan_that_differs_is_refused_naming_what_differs_and_the_fix(tmp_path):
    tasks, out = _tasks(tmp_path), tmp_path / "out"
    prepare_live(tasks, arms=ARMS, default="current", out=out, model=None, repeats=1)
    with pytest.raises(ConfigError, match=r"registers another experiment \(repeats, seeds differ\); use another --out"):
        prepare_live(tasks, arms=ARMS, default="current", out=out, model=None, repeats=2)


def test_a_changed_task_row_is_a_different_plan(tmp_path):
    tasks, out = _tasks(tmp_path), tmp_path / "out"
    prepare_live(tasks, arms=ARMS, default="current", out=out, model=None)
    tasks.write_text(tasks.read_text().replace("fix it", "repair it"))
    with pytest.raises(ConfigError, match=r"tasks, tasks_file_sha256 differ"):
        prepare_live(tasks, arms=ARMS, default="current", out=out, model=None)


def test_a_plan_file_this_benchmark_did_not_write_is_refused_in_one_line(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / PLAN_FILE).write_text("{not json")
    with pytest.raises(ConfigError, match="is not a plan this benchmark wrote"):
        prepare_live(_tasks(tmp_path), arms=ARMS, default="current", out=out, model=None)


def test_the_command_refuses_a_differing_plan_before_replaying_anything(tmp_path, capsys):
    tasks, out = _tasks(tmp_path), tmp_path / "out"
    prepare_live(tasks, arms=ARMS, default="current", out=out, model=None, repeats=1)
    code = main(
        [
            "bench",
            "compaction",
            "--local",
            "--synthetic",
            "1",
            "--live",
            str(tasks),
            "--repeats",
            "2",
            "--out",
            str(out),
        ]
    )
    assert code == 2 and "registers another experiment" in capsys.readouterr().err
    assert not (out / "results.json").exists()


# -- end to end, offline --------------------------------------------------------------------------


def test_live_mode_repeats_each_task_under_each_arm_with_its_seed(tmp_path, capsys):
    tasks, out = write_demo(tmp_path / "demo"), tmp_path / "out"
    rows = [r for r in map(json.loads, tasks.read_text().splitlines()) if r["id"] == "seeded"]
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))  # the seed-dependent task alone
    code = main(
        [
            "bench",
            "compaction",
            "--local",
            "--resamples",
            "200",
            "--synthetic",
            "1",
            "--strategies",
            "raw",
            "--live",
            str(tasks),
            "--repeats",
            "2",
            "--json",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    live = json.loads(capsys.readouterr().out)["live"]
    outcomes = {(r["arm"], r["seed"]): r["status"] for r in live["runs"]}
    assert outcomes == {(arm, seed): ("passed" if seed == 0 else "failed") for arm in ARMS for seed in (0, 1)}
    assert [(p["other"], p["test"]["b"], p["test"]["c"], p["test"]["p_value"]) for p in live["pairs"]] == [
        ("raw", 0, 0, 1.0),
        ("clear-then-summarize", 0, 0, 1.0),
    ]
    assert all(Path(a["out"], "seed-1", "results.jsonl").is_file() for a in live["arms"])
    assert "A = current · B = raw" in (out / "report.md").read_text()


def test_a_rerun_of_a_finished_experiment_runs_no_task_again(tmp_path, capsys):
    tasks, out = _tasks(tmp_path), tmp_path / "out"
    args = [
        "bench",
        "compaction",
        "--local",
        "--resamples",
        "200",
        "--synthetic",
        "1",
        "--strategies",
        "raw",
        "--live",
        str(tasks),
        "--json",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 0
    live = json.loads(capsys.readouterr().out)["live"]
    assert [a["solved"] for a in live["arms"]] == [1, 1, 1]
    for arm in ("raw", "clear-then-summarize", "current"):
        assert len((out / "live" / arm / "seed-0" / "results.jsonl").read_text().splitlines()) == 1


def test_billed_cost_is_the_providers_reported_usage_at_its_prices(tmp_path, capsys, messages_server, monkeypatch):
    # A real Anthropic client against the local Messages server: each arm's run is one
    # Edit and a final reply, whose usage reports cache reads and writes as the API does.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    calc_repo(tmp_path)
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task("add", "calc")])
    usage = {
        "input_tokens": 1_000,
        "cache_read_input_tokens": 20_000,
        "cache_creation_input_tokens": 4_000,
        "output_tokens": 200,
    }
    for _ in ARMS:
        messages_server.push_tool_use(
            "Edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}, usage=usage
        )
        messages_server.push_text("Fixed.", usage=usage)
    code = main(
        [
            "bench",
            "compaction",
            "--local",
            "--resamples",
            "200",
            "--synthetic",
            "1",
            "--strategies",
            "raw",
            "--live",
            str(tasks),
            "--model",
            "anthropic:claude-sonnet-4-5",
            "--json",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code == 0
    live = json.loads(capsys.readouterr().out)["live"]
    per_call = (1_000 * 3 + 20_000 * 0.3 + 4_000 * 3.75 + 200 * 15) / 1_000_000  # sonnet 4.5, per million
    for arm in live["arms"]:
        u = arm["usage"]
        assert arm["solved"] == 1 and (u["cache_read_tokens"], u["cache_write_tokens"], u["turns"]) == (
            40_000,
            8_000,
            2,
        )
        assert u["billed_usd"] == pytest.approx(2 * per_call) and u["priced_as"] == ["claude-sonnet-4-5"]


def test_a_run_that_ends_in_error_counts_as_not_solved_in_its_pair(tmp_path, capsys):
    # The provider refuses the third request as too long: raw cannot compact, so its run
    # errs; current recovers and solves it. The pair counts it for current, not as missing.
    tasks, out = write_demo(tmp_path / "demo"), tmp_path / "out"
    rows = [r for r in map(json.loads, tasks.read_text().splitlines()) if r["id"] == "refused"]
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = main(
        [
            "bench",
            "compaction",
            "--local",
            "--resamples",
            "200",
            "--synthetic",
            "1",
            "--strategies",
            "raw",
            "--live",
            str(tasks),
            "--json",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    live = json.loads(capsys.readouterr().out)["live"]
    statuses = {r["arm"]: r["status"] for r in live["runs"]}
    assert (statuses["raw"], statuses["current"]) == ("error", "passed")
    [vs_raw] = [p for p in live["pairs"] if p["other"] == "raw"]
    assert (vs_raw["pairs"], vs_raw["test"]["b"], vs_raw["test"]["c"]) == (1, 1, 0)


def test_the_clustered_mcnemar_weighs_a_task_once_however_many_repeats_it_has():
    # One task flips 10 times out of 10 repeats, nine others not at all: the plain test sees
    # 10 discordant pairs (p ~ 0.002); by task it is one task's evidence, (10)^2 / 10^2 = 1.
    assert mcnemar(10, 0).p_value < 0.01
    assert clustered_mcnemar([(10, 0)] + [(0, 0)] * 9) == pytest.approx(chi2.sf(1.0, 1))
