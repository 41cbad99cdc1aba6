"""The sharding loop: this replica's membership Lease, and the per-cluster Leases it acquires,
renews, hands over and loses (decisions in `sharding.py`; the design in docs/architecture.md).

`Sharder.owns(key)` is what the rest of the operator asks; `on_gained` / `on_lost` are the
Reconciler's pick-up and stop. `owns` turns False by itself once the renew deadline has passed
since the start of the last successful write, even if this loop is stuck.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from kafkaops.frozen import frozen
from kafkaops.k8s.context import ClusterKey
from kafkaops.k8s.rest import APIError, Rest, object_path
from kafkaops.k8s.sharding import (
    CLUSTER,
    LEASE_LABEL,
    MEMBER,
    Action,
    LeaseRecord,
    Observations,
    assign,
    cluster_lease_name,
    decide,
    lease_body,
    live_members,
    member_lease_name,
    preferred_owner,
)

UNSHARDED: ClusterKey = (None, "")  # the pseudo-cluster of resources that name none

log = logging.getLogger("kafkaops.operator")


class LeaseConflict(Exception):
    """409: the Lease changed (or appeared) since it was read."""


class Leases(Protocol):
    async def list(self, namespace: str) -> list[dict[str, Any]]: ...

    async def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]: ...

    async def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]: ...

    async def delete(self, namespace: str, name: str, resource_version: str) -> None: ...

    async def close(self) -> None: ...  # its connection, opened on the sharder's loop


class LeaseApi:
    """coordination.k8s.io/v1 Leases as plain dicts, over `Rest` (kopf's client). MicroTimes are
    sent as the strings lease_body() makes (kube-apiserver's fixed-width parser wants the fraction)."""

    GROUP, VERSION, PLURAL = "coordination.k8s.io", "v1", "leases"

    def __init__(self, rest: Rest) -> None:
        self.rest = rest

    async def close(self) -> None:
        await self.rest.close()

    def _path(self, namespace: str, name: str | None = None) -> str:
        return object_path(self.GROUP, self.VERSION, self.PLURAL, namespace, name)

    async def _call(self, call: Awaitable[Any]) -> Any:
        try:
            return await call
        except APIError as exc:
            if exc.status == 409:
                raise LeaseConflict(str(exc.message or exc)) from None
            raise

    async def list(self, namespace: str) -> list[dict[str, Any]]:
        found = await self._call(self.rest.get(self._path(namespace), query={"labelSelector": LEASE_LABEL}))
        return list(found.get("items") or ())

    async def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._call(self.rest.post(self._path(namespace), body))  # type: ignore[no-any-return]

    async def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._call(self.rest.put(self._path(namespace, name), body))  # type: ignore[no-any-return]

    async def delete(self, namespace: str, name: str, resource_version: str) -> None:
        try:
            await self._call(self.rest.delete(self._path(namespace, name),
                                              {"preconditions": {"resourceVersion": resource_version}}))
        except APIError as exc:
            if exc.status != 404:
                raise


def replica_identity(env: dict[str, str] | None = None) -> str:
    """POD_NAME in a Deployment; elsewhere the host name and the process id (distinct processes on
    one machine are distinct replicas)."""
    env = dict(os.environ) if env is None else env
    return env.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"


@frozen
class ShardSettings:
    identity: str
    namespace: str  # where the Leases live
    lease_duration: float = 15.0

    @property
    def renew_period(self) -> float:
        """How old a write may get before it is renewed."""
        return self.lease_duration / 3

    @property
    def retry_period(self) -> float:
        """The tick: Leases are read, and late or failed renewals retried, this often (client-go's
        2 s for a 15 s lease), so one slow request does not cost the deadline."""
        return max(0.5, self.lease_duration * 2 / 15)

    @property
    def renew_deadline(self) -> float:
        return self.lease_duration * 2 / 3


@dataclass
class Held:
    record: LeaseRecord
    written_at: float  # monotonic start of the last successful write
    epoch: int


Hook = Callable[[ClusterKey], Awaitable[None]]


class Sharder:
    """One replica's view and handling of the Leases; `step()` is one tick (the tests drive it with a
    fake clock), `run()` ticks every retry period."""

    def __init__(self, leases: Leases, settings: ShardSettings, clusters: Callable[[], Iterable[ClusterKey]],
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        self.leases = leases
        self.settings = settings
        self.clusters = clusters  # the KafkaClusters that exist (the operator's watch cache)
        self.clock = clock
        self.wall = wall
        self.on_gained: Hook | None = None
        self.on_lost: Hook | None = None
        self.observations = Observations()
        self.members: list[str] = [settings.identity]
        self._held: dict[ClusterKey, Held] = {}
        self._member: LeaseRecord | None = None
        self._member_written = 0.0
        self._epochs = 0
        self._ticks = 0
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the thread's (start())
        self._work_loop: asyncio.AbstractEventLoop | None = None  # the operator's, where hooks run
        self._thread: threading.Thread | None = None

    @property
    def identity(self) -> str:
        return self.settings.identity

    # --- what the operator asks ----------------------------------------------------------------------

    def owns(self, key: ClusterKey | None) -> bool:
        if key is None:  # a resource naming no cluster (invalid): one live member reports it, no Lease
            return preferred_owner(UNSHARDED, self.members) == self.identity
        held = self._held.get(key)
        return held is not None and self.clock() - held.written_at < self.settings.renew_deadline

    def epoch(self, key: ClusterKey | None) -> int | None:
        """Changes with every acquisition: work started under one epoch is void under another."""
        if key is None:
            return 0 if self.owns(None) else None
        held = self._held.get(key)
        return held.epoch if held is not None and self.owns(key) else None

    def owned(self) -> list[ClusterKey]:
        return sorted((k for k in list(self._held) if self.owns(k)), key=lambda k: (k[0] or "", k[1]))

    # --- the loop -------------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._loop is not None

    def start(self) -> None:
        """Run the loop in a thread of its own, with its own event loop: a replica whose event loop
        lags under load (10,000 objects arriving) must still renew its Leases in time; it is slow,
        not dead. The hooks run on the operator's loop (this one), in the context of the caller."""
        self._work_loop = asyncio.get_running_loop()
        loop = self._loop = asyncio.new_event_loop()
        context = contextvars.copy_context()  # kopf's posting variables, for the hooks' Events

        def main() -> None:
            asyncio.set_event_loop(loop)
            self._task = loop.create_task(self.run(), name="kafkaops sharder")
            loop.run_forever()

        self._thread = threading.Thread(target=context.run, args=(main,), name="kafkaops-sharder", daemon=True)
        self._thread.start()

    async def _hook(self, hook: Hook | None, key: ClusterKey) -> None:
        """Run a hook on the operator's loop and wait for it (the work stops before a release)."""
        if hook is None:
            return
        if self._work_loop is None or self._work_loop is asyncio.get_running_loop():
            await hook(key)
        else:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(hook(key), self._work_loop))

    async def run(self) -> None:
        while True:
            started = self.clock()
            try:
                await self.step()
            except asyncio.CancelledError:
                raise
            except Exception:  # the API failed: try again next tick (owns() expires on its own)
                log.warning("sharding: a lease round failed", exc_info=True)
            await asyncio.sleep(max(0.0, self.settings.retry_period - (self.clock() - started)))

    async def stop(self) -> None:
        """A clean shutdown: stop the work, release every Lease and the membership (others take
        over at their next tick instead of after a lease period)."""
        loop = self._loop
        if loop is None:
            await self._shutdown()
            return
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._shutdown(), loop))
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 5.0)

    async def _shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for key in list(self._held):
            await self._release(key)
        if self._member is not None:
            try:
                await self.leases.delete(self.settings.namespace, self._member.name, self._member.resource_version)
            except Exception:
                log.warning("sharding: deleting the membership Lease failed", exc_info=True)
        await self.leases.close()  # its session, opened on this loop

    async def step(self) -> None:
        """One tick: renew the membership, read every Lease, then acquire, renew, hand over or drop."""
        self._ticks += 1
        # renewals first, with the heartbeat, all at once: they need no fresh read (a 409 says the
        # Lease changed), and a slow API must not spend the deadline on the reads before them
        start = self.clock()
        due = [key for key, held in list(self._held.items())
               if self.owns(key) and start - held.written_at >= self.settings.renew_period]
        beat = self._member is None or start - self._member_written >= self.settings.renew_period
        await asyncio.gather(*([self._heartbeat()] if beat else []), *(self._renew(key) for key in due))
        now = self.clock()
        records = [LeaseRecord.of(body) for body in await self.leases.list(self.settings.namespace)]
        self.observations.see(records, now)
        members = [r for r in records if r.kind == MEMBER]
        self.members = live_members(members, self.observations, now, self.identity)
        by_cluster = {r.cluster: r for r in records if r.kind == CLUSTER and r.cluster is not None}
        for key in list(self._held):  # a deadline missed: stop at once (before anyone may take it)
            if not self.owns(key):
                await self._lose(key, "its renewal is overdue")
        wanted = set(self.clusters())
        preferred = assign(wanted, self.members)
        for key in sorted(wanted | set(by_cluster), key=lambda k: (k[0] or "", k[1])):
            lease = by_cluster.get(key)
            if key not in wanted:  # the KafkaCluster is gone: a Lease of ours goes with it
                if key in self._held:
                    await self._release(key, delete=True)
                continue
            if key in self._held and (lease is None or lease.holder != self.identity):
                await self._lose(key, f"its Lease is held by {lease.holder if lease else 'nobody'}")
            action = decide(self.identity, key, lease, preferred.get(key), self.observations, now,
                            holding=key in self._held, may_acquire=self._ticks > 1)
            if action is Action.ACQUIRE:
                await self._acquire(key, lease)
            elif action is Action.RELEASE:
                await self._release(key)
        self._forget_dead_members(members, now)

    async def _heartbeat(self) -> None:
        name = member_lease_name(self.identity)
        started = self.clock()
        body = lease_body(name, self.identity, self.settings.lease_duration, self.wall(), kind=MEMBER,
                          previous=self._member, acquired=self._member is None)
        try:
            written = await (self.leases.replace(self.settings.namespace, name, body) if self._member is not None
                             else self.leases.create(self.settings.namespace, body))
        except LeaseConflict:  # a leftover of an earlier process with this identity: take it over
            current = next((b for b in await self.leases.list(self.settings.namespace)
                            if (b.get("metadata") or {}).get("name") == name), None)
            self._member = LeaseRecord.of(current) if current else None
            return
        self._member = LeaseRecord.of(written)
        self._member_written = started

    def _forget_dead_members(self, members: list[LeaseRecord], now: float) -> None:
        """Member Leases dead for ten lease periods are deleted (pods get new names on every rollout)."""
        for member in members:
            if member.holder != self.identity and self.observations.unchanged_for(member, now) > 10 * member.duration:
                task = asyncio.create_task(self.leases.delete(self.settings.namespace, member.name,
                                                              member.resource_version))
                task.add_done_callback(lambda t: t.exception())

    async def _write(self, key: ClusterKey, lease: LeaseRecord | None, *, acquired: bool) -> LeaseRecord | None:
        name = cluster_lease_name(key)
        body = lease_body(name, self.identity, self.settings.lease_duration, self.wall(), cluster=key,
                          previous=lease, acquired=acquired)
        try:
            written = await (self.leases.replace(self.settings.namespace, name, body) if lease is not None
                             else self.leases.create(self.settings.namespace, body))
        except LeaseConflict:
            return None
        return LeaseRecord.of(written)

    async def _acquire(self, key: ClusterKey, lease: LeaseRecord | None) -> None:
        started = self.clock()
        written = await self._write(key, lease, acquired=True)
        if written is None:
            return  # another replica won the race
        self._epochs += 1
        self._held[key] = Held(written, started, self._epochs)
        log.info("sharding: %s owns KafkaCluster %s/%s (lease %s)", self.identity, *key, written.name)
        await self._hook(self.on_gained, key)

    async def _renew(self, key: ClusterKey) -> None:
        held = self._held.get(key)
        if held is None:
            return
        started = self.clock()
        written = await self._write(key, held.record, acquired=False)
        if written is None:
            if self._held.get(key) is held:
                await self._lose(key, "its Lease changed under it")
            return
        late = self.clock() - held.written_at
        held.record, held.written_at = written, started
        if late > self.settings.renew_deadline:
            log.warning("sharding: the Lease of KafkaCluster %s/%s was renewed %.1f s after the previous renewal "
                        "(deadline %.1f s)", *key, late, self.settings.renew_deadline)

    async def _lose(self, key: ClusterKey, why: str) -> None:
        self._held.pop(key, None)
        log.warning("sharding: %s stops work on KafkaCluster %s/%s: %s", self.identity, *key, why)
        await self._hook(self.on_lost, key)

    async def _release(self, key: ClusterKey, delete: bool = False) -> None:
        """Hand over: stop the work first, then clear the holder (or delete the Lease)."""
        held = self._held.pop(key)
        await self._hook(self.on_lost, key)
        try:
            if delete:
                await self.leases.delete(self.settings.namespace, held.record.name, held.record.resource_version)
            else:
                name = held.record.name
                body = lease_body(name, "", self.settings.lease_duration, self.wall(), cluster=key,
                                  previous=held.record, acquired=False)
                await self.leases.replace(self.settings.namespace, name, body)
        except LeaseConflict:
            pass  # changed meanwhile: not ours any more anyway
        log.info("sharding: %s handed KafkaCluster %s/%s over", self.identity, *key)
