"""The Batcher: single items from many concurrent callers, one request per API per window.

Each API has a lane. The first item submitted to an idle lane starts a linger
timer (``settings.linger``, 50 ms by default); every item submitted before it
fires joins the same batch, which is sent as one admin call when the timer
fires or as soon as the queued items reach the record budget. While items keep
arriving, the window stays open until `linger` passes without a new item, but
never longer than ``settings.linger_max`` after its first item (0.5 s by
default): resources that trickle in (an operator seeing 2,000 new objects over
4 seconds) still share a few requests, and a lone item waits only `linger`.
A caller that submits a whole phase in one event-loop pass (the CLI: plan,
apply and wait each submit every item at once) uses ``linger=0``: the window
is sent at the end of that pass, and many items of one caller need no
coroutine each (`submit_many`, behind `describe_topics`/`describe_configs_of`).
Each caller awaits only its own ``ItemResult``.

Users and quotas batch the same way: SCRAM alterations keyed (user, mechanism) and quota
alterations keyed by entity share one AlterUserScramCredentials / AlterClientQuotas request per
window; `describe_all_scram_credentials` and `describe_all_client_quotas` give every caller of a
window the answer of one bulk read.

Two rules borrowed from Strimzi's BatchingLoop:
- a key (a topic, a config resource, an ACL binding) is never in two
  in-flight requests at once: an item whose key is in flight waits for the
  next window after that request completes;
- two submissions of the same key in one window collapse to the last one
  (KIP-4 semantics) and both callers receive that item's result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .admin import AdminClient
from .models import (
    AclBinding,
    AclBindingFilter,
    AlterConfigOp,
    ConfigEntry,
    ConfigResource,
    CreatedTopic,
    ItemResult,
    NewPartitions,
    NewTopic,
    QuotaAlteration,
    QuotaEntity,
    Reassignment,
    ScramAlteration,
    ScramCredentialInfo,
    ScramMechanism,
    TopicInfo,
    TopicPartition,
)
from .errors import KafkaRequestError
from .messages import missing
from .sizing import config_records, one_record, partition_records, topic_records

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
R = TypeVar("R")

Send = Callable[[list[tuple[K, V]]], Awaitable[Mapping[K, ItemResult[R]]]]


@dataclass(slots=True)
class LaneStats:
    batches: int = 0
    items: int = 0
    max_batch: int = 0
    max_queue_depth: int = 0


@dataclass(slots=True)
class _Waiting(Generic[V, R]):
    value: V
    futures: list[asyncio.Future[ItemResult[R]]] = field(default_factory=list)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a future's exception as seen (asyncio logs unseen ones)."""
    if not future.cancelled():
        future.exception()


