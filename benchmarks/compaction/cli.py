"""`workingset bench compaction ...`: the command (see the package docstring).

Joins the CLI through the `workingset.commands` entry point `bench`; `compaction` is a
subcommand of `bench`. A user error (unknown strategy or bad parameter, bad context
window, a trace that cannot be used under --strict) is a ConfigError: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agents.compaction import STRATEGIES, make_strategy
from agents.directories import output_directory
from agents.errors import ConfigError
from agents.visible import reveal
from benchmarks.traces import FORMATS

from .cache_model import CacheSettings
from .data import Inputs, load_inputs, synthetic_inputs
from .live import run_live
from .outputs import write_outputs
from .presets import FAMILIES, PRESETS, family_names, resolve_spec, sweep_strategies
from .pricing import AUTO_CACHE_RULES, PER_TRACE, AutoCacheRule, pricing_for
from .provenance import provenance
from .runner import BenchConfig, run_local, run_on_ray
from .terminal import print_live, print_table
from .tokenizers import TOKENIZERS, check_tokenizer

__all__ = ["COMMAND", "BenchCommand", "parse_strategies"]

DEFAULT_OUT = Path("bench-results") / "compaction"
DEFAULT_SYNTHETIC = 8
SUPPORTED = "supported: " + ", ".join(f.name for f in FORMATS) + ", workingset-trace dir"


def parse_strategies(text: str | None) -> list[str]:
    """`a,b:k=1,k2=2,c` -> [a, b:k=1,k2=2, c]: a piece holding `=` but no `:` continues the
    previous spec's parameters. Default: every registered strategy."""
    if not text:
        return sorted(STRATEGIES)
    specs: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if "=" in piece and ":" not in piece and specs:
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    return specs


def _validate(specs: list[str], windows: list[int]) -> None:
    for spec in specs:
        try:
            for window in windows:
                make_strategy(resolve_spec(spec, window))
        except ConfigError as exc:
            raise ConfigError(f"--strategies: {exc}") from exc
        except (TypeError, ValueError) as exc:
            known = ", ".join(sorted(STRATEGIES))
            raise ConfigError(f"--strategies: bad strategy spec '{spec}' ({exc}); known: {known}") from exc


def _strategies(args: argparse.Namespace, windows: list[int]) -> list[str]:
    specs = [] if (args.sweep and not args.strategies) else parse_strategies(args.strategies)
    if args.presets:
        specs += list(PRESETS)
    if args.sweep:
        specs += sweep_strategies(family_names(args.sweep))
    for required in (args.default, args.baseline, "raw"):  # the references of every paired ratio and the verdict
        if required not in specs:
            specs.insert(0, required)
    specs = list(dict.fromkeys(specs))
    _validate(specs, windows)
    return ["raw", *(s for s in specs if s != "raw")]


