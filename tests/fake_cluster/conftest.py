"""A tiny raw Kafka client made from kafkaops.kafka.wire, to test the fake cluster double."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest

from kafkaops.kafka.wire import build, decode_response, encode_request, read_size, request_class
from kafkaops.testing.fake_cluster import FakeClusterDouble


class Conn:
    """One connection; requests may be pipelined, responses come back in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self._corr = itertools.count(1)
        self._sent: list[tuple[int, int, int]] = []

    @classmethod
    async def open(cls, host: str, port: int) -> Conn:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    def send(self, api_key: int, version: int, body: Mapping[str, Any]) -> None:
        corr = next(self._corr)
        request = build(request_class(api_key, version), body)
        self.writer.write(encode_request(request, corr, "test"))
        self._sent.append((api_key, version, corr))

    def send_raw(self, frame: bytes, api_key: int, version: int, corr: int) -> None:
        self.writer.write(frame)
        self._sent.append((api_key, version, corr))

    async def receive(self) -> Any:
        api_key, version, corr = self._sent.pop(0)
        size = read_size(await self.reader.readexactly(4))
        payload = await self.reader.readexactly(size)
        assert int.from_bytes(payload[:4], "big", signed=True) == corr
        return decode_response(payload, api_key, version)

    async def call(self, api_key: int, version: int, body: Mapping[str, Any]) -> Any:
        self.send(api_key, version, body)
        return await self.receive()

    async def closed_by_server(self) -> bool:
        """True when the server closed the connection (EOF before any response)."""
        try:
            data = await asyncio.wait_for(self.reader.read(4), timeout=5)
        except ConnectionError:
            return True
        return data == b""

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass


class RawClient:
    """Connections to each broker of a double, opened on first use."""

    def __init__(self, cluster: FakeClusterDouble) -> None:
        self.cluster = cluster
        self.conns: dict[int, Conn] = {}

    async def conn(self, broker: int | None = None) -> Conn:
        broker = broker if broker is not None else self.cluster.brokers[0]
        if broker not in self.conns:
            self.conns[broker] = await Conn.open(*self.cluster.address(broker))
        return self.conns[broker]

    async def fresh(self, broker: int | None = None) -> Conn:
        broker = broker if broker is not None else self.cluster.brokers[0]
        return await Conn.open(*self.cluster.address(broker))

    async def call(self, api_key: int, version: int, body: Mapping[str, Any], broker: int | None = None) -> Any:
        return await (await self.conn(broker)).call(api_key, version, body)

    def forget(self, broker: int) -> None:
        self.conns.pop(broker, None)

    async def close(self) -> None:
        for conn in self.conns.values():
            await conn.close()


@pytest.fixture
async def make_client() -> AsyncIterator[Callable[[FakeClusterDouble], RawClient]]:
    """A RawClient for a double a test starts itself; closed at teardown."""
    made: list[RawClient] = []

    def make(double: FakeClusterDouble) -> RawClient:
        made.append(RawClient(double))
        return made[-1]

    yield make
    for raw in made:
        await raw.close()


@pytest.fixture
async def cluster() -> AsyncIterator[FakeClusterDouble]:
    async with FakeClusterDouble(brokers=3, tick_interval=None) as double:
        yield double
        assert not double.errors


@pytest.fixture
async def zk_cluster() -> AsyncIterator[FakeClusterDouble]:
    async with FakeClusterDouble(brokers=3, mode="zk", tick_interval=None) as double:
        yield double
        assert not double.errors


@pytest.fixture
async def client(cluster: FakeClusterDouble) -> AsyncIterator[RawClient]:
    raw = RawClient(cluster)
    yield raw
    await raw.close()


@pytest.fixture
async def zk_client(zk_cluster: FakeClusterDouble) -> AsyncIterator[RawClient]:
    raw = RawClient(zk_cluster)
    yield raw
    await raw.close()
