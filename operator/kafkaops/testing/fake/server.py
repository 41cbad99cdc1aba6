"""The fake multi-broker Kafka cluster, a TEST DOUBLE served over asyncio.

``FakeClusterDouble`` listens on one port per broker (127.0.0.1 only) and
answers the admin APIs from one shared ``ClusterStateDouble``. Requests on a
connection are processed one at a time, in order (as Kafka does), so
pipelined requests get their responses in order. Framing comes from
``kafkaops.kafka.wire`` (kio), the same codec the admin client uses.

It is a test double: it behaves like Kafka where the admin client can tell,
and nothing more. See ``FaultDouble`` for the injectable faults.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from types import TracebackType
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from kafkaops.frozen import frozen
from kafkaops.kafka.wire import FrameError, RequestFrame, build, decode_request, encode_response, read_size, response_class

from kafkaops.testing.sasl_double import SaslServerDouble

from .acls import AclBinding
from .context import CloseConnection, ItemError, RequestContext
from .faults import THROTTLE_MIN_VERSION, FaultDouble, FaultKind, FaultPlan
from .handlers import HANDLERS
from .state import MIB, BrokerDouble, ClusterStateDouble, Mode, PartitionDouble, StateSettings
from .versions import ACL_APIS, API_VERSIONS, SASL_APIS, SUPPORTED_VERSIONS, advertised_versions

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 100 * MIB
SASL_LISTENER_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")
WRITE_HIGH_WATER = 1 * MIB


class SaslSessionLike(Protocol):
    """One connection's SASL exchange (see kafkaops.testing.sasl_double)."""

    authenticated: bool

    def handle(self, api_key: int, version: int, body: Any) -> Any: ...


class SaslServerLike(Protocol):
    def new_session(self) -> SaslSessionLike: ...


@frozen
class RequestRecord:
    """One request the double served."""

    api_key: int
    api_version: int
    broker_id: int
    items: int
    correlation_id: int
    client_id: str | None


@frozen
class _Reply:
    data: bytes | None
    close: bool = False


_CLOSE = _Reply(None, True)


@dataclass(slots=True)
class _Listener:
    broker_id: int
    server: asyncio.AbstractServer | None = None
    connections: dict[asyncio.StreamWriter, asyncio.Task[Any]] = field(default_factory=dict)


@dataclass(slots=True)
class _Connection:
    session: SaslSessionLike | None
    on_sasl_listener: bool = False


@dataclass(slots=True)
class _FaultEffects:
    """What the faults that fired for one request do to it."""

    delay_before: float = 0.0
    delay_after: float = 0.0
    drop_before: bool = False
    drop_after: bool = False
    not_controller: bool = False
    move_controller: bool = False
    throttle: FaultDouble | None = None
    timed_out: bool = False


def _effects(faults: Iterable[FaultDouble]) -> _FaultEffects:
    effects = _FaultEffects()
    for fault in faults:
        if fault.kind is FaultKind.SLOW:
            if fault.after_apply:
                effects.delay_after += fault.delay_s
            else:
                effects.delay_before += fault.delay_s
        elif fault.kind is FaultKind.DROP_CONNECTION:
            effects.drop_after |= fault.after_apply
            effects.drop_before |= not fault.after_apply
        elif fault.kind is FaultKind.NOT_CONTROLLER:
            effects.not_controller = True
            effects.move_controller |= fault.move_controller
        elif fault.kind is FaultKind.THROTTLED:
            effects.throttle = fault
        elif fault.kind is FaultKind.TIMED_OUT_AFTER_APPLY:
            effects.timed_out = True
    return effects


