"""Shared fixtures: real servers (noida-db, Tansu) started per session on free ports."""

from __future__ import annotations

import os
import uuid

import pytest

from kafkaops.testing.fake_cluster import FakeClusterDouble
from kafkaops.testing.servers import start_noida, start_tansu


@pytest.fixture(scope="session")
def noida():
    server = start_noida()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def tansu():
    server = start_tansu()
    yield server
    server.stop()


@pytest.fixture
def unique():
    """A short unique prefix so tests sharing a server never collide."""
    return f"t{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def real_cluster_bootstrap():
    """A user-supplied real cluster (KAFKAOPS_TEST_BOOTSTRAP); visibly skipped otherwise."""
    bootstrap = os.environ.get("KAFKAOPS_TEST_BOOTSTRAP")
    if not bootstrap:
        pytest.skip("no real Kafka cluster: set KAFKAOPS_TEST_BOOTSTRAP=host:port (and KAFKAOPS_TEST_COMMAND_CONFIG) to run")
    return bootstrap


@pytest.fixture(params=["noida", "fake"])
async def server(request):
    """(bootstrap, host, port) of a one-broker cluster of either backend: noida-db, or the fake
    cluster double configured like it (no authorizer, no reassignment or election APIs), so the
    same assertions keep the double honest."""
    if request.param == "noida":
        noida = request.getfixturevalue("noida")
        yield noida.bootstrap, noida.host, noida.port
        return
    async with FakeClusterDouble(brokers=1, acls_enabled=False, disabled_apis={43, 45, 46}) as cluster:
        host, port = cluster.bootstrap.split(",")[0].rsplit(":", 1)
        yield cluster.bootstrap, host, int(port)
