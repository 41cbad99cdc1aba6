"""Sharding by KafkaCluster: rendezvous hashing, Lease expiry by the observer's clock, the per-tick
decision (pure), and three Sharders against the API emulator's Leases with a fake clock."""

from __future__ import annotations

import asyncio
import collections
import os
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from kafkaops.k8s.rest import Rest
from kafkaops.k8s.sharding import (
    Action,
    assign,
    LeaseRecord,
    Observations,
    cluster_lease_name,
    decide,
    lease_body,
    live_members,
    member_lease_name,
    preferred_owner,
)
from kafkaops.k8s.shards import LeaseApi, LeaseConflict, Sharder, ShardSettings
from kafkaops.testing.k8s_emulator import KubernetesApiEmulator

CLUSTERS = [("team-a", f"c{i}") for i in range(60)]


def record(name: str, holder: str, rv: str = "1", duration: float = 15.0, **kw: object) -> LeaseRecord:
    return LeaseRecord(name, holder, duration, rv, **kw)  # type: ignore[arg-type]


# --- rendezvous hashing ---------------------------------------------------------------------------------


def test_every_replica_computes_the_same_owner_whatever_the_order_of_members() -> None:
    members = ["op-a", "op-b", "op-c"]
    for key in CLUSTERS:
        assert preferred_owner(key, members) == preferred_owner(key, list(reversed(members)))
    assert preferred_owner(CLUSTERS[0], []) is None


def test_clusters_spread_over_members_and_a_member_leaving_moves_only_its_own() -> None:
    members = ["op-a", "op-b", "op-c"]
    before = {key: preferred_owner(key, members) for key in CLUSTERS}
    counts = collections.Counter(before.values())
    assert set(counts) == set(members) and min(counts.values()) >= 10, counts  # 60 clusters, none starved
    after = {key: preferred_owner(key, ["op-a", "op-c"]) for key in CLUSTERS}
    moved = [key for key in CLUSTERS if before[key] != after[key]]
    assert moved and all(before[key] == "op-b" for key in moved), "only op-b's clusters move"
    joined = {key: preferred_owner(key, [*members, "op-d"]) for key in CLUSTERS}
    assert all(joined[key] in (before[key], "op-d") for key in CLUSTERS), "a new member only takes, never reshuffles"


def test_assign_bounds_the_load_and_a_member_leaving_moves_little() -> None:
    members = ["op-a", "op-b", "op-c"]
    twelve = [("kafka", f"k{i:02d}") for i in range(12)]
    plain = collections.Counter(preferred_owner(k, ["op-0", "op-1", "op-2"]) for k in twelve)
    bounded = collections.Counter(assign(twelve, ["op-0", "op-1", "op-2"]).values())
    assert max(plain.values()) == 7 and max(bounded.values()) <= 5, (plain, bounded)  # ceil(1.25 * 12 / 3)
    before = assign(CLUSTERS, members)
    assert assign(CLUSTERS, list(reversed(members))) == before, "the same map in every replica"
    assert max(collections.Counter(before.values()).values()) <= 25  # ceil(1.25 * 60 / 3)
    after = assign(CLUSTERS, ["op-a", "op-c"])
    kept = [k for k in CLUSTERS if before[k] != "op-b" and after[k] == before[k]]
    others = [k for k in CLUSTERS if before[k] != "op-b"]
    assert len(kept) >= 0.8 * len(others), (len(kept), len(others))
    assert assign(CLUSTERS, []) == {}


def test_lease_names_are_valid_and_distinct() -> None:
    assert cluster_lease_name(("kafka", "main")) == "kafkaops-kafka-main"
    assert member_lease_name("Op_1") == "kafkaops-member-op-1"
    long = cluster_lease_name(("n" * 63, "c" * 253))
    assert len(long) <= 253 and long != cluster_lease_name(("n" * 63, "c" * 252 + "d"))


# --- expiry by the observer's own clock ------------------------------------------------------------------


def test_a_lease_expires_after_its_duration_without_a_new_resource_version() -> None:
    seen = Observations()
    lease = record("l", "op-a", rv="5", duration=15)
    seen.see([lease], now=100.0)
    assert not seen.expired(lease, 114.9)
    assert seen.expired(lease, 115.0)
    renewed = record("l", "op-a", rv="6", duration=15)
    seen.see([renewed], now=114.0)  # renewed: the clock starts again from when it was seen changing
    assert not seen.expired(renewed, 128.9) and seen.expired(renewed, 129.0)


def test_a_lease_first_seen_now_is_not_expired_whatever_its_renew_time_says() -> None:
    """A replica that just started waits a full period: it does not trust another replica's clock."""
    seen = Observations()
    body = lease_body("l", "op-a", 15, now_epoch=0.0)  # renewTime in 1970
    body["metadata"]["resourceVersion"] = "9"
    lease = LeaseRecord.of(body)
    seen.see([lease], now=1000.0)
    assert not seen.expired(lease, 1014.0) and seen.expired(lease, 1015.0)