class _Lane(Generic[K, V, R]):
    def __init__(self, name: str, send: Send[K, V, R], cost: Callable[[V], int], linger: float, budget: int,
                 linger_max: float | None = None) -> None:
        self.name = name
        self._send = send
        self._cost = cost
        self._linger = linger
        self._linger_max = max(linger, linger if linger_max is None else linger_max)
        self._window_start = 0.0
        self._hot_until = 0.0  # a storm: a big window was sent just now (see _gap)
        self._budget = budget
        self._queue: dict[K, _Waiting[V, R]] = {}
        self._queued_records = 0
        self._in_flight: set[K] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.stats = LaneStats()

    @property
    def depth(self) -> int:
        return len(self._queue)

    async def submit(self, key: K, value: V) -> ItemResult[R]:
        return await self._enqueue(key, value)

    async def submit_many(self, items: Iterable[tuple[K, V]]) -> list[ItemResult[R]]:
        """`submit` for many items at once, without a coroutine per item: each still joins the
        window like a single submission (and shares its batches with other callers). A failed
        request raises (the first one's exception)."""
        results = await self.submit_each(items)
        failed = next((r for r in results if isinstance(r, Exception)), None)
        if failed is not None:
            raise failed
        return results  # type: ignore[return-value]

    async def submit_each(
        self, items: Iterable[tuple[K, V]], on_answer: Callable[[int], None] | None = None
    ) -> list[ItemResult[R] | Exception]:
        """Like `submit_many`, but each item answers on its own: its result, or the exception its
        request failed with (items over the record budget go in several requests). `on_answer(i)`
        is called as the i-th item's answer is taken (in order: batch by batch)."""
        futures = self._enqueue_each(items)
        out: list[ItemResult[R] | Exception] = []
        try:
            for future in futures:  # awaiting a done future does not suspend: one wake-up per batch
                try:
                    out.append(await future)
                except Exception as exc:
                    out.append(exc)
                if on_answer is not None:
                    on_answer(len(out) - 1)
        finally:
            if len(out) < len(futures):  # cancelled: what answers later is not left unseen
                for future in futures[len(out):]:
                    future.add_done_callback(_retrieve)
        return out

    def _enqueue(self, key: K, value: V) -> asyncio.Future[ItemResult[R]]:
        return self._enqueue_each(((key, value),))[0]

    def _enqueue_each(self, items: Iterable[tuple[K, V]]) -> list[asyncio.Future[ItemResult[R]]]:
        """Queue each item in turn, as if submitted one by one: the window is scheduled once, after
        the last (the same window: it is the same loop pass), and the record budget is checked
        item by item. A whole phase of the CLI (5,000 creates, then 5,000 describes) comes here."""
        loop = asyncio.get_running_loop()
        queue, cost_of, budget = self._queue, self._cost, self._budget
        futures: list[asyncio.Future[ItemResult[R]]] = []
        flushed = False
        try:  # a failing item (its generator raised) leaves those before it queued and scheduled
            for key, value in items:
                cost = cost_of(value)
                future: asyncio.Future[ItemResult[R]] = loop.create_future()
                waiting = queue.pop(key, None)
                if waiting is None:
                    if queue and self._queued_records + cost > budget:
                        # the window is full without this item: send it as it is, so a request never holds
                        # more than the budget (the admin client would split it, and the leftover item would
                        # go alone: 5,000 new topics took five CreateTopics where four hold them)
                        self._note_depth(len(queue))
                        self._flush()
                    waiting = _Waiting(value)
                else:
                    self._queued_records -= cost_of(waiting.value)
                    waiting.value = value  # last one wins
                waiting.futures.append(future)
                queue[key] = waiting
                self._queued_records += cost
                futures.append(future)
                flushed = self._queued_records >= budget
                if flushed:
                    self._note_depth(len(queue))
                    self._flush()
        finally:
            self._note_depth(len(queue))
            if futures and not flushed:
                self._schedule()
        return futures

    def _note_depth(self, depth: int) -> None:
        if depth > self.stats.max_queue_depth:
            self.stats.max_queue_depth = depth

    def _gap(self, now: float) -> float:
        """How long the window waits for the next item: `linger`, or during a storm (the last
        window, sent less than `linger_max` ago, held HOT_ITEMS or more) four times that, within
        `linger_max`. An operator busy with 10,000 new objects hands items over in bursts with
        pauses longer than 50 ms between them, and each pause closed a window (125 CreateTopics
        for 10,000 topics); a lone item on a quiet lane still waits only `linger`."""
        if now < self._hot_until:
            return min(self._linger * HOT_FACTOR, self._linger_max)
        return self._linger

    def _schedule(self) -> None:
        """Start the window, or push its end `_gap` past this item, within `linger_max`."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._timer is None:
            self._window_start = now
            self._timer = loop.call_later(self._gap(now), self._flush)  # linger 0: never hot, 0
        elif self._linger_max > self._linger > 0:  # linger 0: sent at the end of this loop pass anyway
            deadline = min(now + self._gap(now), self._window_start + self._linger_max)
            if deadline > self._timer.when():
                self._timer.cancel()
                self._timer = loop.call_at(deadline, self._flush)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        ready: dict[K, _Waiting[V, R]] = {}
        for key in list(self._queue):
            if key not in self._in_flight:
                ready[key] = self._queue.pop(key)
        self._queued_records = sum(self._cost(w.value) for w in self._queue.values())
        if ready:
            task = asyncio.ensure_future(self._dispatch(ready))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _dispatch(self, batch: dict[K, _Waiting[V, R]]) -> None:
        if len(batch) >= HOT_ITEMS and self._linger > 0:
            self._hot_until = asyncio.get_running_loop().time() + self._linger_max
        self._in_flight.update(batch)
        self.stats.batches += 1
        self.stats.items += len(batch)
        self.stats.max_batch = max(self.stats.max_batch, len(batch))
        try:
            results = await self._send([(k, w.value) for k, w in batch.items()])
        except Exception as exc:  # the whole call failed (e.g. UnsupportedFeature): every caller sees it
            for waiting in batch.values():
                for future in waiting.futures:
                    if not future.done():
                        future.set_exception(exc)
        else:
            for key, waiting in batch.items():
                result = results.get(key) or missing(key)
                for future in waiting.futures:
                    if not future.done():
                        future.set_result(result)
        finally:
            self._in_flight.difference_update(batch)
            if self._queue and self._timer is None:
                self._window_start = asyncio.get_running_loop().time()
                self._timer = asyncio.get_running_loop().call_later(self._linger, self._flush)

    async def drain(self) -> None:
        """Send what is queued now and wait for every in-flight batch."""
        while self._queue or self._tasks:
            if self._queue and not self._in_flight:
                self._flush()
            if self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)
            else:
                await asyncio.sleep(0)


HOT_ITEMS, HOT_FACTOR = 16, 4  # a storm's windows (see _Lane._gap)
SLOW_LINGER, SLOW_LINGER_MAX = 0.2, 5.0  # the alteration lanes of users and quotas (see Batcher._lane)


class Batcher:
    """Coalesces single-item submissions into batched admin requests."""

    def __init__(self, admin: AdminClient, *, linger: float | None = None, max_records: int | None = None) -> None:
        self.admin = admin
        self._linger = admin.settings.linger if linger is None else linger
        self._linger_max = max(self._linger, admin.settings.linger_max)
        self._budget = admin.settings.batch_max_records if max_records is None else max_records
        self._lanes: dict[str, _Lane[Any, Any, Any]] = {}

    def _lane(self, name: str, send: Send[Any, Any, Any], cost: Callable[[Any], int] = one_record,
              slow_arrivals: bool = False) -> _Lane[Any, Any, Any]:
        """`slow_arrivals`: items that reach the lane spread by CPU work of their callers (each SCRAM
        upsertion is salted, PBKDF2, 1-2 ms, more on a busy machine): with a lingering window
        (linger > 0: the operator) it stays open longer while they keep coming, so a thousand users
        reconciled at once share a few requests. A lone item waits only SLOW_LINGER."""
        lane = self._lanes.get(name)
        if lane is None:
            linger, linger_max = self._linger, self._linger_max
            if slow_arrivals and linger > 0:
                linger, linger_max = max(linger, SLOW_LINGER), max(linger_max, SLOW_LINGER_MAX)
            lane = self._lanes[name] = _Lane(name, send, cost, linger, self._budget, linger_max)
        return lane

    @property
    def stats(self) -> dict[str, LaneStats]:
        return {name: lane.stats for name, lane in self._lanes.items()}

    @property
    def queue_depth(self) -> int:
        return sum(lane.depth for lane in self._lanes.values())

    async def drain(self) -> None:
        await asyncio.gather(*(lane.drain() for lane in list(self._lanes.values())))

    # --- one method per API ------------------------------------------------------------------

    async def create_topic(self, topic: NewTopic, *, validate_only: bool = False) -> ItemResult[CreatedTopic]:
        return await self._create_topics_lane(validate_only).submit(topic.name, topic)

    async def create_topics_each(
        self, topics: Iterable[NewTopic], *, validate_only: bool = False, on_answer: Callable[[int], None] | None = None
    ) -> list[ItemResult[CreatedTopic] | Exception]:
        """`create_topic` of each topic (in order), submitted at once; a failed request's exception
        in the place of each of its items (`on_answer`: see `_Lane.submit_each`)."""
        return await self._create_topics_lane(validate_only).submit_each(((t.name, t) for t in topics), on_answer)

    def _create_topics_lane(self, validate_only: bool) -> _Lane[str, NewTopic, CreatedTopic]:
        async def send(items: list[tuple[str, NewTopic]]) -> Mapping[str, ItemResult[CreatedTopic]]:
            return await self.admin.create_topics([t for _, t in items], validate_only=validate_only)

        return self._lane(f"CreateTopics(validate_only={validate_only})", send, topic_records)

    async def delete_topic(self, name: str) -> ItemResult[None]:
        async def send(items: list[tuple[str, None]]) -> Mapping[str, ItemResult[None]]:
            return await self.admin.delete_topics([n for n, _ in items])

        return await self._lane("DeleteTopics", send).submit(name, None)

    async def create_partitions(self, request: NewPartitions, *, validate_only: bool = False) -> ItemResult[None]:
        async def send(items: list[tuple[str, NewPartitions]]) -> Mapping[str, ItemResult[None]]:
            return await self.admin.create_partitions([r for _, r in items], validate_only=validate_only)

        lane = self._lane(f"CreatePartitions(validate_only={validate_only})", send, partition_records)
        return await lane.submit(request.topic, request)

    async def alter_configs(
        self, resource: ConfigResource, ops: tuple[AlterConfigOp, ...], *, validate_only: bool = False
    ) -> ItemResult[None]:
        return await self._alter_configs_lane(validate_only).submit(resource, tuple(ops))

    async def alter_configs_each(
        self, changes: Iterable[tuple[ConfigResource, tuple[AlterConfigOp, ...]]], *, validate_only: bool = False,
        on_answer: Callable[[int], None] | None = None,
    ) -> list[ItemResult[None] | Exception]:
        """`alter_configs` of each (resource, ops) (in order), submitted at once; a failed request's
        exception in the place of each of its items (`on_answer`: see `_Lane.submit_each`)."""
        return await self._alter_configs_lane(validate_only).submit_each(((r, tuple(ops)) for r, ops in changes),
                                                                         on_answer)

    def _alter_configs_lane(self, validate_only: bool) -> _Lane[ConfigResource, tuple[AlterConfigOp, ...], None]:
        async def send(items: list[tuple[ConfigResource, tuple[AlterConfigOp, ...]]]) -> Mapping[ConfigResource, ItemResult[None]]:
            return await self.admin.incremental_alter_configs(items, validate_only=validate_only)

        return self._lane(f"IncrementalAlterConfigs(validate_only={validate_only})", send, config_records)

    async def describe_configs(
        self, resource: ConfigResource, keys: frozenset[str] | None = None
    ) -> ItemResult[dict[str, ConfigEntry]]:
        """Configs of one resource (only `keys` when given); a window's resources share one request.

        Callers asking for different keys of the same resource in one window are served by one
        request item carrying the union of their keys; each gets back only what it asked for.
        """
        return await self._describe_configs_lane().submit((resource, keys), None)

    async def describe_configs_of(
        self, wanted: Iterable[tuple[ConfigResource, frozenset[str] | None]]
    ) -> list[ItemResult[dict[str, ConfigEntry]]]:
        """`describe_configs` of each (resource, keys) (in order), submitted at once."""
        return await self._describe_configs_lane().submit_many((item, None) for item in wanted)

    def _describe_configs_lane(
        self,
    ) -> _Lane[tuple[ConfigResource, frozenset[str] | None], None, dict[str, ConfigEntry]]:
        async def send(
            items: list[tuple[tuple[ConfigResource, frozenset[str] | None], None]],
        ) -> Mapping[tuple[ConfigResource, frozenset[str] | None], ItemResult[dict[str, ConfigEntry]]]:
            union: dict[ConfigResource, set[str] | None] = {}
            for (res, wanted), _ in items:
                if wanted is None or (res in union and union[res] is None):
                    union[res] = None
                else:
                    union.setdefault(res, set()).update(wanted)  # type: ignore[union-attr]
            results = await self.admin.describe_configs(
                list(union), keys={r: None if k is None else sorted(k) for r, k in union.items()}
            )
            out: dict[tuple[ConfigResource, frozenset[str] | None], ItemResult[dict[str, ConfigEntry]]] = {}
            for (res, wanted), _ in items:
                result = results.get(res)
                if result is None or result.value is None or wanted is None:
                    out[(res, wanted)] = result if result is not None else missing((res, wanted))
                else:
                    out[(res, wanted)] = ItemResult({k: v for k, v in result.value.items() if k in wanted})
            return out

        return self._lane("DescribeConfigs", send)

    async def describe_topic(self, name: str) -> ItemResult[TopicInfo]:
        """Metadata for one topic; a window's topics share one Metadata request."""
        return await self._metadata_lane().submit(name, None)

    async def describe_topics(self, names: Iterable[str]) -> list[ItemResult[TopicInfo]]:
        """`describe_topic` of each name (in order), submitted at once."""
        return await self._metadata_lane().submit_many((name, None) for name in names)

    def _metadata_lane(self) -> _Lane[str, None, TopicInfo]:
        async def send(items: list[tuple[str, None]]) -> Mapping[str, ItemResult[TopicInfo]]:
            return await self.admin.describe_topics([n for n, _ in items])

        return self._lane("Metadata", send)

    async def create_acl(self, binding: AclBinding) -> ItemResult[None]:
        async def send(items: list[tuple[AclBinding, None]]) -> Mapping[AclBinding, ItemResult[None]]:
            return await self.admin.create_acls([b for b, _ in items])

        return await self._lane("CreateAcls", send).submit(binding, None)

    async def delete_acls(self, filter_: AclBindingFilter) -> ItemResult[tuple[AclBinding, ...]]:
        async def send(items: list[tuple[AclBindingFilter, None]]) -> Mapping[AclBindingFilter, ItemResult[tuple[AclBinding, ...]]]:
            return await self.admin.delete_acls([f for f, _ in items])

        return await self._lane("DeleteAcls", send).submit(filter_, None)

    async def describe_all_acls(self) -> ItemResult[tuple[AclBinding, ...]]:
        """Every ACL binding, by one DescribeAcls with a match-all filter; the callers of a window
        (one per KafkaAcl being reconciled) share that one request and group by principal."""

        async def send(items: list[tuple[str, None]]) -> Mapping[str, ItemResult[tuple[AclBinding, ...]]]:
            try:
                bindings = await self.admin.describe_acls(AclBindingFilter())
            except KafkaRequestError as exc:
                return {key: ItemResult(None, exc.error) for key, _ in items}
            return {key: ItemResult(tuple(bindings)) for key, _ in items}

        return await self._lane("DescribeAcls", send).submit("*", None)

    async def list_reassignments(self) -> ItemResult[dict[TopicPartition, Reassignment]]:
        """Every partition being reassigned (ListPartitionReassignments); shared like describe_all_acls.
        Raises UnsupportedFeature on clusters without the API. A read for observe (what is moving,
        for the plan); starting, following and cancelling moves is the ReassignmentManager's
        (reconcile/reassign/), which asks the AdminClient directly."""

        async def send(items: list[tuple[str, None]]) -> Mapping[str, ItemResult[dict[TopicPartition, Reassignment]]]:
            try:
                found = await self.admin.list_partition_reassignments()
            except KafkaRequestError as exc:
                return {key: ItemResult(None, exc.error) for key, _ in items}
            return {key: ItemResult(found) for key, _ in items}

        return await self._lane("ListPartitionReassignments", send).submit("*", None)

    # --- users and quotas ------------------------------------------------------------------------

    async def alter_scram_credential(self, alteration: ScramAlteration) -> ItemResult[None]:
        """Upsert (build it with `scram_upsertion`) or delete one user's credential for one
        mechanism; a window's alterations share one AlterUserScramCredentials request."""
        return await self._alter_scram_lane().submit(alteration.key, alteration)

    async def alter_scram_credentials_each(
        self, alterations: Iterable[ScramAlteration], *, on_answer: Callable[[int], None] | None = None
    ) -> list[ItemResult[None] | Exception]:
        """`alter_scram_credential` of each alteration (in order), submitted at once."""
        return await self._alter_scram_lane().submit_each(((a.key, a) for a in alterations), on_answer)

    def _alter_scram_lane(self) -> _Lane[tuple[str, ScramMechanism], ScramAlteration, None]:
        async def send(items: list[tuple[tuple[str, ScramMechanism], ScramAlteration]]) -> Mapping[tuple[str, ScramMechanism], ItemResult[None]]:
            return await self.admin.alter_user_scram_credentials([a for _, a in items])

        return self._lane("AlterUserScramCredentials", send, slow_arrivals=True)

    async def alter_client_quota(self, alteration: QuotaAlteration, *, validate_only: bool = False) -> ItemResult[None]:
        """Set/remove one entity's quota keys; a window's entities share one AlterClientQuotas."""
        return await self._alter_quotas_lane(validate_only).submit(alteration.entity, alteration)

    async def alter_client_quotas_each(
        self, alterations: Iterable[QuotaAlteration], *, validate_only: bool = False,
        on_answer: Callable[[int], None] | None = None,
    ) -> list[ItemResult[None] | Exception]:
        """`alter_client_quota` of each alteration (in order), submitted at once."""
        return await self._alter_quotas_lane(validate_only).submit_each(((a.entity, a) for a in alterations), on_answer)

    def _alter_quotas_lane(self, validate_only: bool) -> _Lane[QuotaEntity, QuotaAlteration, None]:
        async def send(items: list[tuple[QuotaEntity, QuotaAlteration]]) -> Mapping[QuotaEntity, ItemResult[None]]:
            return await self.admin.alter_client_quotas([a for _, a in items], validate_only=validate_only)

        return self._lane(f"AlterClientQuotas(validate_only={validate_only})", send, slow_arrivals=True)

    async def describe_all_scram_credentials(self) -> ItemResult[dict[str, tuple[ScramCredentialInfo, ...]]]:
        """Every user's credentials (mechanism + iterations) by one DescribeUserScramCredentials;
        the callers of a window share it. Raises UnsupportedFeature on clusters without the API."""

        async def send(items: list[tuple[str, None]]) -> Mapping[str, ItemResult[dict[str, tuple[ScramCredentialInfo, ...]]]]:
            try:
                found = await self.admin.describe_user_scram_credentials()
            except KafkaRequestError as exc:
                return {key: ItemResult(None, exc.error) for key, _ in items}
            users = {user: result.value or () for user, result in found.items()}
            return {key: ItemResult(users) for key, _ in items}

        return await self._lane("DescribeUserScramCredentials", send).submit("*", None)

    async def describe_all_client_quotas(self) -> ItemResult[dict[QuotaEntity, dict[str, float]]]:
        """Every quota entity with its values by one DescribeClientQuotas; shared like
        `describe_all_scram_credentials`."""

        async def send(items: list[tuple[str, None]]) -> Mapping[str, ItemResult[dict[QuotaEntity, dict[str, float]]]]:
            try:
                found = await self.admin.describe_client_quotas()
            except KafkaRequestError as exc:
                return {key: ItemResult(None, exc.error) for key, _ in items}
            return {key: ItemResult(found) for key, _ in items}

        return await self._lane("DescribeClientQuotas", send).submit("*", None)
