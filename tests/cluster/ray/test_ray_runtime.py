"""The Ray runtime on a simulated two-node cluster (the session-scoped `ray_cluster`):
the CLI on Ray, node-affine tool tasks, a killed SessionActor resuming from its
snapshot, subagents' permission questions, the compactor pool, the snapshot actor
across nodes, and an unreachable cluster."""

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import ray
from pydantic import BaseModel
from ray.exceptions import RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from agents.compaction import ExtractiveSummarizer
from agents.compaction.summary import SummaryFailed
from agents.errors import ConfigError
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.opening._assembly import snapshot_store
from agents.opening._lifecycle import OpenSpec
from agents.session._tool_batch import PermissionAnswer
from agents.settings._config import SummarizerSettings
from agents.snapshots._store import SnapshotNotFound
from cluster.actor_link import ActorLink
from cluster.compactor_pool import start_compactor_pool
from cluster.ray_run import open_remote_session
from cluster.remote_session import RemoteSession
from cluster.session_actor import ClusterServices, SessionActor, SessionSpec
from cluster.snapshot_actor import start_snapshot_actor
from cluster.terminal._cli import main
from cluster.tool_tasks import RayToolExecutor
from tests.support import ROOT
from tests.support.builders import (
    agent_call,
    bash_call,
    of_type,
    scripted_settings,
    subagent_script,
    workspace,
)
from tests.support.fakes import session_state, tool_interaction
from tests.support.not_ray import not_ray
from tools.base import ExecutionDomain, ToolContext, ToolOutput

# -- helpers -----------------------------------------------------------------------------


def _kill_and_wait(actor) -> None:
    """Kill an actor for good and wait until calls to it fail."""
    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            ray.get(actor.load.remote(), timeout=10)
        except RayActorError:
            return
        time.sleep(0.1)
    raise AssertionError("the killed actor still answers")


def _where_am_i():
    """A LOCAL tool reporting the node it ran on. Built in a function so Ray ships the
    class by value (test modules are not importable by their pytest name in workers)."""

    class NoInput(BaseModel):
        pass

    class WhereAmI:
        name = "WhereAmI"
        description = "Report the Ray node this call runs on."
        input_model = NoInput
        is_read_only = True
        execution_domain = ExecutionDomain.LOCAL
        root_only = False

        async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
            return ToolOutput(content=ray.get_runtime_context().get_node_id())

    return WhereAmI(), NoInput()


# -- `workingset run` on Ray -------------------------------------------------------------


