"""Fakes shipped with the tests: a recording model, a tool whose calls meet, a session over the real
local tools, random conversations, session states for the snapshot store, what a compaction
strategy is run with (a recording summarizer, its env and request, a conversation of tool
calls), trusting a workspace the way `workingset trust` does, a scripted model's file and
one headless `workingset run` with it, an eval host whose agent is a Python function, a
directory committed as a git repository, a scripted fan-out of subagents, and a
directory tree deeper than any path can name."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from agents.compaction import CompactionEnv, CompactionRequest, ExtractiveSummarizer
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, protocol_problems
from agents.modes import Mode
from agents.ports import ModelClient, ModelRequest, ModelResponse, Summarizer, Usage
from agents.providers._catalog import ModelInfo
from agents.session._loop import Session, SessionKit, SessionPorts, TurnOutcome
from agents.session._state import SessionState
from agents.settings._config import CompactSettings, SessionSettings, SummarizerSettings, WorkingsetSettings
from agents.settings._trust import TrustList
from agents.tokens import CharRatioEstimator, estimate_messages_tokens
from cluster.eval.hosts import LocalHost
from cluster.terminal._cli import main
from tools import LocalToolExecutor, ToolRegistry, default_registry, default_workspace_tools
from tools.artifacts import ArtifactStore
from tools.base import ExecutionDomain, ToolContext, ToolOutput
from tools.recall import RecallTool


class RecordingModel:
    """Answers from a list of replies and records every request it saw.
    A reply that is an exception instance is raised instead; a ModelResponse is
    returned as it is (to end a reply with any stop reason)."""

    name = "fake:recording"
    model_info = ModelInfo(context_window=200_000, prices=None, pricing="scripted")  # a fake has no price

    def __init__(self, replies: list[list[TextBlock | ToolUseBlock] | ModelResponse | Exception]):
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def create(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        blocks = self.replies.pop(0) if self.replies else [TextBlock(text="done")]
        if isinstance(blocks, Exception):
            raise blocks
        if isinstance(blocks, ModelResponse):
            return blocks
        stop = "tool_use" if any(isinstance(b, ToolUseBlock) for b in blocks) else "end_turn"
        return ModelResponse(content=tuple(blocks), stop_reason=stop, usage=Usage(input_tokens=10, output_tokens=2))


class MeetInput(BaseModel):
    label: str = Field(description="Echoed back.")
    seconds: float = Field(0.0, description="How long to sleep after everyone met.")


class RendezvousTool:
    """Each call waits until `expected` calls of the same tool have started, then echoes its
    label: calls run one after another never all meet, so a test of concurrency waits on
    that event, not on the clock (the wait gives up after `patience_s` with an error)."""

    name: ClassVar[str] = "Meet"
    description: ClassVar[str] = "Wait for the other calls, then echo a label."
    input_model: ClassVar[type[BaseModel]] = MeetInput
    is_read_only: ClassVar[bool] = True
    execution_domain: ClassVar[ExecutionDomain] = ExecutionDomain.LOCAL
    root_only: ClassVar[bool] = False

    def __init__(self, expected: int, patience_s: float = 120.0):
        self.expected = expected
        self.patience_s = patience_s
        self.arrived = 0
        self._all_here: asyncio.Event | None = None

    async def run(self, args: MeetInput, ctx: ToolContext) -> ToolOutput:
        if self._all_here is None:
            self._all_here = asyncio.Event()
        self.arrived += 1
        if self.arrived >= self.expected:
            self._all_here.set()
        try:
            await asyncio.wait_for(self._all_here.wait(), self.patience_s)
        except TimeoutError:
            return ToolOutput(content=f"{args.label}: only {self.arrived} of {self.expected} calls met", is_error=True)
        await asyncio.sleep(args.seconds)
        return ToolOutput(content=args.label)


def local_session(
    workspace: Path,
    model: ModelClient,
    *,
    registry: ToolRegistry | None = None,
    settings: SessionSettings | None = None,
    summarizer: Summarizer | None = None,
    mode: Mode = Mode.DEFAULT,
    session_id: str | None = None,
    system_prompt: str = "sys",
    events: list | None = None,
    **kit: Any,
) -> tuple[Session, list]:
    """A Session over the real tools in `workspace` (the default registry unless given), run
    in this process, and the list its events go to (`events`, or a new one). `kit` are
    further SessionKit fields (permissions, judge, artifacts, budget); permissions default
    to bypass, as in SessionKit."""
    events = [] if events is None else events
    ports = SessionPorts(model=model, executor=LocalToolExecutor(), summarizer=summarizer or ExtractiveSummarizer())
    session_kit = SessionKit(
        registry=registry or default_registry(),
        tool_context=ToolContext(workspace=workspace),
        emit=events.append,
        **kit,
    )
    session = Session(
        ports, session_kit, system_prompt=system_prompt, settings=settings, session_id=session_id, mode=mode
    )
    return session, events


def recall_session(
    workspace: Path, model: ModelClient, *, settings: SessionSettings, summarizer: Summarizer | None = None
) -> tuple[Session, list]:
    """A local_session whose tools include Recall, with an artifact store under the
    workspace: what a result the compiler clears or trims needs to stay recallable."""
    registry = ToolRegistry([*default_workspace_tools(), RecallTool()])
    return local_session(
        workspace,
        model,
        registry=registry,
        settings=settings,
        summarizer=summarizer,
        artifacts=ArtifactStore(workspace / ".artifacts"),
    )


def random_conversation(rng: random.Random, *, max_turns: int = 22) -> list[Message]:
    """A protocol-complete conversation with text, parallel tool batches (results in
    shuffled order) and plain user turns, for invariant tests over many seeds."""
    messages = [Message.user("task " * rng.randint(1, 50))]
    for t in range(rng.randint(2, max_turns)):
        n_uses = rng.choice([0, 1, 1, 2, 3])
        text = (TextBlock(text="thinking " * rng.randint(1, 40)),) if n_uses == 0 or rng.random() < 0.5 else ()
        uses = tuple(
            ToolUseBlock(id=f"toolu_{t}_{k}", name=rng.choice(["Bash", "Read", "Agent"]), input={"k": k})
            for k in range(n_uses)
        )
        messages.append(Message(role="assistant", content=(*text, *uses)))
        if uses:
            results = [ToolResultBlock(tool_use_id=u.id, content="out " * rng.randint(1, 800)) for u in uses]
            rng.shuffle(results)
            messages.append(Message.tool_results(results))
        else:
            messages.append(Message.user("go on " * rng.randint(1, 30)))
    assert protocol_problems(messages, allow_trailing_uses=False) == []
    return messages


def tool_interaction(i: int, body_chars: int = 200) -> list[Message]:
    """One tool interaction: assistant text + a Read tool_use, then its tool_result."""
    return [
        Message.assistant(
            TextBlock(text=f"step {i}: reading"), ToolUseBlock(id=f"toolu_{i}", name="Read", input={"path": f"f{i}.py"})
        ),
        Message.tool_results([ToolResultBlock(tool_use_id=f"toolu_{i}", content=f"{i}:" + "x" * body_chars)]),
    ]


def session_state(conversation: list[Message], session_id: str = "sess01", **fields) -> SessionState:
    """A session of workspace /work/ws holding `conversation`."""
    return SessionState(
        session_id=session_id, cwd="/work/ws", model="scripted:s.yaml", conversation=list(conversation), **fields
    )


# -- compaction strategies ------------------------------------------------------------------

COMPACTION_COUNTER = CharRatioEstimator()
COMPACTION_MODEL = "claude-sonnet-4-5"
COMPACTION_OVERHEAD = 300
NO_BUDGET = 10**9


class FakeSummarizer:
    """Records what it was given; answers `text` or raises `error`, and refuses to be called
    more than `max_calls` times (so a runaway loop fails instead of hanging)."""

    def __init__(self, text: str = "## Objective\nfix the parser", error: Exception | None = None, max_calls: int = 50):
        self.text = text
        self.error = error
        self.max_calls = max_calls
        self.calls: list[list[Message]] = []

    async def summarize(self, messages: list[Message], *, focus: str | None = None) -> str:
        self.calls.append(list(messages))
        if len(self.calls) > self.max_calls:
            raise RuntimeError(f"runaway summarizer loop: called more than {self.max_calls} times")
        if self.error is not None:
            raise self.error
        return self.text


def compaction_env(summarizer=None, artifacts=None, **overrides) -> CompactionEnv:
    """What a strategy is run with: the fixed counter and model, a FakeSummarizer unless
    given, and tiny CompactSettings (`overrides` on top)."""
    settings = {"min_gain_tokens": 0, "manual_keep_messages": 2, "summary_reserve_tokens": 100}
    return CompactionEnv(
        counter=COMPACTION_COUNTER,
        summarizer=summarizer or FakeSummarizer(),
        artifacts=artifacts,
        settings=CompactSettings(**(settings | overrides)),
        summarizer_settings=SummarizerSettings(),
        model_name=COMPACTION_MODEL,
    )


def compaction_request(
    messages, budget=NO_BUDGET, trigger="auto", *, overhead=COMPACTION_OVERHEAD, **kw
) -> CompactionRequest:
    return CompactionRequest(messages=messages, overhead_tokens=overhead, budget_tokens=budget, trigger=trigger, **kw)


def compaction_tokens(messages) -> int:
    """What a compaction request of `messages` counts: the fixed overhead plus the messages."""
    return COMPACTION_OVERHEAD + estimate_messages_tokens(COMPACTION_COUNTER, messages)


def alternates_from_user(messages) -> bool:
    return messages[0].role == "user" and all(a.role != b.role for a, b in zip(messages, messages[1:], strict=False))


def same_messages(a, b) -> bool:
    """The very same message objects, in order (a strategy that changed nothing)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def tool_conversation(pairs: int = 12, body_chars: int = 2_000, tools=("Bash",)) -> list[Message]:
    """The task, then `pairs` of (assistant text + tool_use, tool_result): 1 + 2*pairs."""
    messages = [Message.user("Make the parser accept empty input.")]
    for k in range(pairs):
        use = ToolUseBlock(id=f"toolu_{k:02d}", name=tools[k % len(tools)], input={"command": f"run {k}"})
        messages.append(Message.assistant(TextBlock(text=f"Step {k}."), use))
        body = f"{k}:" + "x" * body_chars
        messages.append(Message.tool_results([ToolResultBlock(tool_use_id=use.id, content=body)]))
    return messages


