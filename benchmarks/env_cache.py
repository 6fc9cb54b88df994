"""The environment cache: what the second task on the same repository saves.

    python -m benchmarks.env_cache [--offline] [--tasks 3] [--requirements "tomli==2.0.1 pytest==8.3.3"]

Runs one batch (in process, scripted agents, the real sandbox) of `--tasks` tasks on one
repository, one after the other, all asking for the same environment. The first builds
it — a virtualenv, ensurepip, `pip install` of the requirements from PyPI through the
egress proxy — and the others find it in the node's cache. Prints, per task, the
seconds spent getting the environment (`environment_s`: the build, or the look-up) and
the whole task's wall time, and the ratio of the first setup to the mean of the rest.

`--offline`: no requirements and no network (the build is the virtualenv and pip
alone), for a machine without registry access.

`--rerun`: instead, two runs of `workingset eval` one after the other, each on its own
embedded Ray cluster (so each gets new Ray node ids), the second with another task file
into the same `--out`: its tasks find the first run's build (`<out>/state/envs`).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from agents.settings import PermissionSettings, WorkingsetSettings
from cluster.eval import EvalOptions, EvalRunner, JsonReporter, LocalHost, load_tasks


def _repo(root: Path, requirements: list[str]) -> Path:
    repo = root / "repo"
    repo.mkdir()
    if requirements:
        (repo / "requirements.txt").write_text("\n".join(requirements) + "\n")
    (repo / "mod.py").write_text("VALUE = 1\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=repo, check=True)
    return repo


def _run(root: Path, tasks: int, requirements: list[str], network: bool) -> list[dict]:
    repo = _repo(root, requirements)
    script = root / "agent.json"
    script.write_text(json.dumps({"turns": [], "final_text": "Nothing to do."}))
    rows = [
        {
            "id": f"task{i}",
            "repo": str(repo),
            "instruction": "Nothing.",
            "model": f"scripted:{script}",
            "test_command": "python -c 'import mod'",
            "environment": {"network": network},
        }
        for i in range(1, tasks + 1)
    ]
    path = root / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    settings = WorkingsetSettings(
        home=root / "home",
        model=f"scripted:{script}",
        permissions=PermissionSettings(mode="accept-edits", allow=["Bash"], headless="deny-asks"),
    )
    runner = EvalRunner(
        settings,
        load_tasks(path).tasks,
        EvalOptions(out=root / "out", concurrency=1),
        host=LocalHost(),
        reporter=JsonReporter(stream=io.StringIO()),
    )
    asyncio.run(runner.run())
    return [json.loads(line) for line in (root / "out" / "results.jsonl").read_text().splitlines()]


def _rerun(root: Path, requirements: list[str], network: bool) -> list[dict]:
    """Two CLI runs on Ray, each with its own embedded cluster, into one out directory."""
    repo = _repo(root, requirements)
    script = root / "agent.json"
    script.write_text(json.dumps({"turns": [], "final_text": "Nothing to do."}))
    out = root / "out"
    for run in (1, 2):
        path = root / f"run{run}.jsonl"
        path.write_text(
            json.dumps(
                {
                    "id": f"run{run}",
                    "repo": str(repo),
                    "instruction": "Nothing.",
                    "model": f"scripted:{script}",
                    "test_command": "python -c 'import mod'",
                    "environment": {"network": network},
                }
            )
            + "\n"
        )
        subprocess.run(
            ["workingset", "eval", str(path), "--out", str(out), "--json", *(["--setup-network"] * network)],
            check=False,
            capture_output=True,
            env={**os.environ, "WORKINGSET_RUNTIME": "ray"},
        )
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--requirements", default="tomli==2.0.1 pytest==8.3.3")
    parser.add_argument("--offline", action="store_true")
    parser.add_argument("--rerun", action="store_true", help="two runs on Ray into one --out (see above)")
    args = parser.parse_args(argv)
    requirements = [] if args.offline else args.requirements.split()
    with tempfile.TemporaryDirectory(prefix="bench-env-cache-") as tmp:
        if args.rerun:
            rows = _rerun(Path(tmp), requirements, network=not args.offline)
        else:
            rows = _run(Path(tmp), max(2, args.tasks), requirements, network=not args.offline)
    print(f"requirements: {' '.join(requirements) or '(none)'}; network: {not args.offline}")
    print("task    status  environment           reused  environment_s  wall_s")
    for row in rows:
        print(
            f"{row['task_id']:<7} {row['status']:<7} {row['environment'] or '-':<21} "
            f"{row['environment_reused']!s:<7} {row['environment_s'] or 0:>13.4f} {row['wall_s']:>7.2f}"
        )
    first, rest = rows[0]["environment_s"] or 0, [r["environment_s"] or 0 for r in rows[1:]]
    later = statistics.mean(rest)
    print(
        f"getting the environment, first task: {first:.2f} s; later tasks (mean): {later * 1000:.1f} ms"
        f" ({first / max(later, 1e-4):.0f}x less)"
    )
    return 0 if all(r["status"] == "passed" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