def test_workingset_run_on_ray_fans_out_subagents_runs_sandboxed_bash_and_compacts_through_the_pool(
    ray_cluster, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("WORKINGSET_RUNTIME", "ray")
    # A small window: budget (10_000 - 1_000) x 0.8 = 7_200 tokens, about 3_700 of them
    # system prompt and tool schemas. The 8_000-char Bash result on top of the long notes
    # pushes the fourth call over it: the older result is cleared, and as the notes alone
    # keep it over budget, older history is summarized through the pool. The strategy is
    # named: the default folds history without a summarizer, and this is about the pool.
    for name, value in {
        "COMPACT__STRATEGY": "clear-then-summarize",
        "COMPACT__CONTEXT_WINDOW": "10000",
        "AGENT__MAX_OUTPUT_TOKENS": "1000",
        "COMPACT__PRESERVE_RECENT_MESSAGES": "2",
        "COMPACT__PRESERVE_RECENT_TOOL_USES": "1",
        "COMPACT__MIN_GAIN_TOKENS": "200",
    }.items():
        monkeypatch.setenv(f"WORKINGSET_{name}", value)
    script = subagent_script(
        tmp_path,
        [
            {
                "text": "Fanning out.",
                "tool_calls": [agent_call(d, f"Look at {d}.") for d in ("alpha", "beta", "gamma")],
            },
            {
                "text": "Notes. " + "Every module was checked. " * 185,
                "tool_calls": [bash_call("head -c 1600 /dev/zero | tr '\\0' a; echo; echo a-done")],
            },
            {
                "text": "Now the big log.",
                "tool_calls": [bash_call("head -c 8000 /dev/zero | tr '\\0' b; echo; echo b-done")],
            },
            {
                "tool_calls": [
                    bash_call("echo sandboxed-$((6*7)) home=$HOME; (echo x > ../outside) 2>/dev/null; echo done")
                ]
            },
        ],
        subagents={
            "alpha": {"final_text": "alpha: nothing odd"},
            "beta": {"final_text": "beta: two files"},
            "gamma": {"final_text": "gamma: all good"},
        },
        final="All done: 42.",
    )
    ws = workspace(tmp_path)
    code = main(
        [
            "run",
            "investigate",
            "--cwd",
            str(ws),
            "--model",
            f"scripted:{script}",
            "--json",
            "--permission-mode",
            "bypass",
        ]
    )
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert code == 0
    root = events[0]["session_id"]
    started = {e["description"]: e["child_session_id"] for e in events if e["type"] == "subagent_started"}
    finished = {e["description"]: e["child_session_id"] for e in events if e["type"] == "subagent_finished"}
    assert started == finished == {d: started[d] for d in ("alpha", "beta", "gamma")}
    assert len(set(started.values())) == 3 and all(c.startswith(f"{root}.") for c in started.values())
    results = [e for e in events if e["type"] == "tool_result" and e["session_id"] == root]
    assert [r["content"] for r in results if r["name"] == "Agent"] == [
        "alpha: nothing odd",
        "beta: two files",
        "gamma: all good",
    ]
    bash = [r for r in results if r["name"] == "Bash"]
    assert len(bash) == 3 and not any(r["is_error"] for r in bash)
    assert "b-done" in bash[1]["content"] and "exit code: 0" in bash[1]["content"]
    # bubblewrap: a clean environment, and a write next to the workspace never reaches the
    # host (a private /tmp, the rest of the host read-only)
    assert bash[2]["content"].startswith("sandboxed-42 home=/tmp/home") and "exit code: 0" in bash[2]["content"]
    assert not (tmp_path / "outside").exists()
    compactions = [e for e in events if e["type"] == "compaction" and e["applied"]]
    assert [c["kind"] for c in compactions] == ["clear", "summary"]
    clear, summary = compactions
    assert clear["results_cleared"] > 0 and clear["tokens_after"] < clear["tokens_before"]
    assert summary["summarizer_calls"] == 1 and summary["messages_summarized"] > 0 and summary["failed"] is None
    assert summary["tokens_after"] < summary["tokens_before"]
    assert events[-1]["type"] == "session_ended" and events[-1]["reason"] == "end_turn"
    assert events[-1]["final_text"] == "All done: 42."


# -- tool tasks --------------------------------------------------------------------------


@pytest.mark.parametrize("node", ["other_node_id", "head_node_id"])
async def test_tool_task_runs_on_the_workspace_node(ray_cluster, tmp_path, node):
    node_id = getattr(ray_cluster, node)
    executor = RayToolExecutor(node_id, num_cpus=0.5)
    tool, args = _where_am_i()
    output = await executor.execute(tool, args, ToolContext(workspace=tmp_path))
    assert not output.is_error
    assert output.content == node_id


# -- fault tolerance ---------------------------------------------------------------------


async def test_killed_session_actor_resumes_from_its_snapshot_and_goes_on_with_the_interrupted_turn(
    ray_cluster, tmp_path
):
    script = subagent_script(
        tmp_path,
        [
            {"text": "Turn one done."},
            {"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]},
            {"text": "Turn two done.", "sleep_ms": 2500},
        ],
    )
    settings = scripted_settings(tmp_path, script, permissions={"mode": "bypass"})
    events: list = []
    remote = await open_remote_session(OpenSpec(settings, workspace(tmp_path)), emit=events.append, approver=None)
    first = await remote.run_turn("first question")
    assert (first.reason, first.final_text) == ("end_turn", "Turn one done.")

    turn = asyncio.ensure_future(remote.run_turn("second question"))
    deadline = time.monotonic() + 30
    while not [e for e in of_type(events, "snapshot") if e.reason == "tool_batch"]:
        assert time.monotonic() < deadline and not turn.done(), "turn 2 never saved its tool batch"
        await asyncio.sleep(0.05)
    ray.kill(remote.actor, no_restart=False)  # the actor restarts empty, mid-turn, while the model thinks
    try:
        second = await asyncio.wait_for(turn, 60)
    except TimeoutError:
        pytest.fail(f"the turn did not finish after its actor was killed; events: {[e.type for e in events]}")

    assert (second.reason, second.final_text) == ("end_turn", "Turn two done.")
    notices = [e.text for e in of_type(events, "notice")]
    assert any("actor failed" in text for text in notices)
    assert any("the turn goes on from its last saved tool batch" in text for text in notices)
    saved = snapshot_store(settings).load(remote.session_id).state
    inputs = [m.text for m in saved.conversation if m.role == "user" and not m.tool_results_in]
    assert inputs == ["first question", "second question"]  # each turn kept, exactly once
    assert len([r for m in saved.conversation for r in m.tool_results_in]) == 1  # the Glob ran once
    assert [m.text for m in saved.conversation if m.role == "assistant" and m.text] == [
        "Turn one done.",
        "Turn two done.",
    ]


# -- subagent permission questions -------------------------------------------------------


def _writer_script(tmp_path: Path) -> Path:
    return subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("writer")]}],
        subagents={"writer": {"turns": [{"tool_calls": [bash_call("echo hi > made.txt")]}], "final_text": "wrote it"}},
        final="root done",
    )


