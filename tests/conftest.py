"""Shared fixtures: real servers (noida-db, Tansu) started per session on free ports."""

from __future__ import annotations

import gc
import os
import uuid
from collections.abc import Iterator

import pytest

from kafkaops.testing.fake_cluster import FakeClusterDouble
from kafkaops.testing.servers import start_noida, start_tansu

# `make test` runs the suite in two pytest-xdist workers. What one worker runs together:
# the fleet tests (one Spark session: a JVM each worker would start again), otherwise a file (its
# module fixtures: an operator, an API emulator, a built venv, set up once). The scopes that take
# longest (pytest --durations, docs/benchmarks.md "The test suite's time") go out first, so the
# last scope to finish is a short one.
FLEET = "tests/fleet/"
LONG_FIRST = (FLEET, "tests/e2e/", "tests/soak/", "tests/kubectl/", "tests/cli/")


def _scope(nodeid: str) -> str:
    return FLEET if nodeid.startswith(FLEET) else nodeid.split("::", 1)[0]


def _rank(scope: str) -> int:
    return next((i for i, prefix in enumerate(LONG_FIRST) if scope.startswith(prefix)), len(LONG_FIRST))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    if config.getoption("dist") != "load":  # `-n N` alone means load; another --dist is asked for
        return None
    from xdist.scheduler.loadscope import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

        def _assign_work_unit(self, node: object) -> None:
            first = min(self.workqueue, key=lambda scope: (_rank(scope), -len(self.workqueue[scope])))
            self.workqueue.move_to_end(first, last=False)
            super()._assign_work_unit(node)

    return Scheduling(config, log)


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    """`kafkaops plan`/`apply`/`validate` run in-process by a test set this process's garbage
    collector (cli/collector.py: what is loaded is frozen out of collections); the next test starts
    from the interpreter's own policy, or every later test would keep the runs' cyclic garbage and
    tests that count collections or garbage would see another process's policy."""
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    yield
    if gc.get_threshold() != thresholds or gc.get_freeze_count() != frozen:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        gc.collect()  # the run's garbage, frozen with its objects, goes now as it would have


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