def _windows(args: argparse.Namespace) -> list[int]:
    if not args.windows:
        return [args.context_window]
    try:
        windows = [int(w) for w in args.windows.split(",") if w.strip()]
    except ValueError as exc:
        raise ConfigError(f"--windows {args.windows}: give window sizes in tokens, e.g. 16000,32000,64000") from exc
    return list(dict.fromkeys(windows))


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--traces", action="append", type=Path, metavar="PATH",
                   help="trace file, folder or Workingset trace dir (repeatable); default: synthetic trajectories")
    p.add_argument("--synthetic", type=int, default=DEFAULT_SYNTHETIC, metavar="N",
                   help=f"how many synthetic trajectories without --traces (default {DEFAULT_SYNTHETIC})")
    p.add_argument("--strategies", help="comma-separated strategy specs or peer preset names, e.g. raw,window:last=10,"
                   "swe-agent-last5 (default: all registered strategies)")
    p.add_argument("--presets", action="store_true", help=f"also run every peer preset ({', '.join(PRESETS)})")
    p.add_argument("--sweep", metavar="FAMILY", help=f"run peer families over their own grids, with the default's tuning "
                   f"grid: all, or any of {', '.join(FAMILIES)} (comma-separated)")
    p.add_argument("--baseline", default="clear-then-summarize", help="second reference of the paired ratios (default: clear-then-summarize)")
    p.add_argument("--default", default="current", help="the strategy the verdict judges (default: current)")
    p.add_argument("--context-window", type=int, default=32_000, help="context window in tokens (default 32000)")
    p.add_argument("--windows", help="several windows in one run, e.g. 16000,32000,64000 (overrides --context-window)")
    p.add_argument("--summarizer", default="extractive", help="extractive (default, offline) or a model spec")
    p.add_argument("--pricing", default=PER_TRACE,
                   help="per-trace (default: each trace as its own model's provider bills it) or a model name for all")
    p.add_argument("--pricing-model", default="claude-sonnet-4-5",
                   help="the fixed pricing computed beside per-trace, and the price of traces whose model is unknown "
                        "(default claude-sonnet-4-5)")
    p.add_argument("--tokenizer", choices=TOKENIZERS, default="real",
                   help="what measures tokens: real (default: the trace's recorded usage, else Tekken), estimate (the "
                        "harness estimator), tekken (offline BPE), usage (estimator scaled by recorded usage), "
                        "anthropic (count_tokens; needs a key)")
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
    cache.add_argument("--cache-ttl", type=float, default=defaults.ttl_s,
                       help=f"explicit cache lifetime: 300 (5 minutes, writes 1.25x) or 3600 (1 hour, writes 2x) "
                            f"(default {defaults.ttl_s:.0f})")
    cache.add_argument("--auto-cache", action="append", default=[], metavar="PROVIDER:key=value,...",
                       help=f"override an automatic cache rule ({', '.join(AUTO_CACHE_RULES)}; keys min_tokens, step, "
                            "ttl_s), e.g. deepseek:ttl_s=300")
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


def _config(args: argparse.Namespace) -> BenchConfig:
    windows = _windows(args)
    if min(windows) < 5_000:
        raise ConfigError(f"context window {min(windows)} is too small; give at least 5000 tokens")
    if args.resamples < 0 or args.synthetic < 1 or args.concurrency < 1:
        raise ConfigError("--resamples must be >= 0, --synthetic and --concurrency >= 1")
    if args.live is not None and not args.live.is_file():
        raise ConfigError(f"--live {args.live}: no such task file")
    check_tokenizer(args.tokenizer)
    pricing_for(args.pricing, None, args.pricing_model)  # an unknown model name is a usage error now
    pricing_for(args.pricing_model, None, args.pricing_model)
    return BenchConfig(
        strategies=_strategies(args, windows), baseline=args.baseline, context_window=windows[0],
        windows=windows if len(windows) > 1 else [], summarizer=args.summarizer, pricing=args.pricing,
        pricing_model=args.pricing_model, resamples=args.resamples, seed=args.seed, strict=args.strict,
        tokenizer=args.tokenizer, cluster=args.cluster, cache=_cache(args),
    )


