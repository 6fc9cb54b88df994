"""The compaction-strategy benchmark: replay agent trajectories under each strategy and
compare tokens, cache-aware cost and the evidence each working set keeps.

    workingset bench compaction [--traces PATH] [--strategies a,b:k=v,...] [--baseline NAME]
                                [--context-window N] [--summarizer SPEC] [--pricing-model NAME]
                                [--out DIR] [--json] [--strict] [--local] [--address ADDR]
                                [--synthetic N] [--seed N] [--resamples N]
                                [--live TASKS.jsonl --model SPEC [--concurrency N]]

Without `--traces` the data are SYNTHETIC (`synthetic.py`: deterministic generated
trajectories, labelled so in every output); `--traces` takes trace files, folders and
Workingset trace dirs (`benchmarks/traces`). `raw` and the baseline are always run: they
are the references of the paired ratios. Outputs in `--out` (default
bench-results/compaction): results.json, report.md, pareto.png, tokens_per_step.png; the
terminal gets the summary table (or, with `--json`, the JSON document). `--live` also
runs batch-eval tasks once per strategy (`live.py`). Exit codes: 0 all replays ran, 1
some replay failed (named in the outputs), 2 a usage error (unknown strategy or bad
parameter, unusable trace with --strict, no usable trace).

Each trace x strategy is one task (a Ray remote function; `--local`: in this process).
The replay (`benchmarks/replay.py`) drives Workingset's real Session with the recorded
replies and tool results, so before every recorded model call the working set is
compiled from the history so far under the strategy, exactly as in a live run. `raw`
runs without per-result clipping; every other strategy with the default per-result
budget (`tools.result_max_tokens`, 8,000 tokens). The compact budget is
(context window - 4,096 max output) x 0.8; the default context window is 32,000 tokens
(budget 22,323), small enough that compaction matters on these trajectories.

## Metrics

All token figures are Workingset's estimates (`agents/tokens.py`: characters / 4 for
text, / 3.2 for JSON, plus per-message and per-block framing). A *call* is one model
call the recorded agent made; a replay's extra call after the recording ends is not
measured.

- **Input tokens per call**: the estimate of the compiled request (system prompt + tool
  schemas + messages). **Cumulative** = their sum over the trace's calls; **peak** = their
  maximum.
- **Cache-aware cost**: prompt caching is simulated per call. The cached prefix of call k
  is its longest common prefix with call k-1, in tokens, compared message by message:
  system prompt + tool schemas first (both equal, or no prefix at all), then whole
  messages while equal. The prefix is billed as a cache read (0.1x the base input
  price), the rest as a cache write (1.25x); the first call writes everything. Output
  tokens are not counted: every strategy is replayed with the same recorded replies, so
  they are the same for all. Cache lifetime, minimum cacheable size and breakpoint
  limits are ignored. Prices: `agents/compaction/ledger.py` (input USD per million
  tokens by model name; `--pricing-model`, default claude-sonnet-4-5 = $3), one model
  for every trace, since the recorded models are not in the table and only ratios are
  compared.
- **Summarizer calls and their share of cost**: every Summarizer call is metered. Its
  input is what a model summarizer is sent (summarizer system prompt + the older
  history + the handoff request), its output the summary returned; its cost is input
  at 1x + output at 5x the base input price (no caching). This applies to `extractive`
  too, as if a model had written the same summary. **Cost** = calls' cache-aware cost +
  summarizer cost; **share** = summarizer cost / cost.
- **Compaction events**: the applied `compaction` events of the run, by kind (`clear`,
  `summary`, ...), and the failed ones.
- **Evidence items** of a text: paths (`a/b`, at least one `/`, ending on a letter or
  digit), file names with a known extension (`fields.py`), dotted identifiers
  (`self.root.opts`), CamelCase / lowerCamel identifiers and snake_case identifiers
  (all of >= 4 characters), quoted strings of 6-80 characters (`'...'` or `"..."`, one
  line), error messages (the rest of the line after `SomethingError:` or
  `SomethingException:`, 6-120 characters), and numbers of >= 3 digits. An item
  *occurs* in a text when it appears there as a whole token (an edge of the item that
  is a letter, digit or `_` must not touch another one).
- **Needed evidence** of call k: the items of the action the model produced at call k
  (its text + the input values of its tool uses) whose first occurrence in the
  recorded conversation (task, assistant text, tool-use inputs, tool results, in order)
  is in a tool result before that action. Items the task or the agent itself wrote
  first are not needed evidence.
- **Grounding recall**: of the needed items of every call, the fraction that occurs in
  the working set compiled for that call (system prompt + every block's text: text,
  tool-use name and inputs, tool-result bodies). Pooled over the trace's calls
  (visible items / needed items); undefined for a trace with no needed items.
- **Recoverable recall**: the fraction that is visible, or for which some earlier tool
  result holding the item is still reachable: a block with that tool_use id is kept
  (the ToolUse or its result, even cleared or clipped) or the id is named in the text
  (a `Recall(id="...")` marker, a summary's provenance). Recall returns the body.
- **Oracle ratio**: the oracle working set of call k keeps only what grounds the action:
  the request prefix (system + tools) + the task message + one assistant message with
  the tool uses of the needed items' first producing results + one user message with
  those results, unclipped. Oracle ratio = cumulative input tokens / cumulative oracle
  tokens (1.0 would be a working set as small as the evidence needs).

## Statistics

Per trace, each strategy is paired with `raw` and with the baseline (`--baseline`,
default clear-then-summarize): ratio = metric(strategy) / metric(reference), for
cumulative tokens, cost and peak tokens. Across traces the report gives the median
ratio with a 95% percentile-bootstrap interval (2,000 resamples of traces, seeded with
`--seed`: the same inputs give the same intervals). Recalls are summarised by their
mean over traces with the same bootstrap, and also as the mean paired difference
from the baseline. The report adds pooled ratios (sum over traces / sum over traces),
where long traces weigh more than in the median.
"""
