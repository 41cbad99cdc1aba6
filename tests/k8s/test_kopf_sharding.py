"""Sharded mode's wrapper around kopf's per-object cause processing (k8s/kopf_sharding.py)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import kopf
import pytest
from kopf._core.reactor import processing

from kafkaops.k8s import kopf_sharding


class OwnerDouble:
    """Owns the clusters in `owned`; `epochs` counts acquisitions."""

    def __init__(self, owned: set[tuple[str | None, str]]) -> None:
        self.owned = owned
        self.epochs = 1
        self.started = False

    def epoch(self, key: tuple[str | None, str] | None) -> int | None:
        return self.epochs if key in self.owned else None

    def start(self) -> None:
        self.started = True


TOPICS = kopf.Resource("kafkaops.io", "v1alpha1", "kafkatopics")
CLUSTERS = kopf.Resource("kafkaops.io", "v1alpha1", "kafkaclusters")
SECRETS = kopf.Resource("", "v1", "secrets")


def body(name: str, cluster: str | None = "main", kind: str = "KafkaTopic") -> kopf.Body:
    spec = {"clusterRef": {"name": cluster}} if cluster else {}
    return kopf.Body({"kind": kind, "metadata": {"namespace": "kafka", "name": name}, "spec": spec})


@pytest.fixture
def handlers(monkeypatch) -> Iterator[list[str]]:
    """kopf's own processing stood in for by one that records the object and adds to the patch as
    handlers and finalizers would; `lose` in the body's name drops ownership while it runs."""
    ran: list[str] = []

    async def process(**kwargs: Any) -> tuple[list[float], bool]:
        name = kwargs["body"]["metadata"]["name"]
        ran.append(name)
        kwargs["patch"].status["x"] = 1
        kwargs["patch"].metadata.annotations["kopf.kafkaops.io/handler"] = "{}"
        if "lose" in name:
            owner.owned.clear()
        if "regain" in name:
            owner.epochs += 1
        return [5.0], True

    owner = OwnerDouble({("kafka", "main")})
    monkeypatch.setattr(kopf_sharding, "_original", process)
    kopf_sharding.install(owner)
    try:
        yield ran
    finally:
        kopf_sharding.uninstall()
    assert processing.process_resource_causes is kopf_sharding._KOPF, "kopf's own is back for later tests"


async def run(resource: kopf.Resource, obj: kopf.Body) -> tuple[Any, kopf.Patch]:
    patch = kopf.Patch()
    result = await processing.process_resource_causes(resource=resource, body=obj, patch=patch)
    return result, patch


def test_kopf_still_calls_the_cause_processing_by_its_module_global_name() -> None:
    """The wrapper replaces `processing.process_resource_causes`; kopf must still look it up there."""
    assert "await process_resource_causes(" in inspect.getsource(processing.process_resource_event)
    assert not kopf_sharding.installed()


async def test_objects_of_owned_clusters_are_processed_others_not_touched(handlers) -> None:
    assert kopf_sharding.installed()
    assert await run(TOPICS, body("mine")) == (([5.0], True), {"status": {"x": 1}, "metadata": {
        "annotations": {"kopf.kafkaops.io/handler": "{}"}}})
    (result, patch) = await run(TOPICS, body("theirs", cluster="other"))
    assert result == ([], False) and not patch, "no handler, finalizer or annotation for another replica's object"
    assert (await run(CLUSTERS, body("main", cluster=None, kind="KafkaCluster")))[0] == ([5.0], True)
    assert (await run(CLUSTERS, body("other", cluster=None, kind="KafkaCluster")))[0] == ([], False)
    assert handlers == ["mine", "main"]
    assert kopf_sharding._owner[0].started, "the Lease loop starts from kopf's first object"


async def test_what_handlers_did_after_ownership_was_lost_is_not_written(handlers) -> None:
    (result, patch) = await run(TOPICS, body("lose-it"))
    assert handlers == ["lose-it"] and result == ([], False) and not patch


async def test_lost_and_regained_while_running_counts_as_lost(handlers) -> None:
    (result, patch) = await run(TOPICS, body("regain-it"))
    assert result == ([], False) and not patch


async def test_other_kinds_are_not_sharded(handlers) -> None:
    (result, patch) = await run(SECRETS, kopf.Body({"metadata": {"namespace": "kafka", "name": "s"}}))
    assert result == ([5.0], True) and patch
