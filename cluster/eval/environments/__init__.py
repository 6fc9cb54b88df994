"""Each task in its own Python environment, built once per node.

    recipe.py        what goes into it, resolved against the task's repository, and its key
    build.py         a virtualenv made on the host, filled by pip in the sandbox
    egress.py        the build's only way out, when it has the network: an allow-list proxy
    client_hello.py  the server name a TLS client asks for, which that proxy checks
    cache.py         the node's environments: one build per key (locked), read-only after it

A task's `environment` (tasks.py) names the recipe; task_flow.py gets the environment
before the setup command and runs every later command of the task in it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cluster.eval.environments.cache import EnvironmentCache, TaskEnvironment
    from cluster.eval.environments.egress import DEFAULT_HOSTS, EgressProxy, registry_host
    from cluster.eval.environments.recipe import Recipe, base_interpreter, resolve_recipe

# Each name loads its module when first asked for: the eval command's parser needs the
# egress defaults, not the builder (which brings the sandbox and git along).
_HOME = {"EnvironmentCache": "cache", "TaskEnvironment": "cache", "DEFAULT_HOSTS": "egress", "EgressProxy": "egress",
         "registry_host": "egress", "Recipe": "recipe", "base_interpreter": "recipe", "resolve_recipe": "recipe"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)


__all__ = ["DEFAULT_HOSTS", "EgressProxy", "EnvironmentCache", "Recipe", "TaskEnvironment", "base_interpreter",
           "registry_host", "resolve_recipe"]
