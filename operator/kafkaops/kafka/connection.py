"""One connection per broker: pipelined requests matched by correlation id.

A connection owns a reader task that matches each response frame to the
future of the request with the same correlation id. Writers take a slot of an
in-flight semaphore, so at most ``max_in_flight`` requests are outstanding.
A request that gets no answer within ``request_timeout`` closes the
connection: what the broker did with it is unknown, and a fresh connection is
the only way to be sure no late answer is matched to a later request.

Opening a connection negotiates versions (ApiVersions, KIP-35) and runs SASL
when configured. ``BrokerPool`` keeps one connection per broker and reopens
it with exponential backoff and jitter (tenacity).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import ssl
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, stop_after_delay, wait_exponential_jitter

from . import wire
from .apis import CLIENT_RANGES, Api, choose_version
from .errors import (
    AuthenticationFailed,
    BrokerUnreachable,
    ClusterUnreachable,
    KafkaConnectionError,
    RequestTimedOut,
    UnsupportedFeature,
)
from .security import sasl_authenticate, ssl_context
from .settings import ClientSettings

log = logging.getLogger(__name__)

BOOTSTRAP = -1  # pseudo node id for connections made to a bootstrap address
MAX_FRAME = 100 * 1024 * 1024  # a first reply larger than this is not Kafka (a TLS record, HTTP...)
NOT_KAFKA = "did not answer as a Kafka broker (ApiVersions)"
TLS_TO_PLAINTEXT = ("TLS handshake failed ({}): the listener does not speak TLS; a plaintext listener? "
                    "(security.protocol is {})")
PLAINTEXT_TO_TLS = ("answered with TLS: the listener expects TLS; set security.protocol=SSL or SASL_SSL "
                    "(--command-config)")


def connect_failure(address: str, exc: BaseException, tls: bool, protocol: str, timeout: float) -> BrokerUnreachable:
    """Why opening a TCP (and TLS) connection to `address` failed, in a few words (pure)."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return BrokerUnreachable(address, f"TLS certificate not trusted: {exc.verify_message or exc.reason} "
                                          "(ssl.truststore.location, ssl.endpoint.identification.algorithm)",
                                 retriable=False)
    if isinstance(exc, ssl.SSLError) or (tls and isinstance(exc, (ConnectionResetError, asyncio.IncompleteReadError))):
        reason = getattr(exc, "reason", None) or type(exc).__name__
        return BrokerUnreachable(address, TLS_TO_PLAINTEXT.format(reason, protocol), retriable=False)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return BrokerUnreachable(address, f"no connection within {timeout:g}s (connect timeout; a firewall, or "
                                          "a wrong address?)")
    if isinstance(exc, ConnectionRefusedError):
        return BrokerUnreachable(address, "connection refused (nothing listens on that port)")
    if isinstance(exc, socket.gaierror):
        return BrokerUnreachable(address, f"unknown host ({exc.strerror or exc})")
    if tls and isinstance(exc, EOFError):
        return BrokerUnreachable(address, TLS_TO_PLAINTEXT.format("EOF", protocol), retriable=False)
    detail = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return BrokerUnreachable(address, f"cannot connect: {detail}")


def first_reply_problem(prefix: bytes) -> str | None:
    """What the first 4 bytes a server sent say when they cannot start a Kafka response (pure)."""
    if len(prefix) >= 2 and prefix[0] in (0x15, 0x16) and prefix[1] == 0x03:
        return PLAINTEXT_TO_TLS
    if prefix.startswith(b"HTTP") or prefix[:1] == b"<":
        return f"{NOT_KAFKA}: it answered HTTP"
    if wire.read_size(prefix) > MAX_FRAME or wire.read_size(prefix) < 4:
        return f"{NOT_KAFKA}: its reply is not a Kafka frame"
    return None


