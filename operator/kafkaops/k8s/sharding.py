"""Sharding by KafkaCluster: the pure decisions (no I/O; `shards.py` runs them against the API).

- `preferred_owner`: rendezvous (highest-random-weight) hashing of a cluster over the live members;
  `assign`: the same with bounded loads (no replica above 125% of the average).
- `Observations`: when each Lease was first seen at its current resourceVersion, by this replica's
  own monotonic clock; a Lease not changed for its leaseDurationSeconds is expired (client-go's rule:
  no trust in other replicas' clocks).
- `decide`: what this replica does with one cluster's Lease on one tick.
- Lease names and bodies.
"""

from __future__ import annotations

import datetime
import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kafkaops.frozen import frozen
from kafkaops.k8s.context import ClusterKey

LEASE_LABEL = "kafkaops.io/lease"  # "member" or "cluster"
MEMBER, CLUSTER = "member", "cluster"
CLUSTER_NAMESPACE = "kafkaops.io/cluster-namespace"
CLUSTER_NAME = "kafkaops.io/cluster-name"
MAX_NAME = 253


def cluster_id(key: ClusterKey) -> str:
    return f"{key[0] or ''}/{key[1]}"


def _weight(member: str, key: ClusterKey) -> bytes:
    return hashlib.blake2b(f"{member}\x00{cluster_id(key)}".encode(), digest_size=8).digest()


def preferred_owner(key: ClusterKey, members: Iterable[str]) -> str | None:
    """The member that should own cluster `key`: the highest weight of (member, cluster); ties (never
    in practice) broken by the name. The same answer in every replica that sees the same members."""
    return max(members, key=lambda m: (_weight(m, key), m), default=None)


def assign(keys: Iterable[ClusterKey], members: Iterable[str], slack: float = 0.25) -> dict[ClusterKey, str]:
    """Who should own each cluster: rendezvous hashing with bounded loads. Clusters, in the order
    of their own hash, go to the member of highest weight that holds fewer than
    ceil((1 + slack) * clusters / members); plain rendezvous hashing put 7, 3 and 2 of 12 clusters
    on three replicas. Deterministic: every replica that sees the same clusters and members
    computes the same map; a member leaving moves its own clusters and few others."""
    people = sorted(set(members))
    keys = sorted(set(keys), key=lambda k: (hashlib.blake2b(cluster_id(k).encode(), digest_size=8).digest(), cluster_id(k)))
    if not people:
        return {}
    cap = max(1, math.ceil((1 + slack) * len(keys) / len(people)))
    load = dict.fromkeys(people, 0)
    chosen: dict[ClusterKey, str] = {}
    for key in keys:
        for member in sorted(people, key=lambda m: (_weight(m, key), m), reverse=True):
            if load[member] < cap:
                chosen[key] = member
                load[member] += 1
                break
    return chosen


def _name(prefix: str, rest: str) -> str:
    """A valid Lease name (a DNS subdomain of at most 253 characters): `prefix-rest`, lower-cased,
    other characters as '-', with a hash suffix when it had to be shortened."""
    text = "".join(c if c.isalnum() or c in "-." else "-" for c in f"{prefix}-{rest}".lower())
    if len(text) <= MAX_NAME:
        return text
    digest = hashlib.sha256(rest.encode()).hexdigest()[:12]
    return f"{text[:MAX_NAME - 13].rstrip('-.')}-{digest}"


def cluster_lease_name(key: ClusterKey) -> str:
    return _name("kafkaops", f"{key[0] or 'cluster'}-{key[1]}")


def member_lease_name(identity: str) -> str:
    return _name("kafkaops-member", identity)


