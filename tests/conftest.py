"""Shared fixtures: an isolated environment for every test, and fake Messages and Chat
Completions APIs (real servers on 127.0.0.1)."""

from __future__ import annotations

import logging
import os
import signal
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agents.providers.testing import FakeMessagesServer, FakeOpenAIServer
from agents.settings._config import WorkingsetSettings
from cluster.connection._start import start_once_more

# A suite started in the background (`... &` in a script) inherits SIGINT ignored, and
# every process it starts would too: the Ctrl-C tests' children could not be interrupted.
# A handler of our own (never inherited across exec) gives them the default back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _ray_group(item: pytest.Item) -> str | None:
    """Which Ray a test uses: the shared cluster (`ray_cluster`, also asked for by a
    `[ray]` parameter), one of its own (a child process's, or `ray start`), or none."""
    if item.get_closest_marker("own_ray_cluster"):
        return "own-ray"
    if "ray_cluster" in getattr(item, "fixturenames", ()) or "[ray" in item.nodeid:
        return "shared-ray"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Under pytest-xdist (`-n`, see pyproject.toml) the tests on the shared cluster run in
    # one worker (one cluster, started once) and those that start their own in one worker
    # (one at a time): never more than two clusters on the machine.
    for item in items:
        group = _ray_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No host secrets or config: drop ANTHROPIC_*, OPENAI_* and WORKINGSET_*, point HOME at a
    tmp dir, and run CLI sessions in-process unless a test asks for Ray."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_", "WORKINGSET_")):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    # The CLI runs sessions on Ray by default; tests of the Ray path ask for it explicitly.
    monkeypatch.setenv("WORKINGSET_RUNTIME", "local")


@pytest.fixture(scope="session")
def _messages_server_session() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as server:
        yield server


@pytest.fixture
def messages_server(_messages_server_session: FakeMessagesServer) -> Iterator[FakeMessagesServer]:
    """A running fake Messages API server with an empty queue and no recorded requests."""
    yield from _messages_server_session.fresh()


@pytest.fixture(scope="session")
def _openai_server_session() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def openai_server(_openai_server_session: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    """A running fake Chat Completions server with an empty queue and no recorded requests."""
    yield from _openai_server_session.fresh()


class SleepRecorder:
    """A `sleep` that records the requested waits and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@dataclass(frozen=True)
class RayCluster:
    """A simulated two-node Ray cluster on this machine, connected to this process."""

    cluster: Any  # ray.cluster_utils.Cluster
    head_node_id: str
    other_node_id: str  # the second node; it alone has the "other_node" resource
    # Both declare "workingset_sandbox" (they can run sandboxed eval tasks); a node a test
    # adds without it gets none.
    home: str | None = None  # $HOME when the cluster started

    def add_node(self, **node_args: Any) -> Any:
        """A raylet added by a test: started with the $HOME the cluster started with, where
        Ray's token authentication keeps its token (every test points HOME elsewhere, and a
        raylet that finds no token dies)."""
        test_home = os.environ.get("HOME")
        if self.home is not None:
            os.environ["HOME"] = self.home
        try:
            return self.cluster.add_node(**node_args)
        finally:
            if test_home is not None:
                os.environ["HOME"] = test_home


def _warn(text: str) -> None:
    warnings.warn(text, stacklevel=2)  # shown in the run's summary: the suite went on, but the machine is slow


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    """One 2-node cluster shared by every Ray test (starting one costs seconds).
    cluster.connection._runtime.connect() reuses the connection because ray.is_initialized()."""
    import ray
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    object_store = 150 * 1024**2
    home = os.environ.get("HOME")

    def start() -> tuple[Any, Any]:
        cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 2,
                "include_dashboard": False,
                "object_store_memory": object_store,
                "resources": {"workingset_sandbox": 1},
            },
        )
        other = cluster.add_node(
            num_cpus=1, resources={"other_node": 1, "workingset_sandbox": 1}, object_store_memory=object_store
        )
        return cluster, other

    # As the embedded cluster starts: under cluster.start_timeout_s, once more after a
    # failure (a loaded machine misses Ray's start-up waits now and then).
    cluster, other = start_once_more(
        start,
        timeout_s=WorkingsetSettings().cluster.start_timeout_s,
        what="the tests' shared Ray cluster",
        notify=_warn,
    )
    try:
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        cluster.wait_for_nodes()
        yield RayCluster(
            cluster=cluster, head_node_id=cluster.head_node.node_id, other_node_id=other.node_id, home=home
        )
    finally:
        ray.shutdown()
        cluster.shutdown()


# --- a workspace -----------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path):
    """A workspace under /tmp (behind the sandbox's private /tmp, bound back in)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace
