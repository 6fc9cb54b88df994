"""A small live experiment that runs offline: `python3 -m benchmarks.compaction.live_demo DIR`
writes a git repository with a one-line bug, scripted models and a task file into DIR, and
prints the `workingset bench compaction --live` command that runs it.

The tasks are chosen so the arms differ for the reasons a real run's would:
- `plain`   reads, fixes, ends: every arm solves it;
- `seeded`  the model of repeat r is `seeded-{seed}.json`: odd seeds make the wrong fix,
            so the outcome varies by repeat and not by arm (concordant pairs);
- `refused` reads two large outputs and then the provider refuses the request as too long
            (no token counts in the refusal): an arm solves it only if its recovery
            compacts the conversation enough to retry;
- `recall`  a tool output over the per-result budget is clipped, and the model reads the
            rest back with Recall (the Recall column counts it).
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.calc_batch import calc_repo, script, task, tasks_file

__all__ = ["write_demo"]

_READ = {"text": "Reading.", "tool_calls": [{"name": "Read", "input": {"path": "calc.py"}}]}
_FIX = {
    "text": "Fixing.",
    "tool_calls": [{"name": "Edit", "input": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}}],
}
_WRONG = {
    "text": "Fixing.",
    "tool_calls": [{"name": "Edit", "input": {"path": "calc.py", "old_string": "a - b", "new_string": "a * b"}}],
}


def _print(chars: int, letter: str, tool_id: str | None = None) -> dict:
    call: dict = {"name": "Bash", "input": {"command": f"python3 -c \"print('{letter}' * {chars})\""}}
    if tool_id:
        call["id"] = tool_id
    return {"text": "Looking.", "tool_calls": [call]}


def write_demo(root: Path, seeds: int = 2) -> Path:
    """The demo's files under `root`; returns the task file."""
    root.mkdir(parents=True, exist_ok=True)
    calc_repo(root)
    plain = script(root, "plain", [_READ, _FIX, {"text": "Fixed."}])
    for seed in range(seeds):
        script(root, f"seeded-{seed}", [_READ, _WRONG if seed % 2 else _FIX, {"text": "Fixed."}])
    refused = script(
        root,
        "refused",
        [_READ, _print(20_000, "x"), _print(20_000, "y"), {"error": "prompt_too_long"}, _FIX, {"text": "Fixed."}],
    )
    recall = script(
        root,
        "recall",
        [
            _print(40_000, "z", "toolu_long"),
            {
                "text": "Reading the rest.",
                "tool_calls": [{"name": "Recall", "input": {"id": "toolu_long", "offset": 30_000}}],
            },
            _FIX,
            {"text": "Fixed."},
        ],
    )
    rows = [
        task("plain", "calc", model=f"scripted:{plain}"),
        task("seeded", "calc", model=f"scripted:{root / 'seeded-{seed}.json'}"),
        task("refused", "calc", model=f"scripted:{refused}"),
        task("recall", "calc", model=f"scripted:{recall}"),
    ]
    return tasks_file(root / "tasks.jsonl", rows)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 -m benchmarks.compaction.live_demo DIR", file=sys.stderr)
        return 2
    tasks = write_demo(Path(argv[0]).resolve())
    print(
        f"workingset bench compaction --local --synthetic 1 --strategies raw --live {tasks} --repeats 2 "
        f"--out {tasks.parent / 'out'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