def script_file(directory: Path, *calls: dict, name: str = "script.json") -> Path:
    """A scripted model's file: one turn per tool call (name, input), then "Done."."""
    path = directory / name
    path.write_text(
        json.dumps({"turns": [{"text": "Working.", "tool_calls": [c]} for c in calls], "final_text": "Done."})
    )
    return path


def read_notes_settings(tmp_path: Path) -> WorkingsetSettings:
    """Headless settings (asks denied) whose scripted model reads notes.txt, saying
    "reading", then answers "read it"."""
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {"text": "reading", "tool_calls": [{"name": "Read", "input": {"path": "notes.txt"}}]},
                    {"text": "read it"},
                ]
            }
        )
    )
    return WorkingsetSettings(
        model=f"scripted:{script}", home=tmp_path / "home", permissions={"mode": "default", "headless": "deny-asks"}
    )


def json_run(capsys, workspace: Path, script: Path, *extra: str) -> tuple[int, list[dict], str]:
    """One headless `workingset run go --json` in `workspace` with the scripted model:
    its exit code, its events (stdout), and what it told on stderr."""
    capsys.readouterr()
    code = main(["run", "go", "--cwd", str(workspace), "--model", f"scripted:{script}", "--json", *extra])
    out = capsys.readouterr()
    return code, [json.loads(line) for line in out.out.splitlines() if line.startswith("{")], out.err


