"""Run every trace x strategy replay: on Ray (one remote task each) or in this process.

Evidence needs, the token check and the measuring counter's scale are strategy-independent,
so they are computed once per trace (on Ray: one task per trace, whose result every
strategy task of that trace receives by reference).
Summaries go through the Summarizer port: `extractive` runs inside each task; a model
spec runs on Ray through the CompactorPool, in-process through the model client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from agents.compaction import ExtractiveSummarizer, load_summarizer
from agents.errors import WorkingsetError
from agents.ports import Summarizer
from agents.settings import SummarizerSettings
from benchmarks.replay import replay_trace
from benchmarks.traces import Trace

from .cache_cost import MeteredSummarizer
from .cache_model import CacheSettings
from .evidence import TraceEvidence, trace_evidence
from .metrics import RunMetrics, measure_replay
from .presets import resolve_spec
from .pricing import PER_TRACE, Pricing, pricing_for
from .token_check import TraceTokens, trace_tokens
from .tokenizers import make_counter, trace_scale

__all__ = ["BenchConfig", "BenchFailed", "Measured", "PerTrace", "measure", "per_trace", "run_local", "run_on_ray"]

Progress = Callable[[RunMetrics], None]


class BenchFailed(WorkingsetError):
    """A replay failed and --strict asked to stop."""


class BenchConfig(BaseModel):
    strategies: list[str]
    baseline: str = "clear-then-summarize"
    context_window: int = Field(32_000, ge=1_000)
    windows: list[int] = Field(default_factory=list)  # several windows in one run; empty: context_window
    summarizer: str = "extractive"
    pricing: str = PER_TRACE  # the primary pricing: per-trace or a model name
    pricing_model: str = "claude-sonnet-4-5"  # the fixed pricing, and the price of unknown trace models
    resamples: int = Field(2_000, ge=0)
    seed: int = 0
    strict: bool = False
    tokenizer: str = "real"
    # calibrated: the replayed model reports the measuring counter's count as usage, so the
    # harness calibrates its count as it would live; estimate: it reports none (chars/4 alone)
    harness_count: str = "calibrated"
    cluster: str = "instance"
    cache: CacheSettings = Field(default_factory=CacheSettings)

    @property
    def all_windows(self) -> list[int]:
        return list(self.windows) or [self.context_window]

    def pricings(self, trace_model: str | None) -> list[Pricing]:
        """The primary pricing first, then the other one (per-trace and the fixed model)."""
        labels = [self.pricing, self.pricing_model if self.pricing == PER_TRACE else PER_TRACE]
        return [pricing_for(label, trace_model, self.pricing_model) for label in dict.fromkeys(labels)]


@dataclass(frozen=True)
class PerTrace:
    """The strategy-independent part of one trace's measurement, computed once."""

    evidence: TraceEvidence
    tokens: TraceTokens
    scale: float | None = None  # the measuring counter's per-trace scale


class Measured(BaseModel):
    """Everything the replays produced: one RunMetrics per trace x strategy, and per trace
    the token check (estimator against recorded usage and Tekken)."""

    runs: list[RunMetrics]
    tokens: list[TraceTokens]


async def measure(
    label: str,
    trace: Trace,
    evidence: TraceEvidence,
    spec: str,
    config: BenchConfig,
    summarizer: Summarizer | None = None,
    scale: float | None = None,
    window: int | None = None,
) -> RunMetrics:
    """Replay one trace under one strategy at one window (default: the config's) and
    measure it; a failure is a result with `error`."""
    started = time.perf_counter()
    window = window or config.context_window
    try:
        counter = make_counter(config.tokenizer, scale)
        meter = MeteredSummarizer(summarizer or ExtractiveSummarizer(), counter)
        replay = await replay_trace(
            trace,
            strategy=resolve_spec(spec, window),
            context_window=window,
            summarizer=meter,
            usage_counter=counter if config.harness_count == "calibrated" else None,
        )
        metrics = measure_replay(
            replay,
            evidence,
            trace_label=label,
            pricing_model=config.pricing_model,
            summarizer_calls=meter.calls,
            counter=counter,
            cache=config.cache,
            context_window=window,
            token_scale=scale,
            pricings=config.pricings(trace.model),
        )
        metrics.strategy = spec  # a preset keeps its own name
    except Exception as exc:  # one broken replay must not lose the others' results
        metrics = RunMetrics(trace=label, strategy=spec, context_window=window, error=f"{type(exc).__name__}: {exc}")
    metrics.seconds = time.perf_counter() - started
    return metrics


