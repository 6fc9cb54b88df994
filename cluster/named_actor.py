"""Handles of the shared service actors that travel as names.

An actor handle pickled into a restartable actor's constructor arguments is a reference
Ray cannot keep for the restart, and Ray's core worker says so on the driver's stderr
(an ERROR line whatever the log level; ray-project/ray#53727), straight across the
progress display. So the shared services (the compactor pool, the snapshot store) are
named actors, and what goes into a SessionActor's constructor is their names: each
process looks a handle up once, the first time it calls it. A restarted SessionActor
finds the services again by name, which the handles would not have guaranteed.
"""

from __future__ import annotations

import uuid
from typing import Any

import ray
from ray.exceptions import RayError

__all__ = ["ActorGone", "NamedActor", "start_named"]

_FOUND: dict[tuple[str, str], Any] = {}  # (namespace, name) -> handle, per process


class ActorGone(RayError):
    """A named service actor is no longer there (killed for good, or its owner gone)."""


class NamedActor:
    """A handle that pickles as (name, namespace) and is looked up where it is used."""

    def __init__(self, name: str, namespace: str, handle: Any = None):
        self.name = name
        self.namespace = namespace
        self._handle = handle

    @property
    def handle(self) -> Any:
        if self._handle is None:
            key = (self.namespace, self.name)
            if key not in _FOUND:
                try:
                    _FOUND[key] = ray.get_actor(self.name, namespace=self.namespace)
                except ValueError as exc:  # Ray's answer for a name it does not know
                    raise ActorGone(f"actor {self.name} is gone") from exc
            self._handle = _FOUND[key]
        return self._handle

    def __getstate__(self) -> dict:
        return {"name": self.name, "namespace": self.namespace}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["name"], state["namespace"])  # type: ignore[misc]  # re-init on unpickle


def start_named(actor_class: Any, kind: str, *args: Any, **options: Any) -> NamedActor:
    """Start `actor_class` under a fresh name in this job's namespace."""
    name = f"workingset-{kind}-{uuid.uuid4().hex[:16]}"
    namespace = ray.get_runtime_context().namespace
    handle = actor_class.options(name=name, namespace=namespace, **options).remote(*args)
    return NamedActor(name, namespace, handle)