def test_live_members_are_the_ones_renewed_within_their_duration_and_always_me() -> None:
    seen = Observations()
    a, b = record("m-a", "op-a", rv="1"), record("m-b", "op-b", rv="1")
    seen.see([a, b], now=0.0)
    b2 = record("m-b", "op-b", rv="2")
    seen.see([a, b2], now=10.0)
    assert live_members([a, b2], seen, 16.0, me="op-c") == ["op-b", "op-c"]  # op-a silent for 16 s


# --- the decision of one tick ----------------------------------------------------------------------------


def test_decide() -> None:
    seen = Observations()
    key = ("kafka", "main")
    members = ["op-a", "op-b"]
    me = preferred_owner(key, members)
    other = next(m for m in members if m != me)
    assert me is not None
    assert decide(me, key, None, me, seen, 0.0, holding=False) is Action.ACQUIRE
    assert decide(me, key, None, me, seen, 0.0, holding=False, may_acquire=False) is Action.NONE
    assert decide(other, key, None, me, seen, 0.0, holding=False) is Action.NONE
    theirs = record("l", other, rv="3")
    seen.see([theirs], now=0.0)
    assert decide(me, key, theirs, me, seen, 14.0, holding=False) is Action.NONE, "held and fresh"
    assert decide(me, key, theirs, me, seen, 15.0, holding=False) is Action.ACQUIRE, "expired"
    released = record("l", "", rv="4")
    assert decide(me, key, released, me, seen, 0.0, holding=False) is Action.ACQUIRE
    mine = record("l", me, rv="5")
    assert decide(me, key, mine, me, seen, 0.0, holding=True) is Action.RENEW
    # held by `other`, but `me` is preferred and live: `other` hands it over
    held_by_other = record("l", other, rv="6")
    assert decide(other, key, held_by_other, me, seen, 0.0, holding=True) is Action.RELEASE
    # `other` alone: it keeps what it holds
    assert decide(other, key, held_by_other, other, seen, 0.0, holding=True) is Action.RENEW


# --- Sharders against the emulator's Leases --------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


OPENED: list[Rest] = []  # the connections lease_api() opened, closed with the emulator


@pytest.fixture
async def emulator(tmp_path: Path) -> AsyncIterator[tuple[KubernetesApiEmulator, Path]]:
    async with KubernetesApiEmulator(namespaces=["default", "kafkaops-system"]) as api:
        yield api, api.write_kubeconfig(tmp_path / "kubeconfig")
        while OPENED:
            await OPENED.pop().close()


def lease_api(kubeconfig: Path) -> LeaseApi:
    """A LeaseApi on a connection of its own to the kubeconfig's server, with its token."""
    config = yaml.safe_load(kubeconfig.read_text())
    rest = Rest.connected(config["clusters"][0]["cluster"]["server"], token=config["users"][0]["user"]["token"])
    OPENED.append(rest)
    return LeaseApi(rest)


async def test_the_emulator_serves_leases_with_optimistic_concurrency(emulator) -> None:
    api, kubeconfig = emulator
    leases = lease_api(kubeconfig)
    created = await leases.create("kafkaops-system", lease_body("x", "op-a", 15, 0.0))
    first = LeaseRecord.of(created)
    with pytest.raises(LeaseConflict):  # the same name again: AlreadyExists is a 409
        await leases.create("kafkaops-system", lease_body("x", "op-b", 15, 0.0))
    renewed = await leases.replace("kafkaops-system", "x", lease_body("x", "op-a", 15, 1.0, previous=first,
                                                                      acquired=False))
    assert LeaseRecord.of(renewed).resource_version != first.resource_version
    with pytest.raises(LeaseConflict):  # written with a stale resourceVersion: someone else won
        await leases.replace("kafkaops-system", "x", lease_body("x", "op-b", 15, 2.0, previous=first))
    assert [LeaseRecord.of(b).holder for b in await leases.list("kafkaops-system")] == ["op-a"]
    taken = await leases.replace("kafkaops-system", "x", lease_body("x", "op-b", 15, 2.0,
                                                                    previous=LeaseRecord.of(renewed)))
    assert LeaseRecord.of(taken).transitions == 1 and taken["spec"]["acquireTime"].endswith("Z")


