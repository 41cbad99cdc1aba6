"""placement.py: target replicas for a replication-factor change. Pure: no cluster needed."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from kafkaops.reconcile.placement import placement_problem, plan_placement, replicas_problem
from kafkaops.testing.fake.placement import assign_replicas

THREE = {1: "a", 2: "b", 3: "c"}
SIX = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
SIX_NO_RACKS = {b: None for b in range(1, 7)}


def kafka_placement(brokers, partitions, rf, seed=0):
    """What Kafka's rack-aware round robin gives a new topic (the double implements it)."""
    return [tuple(r) for r in assign_replicas(sorted(brokers), brokers, partitions, rf, random.Random(seed))]


def added(current, target):
    """Replicas that must be copied: the data moves."""
    return sum(len(set(t) - set(c)) for c, t in zip(current, target))


def spread(counter, brokers):
    values = [counter.get(b, 0) for b in brokers]
    return max(values) - min(values)


def check_target(current, target, rf, brokers):
    racks = {b: (r if r is not None else f"broker-{b}") for b, r in brokers.items()}
    assert len(target) == len(current)
    assert all(len(r) == rf and len(set(r)) == rf for r in target)
    wanted_racks = min(rf, len(set(racks.values())))
    assert all(len({racks[b] for b in r}) == wanted_racks for r in target), "replicas on distinct racks"
    assert spread(Counter(b for r in target for b in r), brokers) <= 1, "replica counts differ by at most 1"
    assert spread(Counter(r[0] for r in target), brokers) <= 1, "preferred leaders spread evenly"
    assert placement_problem(target, brokers) is None


@pytest.mark.parametrize("brokers", [THREE, SIX, SIX_NO_RACKS], ids=["3-brokers", "6-brokers-3-racks", "6-no-racks"])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_rf_1_to_3_adds_two_replicas_per_partition_and_keeps_the_leader(brokers, seed):
    current = kafka_placement(brokers, 12, 1, seed)
    target = plan_placement(current, 3, brokers)
    check_target(current, target, 3, brokers)
    assert added(current, target) == 12 * 2, "the minimum: only the new replicas move"
    assert all(set(c) <= set(t) for c, t in zip(current, target)), "existing replicas kept"


@pytest.mark.parametrize("brokers", [THREE, SIX, SIX_NO_RACKS], ids=["3-brokers", "6-brokers-3-racks", "6-no-racks"])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_rf_3_to_2_moves_nothing_and_keeps_the_preferred_leader(brokers, seed):
    current = kafka_placement(brokers, 12, 3, seed)
    target = plan_placement(current, 2, brokers)
    check_target(current, target, 2, brokers)
    assert added(current, target) == 0
    assert all(set(t) <= set(c) for c, t in zip(current, target))
    assert [t[0] for t in target] == [c[0] for c in current], "the preferred leader is never the one removed"


@pytest.mark.parametrize("seed", range(10))
def test_other_changes_on_six_brokers_stay_rack_aware_balanced_and_minimal(seed):
    for old, new, partitions in ((2, 3, 10), (3, 1, 7), (1, 2, 9), (2, 1, 9), (1, 3, 50)):
        current = kafka_placement(SIX, partitions, old, seed)
        target = plan_placement(current, new, SIX)
        check_target(current, target, new, SIX)
        assert added(current, target) == partitions * max(0, new - old)


def test_unchanged_partitions_and_same_rf_are_left_exactly_as_they_are():
    current = [(2, 1, 3), (3, 2, 1), (1, 3, 2)]
    assert plan_placement(current, 3, THREE) == tuple(current)


def test_leaders_are_balanced_even_from_a_skewed_start():
    current = [(1,)] * 6  # every partition on broker 1: all of them change
    target = plan_placement(current, 3, THREE)
    assert Counter(t[0] for t in target) == {1: 2, 2: 2, 3: 2}
    assert added(current, target) == 12


def test_replicas_on_brokers_that_are_gone_are_replaced():
    current = [(1, 2), (2, 3), (3, 4)]  # broker 4 left the cluster
    target = plan_placement(current, 2, THREE)
    assert target[:2] == ((1, 2), (2, 3))
    assert 4 not in target[2] and 3 in target[2] and len(set(target[2])) == 2
    assert added(current, target) == 1


def test_growing_puts_new_replicas_on_unused_racks_first():
    brokers = {1: "a", 2: "a", 3: "a", 4: "b"}
    target = plan_placement([(1,), (2,)], 2, brokers)
    assert all(4 in t for t in target), "the only broker of the unused rack"


def test_rack_spread_wins_over_keeping_a_duplicate():
    # 1 and 4 are both on rack a: growing to 3 replicas needs racks b and c, so 4 goes.
    target = plan_placement([(1, 4)], 3, SIX)
    assert target[0][0] == 1 and {SIX[b] for b in target[0]} == {"a", "b", "c"}


def test_shrinking_drops_duplicated_racks_first():
    target = plan_placement([(1, 4, 2)], 2, SIX)
    assert target == ((1, 2),)


def test_cluster_load_breaks_ties():
    brokers = {1: None, 2: None, 3: None}
    assert plan_placement([(1,)], 2, brokers, load={2: 10, 3: 0}) == ((1, 3),)
    assert plan_placement([(1,)], 2, brokers, load={2: 0, 3: 10}) == ((1, 2),)
    assert plan_placement([(1,)], 2, brokers) == ((1, 2),), "then the lowest id"


def test_deterministic():
    current = kafka_placement(SIX, 30, 1, seed=3)
    assert plan_placement(current, 3, SIX) == plan_placement(list(current), 3, dict(reversed(SIX.items())))


def test_impossible_replication_factors_raise():
    with pytest.raises(ValueError):
        plan_placement([(1,)], 4, THREE)
    with pytest.raises(ValueError):
        plan_placement([(1,)], 0, THREE)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ([[1, 2], [2, 3]], None),
        ([], "no partitions"),
        ([[1, 2], [3]], "every partition of a topic needs the same number of replicas"),
        ([[1, 2], [1, 1]], "partition 1: broker(s) [1] listed more than once"),
        ([[1, 7]], "partition 0: broker(s) [7] are not live brokers"),
        ([[1, 2, 3, 4]], "replication factor 4 is more than the 3 live broker(s)"),
        ([[]], "partition 0: no replicas"),
    ],
)
def test_placement_problem(target, expected):
    problem = placement_problem(target, THREE)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None and expected in problem
    assert placement_problem([[1, 2]], [1, 2]) is None, "a plain list of broker ids works too"


def test_replicas_problem_checks_one_partition():
    assert replicas_problem((3, 1), THREE) is None
    assert replicas_problem((3, 9), THREE) == "broker(s) [9] are not live brokers (live: [1, 2, 3])"
    assert replicas_problem((1, 2, 3, 1), THREE) == "4 replicas but only 3 live broker(s) [1, 2, 3]"
    assert replicas_problem((), THREE) == "no replicas"


def test_new_empty_partitions_are_placed_like_the_others():
    # A partition increase and an RF change together: the new partitions get the new RF too.
    target = plan_placement([(1,), (2,), (3,), (), (), ()], 2, THREE)
    check_target([(1,), (2,), (3,), (), (), ()], target, 2, THREE)
    assert [t[0] for t in target[:3]] == [1, 2, 3]
