"""`workingset bench compaction ...`: the command (see the package docstring).

Joins the CLI through the `workingset.commands` entry point `bench`; `compaction` is a
subcommand of `bench`. A user error (unknown strategy or bad parameter, bad context
window, a trace that cannot be used under --strict) is a ConfigError: one line, exit 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agents.errors import ConfigError

from .cache_model import CacheSettings
from .presets import FAMILIES, PRESETS
from .pricing import AUTO_CACHE_RULES, PER_TRACE
from .tokenizers import TOKENIZERS

__all__ = ["COMMAND", "BenchCommand"]

DEFAULT_OUT = Path("bench-results") / "compaction"
DEFAULT_SYNTHETIC = 8
HARNESS_COUNTS = ("calibrated", "estimate")


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--traces",
        action="append",
        type=Path,
        metavar="PATH",
        help="trace file, folder or Workingset trace dir (repeatable); default: synthetic trajectories",
    )
    p.add_argument(
        "--synthetic",
        type=int,
        default=DEFAULT_SYNTHETIC,
        metavar="N",
        help=f"how many synthetic trajectories without --traces (default {DEFAULT_SYNTHETIC})",
    )
    p.add_argument(
        "--strategies",
        help="comma-separated strategy specs or peer preset names, e.g. raw,window:last=10,"
        "swe-agent-last5 (default: all registered strategies)",
    )
    p.add_argument("--presets", action="store_true", help=f"also run every peer preset ({', '.join(PRESETS)})")
    p.add_argument(
        "--sweep",
        metavar="FAMILY",
        help=f"run peer families over their own grids, with the default's tuning "
        f"grid: all, or any of {', '.join(FAMILIES)} (comma-separated)",
    )
    p.add_argument(
        "--baseline",
        default="clear-then-summarize",
        help="second reference of the paired ratios (default: clear-then-summarize)",
    )
    p.add_argument("--default", default="current", help="the strategy the verdict judges (default: current)")
    p.add_argument("--context-window", type=int, default=32_000, help="context window in tokens (default 32000)")
    p.add_argument("--windows", help="several windows in one run, e.g. 16000,32000,64000 (overrides --context-window)")
    p.add_argument("--summarizer", default="extractive", help="extractive (default, offline) or a model spec")
    p.add_argument(
        "--pricing",
        default=PER_TRACE,
        help="per-trace (default: each trace as its own model's provider bills it) or a model name for all",
    )
    p.add_argument(
        "--pricing-model",
        default="claude-sonnet-4-5",
        help="the fixed pricing computed beside per-trace, and the price of traces whose model is unknown "
        "(default claude-sonnet-4-5)",
    )
    p.add_argument(
        "--tokenizer",
        choices=TOKENIZERS,
        default="real",
        help="what measures tokens: real (default: the trace's recorded usage, else Tekken), estimate (the "
        "harness estimator), tekken (offline BPE), usage (estimator scaled by recorded usage), "
        "anthropic (count_tokens; needs a key)",
    )
    p.add_argument(
        "--harness-count",
        choices=HARNESS_COUNTS,
        default="calibrated",
        help="what the replayed harness compacts by: calibrated (default: the replayed model reports "
        "--tokenizer's count as its usage, so the harness's counter calibrates as it would live) or "
        "estimate (no usage reported: the harness's chars/4 estimator alone)",
    )
    p.add_argument("--resamples", type=int, default=2_000, help="bootstrap resamples (default 2000)")
    p.add_argument(
        "--cluster",
        choices=("instance", "framework", "run"),
        default="instance",
        help="what the bootstrap resamples: task instances (default), frameworks, or single runs",
    )
    cache = p.add_argument_group("cost model (anthropic prompt caching; docs/benchmarks.md, 'Cost')")
    defaults = CacheSettings()
    cache.add_argument(
        "--cache-breakpoints",
        default=",".join(defaults.breakpoints),
        help="where cache_control goes: any of tools,system,compacted,last_message (default: all four, as the harness)",
    )
    cache.add_argument(
        "--cache-lookback",
        type=int,
        default=defaults.lookback_blocks,
        help=f"blocks checked for a hit before each breakpoint (default {defaults.lookback_blocks})",
    )
    cache.add_argument(
        "--cache-min-tokens", type=int, help="minimum cacheable prefix (default: by the pricing model's family)"
    )
    cache.add_argument(
        "--cache-ttl",
        type=float,
        default=defaults.ttl_s,
        help=f"explicit cache lifetime: 300 (5 minutes, writes 1.25x) or 3600 (1 hour, writes 2x) "
        f"(default {defaults.ttl_s:.0f})",
    )
    cache.add_argument(
        "--auto-cache",
        action="append",
        default=[],
        metavar="PROVIDER:key=value,...",
        help=f"override an automatic cache rule ({', '.join(AUTO_CACHE_RULES)}; keys min_tokens, step, "
        "ttl_s), e.g. deepseek:ttl_s=300",
    )
    cache.add_argument(
        "--cache-gap",
        type=float,
        help="seconds between calls for traces without timestamps (default: none, nothing expires)",
    )
    cache.add_argument(
        "--output-tokens",
        choices=("recorded", "estimate"),
        default=defaults.output_tokens,
        help="output tokens priced: the recorded usage where present (default) or the estimate",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the synthetic data (default 0)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the JSON document instead of the table")
    p.add_argument("--strict", action="store_true", help="stop at the first unusable trace or failed replay")
    p.add_argument("--local", action="store_true", help="run every task in this process instead of on Ray")
    p.add_argument("--address", help="Ray cluster to join (default: an embedded one, or RAY_ADDRESS)")
    live = p.add_argument_group("live mode")
    live.add_argument(
        "--live",
        type=Path,
        metavar="TASKS.jsonl",
        help="also run these batch-eval tasks under every strategy: solve rates, paired McNemar tests, "
        "billed cost; the plan is registered in --out/plan.json before the first task",
    )
    live.add_argument(
        "--model", help="model spec of the live runs (a task's own model wins); {seed} is replaced by the repeat's seed"
    )
    live.add_argument(
        "--repeats",
        type=int,
        default=1,
        metavar="N",
        help="runs of each task under each strategy, repeat r with seed --seed + r (default 1)",
    )
    live.add_argument(
        "--alpha", type=float, default=0.05, help="level of the paired tests and intervals (default 0.05)"
    )
    live.add_argument(
        "--margin",
        type=float,
        default=0.05,
        help="non-inferiority margin on the solve rate, default minus other (default 0.05)",
    )
    live.add_argument("--concurrency", type=int, default=2, help="live tasks at once per strategy (default 2)")


class BenchCommand:
    """`workingset bench <benchmark>`; today: compaction."""

    def add_parser(self, subparsers: argparse._SubParsersAction) -> None:
        bench = subparsers.add_parser("bench", help="benchmarks (compaction strategies)")
        kinds = bench.add_subparsers(dest="bench_command", required=True)
        compaction = kinds.add_parser(
            "compaction",
            help="replay trajectories under each compaction strategy and compare them",
            description=(__doc__ or "").splitlines()[0],
        )
        _add_arguments(compaction)

    def run(self, args: argparse.Namespace) -> int:
        if args.bench_command == "compaction":
            # The benchmark's machinery (numpy, scipy, plots) loads only to run it.
            from .command import run_compaction

            return run_compaction(args)
        raise ConfigError(f"unknown benchmark '{args.bench_command}'; known: compaction")


COMMAND = BenchCommand()