async def test_subagent_permission_question_reaches_the_root_callers_approver_on_ray(ray_cluster, tmp_path):
    asked: list = []

    async def approver(request):
        asked.append(request)
        return PermissionAnswer(allow=True)

    settings = scripted_settings(
        tmp_path, _writer_script(tmp_path), permissions={"mode": "default", "allow": ["Agent"]}
    )
    events: list = []
    ws = workspace(tmp_path)
    remote = await open_remote_session(OpenSpec(settings, ws), emit=events.append, approver=approver)
    outcome = await remote.run_turn("go")

    assert (outcome.reason, outcome.final_text) == ("end_turn", "root done")
    (request,) = asked
    assert request.name == "Bash" and request.input == {"command": "echo hi > made.txt"}
    assert request.session_id.startswith(f"{remote.session_id}.")  # the child's question
    assert (ws / "made.txt").read_text() == "hi\n"
    # the child's events all reach the root's stream, in order, before the turn ends
    child = [e.type for e in events if e.session_id == request.session_id]
    assert child == [
        "model_call",
        "tool_call",
        "permission_decided",
        "permission_requested",
        "permission_decided",
        "tool_result",
        "model_call",
        "assistant_text",
    ]
    decided = [
        (e.effect, e.source) for e in of_type(events, "permission_decided") if e.session_id == request.session_id
    ]
    assert decided == [("ask", "mode"), ("allow", "user")]
    assert [e.type for e in events if e.type.startswith("subagent_")] == ["subagent_started", "subagent_finished"]
    (agent_result,) = [e for e in of_type(events, "tool_result") if e.session_id == remote.session_id]
    assert agent_result.content.startswith("wrote it\n\nEvidence") and not agent_result.is_error


async def test_headless_subagent_permission_question_is_denied_with_a_clear_result_on_ray(ray_cluster, tmp_path):
    settings = scripted_settings(
        tmp_path, _writer_script(tmp_path), permissions={"mode": "default", "allow": ["Agent"]}
    )
    events: list = []
    ws = workspace(tmp_path)
    remote = await open_remote_session(OpenSpec(settings, ws), emit=events.append, approver=None)
    outcome = await remote.run_turn("go")

    assert (outcome.reason, outcome.final_text) == ("end_turn", "root done")
    (denied,) = [e for e in of_type(events, "tool_result") if e.session_id != remote.session_id]
    assert denied.is_error and "Permission denied" in denied.content
    assert "Bash needs approval and this subagent has no one to ask" in denied.content
    assert not (ws / "made.txt").exists()
    assert not of_type(events, "permission_requested")


async def test_a_call_the_user_denied_at_the_root_is_denied_in_a_subagent_actor_without_asking(ray_cluster, tmp_path):
    asked: list = []

    async def approver(request):
        asked.append(request)
        return PermissionAnswer(allow=True)  # if the child asked, the file would be made

    script = subagent_script(
        tmp_path,
        [{"tool_calls": [bash_call("echo hi > made.txt")]}, {"tool_calls": [agent_call("writer")]}],
        subagents={"writer": {"turns": [{"tool_calls": [bash_call("echo hi > made.txt")]}], "final_text": "could not"}},
        final="root done",
    )
    settings = scripted_settings(tmp_path, script, permissions={"mode": "default", "allow": ["Agent"]})
    events: list = []
    ws = workspace(tmp_path)
    remote = await open_remote_session(OpenSpec(settings, ws), emit=events.append, approver=approver)
    assert (await remote.run_turn("go")).reason == "permission"
    outcome = await remote.answer_permission(False)

    assert (outcome.reason, outcome.final_text) == ("end_turn", "root done") and asked == []
    (denied,) = [e for e in of_type(events, "tool_result") if e.session_id != remote.session_id]
    assert denied.is_error and "the user denied this same call in a parent session" in denied.content
    assert not (ws / "made.txt").exists()


