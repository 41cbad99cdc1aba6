"""Status writes outside handlers survive a busy API server: 429/5xx and dropped connections are
retried with backoff; a deleted object is no error; other refusals are raised."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes.client.exceptions import ApiException

from kafkaops.k8s.api import KubernetesApi, transient


class CustomObjectsDouble:
    """Answers patch_namespaced_custom_object_status with the failures it is given, then succeeds."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.patched: list[tuple] = []

    def patch_namespaced_custom_object_status(self, group, version, namespace, plural, name, body):
        if self.failures:
            raise self.failures.pop(0)
        self.patched.append((namespace, plural, name, body))

    def patch_namespaced_custom_object(self, group, version, namespace, plural, name, body):
        self.patch_namespaced_custom_object_status(group, version, namespace, plural, name, body)


def api_with(custom: CustomObjectsDouble) -> KubernetesApi:
    api = object.__new__(KubernetesApi)  # no kubeconfig needed: only the status path is exercised
    api._custom = custom
    api._writers = ThreadPoolExecutor(2)
    return api


def test_what_is_transient() -> None:
    assert transient(ApiException(status=429)) and transient(ApiException(status=503))
    assert transient(ApiException(status=409)), "a merge patch without resourceVersion: the server's own conflict"
    assert not transient(ApiException(status=404)) and not transient(ApiException(status=422))
    assert transient(ConnectionResetError()) and not transient(ValueError())


async def test_a_busy_api_is_retried_until_the_write_lands() -> None:
    custom = CustomObjectsDouble(ApiException(status=429), ApiException(status=503), ConnectionResetError())
    await api_with(custom).patch_status("kafkatopics", "kafka", "orders", {"observedGeneration": 2})
    assert custom.patched == [("kafka", "kafkatopics", "orders", {"status": {"observedGeneration": 2}})]


async def test_a_deleted_object_is_no_error_and_a_refusal_is_raised() -> None:
    await api_with(CustomObjectsDouble(ApiException(status=404))).patch_status("kafkatopics", "kafka", "gone", {})
    with pytest.raises(ApiException) as refused:
        await api_with(CustomObjectsDouble(ApiException(status=422))).patch_status("kafkatopics", "kafka", "x", {})
    assert refused.value.status == 422
    with pytest.raises(ApiException):  # still busy after every attempt: the caller parks the resource
        await api_with(CustomObjectsDouble(*[ApiException(status=500)] * 3)).patch_status(
            "kafkatopics", "kafka", "x", {}, attempts=3)


async def test_a_conflict_on_a_status_or_a_nudge_is_retried() -> None:
    """Soak: an injected 409 on the KafkaCluster's status write left it stale (the state it
    reported did not change again)."""
    custom = CustomObjectsDouble(ApiException(status=409))
    await api_with(custom).patch_status("kafkaclusters", "kafka", "prod", {"clusterId": "x"})
    assert len(custom.patched) == 1
    custom = CustomObjectsDouble(ApiException(status=409), ApiException(status=500))
    await api_with(custom).annotate("kafkatopics", "kafka", "orders", {"kafkaops.io/nudge": "now"})
    assert custom.patched == [("kafka", "kafkatopics", "orders", {"metadata": {"annotations": {"kafkaops.io/nudge": "now"}}})]
