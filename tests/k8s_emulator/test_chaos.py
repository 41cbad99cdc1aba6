"""The emulator's fault hooks (kafkaops.testing.k8s.chaos), driven over its control endpoint as a
soak scenario or a person with curl would: injected 409/429/500 answers, a slow API, watch streams
cut, and 410 Gone when a cut watch resumes from a compacted resourceVersion."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kafkaops.testing.control_http import ControlError
from kafkaops.testing.k8s.chaos import api_fault_from_json, control_server
from kafkaops.testing.k8s_emulator import KubernetesApiEmulator

CRD_DIR = Path(__file__).resolve().parents[2] / "crds"
NS = "ns1"
TOPICS = f"/apis/kafkaops.io/v1alpha1/namespaces/{NS}/kafkatopics"


def topic(name: str) -> dict[str, Any]:
    return {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic", "metadata": {"name": name, "namespace": NS},
            "spec": {"clusterRef": {"name": "main"}, "partitions": 1}}


@pytest.fixture
async def stack() -> AsyncIterator[tuple[KubernetesApiEmulator, aiohttp.ClientSession, str]]:
    async with KubernetesApiEmulator(crds=[CRD_DIR], namespaces=["default", NS], faults=True) as api:
        control = await control_server(api).start()
        try:
            async with aiohttp.ClientSession(base_url=api.url) as http:
                yield api, http, control.url
        finally:
            await control.stop()


async def call(http: aiohttp.ClientSession, method: str, url: str, body: Any = None) -> tuple[int, Any, Any]:
    async with http.request(method, url, json=body) as response:
        return response.status, await response.json(content_type=None), response.headers


async def test_the_next_n_matching_writes_answer_429_then_the_store_serves(stack: Any) -> None:
    api, http, control = stack
    status, _, _ = await call(http, "POST", f"{control}/faults",
                              {"status": 429, "count": 2, "method": "post", "path": "/kafkatopics"})
    assert status == 200
    answers = []
    for _ in range(3):
        status, body, headers = await call(http, "POST", TOPICS, topic("t1"))
        answers.append((status, body.get("reason"), headers.get("Retry-After")))
    assert answers[:2] == [(429, "TooManyRequests", "1")] * 2 and answers[2][0] == 201
    status, _, _ = await call(http, "GET", f"{TOPICS}/t1")  # GETs did not match the rule
    assert status == 200
    _, faults, _ = await call(http, "GET", f"{control}/faults")
    assert faults == {"pending": [], "fired": {"429": 2}}


async def test_409_and_500_on_patch_change_nothing(stack: Any) -> None:
    api, http, control = stack
    await call(http, "POST", TOPICS, topic("t2"))
    await call(http, "POST", f"{control}/faults", {"status": 409, "method": "PATCH", "path": "t2"})
    await call(http, "POST", f"{control}/faults", {"status": 500, "method": "PATCH", "path": "t2"})
    patch = {"spec": {"partitions": 4}}
    codes = []
    for _ in range(3):
        async with http.patch(f"{TOPICS}/t2", data=json.dumps(patch),
                              headers={"Content-Type": "application/merge-patch+json"}) as response:
            codes.append(response.status)
    assert codes == [409, 500, 200]
    assert api.get("kafkaops.io/v1alpha1", "KafkaTopic", "t2", NS)["metadata"]["generation"] == 2


async def test_a_slow_api_delays_matching_requests(stack: Any) -> None:
    _, http, control = stack
    await call(http, "POST", f"{control}/faults", {"delay_s": 0.3, "method": "GET", "path": "/kafkatopics"})
    started = time.monotonic()
    status, _, _ = await call(http, "GET", TOPICS)
    elapsed = time.monotonic() - started
    print(f"slow GET took {elapsed:.2f}s")
    assert status == 200 and elapsed >= 0.3


async def test_cut_watches_end_and_a_gone_resume_gets_410(stack: Any) -> None:
    _, http, control = stack
    status, created, _ = await call(http, "POST", TOPICS, topic("t3"))
    version = created["metadata"]["resourceVersion"]

    async def read_stream(resource_version: str) -> list[dict[str, Any]]:
        async with http.get(TOPICS, params={"watch": "true", "resourceVersion": resource_version}) as response:
            return [json.loads(line) async for line in response.content if line.strip()]

    stream = asyncio.create_task(read_stream(version))
    await asyncio.sleep(0.2)
    await call(http, "POST", TOPICS, topic("t4"))
    await asyncio.sleep(0.2)
    assert not stream.done()
    await call(http, "POST", f"{control}/watches/cut", {"gone": True})
    events = await asyncio.wait_for(stream, 10)  # the cut ended it
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "t4"
    assert all(e["type"] == "ERROR" and e["object"]["code"] == 410 for e in events[1:])
    resumed = await asyncio.wait_for(read_stream(events[0]["object"]["metadata"]["resourceVersion"]), 10)
    assert resumed[0]["type"] == "ERROR" and resumed[0]["object"]["code"] == 410
    _, faults, _ = await call(http, "GET", f"{control}/faults")
    assert faults["fired"] == {"watch_gone": 1}
    async with http.get(TOPICS) as response:  # a fresh list-then-watch works
        listed = await response.json()
    fresh = asyncio.create_task(read_stream(listed["metadata"]["resourceVersion"]))
    await asyncio.sleep(0.2)
    await call(http, "POST", TOPICS, topic("t5"))
    await asyncio.sleep(0.2)
    await call(http, "POST", f"{control}/watches/cut")
    assert [e["object"]["metadata"]["name"] for e in await asyncio.wait_for(fresh, 10)] == ["t5"]


async def test_a_watch_fault_only_matches_watches(stack: Any) -> None:
    _, http, control = stack
    await call(http, "POST", f"{control}/faults", {"status": 500, "watch": True, "path": "/kafkatopics"})
    status, _, _ = await call(http, "GET", TOPICS)
    assert status == 200
    async with http.get(TOPICS, params={"watch": "true", "timeoutSeconds": "1"}) as response:
        assert response.status == 500


async def test_bad_fault_requests_say_which_field(stack: Any) -> None:
    _, http, control = stack
    for body, field in [({"status": 200}, "status"), ({}, "status"), ({"status": 500, "method": "BREW"}, "method"),
                        ({"status": 500, "colour": "red"}, "colour"), ({"delay_s": -1}, "delay_s")]:
        status, answer, _ = await call(http, "POST", f"{control}/faults", body)
        assert status == 400 and answer["error"].startswith(field), answer
    _, faults, _ = await call(http, "GET", f"{control}/faults")
    assert faults["pending"] == []


def test_api_fault_from_json() -> None:
    fault = api_fault_from_json({"status": 429, "count": None, "method": "patch", "path": "/status"})
    assert (fault.status, fault.count, fault.method, fault.kind) == (429, None, "PATCH", "429")
    assert api_fault_from_json({"delay_s": 1}).kind == "slow"
    with pytest.raises(ControlError, match="count"):
        api_fault_from_json({"status": 500, "count": 0})
