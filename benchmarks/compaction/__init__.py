"""The compaction-strategy benchmark: replay agent trajectories under each strategy and
compare tokens, cache-aware cost and the evidence each working set keeps.

    workingset bench compaction [--traces PATH] [--strategies a,b:k=v,preset,...] [--presets]
                                [--sweep all|FAMILY,...] [--default SPEC] [--baseline NAME]
                                [--context-window N | --windows N,N,...] [--summarizer SPEC]
                                [--pricing per-trace|MODEL] [--pricing-model NAME]
                                [--tokenizer real|estimate|tekken|usage|anthropic]
                                [--cache-breakpoints LIST] [--cache-lookback N] [--cache-min-tokens N]
                                [--cache-ttl 300|3600] [--cache-gap S] [--auto-cache PROVIDER:k=v,...]
                                [--output-tokens recorded|estimate]
                                [--cluster instance|framework|run] [--resamples N] [--seed N]
                                [--out DIR] [--json] [--strict] [--local] [--address ADDR]
                                [--synthetic N] [--live TASKS.jsonl --model SPEC [--repeats N]
                                                 [--alpha A] [--margin M] [--concurrency N]]

Without `--traces` the data are SYNTHETIC (`synthetic.py`: deterministic generated
trajectories, labelled so in every output); `--traces` takes trace files, folders and
Workingset trace dirs (`benchmarks/traces`). `raw` and the baseline are always run: they
are the references of the paired ratios. Outputs in `--out` (default
bench-results/compaction): results.json (settings, provenance — commit, versions, argv,
SHA-256 of every trace — every run and summary), report.md (with how to rerun and the
verdict, `verdict.py`), pareto.png and tokens_per_step.png, and sweep.png when a peer
family ran, each with a PDF beside it (`figures/`); with `--windows` each window's files
go to `window-N/` and the top report holds the verdict (`outputs.py`). The terminal gets
the summary table and the verdict (or, with `--json`, the JSON document). `--live` also
runs batch-eval tasks under every strategy, `--repeats` times, as an experiment whose plan
is registered in `--out/plan.json` before its first task (`live.py`). Exit codes: 0 all replays ran, 1
some replay failed (named in the outputs), 2 a usage error (unknown strategy or bad
parameter, unusable trace with --strict, no usable trace).

Each trace x strategy is one task (a Ray remote function; `--local`: in this process).
The replay (`benchmarks/replay.py`) drives Workingset's real Session with the recorded
replies and tool results, so before every recorded model call the working set is
compiled from the history so far under the strategy, exactly as in a live run. `raw`
runs without per-result clipping; every other strategy with the default per-result
budget (`tools.result_max_tokens`, 8,000 tokens). The compact budget is
(context window - 4,096 max output) x 0.8; the default context window is 32,000 tokens
(budget 22,323), small enough that compaction matters on these trajectories. Peer
presets (`presets.py`) are named specs over the strategies with their sources.

## Metrics

A *call* is one model call the recorded agent made (one assistant message of the trace);
the extra call a replay makes after the recording ends is not measured. Tokens are counted
by the measuring counter (`--tokenizer`, default `real`: the estimator scaled by the
trace's recorded usage where it has any, else Tekken; `estimate` is the harness's own
`agents/tokens.py`, characters / 4 for text, / 3.2 for JSON, + 4 per message, + 3 per
block, + 8 per tool schema); the replayed harness always decides *when* to compact with
its own estimator, as it would live.

- **Input tokens per call**: the count of the compiled request — system prompt + tool
  schemas + messages. **Cumulative** = their sum over the trace's calls, **peak** = their
  maximum.
- **Infeasible call**: a call whose input tokens exceed the context window minus the
  output reserve (4,096 tokens, the replay's `agent.max_output_tokens`): a real API would
  refuse it. Counted per run (`infeasible_calls`, `first_infeasible_call`) and per
  strategy (calls, traces). A strategy with at least one is marked ⚠ in the table, the
  report and the plots, and is left off the Pareto front. Replayed models never refuse,
  so such a run goes on; its later figures describe requests that could not be sent.
- **Pricing** (`--pricing per-trace`, the default): each trace is priced as its own
  recorded model's provider bills it (`pricing.py`: list prices with their sources, output
  at the model's own output price; a model the tables do not know is priced as
  `--pricing-model` and named so); `--pricing MODEL` prices every trace as MODEL. Both
  per-trace and the fixed model are always computed (`runs[].costs`). The cache rule
  follows the provider: *explicit* (Anthropic, below), *automatic* (OpenAI, DeepSeek,
  Gemini: every prefix a request sent is cached, no write premium, a later request reads
  the longest one still live at the model's cached-input price, in the provider's steps
  and above its minimum: OpenAI 1,024 tokens in 128-token steps, DeepSeek 64-token units,
  Gemini 3 Pro 4,096 tokens; `auto_cache.py`, `--auto-cache`), or *none* (GPT-4, Llama 4
  Maverick as recorded). The report sets the cached share each family's raw replay is
  predicted to read beside the share its recorded usage billed, as a check.
- **Cost** (the explicit rule; every parameter has a flag). The prompt is a sequence of
  blocks in the API's order: each tool schema, the system prompt, each content block of
  each message (a block's tokens: its body + 3; the first block of a message also + 4).
  A *breakpoint* is a block with `cache_control`; by default where Workingset's Anthropic
  provider puts them: the last tool schema, the system prompt, the last block of the last
  message (`--cache-breakpoints tools,system,last_message`). A cache *entry* is the hash
  of the prefix ending at a block. For call k at time t_k:
  1. *read*: for each breakpoint p, the positions p, p−1, …, p−L+1 (L =
     `--cache-lookback`, default 20, the API's documented lookback) are checked, nearest
     first, for a live entry; the longest prefix found is read. An entry is live if it
     was written or read at most TTL seconds before t_k (`--cache-ttl`, default 300 s,
     the API's 5-minute cache);
  2. *write*: every breakpoint after the read prefix whose prefix holds at least the
     minimum cacheable length writes an entry (`--cache-min-tokens`; default by the
     pricing model's name: 4,096 for Opus 4.5/4.6 and Haiku 4.5, 2,048 for Haiku 3/3.5,
     1,024 otherwise — Anthropic's documented minimums). Cache-write tokens run from the
     end of the read prefix to the furthest written breakpoint;
  3. the rest of the prompt is plain input; the read entry (and the breakpoint entries
     it covers) is refreshed to t_k.
  Call cost = input price × (0.1 × read + w × write + 1 × plain) + output price × output,
  w = 1.25 for the 5-minute TTL and 2 for the 1-hour TTL (`--cache-ttl 3600`), as
  Anthropic prices them. *Output* = the recorded usage's output
  tokens where the trace has them, else the count of the recorded reply
  (`--output-tokens recorded|estimate`); it is the same for every strategy (the replies
  are the recorded ones), so it narrows every ratio towards 1, as on a real bill. t_k =
  the trace's own time of call k (mini-SWE-agent, OpenHands); a trace without times gets
  `--cache-gap` seconds between calls (default none: nothing expires). A *summarizer
  call* is priced as a request of its own: its input = summarizer system prompt + the
  older history + the handoff request, its output = the summary. It reads nothing (its
  system prompt is not the agent's). On an explicit cache its input is written at the
  write price when at least the minimum cacheable length, since Workingset's Anthropic
  provider marks every request's last message, a summarizer's too; else plain. On an
  automatic cache or none its input is plain. Output at the output price. This applies to `extractive` too, as if
  a model had written the same summary. **Cost** = calls + summarizer calls;
  **summarizer share** = summarizer cost / cost.
- **Cost (lcp, legacy)**: the earlier model, kept for comparison: the cached prefix of
  call k is its longest common prefix with call k−1 (system + tools all or nothing, then
  whole equal messages), read at 0.1×, the rest written at 1.25×; no output; summarizer
  input 1× + output 5×; no breakpoints, lookback, minimum or TTL.
- **Compaction events**: the applied `compaction` events of the run, by kind, and the
  failed ones.
- **Evidence items** of a text: paths (`a/b`, at least one `/`, ending on a letter or
  digit), file names with a known extension (`fields.py`), dotted identifiers
  (`self.root.opts`), CamelCase / lowerCamel and snake_case identifiers (all ≥ 4
  characters), quoted strings of 6–80 characters (one line), error messages (the rest of
  the line after `SomethingError:` / `SomethingException:`, 6–120 characters), numbers of
  ≥ 3 digits. An item *occurs* in a text when it appears there as a whole token (an edge
  of the item that is a letter, digit or `_` must not touch another). The *maximal*
  items of a set are those not occurring in a longer item of the same set.
- **Tool evidence** of call k: the maximal items of the action the model produced at call
  k (its text + the input values of its tool uses) that, in the conversation before that
  action, occur in at least one tool result and in nothing else — not the system prompt,
  not the task or any other user text, not the agent's own earlier text or tool inputs.
  Its *producers* are the tool uses whose results hold it.
- **Tool-evidence recall**: of the tool evidence of every call, the fraction that occurs
  in the working set compiled for that call (system prompt + the text of every block:
  text, tool-use name and input values, tool-result bodies), pooled over the trace's calls
  (visible / needed); undefined for a trace with none. Since such an item was nowhere
  but in tool results, it is visible only if a result that holds it was kept or a
  strategy's own text (a summary) carried it. The items missed at each call are listed
  in `results.json` (`runs[].missed`: call, message index, items) and, the first few per
  run, in the report's drill-down. **Recoverable (tool evidence)**: visible, or one of
  its producers is still reachable — a block with that tool_use id is kept (the use or
  its result, even cleared or clipped) or the id is named in the text (a
  `Recall(id="…")` marker, a summary's provenance).
- **Grounding recall (legacy)** and **recoverable recall (legacy)**: the earlier
  measures, kept for comparison: needed = every item of the action (not de-duplicated)
  whose first occurrence in the whole recorded conversation is a tool result before the
  action, visible/recoverable as above. An item the agent echoed in its own text stays
  needed and visible after its result is gone, which is why `mask:keep=0` scores well
  on it.
- **Oracle ratio**: cumulative input tokens / cumulative oracle tokens, where the oracle
  working set of call k is the request prefix (system + tools) + the task message + one
  assistant message with the tool uses of the first producer of each tool-evidence item
  + one user message with those results, unclipped.
- **Token check** (per trace, strategy-independent): for each call whose usage the trace
  records, the context it was sent as loaded (system prompt + the messages before it) is
  counted by the estimator and by Tekken and set beside the recorded input tokens;
  pooled (sum ÷ sum) per family (source · model). The recorded agent rendered that context
  its own way (its tool schemas, chat text; moatless re-renders whole files every step),
  so this bounds the estimator's error rather than measuring it exactly.

## Statistics

Per trace, each strategy is paired with `raw` and with the baseline (`--baseline`, default
clear-then-summarize): ratio = metric(strategy) / metric(reference) for cumulative tokens,
cost, cost (lcp) and peak tokens; difference for recalls. Across traces: the median ratio
and the mean recall (and mean paired recall difference), each with a 95% percentile
bootstrap interval (`--resamples`, default 2,000; seeded by `--seed` and the statistic's
name, so the same inputs give the same intervals). The bootstrap resamples *clusters*
(`--cluster`): by default task instances (all runs of one SWE-bench instance, whatever
the framework or model, are drawn together), or frameworks, or single runs. **Pooled**
ratios are sum ÷ sum over the traces both ran on (long traces weigh more). **Paired
tests** against the baseline: the Wilcoxon signed-rank test (two-sided, zero
differences split, `zero_method="zsplit"`) on the log of the per-trace ratio for cost
and tokens and on the per-trace difference for tool-evidence and legacy grounding recall;
at least 5 pairs, all-equal pairs give p = 1; the p-values of one metric across the
strategies are Holm-adjusted. **Per framework** (trace source): traces, median and pooled
cost ÷ raw, mean tool-evidence recall, infeasible calls.
"""