def micro_time(epoch: float) -> str:
    """A Lease's MicroTime: RFC 3339 with microseconds."""
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@frozen
class LeaseRecord:
    """What a Lease says, as read from the API."""

    name: str
    holder: str  # "" when released
    duration: float
    resource_version: str
    transitions: int = 0
    kind: str = CLUSTER
    cluster: ClusterKey | None = None  # a cluster Lease: which KafkaCluster

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> LeaseRecord:
        metadata = body.get("metadata") or {}
        spec = body.get("spec") or {}
        annotations = metadata.get("annotations") or {}
        kind = (metadata.get("labels") or {}).get(LEASE_LABEL, CLUSTER)
        cluster = (annotations.get(CLUSTER_NAMESPACE) or None, annotations[CLUSTER_NAME]) \
            if CLUSTER_NAME in annotations else None
        return cls(metadata.get("name", ""), spec.get("holderIdentity") or "",
                   float(spec.get("leaseDurationSeconds") or 0), str(metadata.get("resourceVersion", "")),
                   int(spec.get("leaseTransitions") or 0), kind, cluster)


def lease_body(name: str, holder: str, duration: float, now_epoch: float, *, kind: str = CLUSTER,
               cluster: ClusterKey | None = None, previous: LeaseRecord | None = None,
               acquired: bool = True) -> dict[str, Any]:
    """The body of a create (no `previous`) or of an update with optimistic concurrency (the
    previous resourceVersion; a 409 if someone wrote it in between). `acquired`: the holder changes
    (acquireTime and leaseTransitions move on), else a renewal."""
    metadata: dict[str, Any] = {"name": name, "labels": {LEASE_LABEL: kind, "app.kubernetes.io/name": "kafkaops"}}
    if cluster is not None:
        metadata["annotations"] = {CLUSTER_NAMESPACE: cluster[0] or "", CLUSTER_NAME: cluster[1]}
    if previous is not None:
        metadata["resourceVersion"] = previous.resource_version
    spec: dict[str, Any] = {"holderIdentity": holder, "leaseDurationSeconds": max(1, round(duration)),
                            "renewTime": micro_time(now_epoch)}
    transitions = previous.transitions if previous is not None else 0
    if acquired:
        spec["acquireTime"] = micro_time(now_epoch)
        transitions += 1 if previous is not None and previous.holder != holder else 0
    spec["leaseTransitions"] = transitions
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}


@dataclass
class Observations:
    """When this replica first saw each Lease at its current resourceVersion (monotonic seconds)."""

    _seen: dict[str, tuple[str, float]] = field(default_factory=dict)

    def see(self, records: Iterable[LeaseRecord], now: float) -> None:
        current = {}
        for record in records:
            previous = self._seen.get(record.name)
            same = previous is not None and previous[0] == record.resource_version
            current[record.name] = previous if same and previous is not None else (record.resource_version, now)
        self._seen = current

    def unchanged_for(self, record: LeaseRecord, now: float) -> float:
        seen = self._seen.get(record.name)
        if seen is None or seen[0] != record.resource_version:
            return 0.0
        return now - seen[1]

    def expired(self, record: LeaseRecord, now: float) -> bool:
        """Not renewed for its whole duration, as this replica has watched it (a fresh start watches
        for one full duration before calling anything expired)."""
        return self.unchanged_for(record, now) >= record.duration


def live_members(members: Iterable[LeaseRecord], observations: Observations, now: float, me: str) -> list[str]:
    """The identities of the member Leases renewed within their duration, and always this replica."""
    live = {m.holder for m in members if m.holder and not observations.expired(m, now)}
    return sorted(live | {me})


class Action(StrEnum):
    NONE = "none"  # someone else's (or nobody's and not ours to take)
    ACQUIRE = "acquire"  # create it, or take it over (absent, released or expired; we are preferred)
    RENEW = "renew"
    RELEASE = "release"  # ours, but another live member is preferred: stop, then clear the holder


def decide(me: str, key: ClusterKey, lease: LeaseRecord | None, preferred: str | None, observations: Observations,
           now: float, *, holding: bool, may_acquire: bool = True) -> Action:
    """What to do with cluster `key`'s Lease this tick. `preferred`: who should own it (`assign`);
    `holding`: this replica believes it holds it (its last write succeeded within the renew deadline)."""
    if lease is not None and lease.holder == me and holding:
        return Action.RELEASE if preferred != me else Action.RENEW
    free = lease is None or not lease.holder or lease.holder == me or observations.expired(lease, now)
    if free and preferred == me and may_acquire:
        return Action.ACQUIRE
    return Action.NONE
