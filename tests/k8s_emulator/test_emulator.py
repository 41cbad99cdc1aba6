"""The Kubernetes API server emulator behaves like kube-apiserver where kopf and the tests rely on it.

Plain HTTP (aiohttp) for each behaviour, the official `kubernetes` client, an in-process kopf
operator, and the emulator as a separate process with `kopf run` against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import kmock
import pytest

from kafkaops.testing.k8s_emulator import KubernetesApiEmulator

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "crds"
NS = "ns1"
TOPICS = f"/apis/kafkaops.io/v1alpha1/namespaces/{NS}/kafkatopics"
ACLS = f"/apis/kafkaops.io/v1alpha1/namespaces/{NS}/kafkaacls"
MERGE = {"Content-Type": "application/merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def topic(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"clusterRef": {"name": "main"}, "partitions": 3, **spec}}


@pytest.fixture
async def api() -> AsyncIterator[KubernetesApiEmulator]:
    async with KubernetesApiEmulator(crds=[CRD_DIR], namespaces=["default", NS], bookmark_interval=0.2) as emulator:
        yield emulator


@pytest.fixture
async def http(api: KubernetesApiEmulator) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=api.url) as session:
        yield session


async def call(http: aiohttp.ClientSession, method: str, url: str, body: Any = None,
               headers: dict[str, str] | None = None, **params: str) -> tuple[int, Any]:
    async with http.request(method, url, json=body, headers=headers, params=params or None) as resp:
        text = await resp.text()
        return resp.status, json.loads(text) if text else None


async def create_topic(http: aiohttp.ClientSession, name: str, **spec: Any) -> dict[str, Any]:
    status, body = await call(http, "POST", TOPICS, topic(name, **spec))
    assert status == 201, body
    return body


async def watch(http: aiohttp.ClientSession, url: str, *, count: int | None = None, timeout: float = 5,
                **params: str) -> list[dict[str, Any]]:
    """Reads watch events until `count` arrive (or the server ends the stream)."""
    events: list[dict[str, Any]] = []
    async with http.get(url, params={"watch": "true", **params}) as resp:
        assert resp.status == 200, await resp.text()
        async with asyncio.timeout(timeout):
            async for line in resp.content:
                if line.strip():
                    events.append(json.loads(line))
                if count is not None and len(events) >= count:
                    break
    return events


def kinds(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


# -- discovery -----------------------------------------------------------------------------------

async def test_discovery_lists_core_custom_and_kopf_resources(http: aiohttp.ClientSession) -> None:
    assert (await call(http, "GET", "/api"))[1]["versions"] == ["v1"]
    status, core = await call(http, "GET", "/api/v1")
    assert status == 200 and core["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in core["resources"]}
    assert {"namespaces", "namespaces/status", "secrets", "events", "configmaps"} <= set(by_name)
    assert by_name["namespaces"]["namespaced"] is False and by_name["events"]["namespaced"] is True
    assert {"create", "get", "list", "watch", "patch", "update", "delete"} <= set(by_name["secrets"]["verbs"])

    groups = {g["name"]: g for g in (await call(http, "GET", "/apis"))[1]["groups"]}
    assert {"kafkaops.io", "kopf.dev", "apiextensions.k8s.io", "coordination.k8s.io"} <= set(groups)
    assert groups["kafkaops.io"]["preferredVersion"]["version"] == "v1alpha1"
    status, group = await call(http, "GET", "/apis/kafkaops.io")
    assert status == 200 and group["kind"] == "APIGroup"

    status, kafka = await call(http, "GET", "/apis/kafkaops.io/v1alpha1")
    by_name = {r["name"]: r for r in kafka["resources"]}
    assert {"kafkatopics", "kafkatopics/status", "kafkaacls", "kafkaclusters", "kafkabrokerconfigs"} <= set(by_name)
    assert by_name["kafkatopics"]["kind"] == "KafkaTopic" and by_name["kafkatopics"]["namespaced"] is True
    assert by_name["kafkatopics"]["shortNames"] == ["kot"] and by_name["kafkatopics"]["categories"] == ["kafkaops"]
    assert "watch" in by_name["kafkatopics"]["verbs"]

    kopf_dev = {r["name"]: r for r in (await call(http, "GET", "/apis/kopf.dev/v1"))[1]["resources"]}
    assert kopf_dev["clusterkopfpeerings"]["namespaced"] is False and kopf_dev["kopfpeerings"]["namespaced"] is True
    assert "gitVersion" in (await call(http, "GET", "/version"))[1]
    assert (await call(http, "GET", "/apis/unknown.example.com/v1"))[0] == 404
    status, body = await call(http, "GET", "/apis/unknown.example.com/v1/namespaces/ns1/things")
    assert status == 404 and body["kind"] == "Status" and body["reason"] == "NotFound"


# -- metadata managed by the server --------------------------------------------------------------

async def test_create_sets_uid_timestamp_resource_version_and_generation(http: aiohttp.ClientSession) -> None:
    created = await create_topic(http, "t1")
    meta = created["metadata"]
    assert isinstance(meta["resourceVersion"], str) and meta["resourceVersion"].isdigit()
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert RFC3339.match(meta["creationTimestamp"])
    assert meta["generation"] == 1 and meta["namespace"] == NS
    assert created["apiVersion"] == "kafkaops.io/v1alpha1" and created["kind"] == "KafkaTopic"

    status, fetched = await call(http, "GET", f"{TOPICS}/t1")
    assert status == 200 and fetched == created
    other = await create_topic(http, "t2")
    assert other["metadata"]["uid"] != meta["uid"]
    assert int(other["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])

    status, body = await call(http, "POST", TOPICS, topic("t1"))
    assert status == 409 and body["reason"] == "AlreadyExists"
    status, body = await call(http, "GET", f"{TOPICS}/missing")
    assert status == 404 and body["reason"] == "NotFound" and body["details"]["name"] == "missing"


async def test_every_write_bumps_the_resource_version_but_a_no_op_does_not(http: aiohttp.ClientSession) -> None:
    created = await create_topic(http, "t1")
    versions = [int(created["metadata"]["resourceVersion"])]
    for patch in ({"metadata": {"labels": {"a": "1"}}}, {"spec": {"partitions": 4}}):
        status, body = await call(http, "PATCH", f"{TOPICS}/t1", patch, MERGE)
        assert status == 200
        versions.append(int(body["metadata"]["resourceVersion"]))
    status, body = await call(http, "PATCH", f"{TOPICS}/t1/status", {"status": {"topicName": "t1"}}, MERGE)
    versions.append(int(body["metadata"]["resourceVersion"]))
    assert versions == sorted(set(versions))

    status, same = await call(http, "PATCH", f"{TOPICS}/t1", {"spec": {"partitions": 4}}, MERGE)
    assert status == 200 and int(same["metadata"]["resourceVersion"]) == versions[-1]


async def test_generation_changes_with_the_spec_only(http: aiohttp.ClientSession) -> None:
    await create_topic(http, "t1")
    _, body = await call(http, "PATCH", f"{TOPICS}/t1", {"metadata": {"labels": {"x": "y"},
                                                                        "annotations": {"a": "b"}}}, MERGE)
    assert body["metadata"]["generation"] == 1
    _, body = await call(http, "PATCH", f"{TOPICS}/t1/status", {"status": {"partitions": 3}}, MERGE)
    assert body["metadata"]["generation"] == 1
    _, body = await call(http, "PATCH", f"{TOPICS}/t1", {"spec": {"partitions": 6}}, MERGE)
    assert body["metadata"]["generation"] == 2
    body["spec"]["config"] = {"retention.ms": "1000"}
    status, body = await call(http, "PUT", f"{TOPICS}/t1", body)
    assert status == 200 and body["metadata"]["generation"] == 3


# -- the status subresource ----------------------------------------------------------------------

async def test_status_is_written_through_the_status_subresource_only(http: aiohttp.ClientSession) -> None:
    status, created = await call(http, "POST", TOPICS, {**topic("t1"), "status": {"topicName": "ignored"}})
    assert status == 201 and "status" not in created

    _, body = await call(http, "PATCH", f"{TOPICS}/t1", {"spec": {"partitions": 5}, "status": {"topicName": "x"}},
                         MERGE)
    assert body["spec"]["partitions"] == 5 and "status" not in body

    _, body = await call(http, "PATCH", f"{TOPICS}/t1/status",
                         {"spec": {"partitions": 99}, "metadata": {"labels": {"no": "pe"}},
                          "status": {"topicName": "t1", "partitions": 5}}, MERGE)
    assert body["status"] == {"topicName": "t1", "partitions": 5}
    assert body["spec"]["partitions"] == 5 and "labels" not in body["metadata"]

    body["status"] = {"topicName": "t1", "partitions": 7}
    body["spec"]["partitions"] = 42
    status, replaced = await call(http, "PUT", f"{TOPICS}/t1/status", body)
    assert status == 200 and replaced["status"]["partitions"] == 7 and replaced["spec"]["partitions"] == 5
    replaced["status"] = {"topicName": "changed"}
    status, replaced = await call(http, "PUT", f"{TOPICS}/t1", replaced)
    assert status == 200 and replaced["status"]["topicName"] == "t1"
    status, fetched = await call(http, "GET", f"{TOPICS}/t1/status")
    assert status == 200 and fetched["status"]["partitions"] == 7

    # No status subresource (kopf's peering CRD): status is a part of the main resource.
    peering = {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "default"},
               "status": {"me": {"priority": 0}}}
    status, body = await call(http, "POST", "/apis/kopf.dev/v1/clusterkopfpeerings", peering)
    assert status == 201 and body["status"] == {"me": {"priority": 0}}
    assert (await call(http, "PATCH", "/apis/kopf.dev/v1/clusterkopfpeerings/default/status", {}, MERGE))[0] == 404


# -- schema: validation, pruning, defaults --------------------------------------------------------

async def test_schema_violations_are_422_with_field_causes(http: aiohttp.ClientSession) -> None:
    bad = topic("t1", partitions=0, deletionPolicy="Sometimes", replicationFactor="three")
    del bad["spec"]["clusterRef"]
    status, body = await call(http, "POST", TOPICS, bad)
    assert status == 422 and body["kind"] == "Status" and body["reason"] == "Invalid" and body["code"] == 422
    assert body["details"]["kind"] == "KafkaTopic" and body["details"]["group"] == "kafkaops.io"
    causes = {c["field"]: c for c in body["details"]["causes"]}
    assert set(causes) == {"spec.clusterRef", "spec.partitions", "spec.deletionPolicy", "spec.replicationFactor"}
    assert causes["spec.clusterRef"] == {"reason": "FieldValueRequired", "message": "Required value",
                                         "field": "spec.clusterRef"}
    assert causes["spec.partitions"]["reason"] == "FieldValueInvalid"
    assert "greater than or equal to 1" in causes["spec.partitions"]["message"]
    assert causes["spec.deletionPolicy"]["reason"] == "FieldValueNotSupported"
    assert '"Retain", "Delete"' in causes["spec.deletionPolicy"]["message"]
    assert causes["spec.replicationFactor"]["reason"] == "FieldValueTypeInvalid"
    assert body["message"].startswith('KafkaTopic.kafkaops.io "t1" is invalid: [')

    status, body = await call(http, "POST", TOPICS, topic("t1", replicaAssignment=[[1, 2], [-1]]))
    assert status == 422 and body["details"]["causes"][0]["field"] == "spec.replicaAssignment[1][0]"
    status, body = await call(http, "POST", TOPICS, topic("Bad_Name"))
    assert status == 422 and body["details"]["causes"][0]["field"] == "metadata.name"

    # Updates are validated too, and a rejected update changes nothing.
    created = await create_topic(http, "t1")
    status, body = await call(http, "PATCH", f"{TOPICS}/t1", {"spec": {"partitions": -5}}, MERGE)
    assert status == 422 and body["details"]["causes"][0]["field"] == "spec.partitions"
    status, body = await call(http, "PATCH", f"{TOPICS}/t1/status",
                              {"status": {"conditions": [{"type": "Ready", "status": "Maybe"}]}}, MERGE)
    assert status == 422 and body["details"]["causes"][0]["field"] == "status.conditions[0].status"
    status, body = await call(http, "PATCH", f"{TOPICS}/t1/status", {"status": {"conditions": [
        {"type": "Ready", "status": "True"}, {"type": "Ready", "status": "False"}]}}, MERGE)
    assert status == 422 and body["details"]["causes"][0]["reason"] == "FieldValueDuplicate"
    assert (await call(http, "GET", f"{TOPICS}/t1"))[1] == created


async def test_unknown_fields_are_pruned_and_defaults_applied(http: aiohttp.ClientSession) -> None:
    body = topic("t1", bogus=1, config={"any.key": {"nested": True}})
    body["metadata"]["labels"] = {"app": "x"}
    body["extra"] = "top-level"
    async with http.post(TOPICS, json=body) as resp:
        assert resp.status == 201
        created = await resp.json()
        warnings = resp.headers.getall("Warning", [])
    assert "bogus" not in created["spec"] and "extra" not in created
    assert created["spec"]["config"] == {"any.key": {"nested": True}}  # x-kubernetes-preserve-unknown-fields
    assert created["metadata"]["labels"] == {"app": "x"}
    assert warnings == ['299 - "unknown field \\"spec.bogus\\""', '299 - "unknown field \\"extra\\""']

    status, body = await call(http, "POST", TOPICS, topic("t2", bogus=1), fieldValidation="Strict")
    assert status == 400 and "spec.bogus" in body["message"]

    acl = {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaAcl", "metadata": {"name": "a1"},
           "spec": {"clusterRef": {"name": "main"}, "principal": "User:alice",
                    "acls": [{"resource": {"type": "Topic", "name": "orders"}, "operations": ["Read"]}]}}
    status, created = await call(http, "POST", ACLS, acl)
    assert status == 201, created
    binding = created["spec"]["acls"][0]
    assert binding["host"] == "*" and binding["permission"] == "Allow"
    assert binding["resource"]["patternType"] == "Literal"


# -- optimistic concurrency ----------------------------------------------------------------------

async def test_a_stale_resource_version_is_a_409_conflict(http: aiohttp.ClientSession) -> None:
    stale = await create_topic(http, "t1")
    _, fresh = await call(http, "PATCH", f"{TOPICS}/t1", {"spec": {"partitions": 4}}, MERGE)

    stale["spec"]["partitions"] = 8
    status, body = await call(http, "PUT", f"{TOPICS}/t1", stale)
    assert status == 409 and body["reason"] == "Conflict" and "has been modified" in body["message"]
    patch = {"metadata": {"resourceVersion": stale["metadata"]["resourceVersion"]}, "spec": {"partitions": 8}}
    assert (await call(http, "PATCH", f"{TOPICS}/t1", patch, MERGE))[0] == 409
    assert (await call(http, "PATCH", f"{TOPICS}/t1/status", {**patch, "status": {}}, MERGE))[0] == 409
    options = {"preconditions": {"resourceVersion": stale["metadata"]["resourceVersion"]}}
    assert (await call(http, "DELETE", f"{TOPICS}/t1", options))[0] == 409

    del fresh["metadata"]["resourceVersion"]
    status, body = await call(http, "PUT", f"{TOPICS}/t1", fresh)
    assert status == 422 and body["details"]["causes"][0]["field"] == "metadata.resourceVersion"
    status, _ = await call(http, "PATCH", f"{TOPICS}/t1", {"spec": {"partitions": 8}}, MERGE)
    assert status == 200  # a patch without resourceVersion is unconditional


# -- patches, replace, delete --------------------------------------------------------------------

async def test_patch_flavours_and_replace(http: aiohttp.ClientSession) -> None:
    created = await create_topic(http, "t1", config={"a": "1", "b": "2"})
    _, body = await call(http, "PATCH", f"{TOPICS}/t1", {"spec": {"config": {"a": None, "c": "3"}}}, MERGE)
    assert body["spec"]["config"] == {"b": "2", "c": "3"}

    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": body["metadata"]["resourceVersion"]},
           {"op": "replace", "path": "/spec/partitions", "value": 9},
           {"op": "add", "path": "/metadata/labels", "value": {"k": "v"}}]
    status, body = await call(http, "PATCH", f"{TOPICS}/t1", ops, JSON_PATCH)
    assert status == 200 and body["spec"]["partitions"] == 9 and body["metadata"]["labels"] == {"k": "v"}
    status, failed = await call(http, "PATCH", f"{TOPICS}/t1", ops, JSON_PATCH)  # the test op fails now
    assert status == 422 and failed["kind"] == "Status"
    status, body = await call(http, "PATCH", f"{TOPICS}/t1/status",
                              [{"op": "add", "path": "/status", "value": {"topicName": "t1"}}], JSON_PATCH)
    assert status == 200 and body["status"] == {"topicName": "t1"}
    for content_type in ("application/strategic-merge-patch+json", "text/plain"):
        status, _ = await call(http, "PATCH", f"{TOPICS}/t1", {}, {"Content-Type": content_type})
        assert status == 415
    status, failed = await call(http, "PATCH", f"{TOPICS}/t1", {}, {"Content-Type": "application/apply-patch+yaml"})
    assert status == 400 and "fieldManager" in failed["message"]  # server-side apply needs a field manager
    assert (await call(http, "PATCH", f"{TOPICS}/nope", {}, MERGE))[0] == 404

    body["spec"] = {"clusterRef": {"name": "other"}}
    status, replaced = await call(http, "PUT", f"{TOPICS}/t1", body)
    assert status == 200 and replaced["spec"] == {"clusterRef": {"name": "other"}}
    assert replaced["metadata"]["uid"] == created["metadata"]["uid"]
    assert replaced["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    body["metadata"]["name"] = "renamed"
    assert (await call(http, "PUT", f"{TOPICS}/t1", body))[0] == 400

    status, gone = await call(http, "DELETE", f"{TOPICS}/t1")
    assert status == 200 and gone["status"] == "Success" and gone["details"]["name"] == "t1"
    assert (await call(http, "GET", f"{TOPICS}/t1"))[0] == 404
    assert (await call(http, "DELETE", f"{TOPICS}/t1"))[0] == 404


async def test_finalizers_delay_deletion_until_the_last_one_is_removed(http: aiohttp.ClientSession) -> None:
    body = topic("t1")
    body["metadata"]["finalizers"] = ["kafkaops.io/a", "kafkaops.io/b"]
    created = (await call(http, "POST", TOPICS, body))[1]
    since = created["metadata"]["resourceVersion"]

    status, deleting = await call(http, "DELETE", f"{TOPICS}/t1")
    assert status == 200 and RFC3339.match(deleting["metadata"]["deletionTimestamp"])
    assert int(deleting["metadata"]["resourceVersion"]) > int(since)
    assert deleting["metadata"]["generation"] == 2
    assert (await call(http, "GET", f"{TOPICS}/t1"))[1]["metadata"]["deletionTimestamp"]
    status, again = await call(http, "DELETE", f"{TOPICS}/t1")
    assert status == 200 and again["metadata"]["resourceVersion"] == deleting["metadata"]["resourceVersion"]

    status, body = await call(http, "PATCH", f"{TOPICS}/t1",
                              {"metadata": {"finalizers": ["kafkaops.io/a", "kafkaops.io/b", "new"]}}, MERGE)
    assert status == 422 and "no new finalizers" in body["message"]
    status, body = await call(http, "PATCH", f"{TOPICS}/t1", {"metadata": {"finalizers": ["kafkaops.io/b"]}}, MERGE)
    assert status == 200 and body["metadata"]["finalizers"] == ["kafkaops.io/b"]
    status, body = await call(http, "PATCH", f"{TOPICS}/t1", {"metadata": {"finalizers": None}}, MERGE)
    assert status == 200
    assert (await call(http, "GET", f"{TOPICS}/t1"))[0] == 404

    events = await watch(http, TOPICS, resourceVersion=since, count=4)
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
    assert events[0]["object"]["metadata"]["deletionTimestamp"]


# -- lists and watches ---------------------------------------------------------------------------

async def test_lists_have_kind_resource_version_selectors_and_pages(http: aiohttp.ClientSession) -> None:
    for name, team in (("a", "red"), ("b", "blue"), ("c", "red"), ("d", None)):
        body = topic(name)
        if team:
            body["metadata"]["labels"] = {"team": team}
        assert (await call(http, "POST", TOPICS, body))[0] == 201
    status, listing = await call(http, "GET", TOPICS)
    assert status == 200 and listing["kind"] == "KafkaTopicList" and listing["apiVersion"] == "kafkaops.io/v1alpha1"
    assert listing["metadata"]["resourceVersion"].isdigit()
    assert [i["metadata"]["name"] for i in listing["items"]] == ["a", "b", "c", "d"]
    assert all(i["kind"] == "KafkaTopic" for i in listing["items"])

    async def names(**params: str) -> list[str]:
        status, body = await call(http, "GET", TOPICS, **params)
        assert status == 200, body
        return [i["metadata"]["name"] for i in body["items"]]
    assert await names(labelSelector="team=red") == ["a", "c"]
    assert await names(labelSelector="team!=red") == ["b", "d"]
    assert await names(labelSelector="team in (blue, green)") == ["b"]
    assert await names(labelSelector="team notin (red)") == ["b", "d"]
    assert await names(labelSelector="team") == ["a", "b", "c"]
    assert await names(labelSelector="!team") == ["d"]
    assert await names(fieldSelector="metadata.name=c") == ["c"]
    assert await names(fieldSelector="metadata.namespace!=ns1") == []
    assert (await call(http, "GET", TOPICS, fieldSelector="spec.partitions=3"))[0] == 400

    status, page = await call(http, "GET", TOPICS, limit="3")
    assert [i["metadata"]["name"] for i in page["items"]] == ["a", "b", "c"]
    assert page["metadata"]["remainingItemCount"] == 1
    status, rest = await call(http, "GET", TOPICS, limit="3", **{"continue": page["metadata"]["continue"]})
    assert [i["metadata"]["name"] for i in rest["items"]] == ["d"] and "continue" not in rest["metadata"]

    everywhere = (await call(http, "GET", "/apis/kafkaops.io/v1alpha1/kafkatopics"))[1]
    assert len(everywhere["items"]) == 4
    secrets = (await call(http, "GET", f"/api/v1/namespaces/{NS}/secrets"))[1]
    assert secrets["kind"] == "SecretList" and secrets["apiVersion"] == "v1"


async def test_watch_streams_events_from_a_resource_version(http: aiohttp.ClientSession) -> None:
    first = await create_topic(http, "old")
    since = first["metadata"]["resourceVersion"]
    await create_topic(http, "t1")
    await call(http, "PATCH", f"{TOPICS}/t1", {"spec": {"partitions": 7}}, MERGE)
    await call(http, "DELETE", f"{TOPICS}/t1")

    events = await watch(http, TOPICS, resourceVersion=since, count=3)
    assert kinds(events) == [("ADDED", "t1"), ("MODIFIED", "t1"), ("DELETED", "t1")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(since)
    assert events[1]["object"]["spec"]["partitions"] == 7

    # Live: a watch opened now sees writes made after it, from its own resourceVersion.
    now = (await call(http, "GET", TOPICS))[1]["metadata"]["resourceVersion"]
    task = asyncio.create_task(watch(http, TOPICS, resourceVersion=now, count=2))
    await asyncio.sleep(0.05)
    await create_topic(http, "t2")
    await call(http, "PATCH", f"{TOPICS}/t2/status", {"status": {"topicName": "t2"}}, MERGE)
    assert kinds(await task) == [("ADDED", "t2"), ("MODIFIED", "t2")]

    # No resourceVersion: the current objects first, as synthetic ADDED events.
    events = await watch(http, TOPICS, count=2)
    assert kinds(events) == [("ADDED", "old"), ("ADDED", "t2")]

    # Other namespaces are not in a namespaced watch; the cluster-wide one sees all.
    other = {**topic("x"), "metadata": {"name": "x", "namespace": "default"}}
    assert (await call(http, "POST", "/apis/kafkaops.io/v1alpha1/namespaces/default/kafkatopics", other))[0] == 201
    cluster = await watch(http, "/apis/kafkaops.io/v1alpha1/kafkatopics", resourceVersion=now, timeoutSeconds="1")
    assert ("ADDED", "x") in kinds(cluster)
    namespaced = await watch(http, TOPICS, resourceVersion=now, timeoutSeconds="1")
    assert ("ADDED", "x") not in kinds(namespaced)


async def test_watch_timeout_bookmarks_initial_events_selectors_and_gone(
        api: KubernetesApiEmulator, http: aiohttp.ClientSession) -> None:
    await create_topic(http, "t1")
    started = time.monotonic()
    events = await watch(http, TOPICS, timeoutSeconds="1", allowWatchBookmarks="true")
    assert 0.9 < time.monotonic() - started < 3
    assert events[0]["type"] == "ADDED" and "BOOKMARK" in [e["type"] for e in events]
    bookmark = next(e for e in events if e["type"] == "BOOKMARK")
    assert bookmark["object"]["kind"] == "KafkaTopic" and bookmark["object"]["metadata"]["resourceVersion"]

    events = await watch(http, TOPICS, count=2, sendInitialEvents="true", allowWatchBookmarks="true",
                         resourceVersionMatch="NotOlderThan")
    assert events[0]["type"] == "ADDED" and events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}

    # Objects moving into or out of a label selector arrive as ADDED and DELETED.
    since = (await call(http, "GET", TOPICS))[1]["metadata"]["resourceVersion"]
    await call(http, "PATCH", f"{TOPICS}/t1", {"metadata": {"labels": {"team": "red"}}}, MERGE)
    await call(http, "PATCH", f"{TOPICS}/t1", {"metadata": {"labels": {"team": "blue"}}}, MERGE)
    events = await watch(http, TOPICS, resourceVersion=since, labelSelector="team=red", count=2)
    assert kinds(events) == [("ADDED", "t1"), ("DELETED", "t1")]
    events = await watch(http, f"{TOPICS}/t1", resourceVersion=since, count=2)  # a watch on one object
    assert kinds(events) == [("MODIFIED", "t1"), ("MODIFIED", "t1")]

    # After compaction, a watch from an old resourceVersion gets 410 Gone (kopf then re-lists).
    api.compact()
    events = await watch(http, TOPICS, resourceVersion=since, count=1)
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
    assert events[0]["object"]["reason"] == "Expired"
    assert (await call(http, "GET", TOPICS, watch="true", resourceVersion="abc"))[0] == 400


# -- scopes, namespaces, core resources ----------------------------------------------------------

async def test_namespaces_and_cluster_scoped_resources(http: aiohttp.ClientSession) -> None:
    status, ns = await call(http, "POST", "/api/v1/namespaces",
                            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    assert status == 201 and ns["status"]["phase"] == "Active" and "namespace" not in ns["metadata"]
    assert (await call(http, "GET", "/api/v1/namespaces/team-a"))[1]["metadata"]["uid"] == ns["metadata"]["uid"]
    names = [i["metadata"]["name"] for i in (await call(http, "GET", "/api/v1/namespaces"))[1]["items"]]
    assert {"default", NS, "team-a"} <= set(names)
    bad = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Not.A.Label"}}
    assert (await call(http, "POST", "/api/v1/namespaces", bad))[0] == 422

    status, body = await call(http, "POST", "/apis/kafkaops.io/v1alpha1/namespaces/nowhere/kafkatopics",
                              {**topic("t"), "metadata": {"name": "t"}})
    assert status == 404 and body["details"] == {"kind": "namespaces", "name": "nowhere"}
    assert (await call(http, "POST", "/apis/kafkaops.io/v1alpha1/kafkatopics", topic("t")))[0] == 405
    mismatch = {**topic("t"), "metadata": {"name": "t", "namespace": "default"}}
    assert (await call(http, "POST", TOPICS, mismatch))[0] == 400

    cluster = {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "p1"}}
    status, body = await call(http, "POST", "/apis/kopf.dev/v1/clusterkopfpeerings", cluster)
    assert status == 201 and "namespace" not in body["metadata"]
    assert (await call(http, "GET", "/apis/kopf.dev/v1/clusterkopfpeerings/p1"))[0] == 200
    assert (await call(http, "GET", f"/apis/kopf.dev/v1/namespaces/{NS}/clusterkopfpeerings/p1"))[0] == 404
    namespaced = {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": "default"}}
    assert (await call(http, "POST", "/apis/kopf.dev/v1/namespaces/team-a/kopfpeerings", namespaced))[0] == 201

    # Deleting a namespace deletes its content, waits for its finalizers, then goes itself.
    held = {**topic("held"), "metadata": {"name": "held", "namespace": "team-a", "finalizers": ["x/y"]}}
    assert (await call(http, "POST", "/apis/kafkaops.io/v1alpha1/namespaces/team-a/kafkatopics", held))[0] == 201
    status, body = await call(http, "DELETE", "/api/v1/namespaces/team-a")
    assert status == 200 and body["status"]["phase"] == "Terminating"
    assert (await call(http, "GET", "/apis/kopf.dev/v1/namespaces/team-a/kopfpeerings/default"))[0] == 404
    status, body = await call(http, "POST", "/apis/kafkaops.io/v1alpha1/namespaces/team-a/kafkatopics",
                              {**topic("new"), "metadata": {"name": "new", "namespace": "team-a"}})
    assert status == 403 and body["reason"] == "Forbidden"
    assert (await call(http, "GET", "/api/v1/namespaces/team-a"))[0] == 200
    await call(http, "PATCH", "/apis/kafkaops.io/v1alpha1/namespaces/team-a/kafkatopics/held",
               {"metadata": {"finalizers": []}}, MERGE)
    assert (await call(http, "GET", "/api/v1/namespaces/team-a"))[0] == 404


async def test_secrets_and_events_as_kopf_posts_them(http: aiohttp.ClientSession) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": NS},
              "stringData": {"password": "s3cret"}, "data": {"user": "YWxpY2U="}}
    status, body = await call(http, "POST", f"/api/v1/namespaces/{NS}/secrets", secret)
    assert status == 201 and body["data"] == {"user": "YWxpY2U=", "password": "czNjcmV0"}
    assert "stringData" not in body and body["type"] == "Opaque" and "generation" not in body["metadata"]
    listing = (await call(http, "GET", f"/api/v1/namespaces/{NS}/secrets"))[1]
    assert "kind" not in listing["items"][0]  # typed built-in lists carry no per-item kind
    bad = {**secret, "metadata": {"name": "bad"}, "data": {"x": "not base64!"}}
    assert (await call(http, "POST", f"/api/v1/namespaces/{NS}/secrets", bad))[0] == 422

    event = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"namespace": NS, "generateName": "kopf-event-"},
             "action": "Action", "type": "Normal", "reason": "Logging", "message": "hello",
             "involvedObject": {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic", "name": "t1",
                                "namespace": NS, "uid": "u"},
             "source": {"component": "kopf"}}
    status, body = await call(http, "POST", f"/api/v1/namespaces/{NS}/events", event)
    assert status == 201 and re.fullmatch(r"kopf-event-[a-z0-9]{5}", body["metadata"]["name"])
    found = (await call(http, "GET", f"/api/v1/namespaces/{NS}/events",
                        fieldSelector="involvedObject.name=t1,reason=Logging"))[1]["items"]
    assert [e["message"] for e in found] == ["hello"]


# -- CRDs ----------------------------------------------------------------------------------------

WIDGETS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Cluster",
             "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "required": ["size"],
                                        "properties": {"size": {"type": "integer", "nullable": True},
                                                       "port": {"x-kubernetes-int-or-string": True}}},
                               "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]},
}


async def test_crds_posted_appear_in_discovery_and_serve_their_resource(http: aiohttp.ClientSession) -> None:
    assert (await call(http, "GET", "/apis/example.com/v1"))[0] == 404
    status, crd = await call(http, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WIDGETS_CRD)
    assert status == 201
    assert {c["type"] for c in crd["status"]["conditions"]} == {"Established", "NamesAccepted"}
    resources = {r["name"]: r for r in (await call(http, "GET", "/apis/example.com/v1"))[1]["resources"]}
    assert resources["widgets"]["namespaced"] is False and "widgets/status" in resources

    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
              "spec": {"size": None, "port": "http"}}
    status, body = await call(http, "POST", "/apis/example.com/v1/widgets", widget)
    assert status == 201, body
    widget["metadata"]["name"] = "w2"
    widget["spec"] = {"size": "big", "port": 1.5}
    status, body = await call(http, "POST", "/apis/example.com/v1/widgets", widget)
    assert status == 422 and {c["field"] for c in body["details"]["causes"]} == {"spec.size", "spec.port"}

    bad = json.loads(json.dumps(WIDGETS_CRD))
    bad["metadata"]["name"] = "gadgets.example.com"
    assert (await call(http, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad))[0] == 422

    status, _ = await call(http, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
    assert status == 200
    assert (await call(http, "GET", "/apis/example.com/v1"))[0] == 404
    assert (await call(http, "GET", "/apis/example.com/v1/widgets/w1"))[0] == 404
    crds = (await call(http, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"))[1]
    assert "kafkatopics.kafkaops.io" in [c["metadata"]["name"] for c in crds["items"]]


# -- kmock's own features still apply ------------------------------------------------------------

async def test_faults_can_be_injected_and_requests_inspected_with_kmock(
        api: KubernetesApiEmulator, http: aiohttp.ClientSession) -> None:
    api.kmock["patch", kmock.resource(group="kafkaops.io", plural="kafkatopics")] << 503
    await create_topic(http, "t1")
    assert (await call(http, "PATCH", f"{TOPICS}/t1", {"spec": {"partitions": 5}}, MERGE))[0] == 503
    posts = [r for r in api.kmock if r.method == "POST" and r.resource == kmock.resource(
        group="kafkaops.io", version="v1alpha1", plural="kafkatopics")]
    assert len(posts) == 1 and posts[0].namespace == NS and posts[0].data["metadata"]["name"] == "t1"
    assert api.objects["kafkaops.io/v1alpha1/kafkatopics", NS, "t1"] >= {"spec": {"partitions": 3}}
    assert len(api.objects["kafkaops.io/v1alpha1/kafkatopics", NS, "t1"].history) == 1


# -- real clients --------------------------------------------------------------------------------

async def test_the_official_kubernetes_client_works_against_it(api: KubernetesApiEmulator, tmp_path: Path) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")

    def scenario() -> None:
        client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        core = kubernetes.client.CoreV1Api(client)
        custom = kubernetes.client.CustomObjectsApi(client)
        assert NS in [n.metadata.name for n in core.list_namespace().items]
        core.create_namespaced_config_map(NS, {"metadata": {"name": "cm"}, "data": {"k": "v"}})
        assert core.read_namespaced_config_map("cm", NS).data == {"k": "v"}
        core.create_namespaced_secret(NS, {"metadata": {"name": "s"}, "stringData": {"password": "p"}})
        assert core.read_namespaced_secret("s", NS).data == {"password": "cA=="}
        with pytest.raises(kubernetes.client.ApiException) as missing:
            core.read_namespaced_secret("nope", NS)
        assert missing.value.status == 404
        created = custom.create_namespaced_custom_object("kafkaops.io", "v1alpha1", NS, "kafkatopics", topic("t1"))
        custom.patch_namespaced_custom_object_status("kafkaops.io", "v1alpha1", NS, "kafkatopics", "t1",
                                                     {"status": {"topicName": "t1"}})
        got = custom.get_namespaced_custom_object("kafkaops.io", "v1alpha1", NS, "kafkatopics", "t1")
        assert got["status"] == {"topicName": "t1"} and got["metadata"]["uid"] == created["metadata"]["uid"]
        with pytest.raises(kubernetes.client.ApiException) as error:
            custom.create_namespaced_custom_object("kafkaops.io", "v1alpha1", NS, "kafkatopics",
                                                   topic("t2", partitions=0))
        assert error.value.status == 422 and "spec.partitions" in error.value.body
        stream = kubernetes.watch.Watch().stream(custom.list_namespaced_custom_object, "kafkaops.io", "v1alpha1",
                                                 NS, "kafkatopics", timeout_seconds=1)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in stream] == [("ADDED", "t1")]

    await asyncio.to_thread(scenario)


async def until(predicate: Any, timeout: float = 15) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await predicate()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the condition was not met in time")
        await asyncio.sleep(0.05)


async def test_a_kopf_operator_writes_status_and_handles_its_finalizer(
        api: KubernetesApiEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kopf

    # kopf.operator() cancels the loop's tasks created after its start when it stops (waiting 5 s
    # first): a keep-alive connection of this test to the in-process emulator would be one.
    http = aiohttp.ClientSession(base_url=api.url, connector=aiohttp.TCPConnector(force_close=True))

    monkeypatch.setenv("KUBECONFIG", str(api.write_kubeconfig(tmp_path / "kubeconfig")))
    registry = kopf.OperatorRegistry()
    deleted: list[str] = []

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> Any:
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.create("kafkaops.io", "v1alpha1", "kafkatopics", registry=registry)
    async def created(name: str, spec: Any, patch: Any, body: Any, **_: Any) -> None:
        kopf.info(body, reason="TopicCreated", message=f"created {name}")  # POSTed to v1 events
        patch.status["topicName"] = name
        patch.status["partitions"] = spec["partitions"]

    @kopf.on.delete("kafkaops.io", "v1alpha1", "kafkatopics", registry=registry)
    async def removed(name: str, **_: Any) -> None:
        deleted.append(name)

    settings = kopf.OperatorSettings()
    settings.watching.server_timeout = 5
    stop = asyncio.Event()
    operator = asyncio.create_task(kopf.operator(registry=registry, settings=settings, standalone=True,
                                                 namespaces=[NS], stop_flag=stop))
    try:
        await create_topic(http, "t1", partitions=4)

        async def handled() -> Any:
            body = (await call(http, "GET", f"{TOPICS}/t1"))[1]
            return body if body.get("status", {}).get("topicName") and body["metadata"].get("finalizers") else None
        body = await until(handled)
        assert body["status"]["partitions"] == 4
        assert body["metadata"]["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]

        async def posted() -> Any:
            items = (await call(http, "GET", f"/api/v1/namespaces/{NS}/events",
                                fieldSelector="involvedObject.name=t1"))[1]["items"]
            return items
        event = (await until(posted))[0]
        assert event["reason"] == "TopicCreated" and event["message"] == "created t1"
        assert event["involvedObject"]["uid"] == body["metadata"]["uid"]

        status, deleting = await call(http, "DELETE", f"{TOPICS}/t1")
        assert status == 200 and deleting["metadata"]["deletionTimestamp"]

        async def gone() -> bool:
            return (await call(http, "GET", f"{TOPICS}/t1"))[0] == 404
        await until(gone)
        assert deleted == ["t1"]
    finally:
        await http.close()
        stop.set()
        await asyncio.wait_for(operator, timeout=10)


def test_runs_as_a_process_that_kopf_run_can_use(tmp_path: Path) -> None:
    """The e2e shape: the emulator and `kopf run` (with peering, no --standalone) as processes."""
    kubeconfig = tmp_path / "kubeconfig"
    env = {**os.environ, "PYTHONPATH": str(REPO / "operator")}
    emulator = subprocess.Popen(
        [sys.executable, "-m", "kafkaops.testing.k8s_emulator", "--port", "0", "--crds", str(CRD_DIR),
         "--namespace", NS, "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    operator: subprocess.Popen[str] | None = None
    try:
        assert emulator.stdout is not None
        url = emulator.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url), url

        def request(method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
            data = None if body is None else json.dumps(body).encode()
            req = urllib.request.Request(url + path, data=data, method=method,
                                         headers={"Content-Type": content_type})
            with urllib.request.urlopen(req, timeout=5) as resp:
                return json.loads(resp.read())

        request("POST", "/apis/kopf.dev/v1/namespaces/ns1/kopfpeerings",
                {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": "default"}})
        source = tmp_path / "op.py"
        source.write_text(textwrap.dedent("""
            import kopf

            @kopf.on.create("kafkaops.io", "v1alpha1", "kafkatopics")
            def created(name, patch, **_):
                patch.status["topicName"] = name
        """))
        operator = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", "--namespace", NS, str(source)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**env, "KUBECONFIG": str(kubeconfig)})
        request("POST", TOPICS, topic("t1"))
        deadline = time.monotonic() + 20
        while not request("GET", f"{TOPICS}/t1").get("status", {}).get("topicName"):
            assert operator.poll() is None, operator.communicate()[0]
            assert time.monotonic() < deadline, "kopf run did not handle the topic"
            time.sleep(0.1)
        peering = request("GET", f"/apis/kopf.dev/v1/namespaces/{NS}/kopfpeerings/default")
        assert peering.get("status"), "kopf did not register itself in its peering object"
    finally:
        for process in (operator, emulator):
            if process is not None and process.poll() is None:
                os.kill(process.pid, signal.SIGTERM)
        output = ""
        if operator is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                output = operator.communicate(timeout=10)[0]
        with contextlib.suppress(subprocess.TimeoutExpired):
            emulator.communicate(timeout=10)
    assert emulator.returncode == 0
    assert operator is not None and "Traceback" not in output, output