def _auto_overrides(items: list[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for item in items:
        provider, _, pairs = item.partition(":")
        if provider not in AUTO_CACHE_RULES:
            raise ConfigError(f"--auto-cache {item}: unknown provider; known: {', '.join(AUTO_CACHE_RULES)}")
        try:
            values = {k.strip(): float(v) for k, v in (pair.split("=", 1) for pair in pairs.split(",") if pair.strip())}
        except ValueError as exc:
            raise ConfigError(f"--auto-cache {item}: give key=value pairs of min_tokens, step, ttl_s") from exc
        unknown = set(values) - {"min_tokens", "step", "ttl_s"}
        if unknown:
            raise ConfigError(f"--auto-cache {item}: unknown key {', '.join(sorted(unknown))}; known: min_tokens, step, ttl_s")
        try:
            AutoCacheRule.model_validate({**AUTO_CACHE_RULES[provider].model_dump(), **values})
        except ValueError as exc:
            raise ConfigError(f"--auto-cache {item}: min_tokens and step must be >= 1, ttl_s > 0") from exc
        out[provider] = values
    return out


def _cache(args: argparse.Namespace) -> CacheSettings:
    points = tuple(p.strip() for p in args.cache_breakpoints.split(",") if p.strip())
    try:
        return CacheSettings(breakpoints=points, lookback_blocks=args.cache_lookback, min_cacheable_tokens=args.cache_min_tokens,
                             ttl_s=args.cache_ttl, default_gap_s=args.cache_gap, output_tokens=args.output_tokens,
                             auto=_auto_overrides(args.auto_cache))
    except ValueError as exc:
        first = str(exc).splitlines()
        raise ConfigError(f"cost model settings: {' '.join(first[1:3]) if len(first) > 2 else exc}") from exc


def _inputs(args: argparse.Namespace) -> Inputs:
    if not args.traces:
        return synthetic_inputs(args.synthetic, args.seed)
    inputs = load_inputs(args.traces, strict=args.strict)
    if not inputs.traces:
        reasons = "; ".join(f"{p}: {r}" for p, r in inputs.skipped) or "no trace files found"
        raise ConfigError(f"no usable traces in {', '.join(map(str, args.traces))} ({reasons})")
    return inputs


def run_compaction(args: argparse.Namespace) -> int:
    started = time.perf_counter()  # the wall time covers loading, replays (and Ray start-up) and statistics
    output_directory(args.out, "--out")  # before the run's work, not after it
    config = _config(args)
    inputs = _inputs(args)
    # Before any replay: the commit and trace hashes are those of what this run reads.
    origin = provenance([] if inputs.synthetic else [t.path for _, t in inputs.traces])
    err = Console(stderr=True)
    for path, reason in inputs.skipped:
        print(reveal(f"skipping {path}: {reason}"), file=sys.stderr)
    for path in inputs.ignored:
        print(reveal(f"skipping {path}: not a trace in a format the benchmark reads ({SUPPORTED})"), file=sys.stderr)
    total = len(inputs.traces) * len(config.strategies) * len(config.all_windows)
    # A trace's label is a file name: shown revealed, and never read as markup.
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task("replaying", total=total)

        def advance(result) -> None:
            bar.update(task, advance=1, description=reveal(f"{result.trace[:40]} · {result.strategy}", one_line=True))

        if args.local:
            measured, runtime = run_local(inputs.traces, config, advance), "in-process (--local)"
        else:
            measured, runtime = run_on_ray(inputs.traces, config, advance, address=args.address), "Ray"
    doc = write_outputs(args.out, inputs, config, measured, started=started, runtime=runtime, origin=origin,
                        default=args.default, live=(lambda: _live(args, config, err)) if args.live is not None else None)
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        console = Console()
        if not console.is_terminal:
            console = Console(width=180)  # piped or captured: do not squeeze the table to 80 columns
        print_table(doc, console)
        print_live(doc, console)
    print(f"wrote {args.out / 'report.md'}, {args.out / 'results.json'} and the figures in {args.out}", file=sys.stderr)
    return 0 if all(r.error is None for r in measured.runs) else 1


def _live(args: argparse.Namespace, config: BenchConfig, err: Console) -> dict:
    # A task id comes from the task file: shown revealed, and never read as markup.
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task("live tasks", total=None)

        def finished(spec: str, task_id: str, status: str) -> None:
            bar.update(task, advance=1, description=reveal(f"live · {spec} · {task_id}: {status}", one_line=True))

        return run_live(
            args.live, strategies=config.strategies, baseline=config.baseline, out=args.out, model=args.model,
            summarizer=config.summarizer, local=args.local, address=args.address, concurrency=args.concurrency,
            strict=args.strict, resamples=config.resamples, seed=config.seed, progress=finished,
            on_start=lambda total: bar.update(task, total=total),
        )


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
            return run_compaction(args)
        raise ConfigError(f"unknown benchmark '{args.bench_command}'; known: compaction")


COMMAND = BenchCommand()
