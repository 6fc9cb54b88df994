"""`workingset bench compaction`, run: the arguments cli.py parsed become a BenchConfig,
the traces are replayed under each strategy (here or on Ray), and the report, the
figures and the table are written. Imported only when the benchmark runs: it brings
numpy, scipy and matplotlib along.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agents.compaction import STRATEGIES, make_strategy
from agents.errors import ConfigError
from agents.settings import output_directory
from agents.visible import reveal
from benchmarks.traces import FORMATS
from cluster.terminal import claim_stdout

from .cache_model import CacheSettings
from .data import Inputs, load_inputs, synthetic_inputs
from .live import LiveExperiment, prepare_live
from .outputs import write_outputs
from .presets import PRESETS, family_names, resolve_spec, sweep_strategies
from .pricing import AUTO_CACHE_RULES, AutoCacheRule, pricing_for
from .provenance import provenance
from .runner import BenchConfig, run_local, run_on_ray
from .terminal import print_live, print_table
from .tokenizers import check_tokenizer

__all__ = ["parse_strategies", "run_compaction"]

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
        strategies=_strategies(args, windows),
        baseline=args.baseline,
        context_window=windows[0],
        windows=windows if len(windows) > 1 else [],
        summarizer=args.summarizer,
        pricing=args.pricing,
        pricing_model=args.pricing_model,
        resamples=args.resamples,
        seed=args.seed,
        strict=args.strict,
        tokenizer=args.tokenizer,
        harness_count=args.harness_count,
        cluster=args.cluster,
        cache=_cache(args),
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
            raise ConfigError(
                f"--auto-cache {item}: unknown key {', '.join(sorted(unknown))}; known: min_tokens, step, ttl_s"
            )
        try:
            AutoCacheRule.model_validate({**AUTO_CACHE_RULES[provider].model_dump(), **values})
        except ValueError as exc:
            raise ConfigError(f"--auto-cache {item}: min_tokens and step must be >= 1, ttl_s > 0") from exc
        out[provider] = values
    return out


def _cache(args: argparse.Namespace) -> CacheSettings:
    points = tuple(p.strip() for p in args.cache_breakpoints.split(",") if p.strip())
    try:
        return CacheSettings(
            breakpoints=points,
            lookback_blocks=args.cache_lookback,
            min_cacheable_tokens=args.cache_min_tokens,
            ttl_s=args.cache_ttl,
            default_gap_s=args.cache_gap,
            output_tokens=args.output_tokens,
            auto=_auto_overrides(args.auto_cache),
        )
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
    out = claim_stdout() if args.json else sys.stdout  # the JSON document alone: Ray prints to stdout too
    output_directory(args.out, "--out")  # before the run's work, not after it
    config = _config(args)
    experiment = _register(args, config) if args.live is not None else None  # before any replay or task
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
    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("replaying", total=total)

        def advance(result) -> None:
            bar.update(task, advance=1, description=reveal(f"{result.trace[:40]} · {result.strategy}", one_line=True))

        if args.local:
            measured, runtime = run_local(inputs.traces, config, advance), "in-process (--local)"
        else:
            measured, runtime = run_on_ray(inputs.traces, config, advance, address=args.address), "Ray"
    doc = write_outputs(
        args.out,
        inputs,
        config,
        measured,
        started=started,
        runtime=runtime,
        origin=origin,
        default=args.default,
        live=(lambda: _live(args, config, experiment, err)) if experiment else None,
    )
    if args.json:
        out.write(json.dumps(doc, indent=1) + "\n")
    else:
        console = Console()
        if not console.is_terminal:
            console = Console(width=180)  # piped or captured: do not squeeze the table to 80 columns
        print_table(doc, console)
        print_live(doc, console)
    print(f"wrote {args.out / 'report.md'}, {args.out / 'results.json'} and the figures in {args.out}", file=sys.stderr)
    return 0 if all(r.error is None for r in measured.runs) else 1


def _register(args: argparse.Namespace, config: BenchConfig) -> LiveExperiment:
    return prepare_live(
        args.live,
        arms=config.strategies,
        default=args.default,
        out=args.out,
        model=args.model,
        repeats=args.repeats,
        seed=config.seed,
        alpha=args.alpha,
        margin=args.margin,
        resamples=config.resamples,
        strict=args.strict,
        argv=sys.argv,
    )


def _live(args: argparse.Namespace, config: BenchConfig, experiment: LiveExperiment, err: Console) -> dict:
    # A task id comes from the task file: shown revealed, and never read as markup.
    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("live tasks", total=None)

        def finished(arm: str, task_id: str, status: str) -> None:
            bar.update(task, advance=1, description=reveal(f"live · {arm} · {task_id}: {status}", one_line=True))

        return experiment.run(
            summarizer=config.summarizer,
            local=args.local,
            address=args.address,
            concurrency=args.concurrency,
            pricing=config.pricing,
            pricing_model=config.pricing_model,
            progress=finished,
            on_start=lambda total: bar.update(task, total=total),
        )
