"""Replica placement for the fake cluster test double.

Kafka's round-robin assignment (AdminUtils.assignReplicasToBrokers): a
random start broker and a random shift for followers, and, when brokers have
racks, a rack-alternating broker order so every partition spreads over as many
racks as it has replicas. The randomness comes from the double's seeded RNG,
so placements are deterministic per seed.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(brokers: Sequence[int], racks: Mapping[int, str | None]) -> list[int]:
    """Brokers ordered rack by rack: r1b1, r2b1, r3b1, r1b2, ..."""
    by_rack: dict[str | None, list[int]] = {}
    for broker in sorted(brokers):
        by_rack.setdefault(racks.get(broker), []).append(broker)
    queues = [by_rack[rack] for rack in sorted(by_rack, key=lambda r: r or "")]
    ordered: list[int] = []
    depth = max((len(q) for q in queues), default=0)
    for i in range(depth):
        ordered.extend(q[i] for q in queues if i < len(q))
    return ordered


def assign_replicas(
    brokers: Sequence[int],
    racks: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    rng: random.Random,
    first_partition: int = 0,
) -> list[list[int]]:
    """Replica lists for ``partitions`` new partitions (caller checks RF <= brokers)."""
    if not brokers or partitions <= 0:
        return []
    rack_aware = len({racks.get(b) for b in brokers} - {None}) > 1
    ordered = rack_alternated(brokers, racks) if rack_aware else sorted(brokers)
    n = len(ordered)
    start = rng.randrange(n)
    shift = rng.randrange(n)
    num_racks = len({racks.get(b) for b in ordered})
    result: list[list[int]] = []
    for offset in range(partitions):
        p = first_partition + offset
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        if rack_aware:
            result.append(_rack_aware_replicas(ordered, racks, first, shift * num_racks, replication_factor, num_racks))
        else:
            replicas = [ordered[first]]
            replicas += [ordered[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
            result.append(replicas)
    return result


def _rack_aware_replicas(
    ordered: Sequence[int],
    racks: Mapping[int, str | None],
    first: int,
    shift: int,
    replication_factor: int,
    num_racks: int,
) -> list[int]:
    n = len(ordered)
    leader = ordered[first]
    replicas = [leader]
    used_racks = {racks.get(leader)}
    used = {leader}
    k = 0
    for _ in range(replication_factor - 1):
        while True:
            broker = ordered[_replica_index(first, shift, k, n)]
            k += 1
            rack = racks.get(broker)
            rack_ok = rack not in used_racks or len(used_racks) == num_racks
            broker_ok = broker not in used or len(used) == n
            if rack_ok and broker_ok:
                replicas.append(broker)
                used_racks.add(rack)
                used.add(broker)
                break
    return replicas
