"""The copy of each object the operator's indexes keep (k8s/catalog.py: index_copy): what the
catalog's readers use, and nothing kept twice across objects."""

from __future__ import annotations

import json

from kafkaops.k8s.catalog import index_copy


def body(name: str) -> dict:
    return json.loads(json.dumps({  # a fresh parse per object, as the watch stream delivers them
        "apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic",
        "metadata": {"name": name, "namespace": "kafka", "uid": f"uid-{name}", "resourceVersion": "7",
                     "generation": 2, "finalizers": ["kafkaops.io/finalizer"], "deletionTimestamp": None,
                     "annotations": {"kafkaops.io/paused": "true",
                                     "kopf.kafkaops.io/last-handled-configuration": '{"spec": {}}',
                                     "kopf.zalando.org/touch": "x"},
                     "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]},
        "spec": {"clusterRef": {"name": "main"}, "partitions": 3, "config": {"retention.ms": "86400000"}},
        "status": {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True"}]},
    }))


def test_the_copy_keeps_what_readers_use_and_drops_kopf_bookkeeping_and_managed_fields() -> None:
    original = body("orders")
    copied = index_copy(original)
    assert copied["spec"] == original["spec"] and copied["status"] == original["status"]
    metadata = copied["metadata"]
    assert "managedFields" not in metadata
    assert metadata["annotations"] == {"kafkaops.io/paused": "true"}
    assert {k: v for k, v in metadata.items() if k not in ("annotations",)} == \
        {k: v for k, v in original["metadata"].items() if k not in ("annotations", "managedFields")}
    assert "managedFields" in original["metadata"], "the object kopf passed is left as it was"
    copied["spec"]["config"]["retention.ms"] = "1"
    assert original["spec"]["config"]["retention.ms"] == "86400000", "a copy, not a view"


def test_keys_and_short_values_are_shared_between_objects() -> None:
    first, second = index_copy(body("a")), index_copy(body("b"))
    key_a = next(k for k in first["spec"] if k == "clusterRef")
    key_b = next(k for k in second["spec"] if k == "clusterRef")
    assert key_a is key_b
    assert first["status"]["conditions"][0]["type"] is second["status"]["conditions"][0]["type"]
    assert first["spec"]["config"]["retention.ms"] is second["spec"]["config"]["retention.ms"]
