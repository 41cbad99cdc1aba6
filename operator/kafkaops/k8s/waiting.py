"""Resources parked until their cluster connects: by cluster, the latest body of each (keyed by
uid, so a newer event for the same resource replaces the older one)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkaops.k8s.context import ClusterKey


class WaitingRoom:
    def __init__(self) -> None:
        self._by_cluster: dict[ClusterKey, dict[str, Mapping[str, Any]]] = {}
        self._cluster_of: dict[str, ClusterKey] = {}

    def add(self, key: ClusterKey, uid: str, body: Mapping[str, Any]) -> None:
        self.discard(uid)
        self._by_cluster.setdefault(key, {})[uid] = body
        self._cluster_of[uid] = key

    def discard(self, uid: str) -> None:
        key = self._cluster_of.pop(uid, None)
        if key is not None:
            self._by_cluster.get(key, {}).pop(uid, None)

    def take(self, key: ClusterKey) -> list[Mapping[str, Any]]:
        """Everything parked on `key`, leaving the room (a rerun parks again what must still wait)."""
        parked = self._by_cluster.pop(key, {})
        for uid in parked:
            self._cluster_of.pop(uid, None)
        return list(parked.values())

    def __contains__(self, uid: object) -> bool:
        return uid in self._cluster_of

    def __len__(self) -> int:
        return len(self._cluster_of)
