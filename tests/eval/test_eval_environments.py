"""Each task in its own environment: built once per node in the sandbox (the network only
for the build, through the allow-list egress proxy), bound read-only, and the agent's and
the grader's python. The repository's tests import `tomli`, a small pure-Python package
from PyPI the harness does not have; the builds that need it reach PyPI (CI has the same
registry access)."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import socket
import sys
import threading
from pathlib import Path

import pytest

from agents.settings._config import WorkingsetSettings
from cluster.eval.hosts import LocalHost
from cluster.eval.progress import JsonReporter
from cluster.eval.runner import EvalOptions, EvalRunner
from cluster.eval.task_file import load_tasks
from tests.support.builders import bash_call
from tests.support.fakes import commit_all

REQUIREMENTS = "tomli==2.0.1\npytest==8.3.3\n"
TESTS = "python -m pytest -q -p no:cacheprovider tests"
HARNESS_PREFIX = sys.prefix


def _toml_repo(root: Path, requirements: str | None = REQUIREMENTS) -> Path:
    """Its code needs tomli; its test checks that tomli came from the environment."""
    repo = root / "toml_repo"
    (repo / "tests").mkdir(parents=True)
    if requirements is not None:
        (repo / "requirements.txt").write_text(requirements)
    (repo / "conf.py").write_text("import tomli\n\n\ndef port(text):\n    return tomli.loads(text)['port'] - 1\n")
    (repo / "tests" / "test_conf.py").write_text(
        "import sys\n\nimport tomli\n\nfrom conf import port\n\n\n"
        "def test_port_comes_from_the_file():\n    assert port('port = 8080') == 8080\n\n\n"
        "def test_tomli_comes_from_the_environment():\n"
        f"    assert tomli.__file__.startswith(sys.prefix) and sys.prefix != {HARNESS_PREFIX!r}\n"
    )
    commit_all(repo)
    return repo


FIX = {"name": "Edit", "input": {"path": "conf.py", "old_string": "['port'] - 1", "new_string": "['port']"}}


def _script(root: Path, name: str, calls: list[dict]) -> Path:
    path = root / f"{name}.json"
    turns = [{"text": "Looking.", "tool_calls": calls}] if calls else []
    path.write_text(json.dumps({"turns": [*turns, {"text": "Fixing.", "tool_calls": [FIX]}], "final_text": "Fixed."}))
    return path


def _batch(root: Path, rows: list[dict], *, concurrency: int = 1, **options) -> dict[str, dict]:
    tasks = root / "tasks.jsonl"
    tasks.write_text(
        "".join(
            json.dumps(
                {
                    "instruction": "port() is off by one; fix it.",
                    "test_command": TESTS,
                    "timeouts": {"test_s": 120},
                    **row,
                }
            )
            + "\n"
            for row in rows
        )
    )
    out = root / "out"
    settings = WorkingsetSettings(
        home=root / "ignored",
        model=rows[0]["model"],
        permissions={"mode": "accept-edits", "allow": ["Bash"], "headless": "deny-asks"},
    )
    runner = EvalRunner(
        settings,
        load_tasks(tasks).tasks,
        EvalOptions(out=out, concurrency=concurrency, **options),
        host=LocalHost(),
        reporter=JsonReporter(stream=io.StringIO()),
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HOME", str(root / "home"))
        asyncio.run(asyncio.wait_for(runner.run(), 600))
    return {r["task_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def _bash_outputs(out: Path, task_id: str) -> list[str]:
    events = [json.loads(line) for line in (out / "events" / f"{task_id}.jsonl").read_text().splitlines()]
    return [e["content"] for e in events if e.get("type") == "tool_result" and e.get("name") == "Bash"]


class _HostService:
    """A TCP server on the host's 127.0.0.1, as the Ray GCS or a model server would be."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


