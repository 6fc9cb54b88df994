"""A one-node Ray cluster with token authentication, in its own process, for tests:
prints its address, then runs until its stdin closes.

    python tests/token_cluster.py TOKEN
"""

import os
import sys

os.environ["RAY_AUTH_MODE"] = "token"
os.environ["RAY_AUTH_TOKEN"] = sys.argv[1]

from ray.cluster_utils import Cluster  # noqa: E402 - after the variables it reads

cluster = Cluster(initialize_head=True, head_node_args={
    "num_cpus": 1, "include_dashboard": False, "object_store_memory": 80 * 1024**2})
print(cluster.address, flush=True)
try:
    sys.stdin.read()
finally:
    cluster.shutdown()
