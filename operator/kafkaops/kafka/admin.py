"""The admin client: typed batch methods with per-item results.

Every method follows the same path (see ``_execute``):

1. dedupe the items (the last one for a key wins, as in KIP-4);
2. split them into requests bounded by estimated metadata records;
3. send the chunks concurrently to the right broker (the controller for
   writes, any broker for reads, a given broker for broker-scoped calls);
4. collect each item's result; items that failed with a retriable error
   (NOT_CONTROLLER, REQUEST_TIMED_OUT, network errors, LEADER_NOT_AVAILABLE,
   THROTTLING_QUOTA_EXCEEDED) are resent — only those — after refreshing
   metadata when the controller moved, waiting the broker's throttle time
   when throttled, otherwise exponential backoff with jitter (tenacity),
   bounded by attempts and a deadline.

A retry of a write whose first attempt may have been applied (a timeout or a
broken connection) can meet "already done" errors; for the same spec those
count as success (TOPIC_ALREADY_EXISTS with matching partitions and replicas,
UNKNOWN_TOPIC_OR_PARTITION for a delete, INVALID_PARTITIONS when the count is
already reached).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode
from tenacity import AsyncRetrying, RetryCallState, retry_if_result, stop_after_attempt, stop_after_delay
from tenacity.wait import wait_exponential_jitter

from . import messages as m
from .apis import Api
from .calls import RETRIABLE_CODES, UNCERTAIN_CODES, K, R, Route, V, _Call, _Progress, _merge
from .connection import BrokerConnection, BrokerPool
from .errors import (
    ClusterUnreachable,
    KafkaConnectionError,
    KafkaError,
    KafkaRequestError,
    RequestTimedOut,
    UnsupportedFeature,
)
from .models import (
    AclBinding,
    AclBindingFilter,
    AlterConfigOp,
    ClusterDescription,
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    CreatedTopic,
    ItemResult,
    LogDir,
    NewPartitions,
    NewTopic,
    Reassignment,
    Results,
    TopicInfo,
    TopicPartition,
)
from .principal_calls import PrincipalCalls
from .security import SecuritySettings
from .settings import ClientSettings
from .sizing import config_records, dedupe, partition_records, split_by_records, topic_records

log = logging.getLogger(__name__)

# describe_topics asks for every topic instead of naming them when the names are at least this share
# of the topics the cluster holds (as last counted): naming 5,000 topics costs more to encode (17 ms, kio's
# writer in Python) than the few topics the answer then carries beyond them cost to read
WHOLE_CLUSTER_SHARE = 0.8


class AdminClient(PrincipalCalls):
    """Asyncio admin client for Kafka. Use ``AdminClient.connect(...)``.

    Users and quotas (SCRAM credentials, client quotas) are in ``principal_calls.py``."""

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self._pool = BrokerPool(settings)
        self._metadata: ClusterMetadata | None = None
        # topics in the cluster: counted in the last answer listing every topic, then kept up to date with
        # this client's own creates and deletes (None: never counted). Only a hint: see describe_topics.
        self._topic_count: int | None = None
        self._metadata_lock = asyncio.Lock()
        self.requests_by_api: dict[str, int] = {}

    def __repr__(self) -> str:
        hosts = ",".join(f"{h}:{p}" for h, p in self.settings.bootstrap)
        return f"AdminClient(bootstrap={hosts!r}, protocol={self.settings.security.protocol})"

    def use_security(self, security: SecuritySettings) -> None:
        """Credentials for connections opened from now on (a rotated password). Open connections
        stay as they are: they authenticated already."""
        self.settings = dataclasses.replace(self.settings, security=security)
        self._pool.use_settings(self.settings)

    # --- lifecycle ------------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        bootstrap: str | Sequence[str],
        *,
        security: SecuritySettings | None = None,
        properties: str | Path | None = None,
        settings: ClientSettings | None = None,
        **overrides: Any,
    ) -> _Connecting:
        """``async with AdminClient.connect("host:9092") as admin: ...``

        Also awaitable: ``admin = await AdminClient.connect(...)`` (then ``await admin.close()``).
        """
        if settings is None:
            settings = ClientSettings.create(
                bootstrap if isinstance(bootstrap, str) else tuple(bootstrap),
                security=security,
                properties=properties,
                **overrides,
            )
        return _Connecting(cls(settings))

    async def start(self) -> None:
        """Reach a broker and load the cluster's metadata (brokers, controller)."""
        await self.refresh_metadata()

    async def close(self) -> None:
        await self._pool.close()

    @property
    def cached_metadata(self) -> ClusterMetadata | None:
        return self._metadata

    # --- metadata and routing ---------------------------------------------------------------

    async def refresh_metadata(self) -> ClusterMetadata:
        """Brokers, controller and cluster id (no topics); cached."""
        async with self._metadata_lock:
            return await self._fetch_metadata([])

    async def _fetch_metadata(self, topics: Sequence[str] | None) -> ClusterMetadata:
        result = await self._single(Api.METADATA, Route.ANY, lambda: m.encode_metadata(topics), lambda r: ItemResult(m.decode_metadata(r)))
        assert result is not None
        self._pool.update_brokers({b.node_id: (b.host, b.port) for b in result.brokers.values()})
        self._metadata = result
        if topics is None:
            self._topic_count = len(result.topics) + len(result.topic_errors)
        return result

    def _count_topics(self, change: int) -> None:
        if self._topic_count is not None:
            self._topic_count = max(0, self._topic_count + change)

    async def metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """One Metadata request: every topic (None) or the named ones."""
        return await self._fetch_metadata(None if topics is None else list(dict.fromkeys(topics)))

    async def describe_topics(self, topics: Iterable[str]) -> Results[str, TopicInfo]:
        """Per-topic metadata; unknown topics get UNKNOWN_TOPIC_OR_PARTITION."""
        names = list(dict.fromkeys(topics))
        if not names:
            return Results()
        # most of the cluster's topics (a first apply's wait): one request for every topic,
        # whose answer is as correct for these names (one left out is unknown) and cheaper to ask
        whole = self._topic_count is not None and len(names) >= WHOLE_CLUSTER_SHARE * self._topic_count
        meta = await self.metadata(None if whole else names)
        out: dict[str, ItemResult[TopicInfo]] = {}
        for name in names:
            if name in meta.topics:
                out[name] = ItemResult(meta.topics[name])
            else:
                error = meta.topic_errors.get(name) or KafkaError.of(ErrorCode.unknown_topic_or_partition)
                out[name] = ItemResult(None, error)
        return Results(out)

    async def describe_cluster(self) -> ClusterDescription:
        """Cluster id, controller and brokers (DescribeCluster, or Metadata on older brokers)."""
        connection = await self._pool.any()
        if connection.supports(Api.DESCRIBE_CLUSTER):
            return await self._single(
                Api.DESCRIBE_CLUSTER,
                Route.ANY,
                lambda: {"include_cluster_authorized_operations": False},
                m.decode_describe_cluster,
            )
        meta = await self.refresh_metadata()
        return ClusterDescription(meta.cluster_id, meta.controller_id, meta.brokers)

    async def api_versions(self, broker_id: int | None = None) -> Mapping[int, tuple[int, int]]:
        """The API version ranges a broker advertised (KIP-35)."""
        connection = await (self._pool.any() if broker_id is None else self._pool.get(broker_id))
        return dict(connection.api_versions)

    async def _connection(self, route: Route | int) -> BrokerConnection:
        if isinstance(route, int):
            if self._metadata is None or route not in self._metadata.brokers:
                await self.refresh_metadata()
            return await self._pool.get(route)
        if route is Route.ANY:
            return await self._pool.any()
        meta = self._metadata or await self.refresh_metadata()
        if meta.controller_id < 0 or meta.controller_id not in meta.brokers:
            meta = await self.refresh_metadata()
        if meta.controller_id >= 0:
            try:
                return await self._pool.get(meta.controller_id)
            except KafkaConnectionError:
                await self.refresh_metadata()
                raise
        return await self._pool.any()

    # --- the engine ---------------------------------------------------------------------------

    def _count(self, api: Api) -> None:
        self.requests_by_api[api.title] = self.requests_by_api.get(api.title, 0) + 1

    async def _round(self, call: _Call[K, V, R], pending: dict[K, V], progress: _Progress[K, R]) -> dict[K, V]:
        """Send ``pending`` once; record results; return the items to retry."""
        failure: KafkaError | None = None
        progress.unreachable = None
        try:
            connection = await self._connection(call.route)
            connection.version_for(call.api)  # UnsupportedFeature propagates: retrying cannot help
            self._count(call.api)
            response = await connection.send(call.api, call.encode(pending))
        except UnsupportedFeature:
            raise
        except RequestTimedOut as exc:
            failure = KafkaError.of(ErrorCode.request_timed_out, str(exc))
        except ClusterUnreachable as exc:
            # Nothing reachable: retrying cannot help a listener that speaks another protocol, and
            # with a connect retry budget (the CLI's) the caller wants to know soon.
            budget = self.settings.connect_retry_budget
            if not exc.retriable or (budget is not None and time.monotonic() - progress.started >= budget):
                raise
            progress.unreachable = exc
            failure = KafkaError.of(ErrorCode.network_exception, str(exc))
        except KafkaConnectionError as exc:
            failure = KafkaError.of(ErrorCode.network_exception, str(exc))
        if failure is not None:
            if isinstance(call.route, Route):
                self._metadata = None  # rediscover brokers and controller
            for key in pending:
                progress.results[key] = ItemResult(None, failure)
                if call.write:
                    progress.uncertain.add(key)
            return dict(pending)

        decoded = call.decode(response, pending)
        retry: dict[K, V] = {}
        progress.throttle = 0.0
        moved = False
        for key, value in pending.items():
            result = decoded.get(key) or m.missing(key)
            progress.results[key] = result
            error = result.error
            if error is None or error.code not in RETRIABLE_CODES:
                continue
            retry[key] = value
            if error.code in UNCERTAIN_CODES and call.write:
                progress.uncertain.add(key)
            if error.code == ErrorCode.not_controller:
                moved = True
            if error.code == ErrorCode.throttling_quota_exceeded:
                progress.throttle = max(progress.throttle, m.throttle_seconds(response))
        if moved:
            await self.refresh_metadata()
        return retry

    async def _execute_chunk(self, call: _Call[K, V, R], chunk: dict[K, V]) -> _Progress[K, R]:
        progress: _Progress[K, R] = _Progress({}, set())
        backoff = wait_exponential_jitter(multiplier=self.settings.retry_backoff, max=self.settings.retry_backoff_max, jitter=self.settings.retry_backoff)

        def wait(state: RetryCallState) -> float:
            return max(progress.throttle, backoff(state))

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.settings.retry_attempts) | stop_after_delay(self.settings.retry_deadline),
            wait=wait,
            retry=retry_if_result(bool),
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        )
        pending = dict(chunk)
        async for attempt in retrying:
            with attempt:
                pending = await self._round(call, pending, progress)
            if attempt.retry_state.outcome is not None and not attempt.retry_state.outcome.failed:
                attempt.retry_state.set_result(pending)
            if pending:
                log.debug("%s: retrying %d item(s)", call.api.title, len(pending))
        # tenacity's retrying object is a reference cycle, freed only by the cyclic collector, and
        # `wait` is in it: emptying its cell lets this call's results (a whole Metadata answer) go by
        # reference counting once the caller is done with them
        done = progress
        del progress
        return done

    async def _execute(self, call: _Call[K, V, R], items: Iterable[tuple[K, V]]) -> tuple[Results[K, R], set[K]]:
        unique = dedupe(items)
        if not unique:
            return Results(), set()
        chunks = split_by_records(unique, call.cost, self.settings.max_records_per_request)
        parts = await asyncio.gather(*(self._execute_chunk(call, chunk) for chunk in chunks))
        results: dict[K, ItemResult[R]] = {}
        uncertain: set[K] = set()
        for part in parts:
            results.update(part.results)
            uncertain |= part.uncertain
        return Results({k: results[k] for k in unique}), uncertain

    async def _single(self, api: Api, route: Route | int, encode: Callable[[], dict[str, Any]], decode: Callable[[Any], ItemResult[Any]]) -> Any:
        """A call whose response is one value; retried like items; errors raised."""
        call: _Call[str, None, Any] = _Call(api, route, lambda _p: encode(), lambda r, _p: {m.WHOLE: decode(r)})
        progress = await self._execute_chunk(call, {m.WHOLE: None})
        result = progress.results[m.WHOLE]
        if result.error is None:
            return result.value
        if result.error.code == ErrorCode.network_exception and progress.unreachable is not None:
            raise progress.unreachable  # retries ran out with no broker reachable: say why for each address
        if result.error.code == ErrorCode.network_exception:
            raise KafkaConnectionError(f"{api.title} failed after retries: {result.error.message}")
        if result.error.code == ErrorCode.request_timed_out:
            raise RequestTimedOut(f"{api.title} failed after retries: {result.error.message}")
        raise KafkaRequestError(api.title, result.error)

    # --- topics ----------------------------------------------------------------------------------

    async def create_topics(
        self, topics: Iterable[NewTopic], *, validate_only: bool = False, timeout_ms: int | None = None
    ) -> Results[str, CreatedTopic]:
        timeout = self.settings.kafka_timeout_ms if timeout_ms is None else timeout_ms
        call: _Call[str, NewTopic, CreatedTopic] = _Call(
            Api.CREATE_TOPICS,
            Route.CONTROLLER,
            lambda p: m.encode_create_topics(list(p.values()), timeout, validate_only),
            m.decode_create_topics,
            topic_records,
            write=not validate_only,
        )
        specs = dedupe((t.name, t) for t in topics)
        results, uncertain = await self._execute(call, specs.items())
        if not validate_only:
            self._count_topics(sum(1 for r in results.values() if r.error is None))
        already = [n for n, r in results.items() if n in uncertain and r.error and r.error.code == ErrorCode.topic_already_exists]
        if not already:
            return results
        # A retry met TOPIC_ALREADY_EXISTS after an attempt that may have been
        # applied: success when the existing topic matches the spec.
        fixed = dict(results.items())
        described = await self.describe_topics(already)
        for name in already:
            info, spec = described[name].value, specs[name]
            if info is not None and _matches(spec, info):
                fixed[name] = ItemResult(CreatedTopic(name, info.topic_id, len(info.partitions), info.replication_factor))
        return Results(fixed)

    async def delete_topics(self, names: Iterable[str], *, timeout_ms: int | None = None) -> Results[str, None]:
        timeout = self.settings.kafka_timeout_ms if timeout_ms is None else timeout_ms
        call: _Call[str, None, None] = _Call(
            Api.DELETE_TOPICS,
            Route.CONTROLLER,
            lambda p: m.encode_delete_topics(list(p), timeout),
            lambda r, _p: m.decode_delete_topics(r),
            write=True,
        )
        results, uncertain = await self._execute(call, ((n, None) for n in names))
        self._count_topics(-sum(1 for r in results.values() if r.error is None))
        gone = ErrorCode.unknown_topic_or_partition
        return Results(
            {k: ItemResult() if k in uncertain and r.error and r.error.code == gone else r for k, r in results.items()}
        )

    async def create_partitions(
        self, requests: Iterable[NewPartitions], *, validate_only: bool = False, timeout_ms: int | None = None
    ) -> Results[str, None]:
        timeout = self.settings.kafka_timeout_ms if timeout_ms is None else timeout_ms
        call: _Call[str, NewPartitions, None] = _Call(
            Api.CREATE_PARTITIONS,
            Route.CONTROLLER,
            lambda p: m.encode_create_partitions(list(p.values()), timeout, validate_only),
            lambda r, _p: m.decode_create_partitions(r),
            partition_records,
            write=not validate_only,
        )
        specs = dedupe((r.topic, r) for r in requests)
        results, uncertain = await self._execute(call, specs.items())
        already = [t for t, r in results.items() if t in uncertain and r.error and r.error.code == ErrorCode.invalid_partitions]
        if not already:
            return results
        fixed = dict(results.items())
        described = await self.describe_topics(already)
        for topic in already:
            info = described[topic].value
            if info is not None and len(info.partitions) == specs[topic].total_count:
                fixed[topic] = ItemResult()
        return Results(fixed)

    # --- configs ---------------------------------------------------------------------------------

    @staticmethod
    def _config_route(resource: ConfigResource, write: bool) -> Route | int:
        if resource.type is not ConfigResourceType.TOPIC and resource.name:
            return int(resource.name)  # broker-scoped: only that broker answers for itself
        return Route.CONTROLLER if write else Route.ANY

    async def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        *,
        keys: Sequence[str] | Mapping[ConfigResource, Sequence[str] | None] | None = None,
        include_synonyms: bool = False,
    ) -> Results[ConfigResource, dict[str, ConfigEntry]]:
        """Config values with source, sensitive flag (values hidden) and synonyms.

        `keys` limits the reply to those keys (the same for every resource, or per resource;
        None: every key): a planner that needs 3 keys of 5,000 topics should not decode 175,000.
        """
        grouped: dict[Route | int, list[ConfigResource]] = {}
        for resource in dict.fromkeys(resources):
            grouped.setdefault(self._config_route(resource, write=False), []).append(resource)

        async def one(route: Route | int, group: list[ConfigResource]) -> Results[ConfigResource, dict[str, ConfigEntry]]:
            call: _Call[ConfigResource, None, dict[str, ConfigEntry]] = _Call(
                Api.DESCRIBE_CONFIGS,
                route,
                lambda p: m.encode_describe_configs(list(p), keys, include_synonyms),
                lambda r, _p: m.decode_describe_configs(r),
            )
            results, _ = await self._execute(call, ((r, None) for r in group))
            return results

        parts = await asyncio.gather(*(one(route, group) for route, group in grouped.items()))
        return _merge(parts)

    async def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Sequence[AlterConfigOp]] | Iterable[tuple[ConfigResource, Sequence[AlterConfigOp]]],
        *,
        validate_only: bool = False,
    ) -> Results[ConfigResource, None]:
        """SET/DELETE/APPEND/SUBTRACT single keys (KIP-339); never the legacy AlterConfigs."""
        pairs = changes.items() if isinstance(changes, Mapping) else changes
        grouped: dict[Route | int, list[tuple[ConfigResource, tuple[AlterConfigOp, ...]]]] = {}
        for resource, ops in dedupe((r, tuple(o)) for r, o in pairs).items():
            grouped.setdefault(self._config_route(resource, write=True), []).append((resource, ops))

        async def one(route: Route | int, group: list[tuple[ConfigResource, tuple[AlterConfigOp, ...]]]) -> Results[ConfigResource, None]:
            call: _Call[ConfigResource, tuple[AlterConfigOp, ...], None] = _Call(
                Api.INCREMENTAL_ALTER_CONFIGS,
                route,
                lambda p: m.encode_incremental_alter_configs(p, validate_only),
                lambda r, _p: m.decode_incremental_alter_configs(r),
                config_records,
                write=not validate_only,
            )
            results, _ = await self._execute(call, group)
            return results

        parts = await asyncio.gather(*(one(route, group) for route, group in grouped.items()))
        return _merge(parts)

    # --- ACLs ------------------------------------------------------------------------------------

    async def create_acls(self, bindings: Iterable[AclBinding]) -> Results[AclBinding, None]:
        call: _Call[AclBinding, None, None] = _Call(
            Api.CREATE_ACLS,
            Route.CONTROLLER,
            lambda p: m.encode_create_acls(list(p)),
            lambda r, p: m.decode_create_acls(r, list(p)),
            write=True,
        )
        results, _ = await self._execute(call, ((b, None) for b in bindings))
        return results

    async def describe_acls(self, filters: AclBindingFilter | Iterable[AclBindingFilter] = AclBindingFilter()) -> Any:
        """Bindings matching a filter (returns a tuple), or per filter (returns Results)."""
        if isinstance(filters, AclBindingFilter):
            return await self._single(
                Api.DESCRIBE_ACLS, Route.ANY, lambda: m.encode_describe_acls(filters), m.decode_describe_acls
            )
        unique = list(dict.fromkeys(filters))

        async def one(f: AclBindingFilter) -> ItemResult[tuple[AclBinding, ...]]:
            try:
                return ItemResult(await self.describe_acls(f))
            except KafkaRequestError as exc:
                return ItemResult(None, exc.error)

        found = await asyncio.gather(*(one(f) for f in unique))
        return Results(dict(zip(unique, found)))

    async def delete_acls(self, filters: Iterable[AclBindingFilter]) -> Results[AclBindingFilter, tuple[AclBinding, ...]]:
        """Delete the bindings matching each filter; each result lists what was deleted."""
        call: _Call[AclBindingFilter, None, tuple[AclBinding, ...]] = _Call(
            Api.DELETE_ACLS,
            Route.CONTROLLER,
            lambda p: m.encode_delete_acls(list(p)),
            lambda r, p: m.decode_delete_acls(r, list(p)),
            write=True,
        )
        results, _ = await self._execute(call, ((f, None) for f in filters))
        return results

    # --- reassignments, elections, log dirs ------------------------------------------------------

    async def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None], *, timeout_ms: int | None = None
    ) -> Results[TopicPartition, None]:
        """Start (replica list) or cancel (None) reassignments (KIP-455)."""
        timeout = self.settings.kafka_timeout_ms if timeout_ms is None else timeout_ms
        call: _Call[TopicPartition, tuple[int, ...] | None, None] = _Call(
            Api.ALTER_PARTITION_REASSIGNMENTS,
            Route.CONTROLLER,
            lambda p: m.encode_alter_reassignments(p, timeout),
            lambda r, p: m.decode_alter_reassignments(r, p),
            write=True,
        )
        results, _ = await self._execute(call, ((tp, None if r is None else tuple(r)) for tp, r in targets.items()))
        return results

    async def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, Reassignment]:
        timeout = self.settings.kafka_timeout_ms if timeout_ms is None else timeout_ms
        wanted = None if partitions is None else list(dict.fromkeys(partitions))
        return await self._single(
            Api.LIST_PARTITION_REASSIGNMENTS,
            Route.CONTROLLER,
            lambda: m.encode_list_reassignments(wanted, timeout),
            m.decode_list_reassignments,
        )

    async def elect_leaders(
        self, partitions: Iterable[TopicPartition] | None = None, *, timeout_ms: int | None = None
    ) -> Results[TopicPartition, None]:
        """Preferred leader election; ELECTION_NOT_NEEDED is reported as such (callers treat it as done)."""
        timeout = self.settings.kafka_timeout_ms if timeout_ms is None else timeout_ms
        if partitions is None:
            call_all: _Call[str, None, Any] = _Call(
                Api.ELECT_LEADERS,
                Route.CONTROLLER,
                lambda _p: m.encode_elect_leaders(None, timeout),
                lambda r, _p: {m.WHOLE: ItemResult(None, top) if (top := m.elect_leaders_error(r))
                               else ItemResult(m.decode_elect_leaders(r))},
                write=True,
            )
            results, _ = await self._execute(call_all, [(m.WHOLE, None)])
            return Results(results[m.WHOLE].value or {})
        call: _Call[TopicPartition, None, None] = _Call(
            Api.ELECT_LEADERS,
            Route.CONTROLLER,
            lambda p: m.encode_elect_leaders(list(p), timeout),
            lambda r, p: m.decode_elect_leaders(r, p),
            write=True,
        )
        results, _ = await self._execute(call, ((tp, None) for tp in partitions))
        return results

    async def describe_log_dirs(
        self, brokers: Iterable[int] | None = None, partitions: Iterable[TopicPartition] | None = None
    ) -> Results[int, tuple[LogDir, ...]]:
        """Log dirs with replica sizes, asked of each broker concurrently."""
        if brokers is None:
            brokers = (self._metadata or await self.refresh_metadata()).brokers
        wanted = None if partitions is None else list(dict.fromkeys(partitions))

        async def one(broker_id: int) -> ItemResult[tuple[LogDir, ...]]:
            try:
                value = await self._single(Api.DESCRIBE_LOG_DIRS, broker_id, lambda: m.encode_describe_log_dirs(wanted), m.decode_describe_log_dirs)
                return ItemResult(value)
            except KafkaRequestError as exc:
                return ItemResult(None, exc.error)

        ids = list(dict.fromkeys(brokers))
        found = await asyncio.gather(*(one(b) for b in ids))
        return Results(dict(zip(ids, found)))


def _matches(spec: NewTopic, info: TopicInfo) -> bool:
    if spec.replica_assignment is not None:
        return tuple(p.replicas for p in info.partitions) == spec.replica_assignment
    partitions_ok = spec.partitions < 0 or len(info.partitions) == spec.partitions
    rf_ok = spec.replication_factor < 0 or info.replication_factor == spec.replication_factor
    return partitions_ok and rf_ok


class _Connecting:
    """What ``AdminClient.connect`` returns: an async context manager, or awaitable."""

    def __init__(self, client: AdminClient) -> None:
        self._client = client

    def __await__(self) -> Any:
        return self._start().__await__()

    async def _start(self) -> AdminClient:
        try:
            await self._client.start()
        except BaseException:
            await self._client.close()
            raise
        return self._client

    async def __aenter__(self) -> AdminClient:
        return await self._start()

    async def __aexit__(self, *exc: object) -> None:
        await self._client.close()

