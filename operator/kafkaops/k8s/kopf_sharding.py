"""Sharded mode: kopf processes only the objects of the KafkaClusters this replica owns.

kopf 1.45.2 (pinned) has no notion of sharding. Filtering the handlers (`when=`) is not enough:
for an object whose handlers are all filtered out kopf removes the finalizer ("no handlers require
it") and stores its diff-base (the object counts as handled, and the owner's kopf may then see
nothing to do). So the wrapper sits one level up, around kopf's per-object cause processing: the
indexing (before it) still runs for every object, so every replica's indexes stay complete; the
causes (handlers, daemons, finalizers, progress and diff-base annotations) run only when the
object's cluster is owned; and when ownership was lost or changed hands while they ran, the patch
they accumulated is dropped, so a replica that lost a cluster writes nothing to its objects.
`tests/k8s/test_kopf_sharding.py` fails if the wrapper stops applying.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

from kopf._core.reactor import processing

from kafkaops.k8s.context import ClusterKey
from kafkaops.k8s.kinds import GROUP, cluster_of


class Epochs(Protocol):
    started: bool

    def epoch(self, key: ClusterKey | None) -> int | None:
        """The current acquisition of cluster `key` by this replica, None when not owned."""

    def start(self) -> None:
        """Start the Lease loop (in the context of kopf's object processing: see `_sharded`)."""


_KOPF = processing.process_resource_causes  # kopf's own, put back by uninstall()
_original = _KOPF  # what the wrapper calls (the tests stand in for kopf here)
_owner: list[Epochs] = []  # the installed Sharder (one operator per process)


def cluster_key(resource: Any, body: Mapping[str, Any]) -> ClusterKey | None:
    """The KafkaCluster an object of ours belongs to (None: it names none)."""
    if getattr(resource, "plural", None) == "kafkaclusters":
        metadata = body.get("metadata") or {}
        return metadata.get("namespace"), metadata.get("name")
    return cluster_of(body)


@functools.wraps(_original)
async def _sharded(**kwargs: Any) -> tuple[Collection[float], bool]:
    if not _owner or getattr(kwargs.get("resource"), "group", None) != GROUP:
        return await _original(**kwargs)
    owner = _owner[0]
    if not owner.started:
        # started here, not in the startup handler: a task copies the context it is created in,
        # and only kopf's object processing sets the context variables kopf.event() needs (the
        # contexts the loop connects post the KafkaCluster's Events)
        owner.start()
    key = cluster_key(kwargs.get("resource"), kwargs["body"])
    epoch = owner.epoch(key)  # a key of None (no clusterRef): one replica is chosen for all of them
    if epoch is None:  # another replica's object: indexed (above us), nothing else
        return [], False
    delays, matched = await _original(**kwargs)
    if owner.epoch(key) != epoch:  # lost (or lost and regained) while the handlers ran: write nothing
        kwargs["patch"].clear()
        return [], False
    return delays, matched


def install(owner: Epochs) -> None:
    _owner[:] = [owner]
    processing.process_resource_causes = _sharded  # type: ignore[assignment]


def uninstall() -> None:
    _owner.clear()
    processing.process_resource_causes = _KOPF  # type: ignore[assignment]


def installed() -> bool:
    return processing.process_resource_causes is _sharded and bool(_owner)


__all__: list[Callable[..., Any] | str] = ["install", "uninstall", "installed", "cluster_key"]
