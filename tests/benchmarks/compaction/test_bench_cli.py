"""`workingset bench compaction`: offline on synthetic data, on one real trace, and the
errors a user can cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.compaction.command import parse_strategies
from benchmarks.traces.corpus import corpus_dir
from cluster.terminal._cli import main

TRACES = corpus_dir()
TOY = (
    TRACES
    / "swe-agent"
    / "tests"
    / "test_data"
    / "trajectories"
    / "gpt4__swe-agent__test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1"
    / "swe-agent__test-repo-i1.traj"
)
PNG = b"\x89PNG\r\n\x1a\n"
FAST = ["--local", "--resamples", "200"]


def _bench(*args: str) -> int:
    return main(["bench", "compaction", *FAST, *args])


def test_runs_offline_without_traces_on_labelled_synthetic_data(tmp_path, capsys):
    out = tmp_path / "out"
    assert _bench("--synthetic", "2", "--strategies", "mask:keep=4", "--out", str(out)) == 0
    printed = capsys.readouterr()
    assert "SYNTHETIC" in printed.out and "mask:keep=4" in printed.out
    doc = json.loads((out / "results.json").read_text())
    assert doc["synthetic"] is True and "SYNTHETIC" in doc["data"]
    # raw and the baseline are always run (the references of the paired ratios), and the default (the verdict's).
    assert doc["settings"]["strategies"] == ["raw", "clear-then-summarize", "current", "mask:keep=4"]
    assert len(doc["traces"]) == 2 and len(doc["runs"]) == 8 and not any(r["error"] for r in doc["runs"])
    by_name = {s["strategy"]: s for s in doc["summary"]}
    assert by_name["raw"]["vs_raw"]["cumulative_tokens"]["value"] == 1.0
    assert by_name["mask:keep=4"]["vs_raw"]["cumulative_tokens"]["value"] < 0.5
    assert by_name["clear-then-summarize"]["vs_baseline"]["cost_usd"]["value"] == 1.0
    report = (out / "report.md").read_text()
    assert "SYNTHETIC data" in report and "## Metrics" in report and "Grounding recall" in report
    for name in ("pareto.png", "tokens_per_step.png"):
        assert (out / name).read_bytes()[:8] == PNG
    assert "wall time" in printed.out


def _real(path: Path) -> str:
    if not path.is_file():
        pytest.fail(f"trace corpus not found: {path} (these tests need ../shared/traces)", pytrace=False)
    return str(path)


def test_the_same_inputs_give_the_same_figures(tmp_path, capsys):
    docs = []
    for run in ("a", "b"):
        assert _bench("--traces", _real(TOY), "--strategies", "mask", "--json", "--out", str(tmp_path / run)) == 0
        doc = json.loads(capsys.readouterr().out)
        docs.append((doc["summary"], [{k: v for k, v in r.items() if k != "seconds"} for r in doc["runs"]]))
    assert docs[0] == docs[1]


def test_one_real_trace(tmp_path, capsys):
    out = tmp_path / "out"
    assert _bench("--traces", _real(TOY), "--strategies", "truncate", "--json", "--out", str(out)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["synthetic"] is False and str(TOY) in doc["data"]
    assert [t["label"] for t in doc["traces"]] == ["swe-agent:swe-agent__test-repo-i1"]
    assert {r["strategy"] for r in doc["runs"]} == {"raw", "clear-then-summarize", "current", "truncate"}
    assert all(r["calls"] == 5 and r["grounding_recall"] is not None for r in doc["runs"])
    assert "SYNTHETIC" not in (out / "report.md").read_text()


def test_an_unknown_strategy_is_one_clear_line(tmp_path, capsys):
    assert _bench("--strategies", "raw,nope", "--out", str(tmp_path)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown compaction strategy 'nope'" in err
    assert "clear-then-summarize" in err and "mask" in err and "raw" in err


def test_a_bad_strategy_parameter_is_one_clear_line(tmp_path, capsys):
    assert _bench("--strategies", "mask:bogus=1", "--out", str(tmp_path)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bogus" in err and "keep" in err


def test_unreadable_traces_are_named_and_skipped_or_stop_with_strict(tmp_path, capsys):
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "broken.json").write_text("{not json")
    (folder / "tasks.json").write_text(json.dumps({"tasks": [1, 2]}))  # JSON, but not a trace: ignored
    (folder / "good.json").write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": "fix it"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}],
                    },
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "src/app/main.py"}],
                    },
                    {"role": "assistant", "content": "Edit src/app/main.py next."},
                ]
            }
        )
    )
    out = tmp_path / "out"
    assert _bench("--traces", str(folder), "--strategies", "raw", "--json", "--out", str(out)) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [t["label"] for t in doc["traces"]] == ["anthropic-messages:good"]
    [skipped] = doc["skipped"]
    assert skipped["path"].endswith("broken.json") and "not valid JSON" in skipped["reason"]
    assert doc["ignored"] == [str(folder / "tasks.json")]
    assert "broken.json" in captured.err

    assert _bench("--traces", str(folder), "--strict", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert "broken.json" in err and "--strict" in err

    assert _bench("--traces", str(tmp_path / "missing.json"), "--out", str(out)) == 2
    assert "missing.json" in capsys.readouterr().err


def test_strategy_specs_keep_their_parameters_together():
    assert parse_strategies("raw, window:first=1,last=30 ,mask:keep=8") == [
        "raw",
        "window:first=1,last=30",
        "mask:keep=8",
    ]
    assert "raw" in parse_strategies(None) and "clear-then-summarize" in parse_strategies("")


# -- live mode (repeats, seeds, the paired tests and the plan: tests/benchmarks/compaction/test_bench_live.py) --------


def test_live_mode_refuses_a_missing_task_file(tmp_path, capsys):
    assert _bench("--live", str(tmp_path / "none.jsonl"), "--out", str(tmp_path)) == 2
    assert "none.jsonl" in capsys.readouterr().err


# -- what a reader of the results needs -------------------------------------------------------


def test_results_record_commit_versions_settings_and_trace_hashes(tmp_path, capsys):
    import hashlib

    out = tmp_path / "out"
    assert _bench("--traces", _real(TOY), "--strategies", "mask:keep=0", "--json", "--out", str(out)) == 0
    doc = json.loads(capsys.readouterr().out)
    prov = doc["provenance"]
    assert len(prov["project"]["commit"]) == 40 and prov["packages"]["scipy"] and prov["packages"]["numpy"]
    assert prov["trace_sha256"] == {str(TOY): hashlib.sha256(TOY.read_bytes()).hexdigest()}
    assert doc["settings"]["cache"]["lookback_blocks"] == 20 and doc["settings"]["tokenizer"] == "real"
    report = (out / "report.md").read_text()
    assert "## How to rerun" in report and prov["project"]["commit"] in report
    assert "workingset bench compaction" in report and "sha256" in report


def test_a_strategy_over_the_window_is_flagged_in_table_report_and_results(tmp_path, capsys):
    out = tmp_path / "out"
    pydicom = (
        TOY.parents[1]
        / "gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1"
        / "pydicom__pydicom-1458.traj"
    )
    assert _bench("--traces", _real(pydicom), "--strategies", "raw", "--context-window", "8000", "--out", str(out)) == 0
    printed = capsys.readouterr().out
    doc = json.loads((out / "results.json").read_text())
    raw = next(s for s in doc["summary"] if s["strategy"] == "raw")
    assert raw["exceeds_window"] and raw["infeasible_calls"] > 0
    assert "⚠ raw" in printed and "exceed the window" in printed
    assert "**Exceed the window:** raw" in (out / "report.md").read_text()


def test_peer_presets_run_under_their_own_names_and_record_their_source(tmp_path, capsys):
    out = tmp_path / "out"
    assert (
        _bench(
            "--traces",
            _real(TOY),
            "--strategies",
            "swe-agent-last5,anthropic-clear-tool-uses",
            "--json",
            "--out",
            str(out),
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert {"swe-agent-last5", "anthropic-clear-tool-uses"} <= {r["strategy"] for r in doc["runs"]}
    assert doc["presets"]["swe-agent-last5"]["spec"] == "mask:keep=5"
    assert "LastNObservations" in doc["presets"]["swe-agent-last5"]["source"]
    assert "## Peer presets" in (out / "report.md").read_text()


def test_every_preset_is_a_valid_strategy_spec_at_every_window():
    from agents.compaction import make_strategy
    from benchmarks.compaction.presets import PRESETS, resolve_spec

    for name, preset in PRESETS.items():
        for window in (16_000, 32_000, 64_000):
            spec = resolve_spec(name, window)
            assert "{" not in spec and make_strategy(spec).name
        assert preset.source and (preset.exact or preset.gap)


def test_a_folder_file_no_loader_reads_gets_a_skip_line(tmp_path, capsys):
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"resolved": ["a"]}))
    (folder / "t.json").write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}])
    )
    assert _bench("--traces", str(folder), "--strategies", "raw", "--out", str(tmp_path / "out")) == 0
    err = capsys.readouterr().err
    assert f"skipping {folder / 'summary.json'}: not a trace in a format the benchmark reads" in err
    assert "nebius-swe-agent" in err and "openhands-v1" in err


def test_the_tekken_tokenizer_measures_a_run(tmp_path, capsys):
    assert (
        _bench(
            "--traces",
            _real(TOY),
            "--strategies",
            "raw",
            "--tokenizer",
            "tekken",
            "--json",
            "--out",
            str(tmp_path / "out"),
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    estimate = doc["token_check"]["traces"][0]["estimate_all"]
    assert doc["settings"]["tokenizer"] == "tekken" and all(r["cumulative_tokens"] > 0 for r in doc["runs"])
    assert doc["token_check"]["traces"][0]["tekken_all"] != estimate