class BrokerConnection:
    """A pipelined connection to one broker."""

    def __init__(self, host: str, port: int, node_id: int, settings: ClientSettings) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self._settings = settings
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._read_task: asyncio.Task[None] | None = None
        self._pending: dict[int, tuple[asyncio.Future[Any], int, int]] = {}
        self._correlation = itertools.count(1)
        self._slots = asyncio.Semaphore(settings.max_in_flight)
        self._write_lock = asyncio.Lock()
        self._closed_reason: str | None = None
        self.api_versions: Mapping[int, tuple[int, int]] = {}
        self.requests_sent = 0

    def __repr__(self) -> str:
        return f"BrokerConnection(node={self.node_id}, {self.host}:{self.port}, open={self.is_open})"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def is_open(self) -> bool:
        return self._writer is not None and self._closed_reason is None

    async def open(self) -> None:
        """Connect, negotiate API versions, authenticate."""
        security = self._settings.security
        tls = ssl_context(security)
        timeout = self._settings.connect_timeout
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, ssl=tls, server_hostname=self.host if tls else None),
                timeout,
            )
        except (OSError, EOFError, asyncio.TimeoutError, asyncio.IncompleteReadError) as exc:
            raise connect_failure(self.address, exc, tls is not None, security.protocol, timeout) from None
        self._closed_reason = None
        self._read_task = asyncio.create_task(self._read_loop(), name=f"kafka-read-{self.address}")
        try:
            try:
                await asyncio.wait_for(self._negotiate_versions(), timeout)
            except asyncio.TimeoutError:
                raise BrokerUnreachable(self.address, f"{NOT_KAFKA}: no reply within {timeout:g}s (connect timeout)",
                                        retriable=False) from None
            except BrokerUnreachable:
                raise
            except KafkaConnectionError:
                hint = ("not a Kafka listener?" if tls is not None else
                        f"a TLS listener? security.protocol is {security.protocol}: set SSL or SASL_SSL "
                        "(--command-config)")
                raise BrokerUnreachable(self.address, f"closed the connection without answering ApiVersions: {hint}",
                                        retriable=False) from None
            if security.sasl_mechanism and security.protocol.startswith("SASL"):
                await sasl_authenticate(self.send, security)
        except BaseException:
            await self.close()
            raise

    async def _negotiate_versions(self) -> None:
        # ApiVersions is the one request sent before versions are known. v3
        # first; a broker that only knows older versions answers with
        # UNSUPPORTED_VERSION and its own range (KIP-511), then we use v0.
        response = await self.request(wire.build(wire.request_class(Api.API_VERSIONS, 3), {
            "client_software_name": "kafkaops",
            "client_software_version": "0.1.0",
        }))
        if response.error_code == ErrorCode.unsupported_version:
            response = await self.request(wire.build(wire.request_class(Api.API_VERSIONS, 0), {}))
        if response.error_code != ErrorCode.none:
            raise KafkaConnectionError(f"broker {self.address} refused ApiVersions: {ErrorCode(response.error_code).name}")
        self.api_versions = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}

    def version_for(self, api: Api) -> int:
        return choose_version(api, self.api_versions, None if self.node_id == BOOTSTRAP else self.node_id)

    def supports(self, api: Api) -> bool:
        try:
            self.version_for(api)
        except UnsupportedFeature:
            return False
        return True

    async def send(self, api: int, data: Mapping[str, Any]) -> Any:
        """Build ``data`` at the negotiated version of ``api`` and send it."""
        version = self.version_for(Api(api))
        return await self.request(wire.build(wire.request_class(int(api), version), data))

    async def request(self, request: Any) -> Any:
        """Send one kio request entity and await its decoded response."""
        if self._closed_reason is not None or self._writer is None:
            raise KafkaConnectionError(f"connection to broker {self.address} is closed ({self._closed_reason or 'not open'})")
        api_key, version = int(request.__api_key__), int(request.__version__)
        async with self._slots:
            correlation_id = next(self._correlation) & 0x7FFFFFFF
            frame = wire.encode_request(request, correlation_id, self._settings.client_id)
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._pending[correlation_id] = (future, api_key, version)
            try:
                async with self._write_lock:
                    self._writer.write(frame)
                    await self._writer.drain()
                self.requests_sent += 1
                return await asyncio.wait_for(asyncio.shield(future), self._settings.request_timeout)
            except asyncio.TimeoutError:
                await self._fail(f"no response to {Api(api_key).title} within {self._settings.request_timeout}s")
                raise RequestTimedOut(
                    f"broker {self.address} did not answer {Api(api_key).title} within {self._settings.request_timeout}s"
                ) from None
            except (OSError, ConnectionError) as exc:
                await self._fail(f"write failed: {exc}")
                raise KafkaConnectionError(f"connection to broker {self.address} broke: {exc}") from None
            finally:
                self._pending.pop(correlation_id, None)

    async def _read_loop(self) -> None:
        assert self._reader is not None
        first = True
        try:
            while True:
                prefix = await self._reader.readexactly(4)
                if first and (problem := first_reply_problem(prefix)) is not None:
                    self._abort(problem, BrokerUnreachable(self.address, problem, retriable=False))
                    return
                first = False
                size = wire.read_size(prefix)
                payload = await self._reader.readexactly(size)
                correlation_id = wire.peek_correlation_id(payload)
                entry = self._pending.get(correlation_id)
                if entry is None:
                    log.debug("dropping response with unknown correlation id %d from %s", correlation_id, self.address)
                    continue
                future, api_key, version = entry
                try:
                    response = wire.decode_response(payload, api_key, version)
                except wire.FrameError as exc:
                    if not future.done():
                        future.set_exception(KafkaConnectionError(f"broker {self.address}: {exc}"))
                    continue
                if not future.done():
                    future.set_result(response)
        except (asyncio.IncompleteReadError, OSError, ConnectionError) as exc:
            self._abort(f"connection lost: {exc.__class__.__name__}")
        except asyncio.CancelledError:
            self._abort("closed")
            raise

    def _abort(self, reason: str, error: KafkaConnectionError | None = None) -> None:
        if self._closed_reason is None:
            self._closed_reason = reason
        for future, _api, _version in list(self._pending.values()):
            if not future.done():
                future.set_exception(error or KafkaConnectionError(f"broker {self.address}: {reason}"))
                # A request that already gave up (timed out) never awaits it: mark it seen so that
                # asyncio does not log "Future exception was never retrieved".
                future.exception()
        self._pending.clear()
        if self._writer is not None:
            self._writer.close()

    async def _fail(self, reason: str) -> None:
        self._abort(reason)
        if self._read_task is not None and not self._read_task.done():
            self._read_task.cancel()

    async def close(self) -> None:
        """Close cleanly: fail outstanding requests, stop the reader, close the socket."""
        self._abort("closed by client")
        if self._read_task is not None:
            self._read_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._read_task
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()