class FakeClusterDouble:
    """A multi-broker Kafka cluster test double for the admin APIs.

    Cluster shape: ``brokers`` brokers with ids ``first_broker_id``.. listen
    on ``host`` at ``base_port + i`` (``base_port=0``: a free port each);
    ``racks`` are assigned round-robin. ``mode`` is "kraft" (any broker takes
    writes; Metadata names a random live broker as controller) or "zk" (only
    the controller takes writes; the others answer NOT_CONTROLLER). ``seed``
    makes cluster id, topic ids, placement and the kraft controller choice
    deterministic.

    Protocol: ``disabled_apis`` are not advertised and answer
    UNSUPPORTED_VERSION; ``max_versions`` / ``per_broker_max_versions`` cap
    advertised versions; ``acls_enabled=False`` answers SECURITY_DISABLED;
    ``sasl`` (an object with ``new_session()``) gates every connection;
    ``ssl_context`` serves TLS. ``sasl_port`` (0: free ports) adds a second,
    SASL_PLAINTEXT listener per broker at ``sasl_port + i``, gated by
    ``sasl_listener``, else ``sasl``, else SCRAM-SHA-256/512 and PLAIN with no
    static users (so the main listeners can stay plaintext for the admin side);
    Metadata asked there advertises the SASL ports, as a broker does per listener.
    SCRAM logins on any listener check the credentials stored through
    AlterUserScramCredentials first (a ``SaslServerDouble`` given without a
    ``scram_lookup`` is connected to the double's store); PLAIN needs the plain
    password, so only the ``SaslServerDouble``'s own users pass it.

    Behaviour: ``record_limit`` is KRaft's metadata-records-per-request cap
    (POLICY_VIOLATION above it); ``default_partitions`` and
    ``default_replication_factor`` answer -1; ``static_broker_configs`` read
    as STATIC_BROKER_CONFIG; ``configs_in_create_response=False`` answers
    CreateTopics v5+ as Kafka does a principal without DESCRIBE_CONFIGS
    (cheaper for benchmarks).

    Virtual time: each tick copies ``reassignment_step_bytes`` to every new
    replica (partitions are ``partition_size_bytes``) and elects leaders
    created ``leader_delay_ticks`` ago. Ticks come from ``advance()`` and,
    unless ``tick_interval`` is None, from a background ticker every
    ``tick_interval`` seconds. Pass ``tick_interval=None`` for deterministic tests.
    """

    def __init__(
        self,
        brokers: int = 3,
        *,
        racks: Sequence[str] | None = None,
        mode: Mode = "kraft",
        host: str = "127.0.0.1",
        base_port: int = 0,
        first_broker_id: int = 1,
        seed: int = 0,
        disabled_apis: Iterable[int] = (),
        max_versions: Mapping[int, int] | None = None,
        per_broker_max_versions: Mapping[int, Mapping[int, int]] | None = None,
        acls_enabled: bool = True,
        sasl: SaslServerLike | None = None,
        ssl_context: ssl.SSLContext | None = None,
        sasl_port: int | None = None,
        sasl_listener: SaslServerLike | None = None,
        record_limit: int = 10_000,
        partition_size_bytes: int = 10 * MIB,
        reassignment_step_bytes: int = 4 * MIB,
        tick_interval: float | None = 0.05,
        leader_delay_ticks: int = 0,
        default_partitions: int = 1,
        default_replication_factor: int = 1,
        static_broker_configs: Mapping[str, str] | None = None,
        configs_in_create_response: bool = True,
    ) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        if mode not in ("kraft", "zk"):
            raise ValueError(f"mode must be 'kraft' or 'zk', not {mode!r}")
        racks = list(racks or [])
        members = [
            BrokerDouble(
                first_broker_id + i,
                host,
                base_port + i if base_port else 0,
                racks[i % len(racks)] if racks else None,
            )
            for i in range(brokers)
        ]
        settings = StateSettings(
            mode=mode,
            default_partitions=default_partitions,
            default_replication_factor=default_replication_factor,
            partition_size_bytes=partition_size_bytes,
            reassignment_step_bytes=reassignment_step_bytes,
            leader_delay_ticks=leader_delay_ticks,
            record_limit=record_limit,
            static_broker_configs=dict(static_broker_configs or {}),
            configs_in_create_response=configs_in_create_response,
        )
        self.state = ClusterStateDouble(members, settings, seed)
        self.host = host
        self.disabled_apis = frozenset(int(k) for k in disabled_apis)
        self.max_versions = dict(max_versions or {})
        self.per_broker_max_versions = {b: dict(v) for b, v in (per_broker_max_versions or {}).items()}
        self.acls_enabled = acls_enabled
        self.tick_interval = tick_interval
        self.requests: list[RequestRecord] = []
        self.errors: list[BaseException] = []
        self._sasl = sasl
        self._ssl = ssl_context
        self._faults = FaultPlan()
        self._listeners = {b.node_id: _Listener(b.node_id) for b in members}
        self._sasl_listeners: dict[int, _Listener] = {}
        self.sasl_listener: SaslServerLike | None = None
        if sasl_port is not None:
            self.sasl_listener = sasl_listener or sasl or SaslServerDouble({}, mechanisms=SASL_LISTENER_MECHANISMS)
            for i, b in enumerate(members):
                b.sasl_port = sasl_port + i if sasl_port else 0
                self._sasl_listeners[b.node_id] = _Listener(b.node_id)
        for server in (sasl, self.sasl_listener):
            if isinstance(server, SaslServerDouble) and server.scram_lookup is None:
                server.scram_lookup = self.state.principals.scram_credential  # SCRAM credentials are cluster-wide
        self._ticker: asyncio.Task[None] | None = None

    @property
    def sasl(self) -> SaslServerLike | None:
        """The SASL gate of every connection (None: plaintext without authentication)."""
        return self._sasl

    # ------------------------------------------------------------- lifecycle
    async def start(self) -> FakeClusterDouble:
        for broker in self.state.brokers.values():
            await self._listen(broker)
        if self.tick_interval:
            self._ticker = asyncio.create_task(self._tick_forever(self.tick_interval))
        return self

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        for listener in [*self._listeners.values(), *self._sasl_listeners.values()]:
            await self._close_listener(listener)

    async def __aenter__(self) -> FakeClusterDouble:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def _listen(self, broker: BrokerDouble) -> None:
        server = await asyncio.start_server(
            functools.partial(self._serve, broker.node_id, False),
            self.host,
            broker.port,
            ssl=self._ssl,
            reuse_address=True,
        )
        broker.port = server.sockets[0].getsockname()[1]
        self._listeners[broker.node_id].server = server
        if broker.node_id in self._sasl_listeners:
            sasl = await asyncio.start_server(
                functools.partial(self._serve, broker.node_id, True), self.host, broker.sasl_port, reuse_address=True
            )
            broker.sasl_port = sasl.sockets[0].getsockname()[1]
            self._sasl_listeners[broker.node_id].server = sasl

    async def _close_listener(self, listener: _Listener) -> None:
        if listener.server is not None:
            listener.server.close()
            listener.server = None
        tasks = list(listener.connections.values())
        for writer, task in list(listener.connections.items()):
            writer.close()
            if task is not asyncio.current_task():
                task.cancel()
        await asyncio.gather(*(t for t in tasks if t is not asyncio.current_task()), return_exceptions=True)
        listener.connections.clear()

    async def _tick_forever(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            self.state.advance(1)

    # ------------------------------------------------------------ addresses
    @property
    def brokers(self) -> tuple[int, ...]:
        """Every broker id (alive or not)."""
        return tuple(self.state.brokers)

    @property
    def live_brokers(self) -> tuple[int, ...]:
        return tuple(self.state.live_brokers())

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for b in self.state.brokers.values())

    @property
    def sasl_bootstrap(self) -> str:
        """The SASL_PLAINTEXT listeners (with ``sasl_port``), like ``bootstrap``."""
        if not self._sasl_listeners:
            raise RuntimeError("this fake cluster has no SASL listener (pass sasl_port)")
        return ",".join(f"{b.host}:{b.sasl_port}" for b in self.state.brokers.values())

    def address(self, broker_id: int) -> tuple[str, int]:
        broker = self.state.brokers[broker_id]
        return broker.host, broker.port

    @property
    def cluster_id(self) -> str:
        return self.state.cluster_id

    @property
    def controller_id(self) -> int:
        """The controller (zk) / the double's notion of the active controller (kraft)."""
        return self.state.controller_id

    def move_controller(self, to: int | None = None) -> int:
        """Move the controller to ``to`` or the next live broker; returns the new controller id."""
        return self.state.move_controller(to)

    def advertised_versions(self, broker_id: int, sasl: bool | None = None) -> dict[int, tuple[int, int]]:
        """What ``broker_id`` advertises; ``sasl``: on a SASL listener (default: the main one)."""
        caps = {**self.max_versions, **self.per_broker_max_versions.get(broker_id, {})}
        return advertised_versions(self.disabled_apis, caps, self._sasl is not None if sasl is None else sasl)

    # --------------------------------------------------------------- brokers
    async def stop_broker(self, broker_id: int) -> None:
        """Take a broker down: it stops listening, its connections close, leaders move."""
        self.state.broker_down(broker_id)
        await self._close_listener(self._listeners[broker_id])
        if broker_id in self._sasl_listeners:
            await self._close_listener(self._sasl_listeners[broker_id])

    async def start_broker(self, broker_id: int) -> None:
        """Bring a broker back on its old port; it rejoins ISRs (leadership stays put)."""
        await self._listen(self.state.brokers[broker_id])
        self.state.broker_up(broker_id)

    # ------------------------------------------------------------------ time
    def advance(self, ticks: int = 1) -> None:
        """Move virtual time by ``ticks`` (reassignment copies, delayed leaders)."""
        self.state.advance(ticks)

    def complete_reassignments(self) -> int:
        return self.state.complete_reassignments()

    def elect_pending_leaders(self) -> int:
        return self.state.elect_pending_leaders()

    # ----------------------------------------------------------------- state
    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
        assignments: Sequence[Sequence[int]] | None = None,
    ) -> Any:
        """Set up a topic directly (no request, no validation); returns its topic id."""
        placed = [list(a) for a in assignments] if assignments else self.state.place(partitions, replication_factor)
        return self.state.add_topic(name, placed, configs or {}).topic_id

    def partition(self, topic: str, index: int) -> PartitionDouble:
        return self.state.topics[topic].partitions[index]

    def set_partition_size(self, topic: str, size_bytes: int, partition: int | None = None) -> None:
        parts = self.state.topics[topic].partitions
        for p in parts if partition is None else [parts[partition]]:
            p.size_bytes = size_bytes

    @property
    def acls(self) -> list[AclBinding]:
        return list(self.state.acls)

    # ---------------------------------------------------------------- faults
    def inject(self, *faults: FaultDouble) -> None:
        """Arm faults; each fires for its next ``count`` matching requests."""
        self._faults.arm(faults)

    def clear_faults(self) -> None:
        self._faults.clear()

    @property
    def pending_faults(self) -> list[FaultDouble]:
        return self._faults.pending()

    @property
    def fired_faults(self) -> list[tuple[FaultDouble, int, int]]:
        """(fault, api key, broker id) for every fault that fired."""
        return list(self._faults.fired)

    # -------------------------------------------------------------- requests
    def count(self, api_key: int, broker_id: int | None = None) -> int:
        """How many requests of ``api_key`` (optionally at one broker) were served."""
        return sum(1 for r in self.requests if r.api_key == api_key and (broker_id is None or r.broker_id == broker_id))

    def items(self, api_key: int) -> int:
        """Total items (topics, resources, ACLs, partitions) sent in requests of ``api_key``."""
        return sum(r.items for r in self.requests if r.api_key == api_key)

    def clear_requests(self) -> None:
        self.requests.clear()

    # ---------------------------------------------------------------- server
    async def _serve(
        self, broker_id: int, on_sasl: bool, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        listener = (self._sasl_listeners if on_sasl else self._listeners)[broker_id]
        task = asyncio.current_task()
        assert task is not None
        listener.connections[writer] = task
        server = self.sasl_listener if on_sasl else self._sasl
        conn = _Connection(server.new_session() if server is not None else None, on_sasl)
        try:
            await self._serve_frames(broker_id, conn, reader, writer)
        except (asyncio.IncompleteReadError, OSError, asyncio.CancelledError):
            pass  # peer went away, TLS failed, or the double is stopping
        finally:
            listener.connections.pop(writer, None)
            writer.close()

    async def _serve_frames(
        self, broker_id: int, conn: _Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while True:
            size = read_size(await reader.readexactly(4))
            if not 8 <= size <= MAX_FRAME_BYTES:
                return
            reply = await self._process(broker_id, conn, await reader.readexactly(size))
            if reply.data is not None:
                writer.write(reply.data)
            if reply.close:
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
                return
            if writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER:
                await writer.drain()

    async def _process(self, broker_id: int, conn: _Connection, payload: bytes) -> _Reply:
        try:
            frame = decode_request(payload)
        except FrameError:
            return _CLOSE
        if not self.state.is_alive(broker_id):
            return _CLOSE
        session = conn.session
        if session is not None and not session.authenticated and frame.api_key not in (*SASL_APIS, API_VERSIONS):
            return _CLOSE
        try:
            return await self._dispatch(broker_id, conn, frame)
        except CloseConnection:
            return _CLOSE
        except Exception as exc:  # a bug in the double: record it for the test, drop the connection
            log.exception("fake cluster double failed on api %s v%s", frame.api_key, frame.api_version)
            self.errors.append(exc)
            return _CLOSE

    def _record(self, broker_id: int, frame: RequestFrame, items: int) -> None:
        self.requests.append(
            RequestRecord(frame.api_key, frame.api_version, broker_id, items, frame.correlation_id, frame.client_id)
        )

    async def _dispatch(self, broker_id: int, conn: _Connection, frame: RequestFrame) -> _Reply:
        api, version = frame.api_key, frame.api_version
        advertised = self.advertised_versions(broker_id, conn.session is not None)
        if api == API_VERSIONS:
            self._record(broker_id, frame, 1)
            return _Reply(encode_response(self._api_versions(advertised, frame), frame.correlation_id))
        if api in SASL_APIS:
            return self._sasl_step(broker_id, conn, frame, advertised)
        handler = HANDLERS.get(api)
        if handler is None or frame.body is None:
            return _CLOSE
        forced = self._forced_error(api, version, advertised)
        if isinstance(forced, _Reply):
            return forced
        self._record(broker_id, frame, handler.count_items(frame.body, version))
        effects = _effects(self._faults.take(api, broker_id))
        if effects.delay_before:
            await asyncio.sleep(effects.delay_before)
        if effects.drop_before or not self.state.is_alive(broker_id):
            return _CLOSE
        ctx = self._context(broker_id, api, version, forced, effects)
        ctx.sasl_listener = conn.on_sasl_listener
        response = handler.handle(ctx, frame.body)
        if effects.drop_after:
            return _CLOSE
        delay = effects.delay_after
        if effects.throttle is not None and ctx.throttle_items_after is None:
            delay += effects.throttle.throttle_ms / 1000  # old versions: quota enforced by delaying
        if delay:
            await asyncio.sleep(delay)
        return _Reply(encode_response(response, frame.correlation_id))

    def _forced_error(self, api: int, version: int, advertised: Mapping[int, tuple[int, int]]) -> ItemError | _Reply | None:
        """UNSUPPORTED_VERSION for a disabled/capped API, SECURITY_DISABLED without an authorizer."""
        low, high = advertised.get(api, (0, -1))
        if not low <= version <= high:
            full_low, full_high = SUPPORTED_VERSIONS[api]
            if not full_low <= version <= full_high:
                return _CLOSE  # Kafka closes the connection on a version it cannot parse
            return ItemError(ErrorCode.unsupported_version, f"The broker does not support api {api} version {version}")
        if api in ACL_APIS and not self.acls_enabled:
            return ItemError(ErrorCode.security_disabled, "No Authorizer is configured on the broker")
        return None

    def _context(
        self, broker_id: int, api: int, version: int, forced: ItemError | None, effects: _FaultEffects
    ) -> RequestContext:
        ctx = RequestContext(self.state, broker_id, api, version, forced=forced)
        if effects.not_controller and ctx.forced is None:
            ctx.forced = ItemError(ErrorCode.not_controller, "This is not the correct controller for this cluster.")
            if effects.move_controller:
                self.state.move_controller()
        if effects.throttle is not None:
            ctx.throttle_time_ms = effects.throttle.throttle_ms
            if version >= THROTTLE_MIN_VERSION.get(api, 1 << 15):
                ctx.throttle_items_after = effects.throttle.allow_items
        ctx.timed_out_after_apply = effects.timed_out
        return ctx

    def _api_versions(self, advertised: Mapping[int, tuple[int, int]], frame: RequestFrame) -> Any:
        keys = [{"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in sorted(advertised.items())]
        low, high = advertised[API_VERSIONS]
        if frame.body is None or not low <= frame.api_version <= high:
            # KIP-511: answer v0 with UNSUPPORTED_VERSION and our ranges, so the client can retry.
            return build(response_class(API_VERSIONS, 0), {"error_code": ErrorCode.unsupported_version, "api_keys": keys})
        return build(
            response_class(API_VERSIONS, frame.api_version),
            {"error_code": ErrorCode.none, "api_keys": keys, "throttle_time": timedelta(0)},
        )

    def _sasl_step(
        self, broker_id: int, conn: _Connection, frame: RequestFrame, advertised: Mapping[int, tuple[int, int]]
    ) -> _Reply:
        low, high = advertised.get(frame.api_key, (0, -1))
        if conn.session is None or frame.body is None or not low <= frame.api_version <= high:
            return _CLOSE
        self._record(broker_id, frame, 1)
        response = conn.session.handle(frame.api_key, frame.api_version, frame.body)
        failed = getattr(response, "error_code", ErrorCode.none) != ErrorCode.none
        return _Reply(encode_response(response, frame.correlation_id), close=failed)
