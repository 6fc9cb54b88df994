"""Every bad call a model can make is an error result it can act on, the session goes on
and its snapshot saves: a real `workingset run` with a scripted model making each kind of
bad call, then the saved session loaded back."""

import json

import pytest

from agents.snapshots._store import DiskSnapshotStore
from cluster.terminal._cli import main


def _read(**extra) -> dict:
    return {"name": "Read", "input": {"path": "a.txt", **extra}}


CASES = {
    "unknown tool": ([{"name": "Nope", "input": {}}], "Unknown tool 'Nope'. Available tools:"),
    "wrong argument types": ([{"name": "Read", "input": {"path": 5, "offset": "x"}}], "Invalid input for Read"),
    "arguments that are not JSON": ([{"name": "Read", "raw_input": "{path: a.txt"}], "they are not valid JSON"),
    # Over Bash's 128 KiB cap, within the model's window (a command larger than the window
    # is a request the harness never sends: the run ends with one error line instead).
    "a huge Bash command": (
        [{"name": "Bash", "input": {"command": "echo " + "x" * 200_000}}],
        "write the script to a file with Write",
    ),
    "a NUL byte in a Bash command": ([{"name": "Bash", "input": {"command": "echo a\0b"}}], "contains a NUL byte"),
    "a NUL byte in a path": ([{"name": "Read", "input": {"path": "a\0b"}}], "contains a NUL byte"),
    "an integer too large for the store": ([_read(offset=2**70)], "is past the end of a.txt"),
    "hundreds of parallel calls": ([_read() for _ in range(300)], None),
    "a reused tool-use id": ([{**_read(), "id": "toolu_same"}, {**_read(), "id": "toolu_same"}], None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_call_is_an_error_result_and_the_session_goes_on_and_saves(tmp_path, capsys, monkeypatch, case):
    calls, error = CASES[case]
    monkeypatch.setenv("WORKINGSET_HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "Trying.", "tool_calls": calls}], "final_text": "Carried on."}))
    code = main(
        [
            "run",
            "go",
            "--cwd",
            str(ws),
            "--model",
            f"scripted:{script}",
            "--permission-mode",
            "bypass",
            "--json",
            "--local",
        ]
    )
    captured = capsys.readouterr()
    events = [json.loads(line) for line in captured.out.splitlines() if line.startswith("{")]
    assert code == 0 and "Traceback" not in captured.err
    assert events[-1]["reason"] == "end_turn" and events[-1]["final_text"] == "Carried on."
    results = [e for e in events if e["type"] == "tool_result"]
    assert len(results) == len(calls) and len({r["tool_use_id"] for r in results}) == len(calls)
    if error is not None:
        assert results[0]["is_error"] and error in results[0]["content"]
    else:
        assert not any(r["is_error"] for r in results)
    assert all(e["saved"] for e in events if e["type"] == "snapshot")

    store = DiskSnapshotStore(tmp_path / "home" / "snapshots")
    try:
        saved = store.load(events[0]["session_id"]).state.conversation
    finally:
        store.close()
    assert saved[-1].text == "Carried on." and len(saved[-2].tool_results_in) == len(calls)