# -- the compactor pool ------------------------------------------------------------------


def _history() -> list[Message]:
    return [
        Message.user("Fix the failing test in app.py."),
        Message.assistant(
            TextBlock(text="Running the tests."), ToolUseBlock(id="toolu_1", name="Bash", input={"command": "pytest"})
        ),
        Message.tool_results(
            [ToolResultBlock(tool_use_id="toolu_1", content="FAILED test_app.py::test_x\nexit code: 1")]
        ),
        Message.assistant(TextBlock(text="test_x fails in app.py.")),
    ]


async def test_pooled_summarizer_goes_around_a_dead_summarizer_actor(ray_cluster):
    pool = start_compactor_pool(SummarizerSettings(), size=2, max_queue=4)
    _kill_and_wait(pool.actors[0])
    expected = await ExtractiveSummarizer().summarize(_history())
    # round-robin: the first call starts at the dead actor, the second at the live one
    assert await pool.summarize(_history()) == expected
    assert await pool.summarize(_history()) == expected


async def test_pooled_summarizer_with_every_actor_dead_fails_with_summary_failed(ray_cluster):
    pool = start_compactor_pool(SummarizerSettings(timeout_s=5), size=2, max_queue=4)
    for actor in pool.actors:
        _kill_and_wait(actor)
    with pytest.raises(SummaryFailed) as failed:
        await pool.summarize(_history())
    message = str(failed.value)
    assert message.startswith("compactor pool could not summarize: ") and message.count("unavailable") == 2


# -- snapshots across nodes --------------------------------------------------------------


async def test_session_saved_on_the_head_node_resumes_on_the_other_node_through_the_snapshot_actor(
    ray_cluster, tmp_path
):
    script = subagent_script(tmp_path, [{"text": "The word is kiwi."}], final="Still kiwi.")
    settings = scripted_settings(tmp_path, script)
    store = start_snapshot_actor(tmp_path / "store", max_history=5, max_age_days=1.0, node_id=ray_cluster.head_node_id)
    services = ClusterServices(snapshots=store)
    ws = workspace(tmp_path)

    def on(node_id: str):
        strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
        return SessionActor.options(scheduling_strategy=strategy).remote(services)

    first_actor = on(ray_cluster.head_node_id)
    spec = SessionSpec(settings=settings.model_dump(mode="json"), workspace=str(ws))
    first = RemoteSession(ActorLink(first_actor), spec, emit=lambda e: None, approver=None)
    await first.open()
    assert (await first.run_turn("remember a word")).final_text == "The word is kiwi."
    assert await first_actor.ping.remote() == ray_cluster.head_node_id

    events: list = []
    second_actor = on(ray_cluster.other_node_id)
    resumed = RemoteSession(
        ActorLink(second_actor),
        spec.model_copy(update={"session_id": first.session_id, "resume": True}),
        emit=events.append,
        approver=None,
    )
    await resumed.open()
    assert await second_actor.ping.remote() == ray_cluster.other_node_id
    assert not of_type(events, "notice")  # the snapshot came back whole
    assert (await resumed.run_turn("which word?")).reason == "end_turn"

    # the store actor (on the head node) holds both turns, read from a task on the other node
    @ray.remote(num_cpus=0)
    def load_there(store, session_id):
        return ray.get_runtime_context().get_node_id(), store.load(session_id).state

    where, state = await load_there.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=ray_cluster.other_node_id, soft=False)
    ).remote(store, first.session_id)
    assert where == ray_cluster.other_node_id
    assert [m.text for m in state.conversation if m.role == "user"] == ["remember a word", "which word?"]
    assert not (settings.home / "snapshots").exists()  # everything went through the actor's store


