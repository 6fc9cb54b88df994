"""The exception trees: every exception class the project defines, under its parent.

Workingset's own tree (agents/, cluster/):

    WorkingsetError                 anything Workingset raises on purpose
    ├── ConfigError                 bad settings, spec, script or path a user gave (CLI: exit 2)
    │   ├── SettingsChanged         an eval rerun's settings differ from its out directory's (cluster.eval.provenance)
    │   └── TaskConflict            a task id another task file of the out directory holds otherwise (cluster.eval.results)
    ├── ModelError                  a model call failed
    │   ├── AuthError               bad or missing credentials (never retried)
    │   ├── PromptTooLong           the provider refused the input size
    │   ├── Overloaded              429/529/5xx, or a stalled stream, still failing after retries
    │   ├── ModelTimeout            no complete reply within the call's total timeout
    │   └── ModelResponseError      anything else the provider said no to
    ├── LoopEnded                   carries why a run stopped early
    │   └── BudgetExceeded          a token or cost budget (agents.subagents._budgets)
    ├── SummaryFailed               no summary could be written (agents.compaction.summary)
    ├── CodecError                  a stored message cannot be decoded (agents.snapshots._codec)
    ├── SnapshotError               a snapshot cannot be saved or loaded (agents.snapshots._errors)
    │   ├── SnapshotNotFound        no such session or version (reading never creates one)
    │   ├── SnapshotCorrupt         a version fails its checksum or cannot be decoded
    │   ├── SnapshotTooNew          written by a newer Workingset (its schema or format is named)
    │   ├── StoreDamaged            a session's store file is truncated, garbage or foreign
    │   └── StoreDiskFull           no space on the disk holding the store; the previous state is intact
    ├── MemoryStoreError            a memory file cannot be read or written (agents.sources._memory)
    │   ├── MemoryNotFound
    │   └── MemoryNameError         not a valid record name (also ValueError)
    ├── FrontMatterError            a memory or skill file's front-matter is broken (also ValueError)
    ├── ClusterError                the Ray runtime cannot start or be joined (cluster.connection._errors)
    │   └── ClusterJoinError        the command names a cluster this process cannot join (also ConfigError: exit 2)
    ├── TaskEnded                   an eval task ends with an error row (cluster.eval.errors)
    │   └── EnvironmentFailed       its own environment could not be made (names the key)
    ├── Retry                       lost infrastructure: the eval task may run once more (cluster.eval.lost)
    │   └── NodeLost                its node left the cluster: it runs again elsewhere, not counted as a retry
    ├── WorkspaceError              an eval workspace, base or grading copy cannot be made or read
    │   ├── GitError                host-side git failed (cluster.eval.trusted_git)
    │   │   └── GitOutputTooLarge   git printed more than the caller's cap; stopped
    │   └── PatchNotGradable        the agent's patch is too large or does not apply (a failed row)
    ├── GradingError                an eval test command cannot run (cluster.eval.grading)
    └── RowError                    a task-file row that cannot become a task (cluster.eval.tasks)

The tools' tree (tools/ cannot import agents/, so it has its own root):

    ToolError                       a failure the model can act on: an is_error tool result
    ├── BeneathError                a path that is not an openable file or directory inside the root
    ├── UnknownTool                 the model asked for a tool the registry does not hold
    ├── SlotDirectoryUnsafe         the node's tool-slot directory is not this user's alone (cluster.tool_slots)
    └── SandboxUnavailable          the sandbox cannot run here, and the user did not opt out (also RuntimeError)
        ├── CgroupUnavailable       no cgroup hierarchy can hold the command
        ├── IdentityError           no unprivileged identity to run the command as
        ├── SeccompUnsupported      no syscall filter for this machine's architecture
        ├── LayerUnavailable        no kernel-capped layer for the workspace's writes (tools.sandbox.probe)
        └── StageError              the stage directory is unsafe to use (tools.sandbox.stage)

    GlobError                       a glob RE2 cannot compile (also ValueError; tools.files._glob_regex)

Signals that never reach a caller: each is caught where it is raised (the providers'
stream errors by their retry loop, which turns the last one into Overloaded):

    StreamBroken                    a streamed reply broke after it started (agents.providers.streaming)
    └── StreamStalled               no event within providers.idle_timeout_s
    _Problem                        why one plugin is skipped (agents.sources._plugins)
    _ActorLost                      a SessionActor died under a call (cluster.remote_session)
    _GiveUp                         a 429 asks a wait past the total timeout: Overloaded at once (a BaseException)
    _Moved                          a directory of the workspace moved under a merge (tools.sandbox.merge)
    _LauncherDoesNotRun             the built sandbox launcher cannot execute here: its Python build runs (tools.sandbox.runner)
    _Malformed                      a TLS ClientHello that does not parse (cluster.eval.environments.client_hello)

The fake model APIs the tests run against (agents.providers.testing):

    PortTaken                       the port asked for by hand is held by another process (also OSError)
    _Dropped                        a scripted fault: the fake server drops the connection mid-stream

Foreign exceptions (anthropic, openai, yaml, Ray, OS) are converted where they enter, with
`raise ... from exc`, so callers handle one tree. tests/agents/test_exception_tree.py fails
when a class is defined and not drawn here, or drawn under another parent than its own.
"""

from __future__ import annotations

__all__ = [
    "AuthError",
    "ConfigError",
    "LoopEnded",
    "ModelError",
    "ModelResponseError",
    "ModelTimeout",
    "Overloaded",
    "PromptTooLong",
    "WorkingsetError",
]


class WorkingsetError(Exception):
    """Base of every error Workingset raises on purpose.

    Its text never carries a credential the process knows (agents.redaction): a provider
    that echoes the key in its error body would otherwise put it on the terminal, in
    events, snapshots and the model's own context. The foreign error it is raised from
    (the exception being handled when it is made) is cleaned too, since a traceback
    prints that one's text."""

    def __init__(self, *args: object) -> None:
        # Imported here: every module imports this one, and the redaction rules need tools/.
        from agents.redaction import redact, scrub

        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))
        scrub()


class ConfigError(WorkingsetError):
    """A user-supplied setting is wrong. The message names the thing and the fix."""


class ModelError(WorkingsetError):
    """A model call failed."""


class AuthError(ModelError):
    """Credentials missing or refused. Never retried."""


class PromptTooLong(ModelError):
    """The provider refused the request as too long."""

    def __init__(self, message: str, *, actual_tokens: int | None = None, limit_tokens: int | None = None):
        super().__init__(message)
        self.actual_tokens = actual_tokens
        self.limit_tokens = limit_tokens


class Overloaded(ModelError):
    """Rate-limited, overloaded or failing server, still so after every retry."""

    def __init__(self, message: str, *, status_code: int | None = None, attempts: int = 0):
        super().__init__(message)
        self.status_code = status_code
        self.attempts = attempts


class ModelTimeout(ModelError):
    """The call, retries included, passed its total timeout."""


class ModelResponseError(ModelError):
    """Any other refusal or malformed answer from the provider."""


class LoopEnded(WorkingsetError):
    """Raised inside the loop to stop a run; carries the reason."""

    reason = "ended"
