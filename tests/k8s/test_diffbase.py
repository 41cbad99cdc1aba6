"""kopf's diff base kept in the status (k8s/diffbase.py): one PATCH per handled change, and objects
an older kafkaops handled (the diff base in an annotation) are neither re-created nor lost."""

from __future__ import annotations

import json
from typing import Any

import kopf

from kafkaops.k8s.catalog import index_copy
from kafkaops.k8s.diffbase import StatusDiffBase
from kafkaops.k8s.kinds import DIFFBASE_FIELD

LEGACY = "kopf.kafkaops.io/last-handled-configuration"


def raw(**status: Any) -> dict[str, Any]:
    return {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic",
            "metadata": {"name": "orders", "namespace": "kafka", "generation": 1, "resourceVersion": "7",
                         "labels": {"team": "a"}, "annotations": {"kafkaops.io/paused": "false"}},
            "spec": {"clusterRef": {"name": "main"}, "partitions": 3},
            "status": {"observedGeneration": 1, **status}}


def test_the_diff_base_is_the_spec_labels_and_annotations_and_is_written_to_the_status_only() -> None:
    storage = StatusDiffBase()
    body = kopf.Body(raw())
    essence = storage.build(body=body)
    assert essence == {"spec": {"clusterRef": {"name": "main"}, "partitions": 3},
                       "metadata": {"labels": {"team": "a"}, "annotations": {"kafkaops.io/paused": "false"}}}
    patch = kopf.Patch()
    storage.store(body=body, patch=patch, essence=essence)
    # kopf sends the object's metadata and its status subresource as two PATCHes: only the status here
    assert set(dict(patch)) == {"status"}
    assert json.loads(patch["status"][DIFFBASE_FIELD]) == essence
    assert storage.fetch(body=body) is None, "nothing stored yet: kopf sees a creation"


def test_what_was_stored_reads_back_as_no_change_and_is_not_part_of_the_essence() -> None:
    storage = StatusDiffBase()
    essence = storage.build(body=kopf.Body(raw()))
    patch = kopf.Patch()
    storage.store(body=kopf.Body(raw()), patch=patch, essence=essence)
    handled = kopf.Body(raw(**patch["status"]))
    assert storage.fetch(body=handled) == essence
    assert storage.build(body=handled) == essence, "the stored copy must not count as a change of its own"


def test_an_object_an_older_release_handled_is_read_from_its_annotation_and_moved_on_the_next_store() -> None:
    storage = StatusDiffBase()
    essence = storage.build(body=kopf.Body(raw()))
    old = raw()
    old["metadata"]["annotations"][LEGACY] = json.dumps(essence, separators=(",", ":")) + "\n"
    body = kopf.Body(old)
    # read back as the same essence: an upgrade resumes every object, it re-creates none
    assert storage.fetch(body=body) == essence
    assert storage.build(body=body) == essence, "the old annotation is bookkeeping, not a change"
    patch = kopf.Patch()
    storage.store(body=body, patch=patch, essence=essence)
    assert patch["metadata"]["annotations"] == {LEGACY: None}, "removed once, when the object is next handled"
    assert json.loads(patch["status"][DIFFBASE_FIELD]) == essence


def test_the_status_wins_over_a_stale_annotation() -> None:
    storage = StatusDiffBase()
    old = raw(**{DIFFBASE_FIELD: json.dumps({"spec": {"partitions": 6}})})
    old["metadata"]["annotations"][LEGACY] = json.dumps({"spec": {"partitions": 1}})
    assert storage.fetch(body=kopf.Body(old)) == {"spec": {"partitions": 6}}


def test_the_catalog_copy_leaves_the_diff_base_out() -> None:
    copied = index_copy(raw(**{DIFFBASE_FIELD: '{"spec":{}}', "topicName": "orders"}))
    assert copied["status"] == {"observedGeneration": 1, "topicName": "orders"}