class BrokerPool:
    """One connection per broker, reopened on demand with backoff and jitter."""

    def __init__(self, settings: ClientSettings) -> None:
        self._settings = settings
        self._addresses: dict[int, tuple[str, int]] = {}
        self._connections: dict[int, BrokerConnection] = {}
        self._bootstrap: dict[tuple[str, int], BrokerConnection] = {}
        self._locks: dict[object, asyncio.Lock] = {}
        self._closed = False

    def use_settings(self, settings: ClientSettings) -> None:
        """Settings (credentials) for the connections opened from now on."""
        self._settings = settings

    def update_brokers(self, addresses: Mapping[int, tuple[str, int]]) -> None:
        """Learn broker addresses from metadata; drop connections whose address changed."""
        for node_id, address in addresses.items():
            old = self._addresses.get(node_id)
            if old is not None and old != address and node_id in self._connections:
                asyncio.ensure_future(self._connections.pop(node_id).close())
            self._addresses[node_id] = address
        for node_id in set(self._addresses) - set(addresses):
            del self._addresses[node_id]

    def known_brokers(self) -> tuple[int, ...]:
        return tuple(sorted(self._addresses))

    @property
    def requests_sent(self) -> int:
        conns = list(self._connections.values()) + list(self._bootstrap.values())
        return sum(c.requests_sent for c in conns)

    async def _open(self, host: str, port: int, node_id: int) -> BrokerConnection:
        stop = stop_after_attempt(self._settings.connect_attempts)
        if self._settings.connect_retry_budget is not None:
            stop = stop | stop_after_delay(self._settings.connect_retry_budget)
        retrying = AsyncRetrying(
            stop=stop,
            wait=wait_exponential_jitter(multiplier=self._settings.retry_backoff, max=self._settings.retry_backoff_max, jitter=self._settings.retry_backoff),
            retry=retry_if_exception(lambda e: isinstance(e, KafkaConnectionError) and getattr(e, "retriable", True)),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                connection = BrokerConnection(host, port, node_id, self._settings)
                await connection.open()
                return connection
        raise AssertionError("unreachable")  # pragma: no cover

    async def get(self, node_id: int) -> BrokerConnection:
        """The open connection to ``node_id``, connecting (with retries) if needed."""
        if self._closed:
            raise KafkaConnectionError("admin client is closed")
        connection = self._connections.get(node_id)
        if connection is not None and connection.is_open:
            return connection
        address = self._addresses.get(node_id)
        if address is None:
            raise KafkaConnectionError(f"broker {node_id} is not in the cluster metadata")
        async with self._locks.setdefault(node_id, asyncio.Lock()):
            connection = self._connections.get(node_id)
            if connection is not None and connection.is_open:
                return connection
            connection = await self._open(*address, node_id)
            self._connections[node_id] = connection
            return connection

    async def any(self) -> BrokerConnection:
        """A connection to any reachable broker: known brokers first, then bootstrap."""
        for connection in list(self._connections.values()) + list(self._bootstrap.values()):
            if connection.is_open:
                return connection
        failures: list[BrokerUnreachable] = []
        errors: list[str] = []
        for node_id in self.known_brokers():
            try:
                return await self.get(node_id)
            except (KafkaConnectionError, AuthenticationFailed) as exc:
                if isinstance(exc, AuthenticationFailed):
                    raise
                if isinstance(exc, BrokerUnreachable):
                    failures.append(exc)
                else:
                    errors.append(str(exc))
        for host, port in self._settings.bootstrap:
            async with self._locks.setdefault((host, port), asyncio.Lock()):
                existing = self._bootstrap.get((host, port))
                if existing is not None and existing.is_open:
                    return existing
                try:
                    connection = await self._open(host, port, BOOTSTRAP)
                except BrokerUnreachable as exc:
                    failures.append(exc)
                    continue
                except KafkaConnectionError as exc:
                    errors.append(str(exc))
                    continue
                self._bootstrap[(host, port)] = connection
                return connection
        raise ClusterUnreachable(tuple(failures), tuple(errors))

    def invalidate(self, node_id: int) -> None:
        """Forget a broken connection so the next ``get`` reconnects."""
        connection = self._connections.pop(node_id, None)
        if connection is not None:
            asyncio.ensure_future(connection.close())

    async def close(self) -> None:
        self._closed = True
        connections = list(self._connections.values()) + list(self._bootstrap.values())
        self._connections.clear()
        self._bootstrap.clear()
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)


__all__ = ["BrokerConnection", "BrokerPool", "BOOTSTRAP", "CLIENT_RANGES"]
