"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pytest

from kafkaops.testing.fake_cluster import FakeClusterDouble


@pytest.fixture
async def quiet_fake():
    """A 3-broker fake cluster without virtual-time ticks that must end without internal errors."""
    async with FakeClusterDouble(brokers=3, tick_interval=None) as double:
        yield double
        assert not double.errors