def trust_workspace(workspace: Path, home: Path | None = None) -> Path:
    """Put `workspace` on the user's trust list (home: the user's home directory; in tests
    HOME is a tmp dir), so its own .workingset/ config and plugins apply in full."""
    TrustList.for_user(home).trust(workspace)
    return workspace


def compacted_conversation() -> list[Message]:
    """A protocol-complete conversation holding every kind of compaction marker — a
    digest of folded turns, a summary boundary and its acknowledgement, a trim note and
    its bridge, a cleared (with and without a residue), a superseded, an elided and a
    clipped tool result — each written by the real compaction step."""
    from agents.compaction.clearing import clear_old_tool_results, elide_old_results
    from agents.compaction.currentness import clear_superseded, superseded_results
    from agents.compaction.fitting import clear_kept_results
    from agents.compaction.folding import fold_span
    from agents.compaction.result_budget import clip_tool_result
    from agents.compaction.summary import summarized_conversation
    from agents.compaction.trimming import drop_span
    from agents.tokens import CharRatioEstimator

    uses = [ToolUseBlock(id=f"toolu_m{i}", name="Bash", input={"command": f"make step{i}"}) for i in range(3)]
    clipped = clip_tool_result(
        "x" * 3_000 + "3 failed", max_tokens=100, recall_id=uses[2].id, counter=CharRatioEstimator()
    )
    assert clipped is not None
    recent = [
        Message.user("Go on."),
        Message.assistant(TextBlock(text="Looking at the build.")),
        Message.user("Keep going."),
        Message.assistant(TextBlock(text="Run 0."), uses[0]),
        Message.tool_results([ToolResultBlock(tool_use_id=uses[0].id, content="make: ok\n" * 40)]),
        Message.assistant(TextBlock(text="Run 1."), uses[1]),
        Message.tool_results(
            [ToolResultBlock(tool_use_id=uses[1].id, content="warning: unused\n" * 40, is_error=True)]
        ),
        Message.assistant(TextBlock(text="Run 2."), uses[2]),
        Message.tool_results([ToolResultBlock(tool_use_id=uses[2].id, content=clipped.content, marker=clipped.marker)]),
        Message.assistant(TextBlock(text="Done.")),
    ]
    messages = summarized_conversation("## Objective\nFix the build.", recent, summarized_count=6)
    messages = drop_span(messages, 3, 5, "window")  # after a user turn, before an assistant one: a bridge too
    messages = clear_old_tool_results(messages, keep_recent_messages=0, keep_recent_tool_uses=2).messages
    messages = elide_old_results(messages, keep=1).messages
    later = [
        ToolUseBlock(id=f"toolu_m{i}", name="Bash", input={"command": c})
        for i, c in ((3, "make check"), (4, "cat setup.cfg"), (5, "make check"))
    ]
    checks = [
        Message.user("Check it twice."),
        Message.assistant(TextBlock(text="Check."), later[0]),
        Message.tool_results(
            [ToolResultBlock(tool_use_id=later[0].id, content="FAILED tests/test_a.py::test_one\n1 failed in 0.1s")]
        ),
        Message.assistant(TextBlock(text="Config."), later[1]),
        Message.tool_results(
            [
                ToolResultBlock(
                    tool_use_id=later[1].id,
                    content="[metadata]\nname = demo\n" * 20 + "setup.cfg:3: error: duplicate key",
                )
            ]
        ),
        Message.assistant(TextBlock(text="Again."), later[2]),
        Message.tool_results([ToolResultBlock(tool_use_id=later[2].id, content="2 passed in 0.1s")]),
        Message.assistant(TextBlock(text="Passing now.")),
    ]
    checks = clear_superseded(checks, superseded_results(checks)).messages  # the first check, re-run
    cleared = clear_kept_results(checks, 1, CharRatioEstimator(), 300)  # the config read, with its residue
    assert cleared is not None
    early = ToolUseBlock(id="toolu_m6", name="Bash", input={"command": "grep -n parse src/parser.py"})
    opening = [
        Message.user("Fix the build."),
        Message.assistant(TextBlock(text="Where is the parser?"), early),
        Message.tool_results([ToolResultBlock(tool_use_id=early.id, content="src/parser.py:12:def parse(text):")]),
        Message.assistant(TextBlock(text="Noted.")),
    ]
    messages = fold_span([*opening, *messages, *cleared[0]], 1, 3, {}, 300)  # the grep, folded into a digest
    assert protocol_problems(messages, allow_trailing_uses=False) == []
    return messages