@pytest.fixture(scope="module")
def networked(tmp_path_factory) -> dict:
    """One batch, the build with the network: `probe` looks around during its turn, then
    `again` (same repository, after it) only fixes."""
    assert importlib.util.find_spec("tomli") is None, "the harness has tomli: pick a package it lacks"
    root = tmp_path_factory.mktemp("env_network")
    repo = _toml_repo(root)
    service = _HostService()
    net = (
        f"cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ' | sed 's/^/IFACE /'; "
        f"echo PROXY=${{HTTPS_PROXY:-none}}; "
        f"python -c \"import socket; socket.create_connection(('127.0.0.1', {service.port}), timeout=3)\" "
        f"&& echo HOST-LOOPBACK REACHED || echo HOST-LOOPBACK UNREACHABLE; "
        f"python -c \"import socket; socket.create_connection(('pypi.org', 443), timeout=5)\" "
        f"&& echo PYPI REACHED || echo PYPI UNREACHABLE"
    )
    probe = _script(
        root,
        "probe",
        [
            bash_call("python -c 'import sys; print(sys.prefix)'; command -v python pytest pip"),
            bash_call(net),
            bash_call(
                "touch $VIRTUAL_ENV/planted; echo pwned >> $VIRTUAL_ENV/lib/python3.11/site-packages/tomli/__init__.py; "
                "python -c \"import os; print('RDONLY', bool(os.statvfs(os.environ['VIRTUAL_ENV']).f_flag & os.ST_RDONLY))\""
            ),
            bash_call("python -c 'import pydantic' 2>&1 | tail -1; python -c 'import cluster' 2>&1 | tail -1"),
        ],
    )
    again = _script(root, "again", [])
    env = {"network": True}
    rows = _batch(
        root,
        [
            {"id": "probe", "repo": str(repo), "model": f"scripted:{probe}", "environment": env},
            {"id": "again", "repo": str(repo), "model": f"scripted:{again}", "environment": env},
        ],
    )
    out = root / "out"
    return {
        "rows": rows,
        "out": out,
        "bash": _bash_outputs(out, "probe"),
        "service": service,
        "venv": out / "state" / "envs" / rows["probe"]["environment"] / "venv",
    }


def test_a_repo_needing_a_package_the_harness_lacks_is_set_up_and_graded_passed_in_its_own_environment(networked):
    row = networked["rows"]["probe"]
    assert row["status"] == "passed", row["error"]
    assert row["environment_reused"] is False
    assert "2 passed" in (networked["out"] / row["grade_log"]).read_text()
    log = (networked["out"] / "logs" / "probe" / "environment.log").read_text()
    assert "Successfully installed" in log and "tomli-2.0.1" in log
    assert "[egress] allowed CONNECT pypi.org:443" in log


def test_the_agents_python_and_console_scripts_are_the_environments(networked):
    prefix, python, pytest_script, pip = networked["bash"][0].splitlines()[:4]
    venv = str(networked["venv"])
    assert prefix == venv != HARNESS_PREFIX
    assert (python, pytest_script, pip) == (f"{venv}/bin/python", f"{venv}/bin/pytest", f"{venv}/bin/pip")


def test_the_agents_bash_has_no_network_even_when_the_build_had_it(networked):
    said = networked["bash"][1]
    assert [line for line in said.splitlines() if line.startswith("IFACE")] == ["IFACE lo"]
    assert "PROXY=none" in said
    assert "HOST-LOOPBACK UNREACHABLE" in said and "PYPI UNREACHABLE" in said
    assert networked["service"].accepted == 0


def test_the_environment_is_read_only_to_the_agent(networked):
    said = networked["bash"][2]
    assert "cannot touch" in said and "tomli/__init__.py: " in said and "RDONLY True" in said
    venv = networked["venv"]
    assert not (venv / "planted").exists()
    assert "pwned" not in (venv / "lib" / "python3.11" / "site-packages" / "tomli" / "__init__.py").read_text()


def test_the_harness_packages_are_not_importable_in_a_task_with_its_own_environment(networked):
    said = networked["bash"][3]
    assert "No module named 'pydantic'" in said and "No module named 'cluster'" in said


def test_a_second_task_on_the_same_repository_reuses_the_environment(networked):
    first, second = networked["rows"]["probe"], networked["rows"]["again"]
    assert second["status"] == "passed", second["error"]
    assert second["environment"] == first["environment"] and second["environment_reused"] is True
    assert not (networked["out"] / "logs" / "again" / "environment.log").exists()
    marker = json.loads((networked["out"] / "state" / "envs" / f"{first['environment']}.json").read_text())
    assert marker["built_by"] == "probe"


