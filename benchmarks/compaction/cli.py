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
from .presets import PRESETS
from .tokenizers import TOKENIZERS

__all__ = ["COMMAND", "BenchCommand"]

DEFAULT_OUT = Path("bench-results") / "compaction"
DEFAULT_SYNTHETIC = 8


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--traces", action="append", type=Path, metavar="PATH",
                   help="trace file, folder or Workingset trace dir (repeatable); default: synthetic trajectories")
    p.add_argument("--synthetic", type=int, default=DEFAULT_SYNTHETIC, metavar="N",
                   help=f"how many synthetic trajectories without --traces (default {DEFAULT_SYNTHETIC})")
    p.add_argument("--strategies", help="comma-separated strategy specs or peer preset names, e.g. raw,window:last=10,"
                   "swe-agent-last5 (default: all registered strategies)")
    p.add_argument("--presets", action="store_true", help=f"also run every peer preset ({', '.join(PRESETS)})")
    p.add_argument("--baseline", default="clear-then-summarize", help="second reference of the paired ratios (default: clear-then-summarize)")
    p.add_argument("--context-window", type=int, default=32_000, help="context window in tokens (default 32000)")
    p.add_argument("--summarizer", default="extractive", help="extractive (default, offline) or a model spec")
    p.add_argument("--pricing-model", default="claude-sonnet-4-5", help="model whose input price is used (default claude-sonnet-4-5)")
    p.add_argument("--tokenizer", choices=TOKENIZERS, default="estimate",
                   help="what measures tokens: the harness estimator (default), tekken (offline BPE), usage "
                        "(estimator scaled by each trace's recorded usage), anthropic (count_tokens; needs a key)")
    p.add_argument("--resamples", type=int, default=2_000, help="bootstrap resamples (default 2000)")
    p.add_argument("--cluster", choices=("instance", "framework", "run"), default="instance",
                   help="what the bootstrap resamples: task instances (default), frameworks, or single runs")
    cache = p.add_argument_group("cost model (anthropic prompt caching; README, 'Cost')")
    defaults = CacheSettings()
    cache.add_argument("--cache-breakpoints", default=",".join(defaults.breakpoints),
                       help="where cache_control goes: any of tools,system,compacted,last_message (default: all four, as the harness)")
    cache.add_argument("--cache-lookback", type=int, default=defaults.lookback_blocks,
                       help=f"blocks checked for a hit before each breakpoint (default {defaults.lookback_blocks})")
    cache.add_argument("--cache-min-tokens", type=int, help="minimum cacheable prefix (default: by the pricing model's family)")
    cache.add_argument("--cache-ttl", type=float, default=defaults.ttl_s, help=f"cache lifetime in seconds (default {defaults.ttl_s:.0f})")
    cache.add_argument("--cache-gap", type=float,
                       help="seconds between calls for traces without timestamps (default: none, nothing expires)")
    cache.add_argument("--output-tokens", choices=("recorded", "estimate"), default=defaults.output_tokens,
                       help="output tokens priced: the recorded usage where present (default) or the estimate")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the synthetic data (default 0)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the JSON document instead of the table")
    p.add_argument("--strict", action="store_true", help="stop at the first unusable trace or failed replay")
    p.add_argument("--local", action="store_true", help="run every task in this process instead of on Ray")
    p.add_argument("--address", help="Ray cluster to join (default: an embedded one, or RAY_ADDRESS)")
    live = p.add_argument_group("live mode")
    live.add_argument("--live", type=Path, metavar="TASKS.jsonl",
                      help="also run these batch-eval tasks once per strategy: pass rate and paired flips")
    live.add_argument("--model", help="model spec of the live runs (a task's own model wins)")
    live.add_argument("--concurrency", type=int, default=2, help="live tasks at once per strategy (default 2)")


class BenchCommand:
    """`workingset bench <benchmark>`; today: compaction."""

    def add_parser(self, subparsers: argparse._SubParsersAction) -> None:
        bench = subparsers.add_parser("bench", help="benchmarks (compaction strategies)")
        kinds = bench.add_subparsers(dest="bench_command", required=True)
        compaction = kinds.add_parser(
            "compaction", help="replay trajectories under each compaction strategy and compare them",
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
