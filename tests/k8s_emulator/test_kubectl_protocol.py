"""The pieces of the emulator that real kubectl relies on, without kubectl: protobuf bodies,
discovery, OpenAPI, Table, strategic merge and server-side apply (tests/kubectl runs the binary)."""

from __future__ import annotations

import datetime
from pathlib import Path

import aiohttp
import pytest

from kafkaops.testing.k8s import KubernetesApiEmulator, errors, patches, protobuf, table
from kafkaops.testing.k8s.discovery import AGGREGATED_V2

ROOT = Path(__file__).resolve().parents[2]
# What kubectl 1.32 sends for `kubectl create namespace kafka` (captured with -v=8).
CREATE_NAMESPACE = bytes.fromhex("6b3873000a0f0a027631120 94e616d657370616365121d0a150a056b61666b6112001a0022002a00"
                                 "32003800420012001a020a001a002200".replace(" ", ""))


def _field(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_protobuf_namespace_as_kubectl_sends_it() -> None:
    assert protobuf.decode(CREATE_NAMESPACE) == {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": "kafka", "generation": 0}}


def test_protobuf_secret_with_bytes_map_and_labels() -> None:
    meta = _field(1, b"s") + _field(3, b"kafka") + _field(11, _field(1, b"app") + _field(2, b"x"))
    secret = _field(1, meta) + _field(2, _field(1, b"password") + _field(2, b"s3cret")) + _field(3, b"Opaque")
    body = protobuf.MAGIC + _field(1, _field(1, b"v1") + _field(2, b"Secret")) + _field(2, secret)
    assert protobuf.decode(body) == {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                                     "metadata": {"name": "s", "namespace": "kafka", "labels": {"app": "x"}},
                                     "data": {"password": "czNjcmV0"}}


def test_protobuf_refuses_what_it_cannot_read() -> None:
    with pytest.raises(errors.ApiError) as bad:
        protobuf.decode(b"{}")
    assert bad.value.status == 400
    with pytest.raises(errors.ApiError) as unknown:
        protobuf.decode(protobuf.MAGIC + _field(1, _field(1, b"v1") + _field(2, b"Pod")))
    assert unknown.value.status == 415 and "v1 Pod" in (unknown.value.message or "")
    with pytest.raises(errors.ApiError) as truncated:
        protobuf.decode(CREATE_NAMESPACE[:-5])
    assert truncated.value.status == 400


def test_jsonpath_and_cells() -> None:
    obj = {"status": {"conditions": [{"type": "Stalled", "status": "False"}, {"type": "Ready", "status": "True"}]},
           "spec": {"servers": ["a:1", "b:2"], "n": 3}}
    assert table.evaluate(obj, '.status.conditions[?(@.type=="Ready")].status') == ["True"]
    assert table.evaluate(obj, ".spec.servers[0]") == ["a:1"]
    assert table.evaluate(obj, ".spec.servers[*]") == ["a:1", "b:2"]
    assert table.evaluate(obj, ".spec.missing") == []
    assert [table.human_duration(s) for s in (5, 119, 150, 600, 3 * 3600 + 60, 3 * 86400)] == \
        ["5s", "119s", "2m30s", "10m", "3h1m", "3d"]


async def test_discovery_openapi_table_over_http() -> None:
    async with KubernetesApiEmulator(crds=[ROOT / "crds"], kopf_peering=False) as api, aiohttp.ClientSession() as http:
        async with http.get(f"{api.url}/apis/kafkaops.io/v1alpha1") as resp:
            resources = {r["name"]: r for r in (await resp.json())["resources"]}
        assert resources["kafkatopics/status"] == {"name": "kafkatopics/status", "singularName": "", "namespaced": True,
                                                   "kind": "KafkaTopic", "verbs": ["get", "patch", "update"]}
        assert resources["kafkatopics"]["categories"] == ["kafkaops"] and resources["kafkatopics"]["shortNames"] == ["kot"]
        async with http.get(f"{api.url}/apis", headers={"Accept": AGGREGATED_V2 + ",application/json"}) as resp:
            assert resp.headers["Content-Type"] == AGGREGATED_V2
            groups = {g["metadata"]["name"]: g for g in (await resp.json())["items"]}
        topics = next(r for r in groups["kafkaops.io"]["versions"][0]["resources"] if r["resource"] == "kafkatopics")
        assert topics["subresources"][0]["subresource"] == "status" and topics["scope"] == "Namespaced"

        async with http.get(f"{api.url}/openapi/v3") as resp:
            index = (await resp.json())["paths"]
        async with http.get(api.url + index["apis/kafkaops.io/v1alpha1"]["serverRelativeURL"]) as resp:
            document = await resp.json()
        schema = document["components"]["schemas"]["io.kafkaops.v1alpha1.KafkaTopic"]
        assert schema["x-kubernetes-group-version-kind"] == [{"group": "kafkaops.io", "version": "v1alpha1",
                                                              "kind": "KafkaTopic"}]
        assert "partitions" in schema["properties"]["spec"]["properties"]
        patch = document["paths"]["/apis/kafkaops.io/v1alpha1/namespaces/{namespace}/kafkatopics/{name}"]["patch"]
        assert any(p["name"] == "fieldValidation" for p in patch["parameters"])
        assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]

        api.create_namespace("kafka")
        api.create({"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic",
                    "metadata": {"name": "t", "namespace": "kafka"}, "spec": {"clusterRef": {"name": "c"},
                                                                            "partitions": 3}})
        accept = {"Accept": table.TABLE_MEDIA + ",application/json"}
        async with http.get(f"{api.url}/apis/kafkaops.io/v1alpha1/namespaces/kafka/kafkatopics", headers=accept,
                            params={"includeObject": "Object"}) as resp:
            listed = await resp.json()
        names = [c["name"] for c in listed["columnDefinitions"]]
        assert names[0] == "Name" and names[-1] == "AGE" and "PARTITIONS" in names
        row = listed["rows"][0]
        assert row["cells"][0] == "t" and row["object"]["spec"]["partitions"] == 3
        assert row["cells"][names.index("READY")] is None  # no status yet: an empty cell
        assert row["cells"][-1].endswith("s")


def test_strategic_merge_merges_containers_by_name() -> None:
    current = {"spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}],
                        "finalizers": ["x"]}}
    patch = {"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                      "containers": [{"name": "b", "image": "b:2"}, {"name": "a", "$patch": "delete"}]}}
    assert patches.strategic_merge(current, patch) == {"spec": {"containers": [{"name": "b", "image": "b:2"}],
                                                                "finalizers": ["x"]}}


def test_server_side_apply_removes_what_a_manager_no_longer_applies() -> None:
    current = {"metadata": {"name": "t", "labels": {"mine": "1", "theirs": "2"}}, "spec": {"a": 1, "b": 2, "c": 3}}
    previous = {"metadata": {"name": "t", "labels": {"mine": "1"}}, "spec": {"a": 1, "b": 2}}
    applied = {"metadata": {"name": "t"}, "spec": {"a": 5}}
    assert patches.server_side_apply(current, applied, previous) == {
        "metadata": {"name": "t", "labels": {"theirs": "2"}}, "spec": {"a": 5, "c": 3}}


def test_deployments_are_reported_rolled_out() -> None:
    api = KubernetesApiEmulator(kopf_peering=False)
    deployment = api.create({"apiVersion": "apps/v1", "kind": "Deployment",
                             "metadata": {"name": "d", "namespace": "default"}, "spec": {"replicas": 2}})
    assert deployment["status"]["updatedReplicas"] == 2 and deployment["status"]["observedGeneration"] == 1
    assert datetime.datetime.fromisoformat(deployment["metadata"]["creationTimestamp"].replace("Z", "+00:00"))


def test_cel_rules_of_the_crds_are_enforced() -> None:
    api = KubernetesApiEmulator(crds=[ROOT / "crds"], kopf_peering=False)
    api.create_namespace("kafka")
    topic = {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic", "metadata": {"name": "t", "namespace": "kafka"},
             "spec": {"clusterRef": {"name": "c"}, "partitions": 2, "replicaAssignment": [[1], [2]]}}
    with pytest.raises(errors.ApiError) as rejected:
        api.create(topic)
    assert rejected.value.status == 422
    causes = rejected.value.details["causes"]
    assert causes == [{"reason": "FieldValueInvalid", "field": "spec", "message": 'Invalid value: "object": '
                       "replicaAssignment is mutually exclusive with partitions and replicationFactor"}]
    assert api.get("kafkaops.io/v1alpha1", "KafkaTopic", "t", "kafka") is None
    del topic["spec"]["partitions"]
    assert api.create(topic)["spec"]["replicaAssignment"] == [[1], [2]]


def test_cel_subset() -> None:
    from kafkaops.testing.k8s.cel import compile_rule

    assert compile_rule("self.replicas == oldSelf.replicas") is None  # transition rules are skipped
    assert compile_rule("self.items.all(x, x > 0)") is None  # macros are outside the subset
    rule = compile_rule("size(self.name) <= 5 && (self.kind == 'a' || 'b' in self.tags)")
    assert rule is not None
    assert rule({"name": "abc", "kind": "a", "tags": []}) and rule({"name": "abc", "kind": "x", "tags": ["b"]})
    assert not rule({"name": "abcdef", "kind": "a", "tags": []}) and not rule({"name": "abc"})  # no such key
