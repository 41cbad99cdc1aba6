"""One Spark session for every fleet test (a JVM takes seconds to start): local[2], no UI,
small shuffles, the same settings the CLI uses otherwise."""

from __future__ import annotations

import shutil

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if shutil.which("java") is None and not __import__("os").environ.get("JAVA_HOME"):
        skip = pytest.mark.skip(reason="no Java runtime: `make setup` installs one (Spark needs it)")
        for item in items:
            if "tests/fleet" in str(item.fspath) and "spark" in getattr(item, "fixturenames", ()):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def spark():
    from kafkaops.fleet.session import create_session

    session = create_session("local[2]", conf={
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
    }, driver_memory="2g", app_name="kafkaops-fleet-tests")
    yield session
    session.stop()