async def test_resuming_a_session_whose_store_is_damaged_is_one_clear_error_on_ray(ray_cluster, tmp_path):
    script = subagent_script(tmp_path, [{"text": "never"}])
    settings = scripted_settings(tmp_path, script)
    ws = workspace(tmp_path)
    broken = settings.home / "snapshots" / "broken"
    broken.mkdir(parents=True)
    (broken / "cache.db").write_bytes(b"not a database" * 100)
    spec = SessionSpec(settings=settings.model_dump(mode="json"), workspace=str(ws), session_id="broken", resume=True)
    remote = RemoteSession(ActorLink(SessionActor.remote(ClusterServices())), spec, emit=lambda e: None, approver=None)
    with pytest.raises(ConfigError) as caught:
        await remote.open()
    message = str(caught.value)
    assert message.startswith("cannot resume broken: the snapshot store of session broken") and "\n" not in message
    assert "`workingset sessions doctor` moves it aside" in message


async def test_the_snapshot_actor_serves_the_async_store_api_and_its_errors(ray_cluster, tmp_path):
    store = start_snapshot_actor(tmp_path / "store", max_history=5, max_age_days=1.0, node_id=ray_cluster.head_node_id)
    conversation = [Message.user("go"), *tool_interaction(0, 300_000)]
    versions = [await store.asave(session_state(conversation[: n + 1])) for n in range(3)]
    loaded = await store.aload("sess01")
    assert loaded.version == versions[-1] and loaded.state.conversation == conversation
    assert [v.version for v in await store.ahistory("sess01")] == list(reversed(versions))
    assert [s.session_id for s in (await store.ascan()).sessions] == ["sess01"]
    with pytest.raises(SnapshotNotFound, match="no snapshot of session nope"):
        await store.aload("nope")
    assert not (tmp_path / "store" / "nope").exists()


# -- Ray unavailable ---------------------------------------------------------------------


def _env_without_ray() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("WORKINGSET_RUNTIME", "RAY_ADDRESS")}


def _python(code: str, *, timeout: float) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter that joins no Ray cluster of this process's."""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=_env_without_ray()
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


@pytest.mark.own_ray_cluster
def test_connect_to_an_unreachable_address_is_one_clear_cluster_error():
    with not_ray("refused") as address:
        code = (
            "from cluster.connection._runtime import ClusterError, connect\n"
            "try:\n"
            f"    connect(address='{address}')\n"
            "except ClusterError as exc:\n"
            "    print(f'ClusterError: {exc}')\n"
        )
        (line,) = _python(code, timeout=60).stdout.splitlines()
    assert line.startswith(f"ClusterError: --address {address}: no Ray cluster there: nothing listens there")
    assert "ray start --head" in line


@pytest.mark.own_ray_cluster
def test_the_embedded_cluster_keeps_idle_tool_workers_between_bursts():
    """Ray kills idle workers beyond one per CPU after a second by default; the next
    burst of tool calls would pay new Python processes and the harness's imports."""
    code = (
        "import os, time, ray\n"
        "from cluster.connection._runtime import connect\n"
        "connect(num_cpus=1)\n"
        "@ray.remote(num_cpus=0.25)\n"  # a burst of four tool tasks on one CPU
        "def pid():\n"
        "    time.sleep(0.5)\n"
        "    return os.getpid()\n"
        "burst = set(ray.get([pid.remote() for _ in range(4)]))\n"
        "time.sleep(4)\n"
        "alive = [p for p in burst if os.path.exists(f'/proc/{p}')]\n"
        "print(len(burst), len(alive))\n"
    )
    started, alive = _python(code, timeout=180).stdout.split()
    assert int(started) > 1 and alive == started


@pytest.mark.own_ray_cluster
def test_repl_on_ray_runs_turns_and_control_commands_through_the_remote_session(tmp_path):
    """The REPL drives a RemoteSession the way it drives an in-process Session."""
    script = tmp_path / "repl.yaml"
    script.write_text('turns:\n  - text: "hi there"\n  - text: "a plan"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "WORKINGSET_RUNTIME"}
    env["WORKINGSET_HOME"] = str(tmp_path / "home")
    proc = subprocess.run(
        [sys.executable, "-m", "cluster.terminal._cli", "run", "--cwd", str(ws), "--model", f"scripted:{script}"],
        input="hello\n/goal tests pass\n/goal\n/plan\nwhat next\nk\n/exit\n",
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "hi there" in out and "goal (active, 0 auto turns): tests pass" in out
    assert "mode: plan" in out and "a plan" in out and "[a]pprove" in out
    assert "ended (user_exit) after 2 model calls" in out and "Traceback" not in proc.stderr
