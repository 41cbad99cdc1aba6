"""The fake cluster's control endpoint (kafkaops.testing.fake.control): each fault hook, driven over
HTTP as a soak scenario or a person with curl would, observed through the admin client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from kafkaops.kafka import AdminClient, NewTopic
from kafkaops.testing.fake.control import control_server, fault_from_json
from kafkaops.testing.control_http import ControlError
from kafkaops.testing.fake_cluster import FakeClusterDouble, FaultKind


@pytest.fixture
async def controlled() -> AsyncIterator[tuple[FakeClusterDouble, str]]:
    async with FakeClusterDouble(3, tick_interval=None, seed=7) as cluster:
        control = await control_server(cluster).start()
        try:
            yield cluster, control.url
        finally:
            await control.stop()


async def call(method: str, url: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.request(method, url, json=body) as response:
        return response.status, await response.json()


async def test_state_reports_topics_acls_and_create_counters(controlled: tuple[FakeClusterDouble, str]) -> None:
    cluster, url = controlled
    async with AdminClient.connect(cluster.bootstrap) as admin:
        await admin.create_topics([NewTopic("orders", partitions=2, replication_factor=3, configs={"retention.ms": "5"})])
        again = await admin.create_topics([NewTopic("orders", partitions=2, replication_factor=3)])
    assert again["orders"].error is not None
    status, state = await call("GET", f"{url}/state")
    assert status == 200
    assert [len(r) for r in state["topics"]["orders"]["replicas"]] == [3, 3]
    assert state["topics"]["orders"]["configs"] == {"retention.ms": "5"}
    assert state["created"] == {"orders": 1} and state["already_exists"] == {"orders": 1}


async def test_not_controller_storm_moves_the_controller_and_the_client_recovers(
        controlled: tuple[FakeClusterDouble, str]) -> None:
    cluster, url = controlled
    before = cluster.controller_id
    status, armed = await call("POST", f"{url}/faults", {"kind": "not_controller", "count": 2, "move_controller": True})
    assert status == 200 and armed["armed"]["count"] == 2
    async with AdminClient.connect(cluster.bootstrap) as admin:
        result = await admin.create_topics([NewTopic("storm", partitions=1, replication_factor=1)])
    assert result["storm"].error is None
    assert cluster.controller_id == 3 != before  # moved twice: 1 -> 2 -> 3
    _, faults = await call("GET", f"{url}/faults")
    assert faults["fired"]["not_controller"] == 2 and faults["pending"] == []


async def test_throttled_and_timed_out_after_apply_are_armed_from_json(
        controlled: tuple[FakeClusterDouble, str]) -> None:
    cluster, url = controlled
    await call("POST", f"{url}/faults", {"kind": "timed_out_after_apply", "api_keys": [19]})
    async with AdminClient.connect(cluster.bootstrap) as admin:
        await admin.create_topics([NewTopic("late", partitions=1, replication_factor=1)])
        assert "late" in cluster.state.topics  # applied, whatever the answer said
        await call("POST", f"{url}/faults", {"kind": "throttled", "throttle_ms": 50, "count": 1})
        await admin.create_topics([NewTopic("quota", partitions=1, replication_factor=1)])
    kinds = [fault.kind for fault, _api, _broker in cluster.fired_faults]
    assert kinds == [FaultKind.TIMED_OUT_AFTER_APPLY, FaultKind.THROTTLED]
    assert "quota" in cluster.state.topics  # the client waited out the quota and retried


async def test_drop_connection_after_apply_applies_once(controlled: tuple[FakeClusterDouble, str]) -> None:
    cluster, url = controlled
    await call("POST", f"{url}/faults", {"kind": "drop_connection", "after_apply": True, "api_keys": [19]})
    async with AdminClient.connect(cluster.bootstrap) as admin:
        try:
            await admin.create_topics([NewTopic("dropped", partitions=1, replication_factor=1)])
        except Exception:  # a dropped write may surface as an error: Kafka holds it anyway
            pass
    assert cluster.state.created["dropped"] == 1
    assert [f.kind for f, _a, _b in cluster.fired_faults] == [FaultKind.DROP_CONNECTION]


async def test_broker_down_and_up_and_controller_move(controlled: tuple[FakeClusterDouble, str]) -> None:
    cluster, url = controlled
    status, body = await call("POST", f"{url}/brokers/2/down")
    assert status == 200 and body["live_brokers"] == [1, 3]
    port = cluster.address(2)[1]
    status, body = await call("POST", f"{url}/brokers/2/up")
    assert body["live_brokers"] == [1, 2, 3] and cluster.address(2)[1] == port
    status, body = await call("POST", f"{url}/controller", {"to": 3})
    assert status == 200 and body["controller"] == 3 == cluster.controller_id


async def test_bad_requests_name_the_field_and_change_nothing(controlled: tuple[FakeClusterDouble, str]) -> None:
    cluster, url = controlled
    for body, field in [({"kind": "meteor"}, "kind"), ({"kind": "slow", "delay_s": -1}, "delay_s"),
                        ({"kind": "throttled", "after_apply": True}, "after_apply"),
                        ({"kind": "not_controller", "count": 0}, "count"), ({}, "kind")]:
        status, answer = await call("POST", f"{url}/faults", body)
        assert status == 400 and answer["error"].startswith(field), answer
    status, answer = await call("POST", f"{url}/brokers/9/down")
    assert status == 400 and "broker 9" in answer["error"]
    status, answer = await call("POST", f"{url}/nowhere")
    assert status == 404 and "POST /faults" in answer["routes"]
    assert cluster.pending_faults == [] and cluster.live_brokers == (1, 2, 3)


def test_fault_from_json_builds_each_kind() -> None:
    assert fault_from_json({"kind": "slow", "delay_s": 2, "after_apply": True}).delay_s == 2.0
    assert fault_from_json({"kind": "throttled", "allow_items": 3}).allow_items == 3
    assert fault_from_json({"kind": "not_controller", "count": None}).count is None
    assert fault_from_json({"kind": "drop_connection", "broker_id": 2}).broker_id == 2
    with pytest.raises(ControlError, match="api_keys"):
        fault_from_json({"kind": "slow", "api_keys": ["x"]})
