"""Replica placement for a replication-factor change. Pure: no I/O, no clock, no randomness.

`plan_placement(current, replication_factor, brokers, load)` returns the target
replica list of every partition of one topic; `placement_problem(target,
brokers)` says why an assignment cannot be sent (or None).

The algorithm (greedy, deterministic; same inputs, same output)
---------------------------------------------------------------

Inputs: the current replicas per partition, the wanted replication factor
(RF), the live brokers with their racks, and optionally the cluster-wide
replica count per broker (`load`, a tie-breaker only). A broker without a
rack counts as its own rack, so without racks "distinct racks" reduces to
"distinct brokers". `count[b]` is broker b's replica count in this topic; it
starts from the current assignment and follows every decision.

1. **Keep what is live.** Replicas on brokers that are not live are dropped
   (they must be replaced). Of the live ones, the first replica of each rack
   is kept, in the current order; the preferred leader (first replica) is
   always among them. Further replicas on an already used rack are
   "duplicates".
2. **Shrink** (more distinct-rack replicas than RF): drop duplicates first,
   then, one at a time, the replica on the most loaded broker (`count`, then
   `load`, then the highest id), never the preferred leader.
3. **Grow or keep**: the partition needs `min(RF, racks)` distinct racks.
   Duplicates are kept (no data moves) only in the slots left once every
   missing rack has a slot; when there are more duplicates than such slots,
   the ones on the most loaded brokers go. Rack spread wins over keeping a
   duplicate: that is the only case where an existing replica moves although
   the broker is alive. Then new replicas are added, one at a time, on the
   broker that minimises (replicas of this partition already on its rack,
   `count`, `load`, id): unused racks first, then the least loaded broker,
   then the lowest id.
4. **Balance** (move-neutral): while a broker holds at least two replicas
   more than another, replicas of changing partitions are moved along the
   shortest chain from a most loaded broker to one holding two fewer (a
   direct swap, or b1 -> b2 in one partition and b2 -> b3 in another: an
   augmenting path). Each move adds no data move (a newly added replica is
   replaced by another broker, or a kept replica by one this partition is
   dropping), keeps the partition's rack spread, and never removes a kept
   preferred leader. Each chain lowers the sum of squared counts, so this ends.
5. **Preferred leaders.** Partitions whose replica set does not change keep
   their exact replica list (and leader). For each partition that changes,
   in partition order, the preferred leader is the target replica with the
   fewest preferred leaderships so far (unchanged partitions counted first);
   ties go to the current leader, then to a replica that already holds the
   data, then to the lowest id. A final pass moves a leadership from a
   partition whose leader leads two more partitions than one of its other
   replicas. The leader goes first; the other replicas keep their order
   (kept replicas, then added ones).

The result: every partition on `min(RF, racks)` distinct racks, replica and
preferred-leader counts per broker as even as those constraints allow
(differing by at most one in the common cases), and no more data moves than
the rack constraint requires (for a plain RF increase: exactly RF - old RF
new replicas per partition; for a decrease: none).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

Assignment = tuple[tuple[int, ...], ...]

# Swaps in the balancing passes are bounded (each one strictly improves, so this is a safety net).
_MAX_SWAPS_PER_REPLICA = 4


def replicas_problem(replicas: Sequence[int], brokers: Mapping[int, str | None] | Sequence[int]) -> str | None:
    """Why one partition's replica list cannot be sent to a cluster whose live brokers are
    `brokers`; None when it can."""
    live = set(brokers)
    if not replicas:
        return "no replicas"
    if len(replicas) > len(live):
        return f"{len(replicas)} replicas but only {len(live)} live broker(s) {sorted(live)}"
    duplicated = sorted(b for b, n in Counter(replicas).items() if n > 1)
    if duplicated:
        return f"broker(s) {duplicated} listed more than once"
    unknown = sorted(set(replicas) - live)
    if unknown:
        return f"broker(s) {unknown} are not live brokers (live: {sorted(live)})"
    return None


def placement_problem(target: Sequence[Sequence[int]], brokers: Mapping[int, str | None] | Sequence[int]) -> str | None:
    """Why `target` (replicas per partition of one topic) cannot be sent to a cluster whose live
    brokers are `brokers` (ids, or id -> rack): unknown or duplicated brokers, a replication factor
    above the broker count, partitions with different replica counts. None when it can."""
    live = set(brokers)
    if not target:
        return "the assignment has no partitions"
    rf = len(target[0])
    if rf > len(live):
        return f"replication factor {rf} is more than the {len(live)} live broker(s) {sorted(live)}"
    for partition, replicas in enumerate(target):
        if replicas and len(replicas) != rf:
            return (f"partition {partition} has {len(replicas)} replica(s) but partition 0 has {rf}: "
                    "every partition of a topic needs the same number of replicas")
        problem = replicas_problem(replicas, live)
        if problem is not None:
            return f"partition {partition}: {problem}"
    return None


def plan_placement(
    current: Sequence[Sequence[int]],
    replication_factor: int,
    brokers: Mapping[int, str | None],
    load: Mapping[int, int] | None = None,
) -> Assignment:
    """The target replicas of every partition for `replication_factor` (see the module docstring).

    `brokers` are the live brokers (id -> rack or None); `load` the replica count per broker
    across the cluster (a tie-breaker). Raises ValueError when no placement exists (RF < 1 or
    more than the live brokers): callers check that first (plan.py's InvalidReplicationFactor).
    """
    if replication_factor < 1:
        raise ValueError(f"replication factor must be at least 1, not {replication_factor}")
    if replication_factor > len(brokers):
        raise ValueError(f"replication factor {replication_factor} needs more than the {len(brokers)} live broker(s)")
    placer = _Placer(brokers, load or {}, replication_factor)
    existing = [list(dict.fromkeys(b for b in replicas if b in brokers)) for replicas in current]
    placer.count.update(b for replicas in existing for b in replicas)
    target = [placer.place_partition(replicas) for replicas in existing]
    placer.balance(existing, target)
    return _order_leaders([tuple(r) for r in current], existing, target)


class _Placer:
    def __init__(self, brokers: Mapping[int, str | None], load: Mapping[int, int], rf: int) -> None:
        self.brokers = sorted(brokers)
        self.rack = {b: (rack if rack is not None else f"\0broker-{b}") for b, rack in brokers.items()}
        self.load = load
        self.rf = rf
        self.racks_needed = min(rf, len(set(self.rack.values())))
        self.count: Counter[int] = Counter({b: 0 for b in brokers})

    def _heavier(self, broker: int) -> tuple[int, int, int]:
        return (self.count[broker], self.load.get(broker, 0), broker)

    def place_partition(self, existing: list[int]) -> list[int]:
        kept: list[int] = []
        duplicates: list[int] = []
        used: set[str] = set()
        for broker in existing:
            if self.rack[broker] in used:
                duplicates.append(broker)
            else:
                kept.append(broker)
                used.add(self.rack[broker])
        leader = existing[0] if existing else None
        dropped = list(duplicates)
        if len(kept) > self.rf:
            while len(kept) > self.rf:
                victim = max((b for b in kept if b != leader), key=self._heavier)
                kept.remove(victim)
                dropped.append(victim)
        else:
            missing_racks = max(0, self.racks_needed - len(kept))
            room = max(0, self.rf - len(kept) - missing_racks)
            keep_duplicates = sorted(duplicates, key=self._heavier)[:room]
            dropped = [b for b in duplicates if b not in keep_duplicates]
            kept += [b for b in duplicates if b in keep_duplicates]
        for broker in dropped:
            self.count[broker] -= 1
        while len(kept) < self.rf:
            on_rack = Counter(self.rack[b] for b in kept)
            chosen = min((b for b in self.brokers if b not in kept),
                         key=lambda b: (on_rack[self.rack[b]], *self._heavier(b)))
            kept.append(chosen)
            self.count[chosen] += 1
        return kept

    def _spread(self, replicas: Sequence[int]) -> int:
        return len({self.rack[b] for b in replicas})

    def balance(self, existing: list[list[int]], target: list[list[int]]) -> None:
        """Step 4: move-neutral replica moves from the most to the least loaded brokers."""
        budget = _MAX_SWAPS_PER_REPLICA * max(1, sum(len(t) for t in target))
        while budget > 0 and max(self.count.values()) - min(self.count.values()) > 1:
            path = self._transfer_path(existing, target)
            if not path:
                return
            for partition, position, heavy, light in path:
                target[partition][position] = light
                self.count[heavy] -= 1
                self.count[light] += 1
            budget -= 1

    def _transfer_path(self, existing: list[list[int]], target: list[list[int]]) -> list[tuple[int, int, int, int]]:
        """The shortest chain of replica moves (each in a different partition) that takes one
        replica off a most loaded broker and puts one on a broker holding two fewer: a direct
        swap, or b1 -> b2 in one partition and b2 -> b3 in another... (an augmenting path)."""
        edges: dict[int, list[tuple[int, int, int]]] = {b: [] for b in self.brokers}
        for partition, replicas in enumerate(target):
            had = existing[partition]
            if set(replicas) == set(had):
                continue  # unchanged partitions stay unchanged
            leader = had[0] if had else None
            spread = self._spread(replicas)
            for position, heavy in enumerate(replicas):
                if heavy == leader:
                    continue
                for light in self.brokers:
                    if light in replicas or (heavy in had and light not in had):
                        continue  # already there, or the move would copy data a kept replica has
                    if self._spread(replicas[:position] + [light] + replicas[position + 1:]) < spread:
                        continue
                    edges[heavy].append((light, partition, position))
        top = max(self.count.values())
        sources = [b for b in self.brokers if self.count[b] == top]
        parent: dict[int, tuple[int, int, int] | None] = {b: None for b in sources}
        queue = list(sources)
        for node in queue:
            used = set()
            step = parent[node]
            walk = node
            while step is not None:
                used.add(step[1])
                walk = step[0]
                step = parent[walk]
            for light, partition, position in edges[node]:
                if light in parent or partition in used:
                    continue
                parent[light] = (node, partition, position)
                if self.count[light] <= top - 2:
                    path: list[tuple[int, int, int, int]] = []
                    walk = light
                    while (step := parent[walk]) is not None:
                        path.append((step[1], step[2], step[0], walk))
                        walk = step[0]
                    return path[::-1]
                queue.append(light)
        return []


def _order_leaders(current: list[tuple[int, ...]], existing: list[list[int]], target: list[list[int]]) -> Assignment:
    """Step 5: unchanged partitions keep their list; changed ones get a balancing preferred leader."""
    changed = [p for p in range(len(target)) if set(target[p]) != set(current[p]) or len(current[p]) != len(target[p])]
    changed_set = set(changed)
    leaders: Counter[int] = Counter({b: 0 for replicas in target for b in replicas})
    leaders.update(current[p][0] for p in range(len(target)) if p not in changed_set and current[p])
    chosen: dict[int, int] = {}
    for p in changed:
        old_leader = current[p][0] if current[p] else None
        best = min(target[p], key=lambda b: (leaders[b], b != old_leader, b not in existing[p], b))
        chosen[p] = best
        leaders[best] += 1
    # Repair: hand a leadership from an over-represented leader to a replica of the same partition.
    for _ in range(_MAX_SWAPS_PER_REPLICA * max(1, len(changed))):
        swap = next(((p, b) for p in changed for b in target[p]
                     if leaders[b] <= leaders[chosen[p]] - 2), None)
        if swap is None:
            break
        p, b = swap
        leaders[chosen[p]] -= 1
        leaders[b] += 1
        chosen[p] = b
    result: list[tuple[int, ...]] = []
    for p, replicas in enumerate(target):
        if p not in changed_set:
            result.append(tuple(current[p]))
        else:
            result.append((chosen[p], *(b for b in replicas if b != chosen[p])))
    return tuple(result)
