"""A one-node Ray cluster with token authentication, in its own process, for tests:
prints its address, then runs until its stdin closes. It starts as every cluster of the
tests does: under cluster.start_timeout_s, once more after a failure (cluster.connection._start).

    python tests/support/token_cluster.py TOKEN
"""

import os
import sys

os.environ["RAY_AUTH_MODE"] = "token"
os.environ["RAY_AUTH_TOKEN"] = sys.argv[1]

from ray.cluster_utils import Cluster  # noqa: E402 - after the variables it reads

from agents.settings._config import WorkingsetSettings  # noqa: E402
from cluster.connection._start import start_once_more  # noqa: E402


def _start() -> Cluster:
    return Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False, "object_store_memory": 80 * 1024**2},
    )


cluster = start_once_more(
    _start,
    timeout_s=WorkingsetSettings().cluster.start_timeout_s,
    what="the token-authenticated test cluster",
    notify=lambda text: print(text, file=sys.stderr),
)
print(cluster.address, flush=True)
try:
    sys.stdin.read()
finally:
    cluster.shutdown()
