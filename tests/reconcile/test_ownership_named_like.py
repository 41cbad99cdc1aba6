"""Ownership.named_like answers what a scan of the owners answers, through any sequence of updates
(its answer is carried forward by each update's changes, not recomputed)."""

from __future__ import annotations

import random

from kafkaops.reconcile.ownership import MemoryOwnershipStore, Ownership
from kafkaops.reconcile.reassign import THROTTLE_OWNER


def scan(ownership: Ownership, prefix: str) -> frozenset[str]:
    return frozenset(o for o in ownership.owners if o.startswith(prefix))


def test_named_like_follows_every_update():
    rng = random.Random(17)
    names = [f"topic/t{i}" for i in range(40)] + [f"{THROTTLE_OWNER}/t{i}" for i in range(8)] + ["broker/default"]
    ownership = Ownership()
    assert ownership.named_like(THROTTLE_OWNER) == frozenset()
    history = [ownership]
    for _ in range(400):
        changes = {rng.choice(names): rng.choice([None, {}, {"retention.ms": None}, {"a": None, "b": "scrypt$x"}])
                   for _ in range(rng.randint(1, 4))}
        ownership = ownership.updated(changes)
        history.append(ownership)
        if rng.random() < 0.5:
            assert ownership.named_like(THROTTLE_OWNER) == scan(ownership, THROTTLE_OWNER)
    for older in history:  # every copy keeps its own answer (nothing shared is changed in place)
        assert older.named_like(THROTTLE_OWNER) == scan(older, THROTTLE_OWNER)
        assert older.named_like("topic/t1") == scan(older, "topic/t1")


def test_the_store_answers_through_its_copies():
    store = MemoryOwnershipStore()
    store.update("c", {f"topic/t{i}": {"retention.ms": None} for i in range(1000)})
    assert store.load("c").named_like(THROTTLE_OWNER) == frozenset()
    store.update("c", {f"{THROTTLE_OWNER}/t7": {"leader": "1:0"}})
    store.update("c", {"topic/t1": None})
    assert store.load("c").named_like(THROTTLE_OWNER) == {f"{THROTTLE_OWNER}/t7"}
    store.update("c", {f"{THROTTLE_OWNER}/t7": None})
    assert store.load("c").named_like(THROTTLE_OWNER) == frozenset()
    assert store.load("c") == Ownership(store.load("c").owners)  # the remembered answers are not compared