class _AttackSession:
    """A session whose whole turn is a Python function on the workspace."""

    def __init__(self, workspace: Path, attack: Callable[[Path], None]):
        self.workspace = workspace
        self.attack = attack
        self.session_id = f"attack-{workspace.name}"

    def announce_start(self) -> None:
        return None

    def announce_end(self, reason: str, final_text: str, error: str | None = None) -> None:
        return None

    async def run_turn(self, user_input: str) -> TurnOutcome:
        self.attack(self.workspace)
        return TurnOutcome(reason="end_turn", final_text="Fixed.", model_calls=0)

    async def aclose(self) -> None:
        return None


class AttackerHost(LocalHost):
    """An eval host whose agent, for the workspaces named in `attacks`, is a Python
    function writing the workspace directly: the strongest agent there is (any file,
    `.git` included, as if every guard inside the sandbox had failed). Other tasks get
    real in-process sessions."""

    name = "attacker"

    def __init__(self, attacks: dict[str, Callable[[Path], None]]):
        super().__init__()
        self.attacks = attacks

    async def open(self, workspace: Path, settings: Any, emit: Any, *, node: str | None = None) -> Any:
        attack = self.attacks.get(workspace.name)
        if attack is None:
            return await super().open(workspace, settings, emit, node=node)
        return _AttackSession(workspace, attack)


def fanout_script(path: Path, children: int, calls: int, *, sleep_ms: int = 0) -> Path:
    """A scripted tree: the root's first reply starts `children` subagents at once
    ("child 0" ...), each makes `calls` model calls (a Glob between them), then answers."""
    child_turns = [
        {"text": f"step {n}", "sleep_ms": sleep_ms, "tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}
        for n in range(calls - 1)
    ]
    child_turns.append({"text": "child result", "sleep_ms": sleep_ms})
    agent_calls = [
        {"name": "Agent", "input": {"description": f"child {i}", "prompt": f"Investigate part {i}."}}
        for i in range(children)
    ]
    path.write_text(
        json.dumps(
            {
                "turns": [{"tool_calls": agent_calls}, {"text": "All children reported."}],
                "subagents": {f"child {i}": {"turns": child_turns} for i in range(children)},
            }
        )
    )
    return path


def commit_all(repo: Path, message: str = "base") -> str:
    """`repo` (a directory) as a git repository with everything in one commit; its hash."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    if not (repo / ".git").exists():
        git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", message)
    return git("rev-parse", "HEAD")


def deep_tree(top: Path, depth: int, name: str = "d") -> None:
    """`depth` nested directories `name` under `top` (made here) and a file at the bottom,
    made from directory handles: the path may be longer than any one call can name."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    finally:
        os.close(fd)