async def test_three_sharders_one_owner_each_failover_within_a_lease_period(emulator) -> None:
    _api, kubeconfig = emulator
    clock = Clock()
    clusters = [("kafka", f"c{i}") for i in range(6)]
    log: list[tuple[str, str, tuple[str | None, str]]] = []

    def sharder(name: str) -> Sharder:
        s = Sharder(lease_api(kubeconfig), ShardSettings(name, "kafkaops-system", lease_duration=15.0),
                    lambda: clusters, clock=clock, wall=clock)

        async def gained(key, who=name):
            log.append(("gained", who, key))

        async def lost(key, who=name):
            log.append(("lost", who, key))

        s.on_gained, s.on_lost = gained, lost
        return s

    replicas = [sharder(n) for n in ("op-a", "op-b", "op-c")]

    async def tick(alive: list[Sharder], seconds: float = 5.0) -> None:
        for s in alive:
            await s.step()
        clock.now += seconds

    for _ in range(4):
        await tick(replicas)
    owners = {key: [s.identity for s in replicas if s.owns(key)] for key in clusters}
    assert all(len(o) == 1 for o in owners.values()), owners
    expected = assign(clusters, ["op-a", "op-b", "op-c"])
    assert {key: o[0] for key, o in owners.items()} == expected

    victim = next(s for s in replicas if s.owned())
    survivors = [s for s in replicas if s is not victim]
    orphaned = victim.owned()
    killed_at = clock.now
    taken_at: dict[tuple[str | None, str], float] = {}
    while len(taken_at) < len(orphaned) and clock.now - killed_at < 60:
        await tick(survivors)  # the victim no longer ticks: as if killed -9
        for key in orphaned:
            if key not in taken_at and any(s.owns(key) for s in survivors):
                taken_at[key] = clock.now
        for key in clusters:  # never two owners (the victim's own view expires by its deadline)
            assert sum(s.owns(key) for s in replicas) <= 1, key
    assert set(taken_at) == set(orphaned)
    worst = max(taken_at.values()) - killed_at
    assert worst <= 15.0 + 2 * 5.0, f"failover took {worst:.0f} s of fake time"
    assert all(sum(s.owns(key) for s in survivors) == 1 for key in clusters)
    assert not any(event == "lost" for event, who, _ in log if who != victim.identity)


async def test_a_joining_member_takes_its_share_by_handover_and_a_clean_stop_releases(emulator) -> None:
    _api, kubeconfig = emulator
    clock = Clock()
    clusters = [("kafka", f"c{i}") for i in range(12)]
    a = Sharder(lease_api(kubeconfig), ShardSettings("op-a", "kafkaops-system"), lambda: clusters,
                clock=clock, wall=clock)
    b = Sharder(lease_api(kubeconfig), ShardSettings("op-b", "kafkaops-system"), lambda: clusters,
                clock=clock, wall=clock)
    for _ in range(2):
        await a.step()
        clock.now += 5
    assert a.owned() == sorted(clusters)
    for _ in range(3):
        for s in (a, b):
            await s.step()
        clock.now += 5
    share = assign(clusters, ["op-a", "op-b"])
    assert sorted(b.owned()) == sorted(k for k, o in share.items() if o == "op-b") and b.owned()
    assert sorted(a.owned()) == sorted(k for k, o in share.items() if o == "op-a")
    await b.stop()  # released at once: op-a takes them at its next tick, no lease period to wait
    clock.now += 5
    await a.step()
    await a.step()
    assert a.owned() == sorted(clusters)


async def test_a_holder_that_cannot_renew_stops_before_anyone_may_take_over(emulator) -> None:
    _api, kubeconfig = emulator
    clock = Clock()
    clusters = [("kafka", "main")]
    a = Sharder(lease_api(kubeconfig), ShardSettings("op-a", "kafkaops-system"), lambda: clusters,
                clock=clock, wall=clock)
    for _ in range(2):
        await a.step()
        clock.now += 5
    assert a.owns(("kafka", "main"))
    clock.now += 10  # its loop is stuck: 15 s since its last write started
    assert not a.owns(("kafka", "main")), "past the renew deadline (10 s) it no longer owns the cluster"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
async def test_kubectl_get_leases_shows_the_holders(emulator) -> None:
    _api, kubeconfig = emulator
    clock = Clock()
    a = Sharder(lease_api(kubeconfig), ShardSettings("op-a", "kafkaops-system"), lambda: [("kafka", "main")],
                clock=clock, wall=time.time)
    for _ in range(2):
        await a.step()
    done = await asyncio.to_thread(subprocess.run, ["kubectl", "get", "leases", "-n", "kafkaops-system"],
                                   capture_output=True, text=True, env={**os.environ, "KUBECONFIG": str(kubeconfig)})
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert rows[0] == ["NAME", "HOLDER", "AGE"]
    assert sorted(row[:2] for row in rows[1:]) == [["kafkaops-kafka-main", "op-a"], ["kafkaops-member-op-a", "op-a"]]
