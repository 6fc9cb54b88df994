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
from agents.directories import output_directory
from agents.errors import ConfigError
from agents.visible import reveal
from benchmarks.traces import FORMATS
from cluster.console import claim_stdout

from .cache_model import CacheSettings
from .data import Inputs, load_inputs, synthetic_inputs
from .figures import write_plots
from .live import run_live
from .presets import PRESETS, resolve_spec
from .provenance import provenance
from .report import build_document, markdown_report
from .runner import BenchConfig, run_local, run_on_ray
from .stats import framework_breakdown, summarize_strategies
from .terminal import print_live, print_table
from .token_check import family_tokens
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


def _validate(specs: list[str]) -> None:
    for spec in specs:
        try:
            make_strategy(resolve_spec(spec))
        except ConfigError as exc:
            raise ConfigError(f"--strategies: {exc}") from exc
        except (TypeError, ValueError) as exc:
            known = ", ".join(sorted(STRATEGIES))
            raise ConfigError(f"--strategies: bad strategy spec '{spec}' ({exc}); known: {known}") from exc


def _strategies(args: argparse.Namespace) -> list[str]:
    specs = parse_strategies(args.strategies)
    if args.presets:
        specs += list(PRESETS)
    for required in (args.baseline, "raw"):  # the references of every paired ratio
        if required not in specs:
            specs.insert(0, required)
    specs = list(dict.fromkeys(specs))
    _validate(specs)
    return ["raw", *(s for s in specs if s != "raw")]


def _config(args: argparse.Namespace) -> BenchConfig:
    if args.context_window < 1_000:
        raise ConfigError(f"--context-window {args.context_window} is too small; give at least 1000 tokens")
    if args.resamples < 0 or args.synthetic < 1 or args.concurrency < 1:
        raise ConfigError("--resamples must be >= 0, --synthetic and --concurrency >= 1")
    if args.live is not None and not args.live.is_file():
        raise ConfigError(f"--live {args.live}: no such task file")
    check_tokenizer(args.tokenizer)
    return BenchConfig(
        strategies=_strategies(args), baseline=args.baseline, context_window=args.context_window,
        summarizer=args.summarizer, pricing_model=args.pricing_model, resamples=args.resamples,
        seed=args.seed, strict=args.strict, tokenizer=args.tokenizer, cluster=args.cluster, cache=_cache(args),
    )


def _cache(args: argparse.Namespace) -> CacheSettings:
    points = tuple(p.strip() for p in args.cache_breakpoints.split(",") if p.strip())
    try:
        return CacheSettings(breakpoints=points, lookback_blocks=args.cache_lookback, min_cacheable_tokens=args.cache_min_tokens,
                             ttl_s=args.cache_ttl, default_gap_s=args.cache_gap, output_tokens=args.output_tokens)
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
    inputs = _inputs(args)
    # Before any replay: the commit and trace hashes are those of what this run reads.
    origin = provenance([] if inputs.synthetic else [t.path for _, t in inputs.traces])
    err = Console(stderr=True)
    for path, reason in inputs.skipped:
        print(reveal(f"skipping {path}: {reason}"), file=sys.stderr)
    for path in inputs.ignored:
        print(reveal(f"skipping {path}: not a trace in a format the benchmark reads ({SUPPORTED})"), file=sys.stderr)
    total = len(inputs.traces) * len(config.strategies)
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
    runs = measured.runs
    frameworks = {label: t.source for label, t in inputs.traces}
    clusters = None if config.cluster == "run" else {
        label: (t.task_id if config.cluster == "instance" else t.source) for label, t in inputs.traces}
    summaries = summarize_strategies(runs, config.strategies, baseline=config.baseline,
                                     resamples=config.resamples, seed=config.seed, clusters=clusters)
    wall = time.perf_counter() - started
    doc = build_document(inputs, config, runs, summaries, wall_time_s=wall, runtime=runtime,
                         frameworks=framework_breakdown(runs, config.strategies, frameworks),
                         tokens=measured.tokens, families=family_tokens(measured.tokens), origin=origin)
    if args.live is not None:
        doc["live"] = _live(args, config, err)
        doc["wall_time_s"] = round(time.perf_counter() - started, 2)
    args.out.mkdir(parents=True, exist_ok=True)
    doc["figures"] = write_plots(doc, args.out)
    (args.out / "results.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    (args.out / "report.md").write_text(markdown_report(doc), encoding="utf-8")
    if args.json:
        out.write(json.dumps(doc, indent=1) + "\n")
    else:
        console = Console()
        if not console.is_terminal:
            console = Console(width=180)  # piped or captured: do not squeeze the table to 80 columns
        print_table(doc, console)
        print_live(doc, console)
    print(f"wrote {args.out / 'report.md'}, {args.out / 'results.json'} and the figures in {args.out}", file=sys.stderr)
    return 0 if all(r.error is None for r in runs) else 1


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