def test_without_the_network_the_build_fails_with_a_row_naming_the_package_and_the_network(tmp_path):
    repo = _toml_repo(tmp_path)
    script = _script(tmp_path, "fix", [])
    rows = _batch(tmp_path, [{"id": "offline", "repo": str(repo), "model": f"scripted:{script}", "environment": {}}])
    row = rows["offline"]
    assert row["status"] == "error" and row["turns"] == 0
    assert "No matching distribution found for tomli==2.0.1" in row["error"]
    assert "the build had no network" in row["error"] and "--setup-network" in row["error"]


def test_a_failed_build_is_not_cached_and_the_next_task_builds_again(tmp_path):
    repo = _toml_repo(tmp_path, requirements=None)
    script = _script(tmp_path, "fix", [])
    env = {"commands": ["echo building; exit 3"]}
    rows = _batch(
        tmp_path,
        [{"id": f"t{i}", "repo": str(repo), "model": f"scripted:{script}", "environment": env} for i in (1, 2)],
    )
    for task_id in ("t1", "t2"):
        assert "building the environment failed (exit code 3)" in rows[task_id]["error"]
        assert "building" in (tmp_path / "out" / "logs" / task_id / "environment.log").read_text()
    assert [p.name for p in (tmp_path / "out" / "state" / "envs").iterdir()] == [f"{rows['t1']['environment']}.lock"]


def test_concurrent_tasks_wanting_the_same_environment_build_it_once(tmp_path):
    repo = _toml_repo(tmp_path, requirements=None)
    script = _script(tmp_path, "fix", [])
    env = {"commands": ["sleep 1"]}
    rows = _batch(
        tmp_path,
        [
            {
                "id": f"t{i}",
                "repo": str(repo),
                "model": f"scripted:{script}",
                "environment": env,
                "test_command": "python -c 'import sys; assert sys.prefix != sys.base_prefix'",
            }
            for i in (1, 2, 3)
        ],
        concurrency=3,
    )
    assert {r["status"] for r in rows.values()} == {"passed"}
    assert sorted(r["environment_reused"] for r in rows.values()) == [False, True, True]
    assert len({r["environment"] for r in rows.values()}) == 1
    assert len(list((tmp_path / "out" / "logs").glob("*/environment.log"))) == 1


def test_tasks_without_an_environment_keep_the_harness_python(tmp_path):
    repo = _toml_repo(tmp_path, requirements=None)
    script = _script(tmp_path, "fix", [bash_call("python -c 'import sys; print(sys.prefix)'")])
    grader = f"python -c 'import sys; assert sys.prefix == {json.dumps(HARNESS_PREFIX)}'"
    rows = _batch(tmp_path, [{"id": "plain", "repo": str(repo), "model": f"scripted:{script}", "test_command": grader}])
    assert rows["plain"]["status"] == "passed" and rows["plain"]["environment"] is None
    assert _bash_outputs(tmp_path / "out", "plain")[0].splitlines()[0] == HARNESS_PREFIX


# -- SWE-bench rows ----------------------------------------------------------------------


def _swebench_row(**fields) -> dict:
    return {
        "repo": "acme/calc",
        "instance_id": "acme__calc-1",
        "base_commit": "b" * 40,
        "problem_statement": "add()",
        "FAIL_TO_PASS": ["t.py::a"],
        "version": "1.2",
        "environment_setup_commit": "e" * 40,
        **fields,
    }


def test_swebench_rows_get_an_environment_built_at_their_environment_setup_commit(tmp_path):
    path = tmp_path / "swe.jsonl"
    path.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                _swebench_row(),
                _swebench_row(instance_id="acme__calc-2", environment={"packages": ["pytest<8"], "network": True}),
                _swebench_row(instance_id="acme__calc-3", environment=None),
            ]
        )
    )
    built, overridden, none = load_tasks(path).tasks
    assert (built.ref, built.environment.ref, built.environment.label) == ("b" * 40, "e" * 40, "1.2")
    assert built.environment.packages == ["pytest"] and built.environment.network is None
    assert overridden.environment.packages == ["pytest<8"] and overridden.environment.network is True
    assert overridden.environment.ref == "e" * 40 and none.environment is None
