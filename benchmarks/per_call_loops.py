"""The four loops `benchmarks.per_call` compares, each run in a process of its own.

    python -m benchmarks.per_call_loops LOOP --calls 500 [--sandbox]

LOOP is `workingset` (a session in this process), `ray` (a session on a SessionActor of
an embedded cluster), `mini` (mini-swe-agent's DefaultAgent with its LocalEnvironment)
or `bare` (a plain asyncio loop: a list of dicts, the fake model, a subprocess). Every
loop gets the same fake model: `--calls` replies that each run one shell command
(`wc -l notes.txt` in a small workspace), then one reply that ends the task. A warm-up
run of 20 calls goes first, so imports, caches and worker start-up are not charged.

CPU is sampled when the 50th reply has been made and when the run has ended; the line
printed is JSON: {"loop", "calls", "cpu_50", "cpu_total", "wall"} (seconds). In process
it is this process's CPU (all its threads; the shell commands, its children, are left
out: they are the same work in every loop). On Ray it is the whole process tree's
(`benchmarks.cpu_tree`: the driver, the raylet, GCS, the SessionActor and tool workers,
their idle CPU included), less the children they reaped (the shell commands).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

COMMAND = "wc -l notes.txt"
MARK = 50  # the first sample: after this many replies
WARM_UP = 20
MINI_MISSING = (
    "mini-swe-agent is not installed: `pip install -e '.[bench]'` (or `pip install mini-swe-agent`) "
    "adds it; `--loops workingset ray bare` runs the others"
)


def make_workspace(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "notes.txt").write_text("".join(f"line {n}\n" for n in range(40)))
    return path


class Sampler:
    """CPU at the MARK-th reply and at the end; `clock` is what is measured."""

    def __init__(self, clock: Callable[[], float]):
        self.clock = clock
        self.begin()

    def begin(self) -> None:
        self.start = self.clock()
        self.at_mark: float | None = None
        self.started_wall = time.perf_counter()

    def reply(self, number: int) -> None:
        if number == MARK:
            self.at_mark = self.clock()

    def result(self, loop: str, calls: int) -> dict:
        end = self.clock()
        if self.at_mark is None:  # a warm-up run
            self.at_mark = end
        return {
            "loop": loop,
            "calls": calls,
            "cpu_50": self.at_mark - self.start,
            "cpu_total": end - self.start,
            "wall": time.perf_counter() - self.started_wall,
        }


def process_cpu() -> float:
    return time.process_time()  # every thread of this process; reaped children are not in it


def tree_cpu() -> float:
    from benchmarks.cpu_tree import sample_tree

    sample = sample_tree()
    return sample.total - sample.seconds["exited"]


# -- Workingset ------------------------------------------------------------------------------


def workingset_settings(root: Path, tag: str, calls: int, sandbox: bool):
    from agents.settings import load_settings

    turns: list[dict[str, Any]] = [
        {
            "text": f"Step {n}: count the lines of the notes.",
            "tool_calls": [{"name": "Bash", "input": {"command": COMMAND}}],
        }
        for n in range(calls)
    ]
    turns.append({"text": "Done: the notes have 40 lines."})
    script = root / f"script-{tag}.yaml"
    script.write_text(yaml.safe_dump({"turns": turns}, sort_keys=False))
    return load_settings(
        root,
        {
            "model": f"scripted:{script}",
            "home": str(root / f"home-{tag}"),
            "agent": {"max_turns": calls + 10},
            "compact": {"context_window": 1_000_000},  # no compaction: the other loops have none
            "sandbox": {"enabled": sandbox},
            "permissions": {"mode": "default", "headless": "deny-asks", "allow": ["Bash(wc:*)"]},
        },
    )


def _on_reply(sampler: Sampler) -> Callable[[object], None]:
    from agents.events import ModelCall

    def emit(event: object) -> None:
        if isinstance(event, ModelCall):
            sampler.reply(event.turn)

    return emit


async def run_workingset(root: Path, calls: int, sandbox: bool) -> dict:
    from agents.opening import OpenSpec, SessionRuntime, open_or_resume

    async def once(tag: str, n: int, measured: bool) -> dict | None:
        settings = workingset_settings(root, tag, n, sandbox)
        sampler = Sampler(process_cpu)
        runtime = SessionRuntime(emit=_on_reply(sampler))
        session = await open_or_resume(OpenSpec(settings, make_workspace(root / f"ws-{tag}")), runtime)
        sampler.begin()  # the open is not a call's cost, nor is the close
        outcome = await session.run_turn("Count the lines of the notes, step by step.")
        result = sampler.result("workingset", n)
        await session.aclose()
        if outcome.reason != "end_turn":
            raise SystemExit(f"the Workingset run ended {outcome.reason}: {outcome.detail}")
        return result if measured else None

    await once("warm", WARM_UP, False)
    result = await once("run", calls, True)
    assert result is not None
    return result


async def run_on_ray(root: Path, calls: int, sandbox: bool) -> dict:
    from benchmarks.concurrency import settle
    from benchmarks.cpu_tree import sample_tree
    from cluster.session_pool import SessionPool

    settings = workingset_settings(root, "run", calls, sandbox)
    pool = SessionPool(settings, actors=1)
    try:
        await pool.ready()
        warm = await pool.open(
            make_workspace(root / "ws-warm"), settings=workingset_settings(root, "warm", WARM_UP, sandbox)
        )
        await warm.run_turn("Count the lines of the notes, step by step.")
        await pool.close(warm)
        await settle()
        sampler = Sampler(tree_cpu)
        remote = await pool.open(make_workspace(root / "ws-run"), emit=_on_reply(sampler))
        before = sample_tree()
        sampler.begin()
        outcome = await remote.run_turn("Count the lines of the notes, step by step.")
        result = sampler.result("ray", calls)
        spent = sample_tree() - before
        await pool.close(remote)
        # where it went, ms per call: the driver, Ray's own processes, each kind of worker
        parts = {"driver": spent.seconds["driver"], "ray's own": spent.seconds["ray_system"], **spent.by_title()}
        result["parts"] = {name: round(cpu / calls * 1000, 2) for name, cpu in parts.items() if cpu > 0}
    finally:
        pool.shutdown()
    if outcome.reason != "end_turn":
        raise SystemExit(f"the run on Ray ended {outcome.reason}: {outcome.detail}")
    return result


# -- mini-swe-agent --------------------------------------------------------------------------


def run_mini(root: Path, calls: int) -> dict:
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    os.environ.setdefault("MSWEA_GLOBAL_CONFIG_DIR", str(root / "mini-config"))
    try:
        import minisweagent
        from minisweagent.agents.default import DefaultAgent
        from minisweagent.environments.local import LocalEnvironment
        from minisweagent.models.test_models import DeterministicModel, make_output
    except ImportError:
        raise SystemExit(MINI_MISSING) from None
    config = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / "default.yaml").read_text())

    class CountingModel(DeterministicModel):
        sampler: Sampler | None = None

        def query(self, messages, **kwargs):
            output = super().query(messages, **kwargs)
            if self.sampler is not None:
                self.sampler.reply(self.current_index + 1)
            return output

    def once(tag: str, n: int, measured: bool) -> dict | None:
        outputs = [
            make_output(
                f"Step {i}: count the lines of the notes.\n\n```mswea_bash_command\n{COMMAND}\n```",
                [{"command": COMMAND}],
            )
            for i in range(n)
        ]
        finish = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
        outputs.append(make_output(f"Done.\n\n```mswea_bash_command\n{finish}\n```", [{"command": finish}]))
        model = CountingModel(outputs=outputs, observation_template=config["model"]["observation_template"])
        workspace = make_workspace(root / f"mini-{tag}")
        env = LocalEnvironment(cwd=str(workspace), **{k: v for k, v in config["environment"].items() if k != "cwd"})
        agent = DefaultAgent(model, env, **{**config["agent"], "step_limit": n + 10, "cost_limit": 0})
        sampler = model.sampler = Sampler(process_cpu)
        outcome = agent.run("Count the lines of the notes, step by step.")
        result = sampler.result("mini", n)
        if outcome.get("exit_status") != "Submitted":
            raise SystemExit(f"the mini-swe-agent run ended {outcome.get('exit_status')}")
        return result if measured else None

    once("warm", WARM_UP, False)
    result = once("run", calls, True)
    assert result is not None
    return result


# -- a bare asyncio loop ---------------------------------------------------------------------


async def run_bare(root: Path, calls: int) -> dict:
    async def once(tag: str, n: int) -> dict:
        workspace = make_workspace(root / f"bare-{tag}")
        replies: list[dict[str, str | None]] = [
            {"role": "assistant", "content": f"Step {i}: count the lines of the notes.", "command": COMMAND}
            for i in range(n)
        ]
        replies.append({"role": "assistant", "content": "Done.", "command": None})
        messages: list[dict] = [{"role": "user", "content": "Count the lines of the notes, step by step."}]
        sampler = Sampler(process_cpu)
        for number, reply in enumerate(replies, 1):
            await asyncio.sleep(0)  # the model call
            messages.append(reply)
            sampler.reply(number)
            if reply["command"] is None:
                break
            proc = await asyncio.create_subprocess_shell(
                reply["command"], cwd=workspace, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
            )
            out, _ = await proc.communicate()
            messages.append({"role": "user", "content": f"exit {proc.returncode}\n{out.decode()}"})
        return sampler.result("bare", n)

    await once("warm", WARM_UP)
    return await once("run", calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("loop", choices=["workingset", "ray", "mini", "bare"])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument(
        "--sandbox",
        action="store_true",
        help="Workingset's Bash in bubblewrap (default: a plain subprocess, as the other loops run it)",
    )
    args = parser.parse_args()
    if args.calls <= MARK:
        parser.error(f"--calls must be more than {MARK}")
    with tempfile.TemporaryDirectory(prefix="workingset-per-call-") as tmp:
        root = Path(tmp)
        if args.loop == "workingset":
            result = asyncio.run(run_workingset(root, args.calls, args.sandbox))
        elif args.loop == "ray":
            result = asyncio.run(run_on_ray(root, args.calls, args.sandbox))
        elif args.loop == "mini":
            result = run_mini(root, args.calls)
        else:
            result = asyncio.run(run_bare(root, args.calls))
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