def _check(result: RunMetrics, config: BenchConfig) -> None:
    if result.error and config.strict:
        raise BenchFailed(f"{result.trace} under {result.strategy}: {result.error} (--strict)")


def _local_summarizer(config: BenchConfig) -> Summarizer | None:
    if config.summarizer == "extractive":
        return None
    return load_summarizer(SummarizerSettings(spec=config.summarizer))


async def _run_local(traces: Sequence[tuple[str, Trace]], config: BenchConfig, progress: Progress | None) -> Measured:
    summarizer = _local_summarizer(config)
    results, tokens = [], []
    for label, trace in traces:
        once = per_trace(label, trace, config.tokenizer)
        tokens.append(once.tokens)
        for window in config.all_windows:
            for spec in config.strategies:
                result = await measure(label, trace, once.evidence, spec, config, summarizer, once.scale, window)
                _check(result, config)
                results.append(result)
                if progress:
                    progress(result)
    return Measured(runs=results, tokens=tokens)


def run_local(traces: Sequence[tuple[str, Trace]], config: BenchConfig, progress: Progress | None = None) -> Measured:
    """Every task in this process, one after another (`--local`)."""
    return asyncio.run(_run_local(traces, config, progress))


def per_trace(label: str, trace: Trace, tokenizer: str = "estimate") -> PerTrace:
    """The strategy-independent part: evidence needs, the token check, the counter's scale."""
    return PerTrace(
        evidence=trace_evidence(trace), tokens=trace_tokens(label, trace), scale=trace_scale(tokenizer, trace)
    )


# -- Ray ---------------------------------------------------------------------------------


def _per_trace_task(label: str, trace: Trace, tokenizer: str) -> PerTrace:
    return per_trace(label, trace, tokenizer)


def _measure_task(
    label: str, trace: Trace, once: PerTrace, spec: str, config: dict, summarizer, window: int
) -> RunMetrics:
    return asyncio.run(
        measure(label, trace, once.evidence, spec, BenchConfig.model_validate(config), summarizer, once.scale, window)
    )


def _pool(config: BenchConfig):
    if config.summarizer == "extractive":
        return None
    from agents.settings import ClusterSettings
    from cluster.compactor_pool import start_compactor_pool

    cluster = ClusterSettings()
    return start_compactor_pool(
        SummarizerSettings(spec=config.summarizer),
        size=cluster.compactor_pool_size,
        max_queue=cluster.compactor_max_queue,
    )


def run_on_ray(
    traces: Sequence[tuple[str, Trace]],
    config: BenchConfig,
    progress: Progress | None = None,
    *,
    address: str | None = None,
) -> Measured:
    """One Ray task per trace x window x strategy (1 CPU each), results in submission order; the
    per-trace task (evidence, token check) runs once and its result goes by reference."""
    import ray

    from cluster.connection import connect

    connect(address)
    per_trace_task = ray.remote(num_cpus=1, max_retries=0)(_per_trace_task)
    measure_task = ray.remote(num_cpus=1, max_retries=0)(_measure_task)
    summarizer = _pool(config)
    dumped = config.model_dump()
    refs: list[ray.ObjectRef] = []
    order: dict[ray.ObjectRef, int] = {}
    once_refs: list[ray.ObjectRef] = []
    for label, trace in traces:
        trace_ref = ray.put(trace)
        once_ref = per_trace_task.remote(label, trace_ref, config.tokenizer)
        once_refs.append(once_ref)
        for window in config.all_windows:
            for spec in config.strategies:
                ref = measure_task.remote(label, trace_ref, once_ref, spec, dumped, summarizer, window)
                order[ref] = len(refs)
                refs.append(ref)
    results: list[RunMetrics | None] = [None] * len(refs)
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            result = ray.get(done[0])
            results[order[done[0]]] = result
            if progress:
                progress(result)
            _check(result, config)
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    tokens = [once.tokens for once in ray.get(once_refs)]
    return Measured(runs=[r for r in results if r is not None], tokens=tokens)
