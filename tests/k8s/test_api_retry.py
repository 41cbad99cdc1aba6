"""Status writes outside handlers survive a busy API server: 429/5xx and dropped connections are
retried with backoff; a deleted object is no error; other refusals are raised."""

from __future__ import annotations

import aiohttp
import pytest
from kopf._cogs.clients.errors import APIError

from kafkaops.k8s.api import KubernetesApi, transient


def refused(status: int) -> APIError:
    return APIError({"code": status, "message": f"refused with {status}"}, status=status, headers={})


class RestDouble:
    """Answers merge patches with the failures it is given, then succeeds (k8s/rest.py's Rest)."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.patched: list[tuple[str, dict]] = []

    async def merge_patch(self, path: str, body: dict) -> dict:
        if self.failures:
            raise self.failures.pop(0)
        self.patched.append((path, body))
        return {}


def test_what_is_transient() -> None:
    assert transient(refused(429)) and transient(refused(503))
    assert transient(refused(409)), "a merge patch without resourceVersion: the server's own conflict"
    assert not transient(refused(404)) and not transient(refused(422))
    assert transient(ConnectionResetError()) and transient(aiohttp.ServerDisconnectedError())
    assert not transient(ValueError())


async def test_a_busy_api_is_retried_until_the_write_lands() -> None:
    rest = RestDouble(refused(429), refused(503), aiohttp.ServerDisconnectedError())
    await KubernetesApi(rest).patch_status("kafkatopics", "kafka", "orders", {"observedGeneration": 2})
    assert rest.patched == [("/apis/kafkaops.io/v1alpha1/namespaces/kafka/kafkatopics/orders/status",
                             {"status": {"observedGeneration": 2}})]


async def test_a_deleted_object_is_no_error_and_a_refusal_is_raised() -> None:
    await KubernetesApi(RestDouble(refused(404))).patch_status("kafkatopics", "kafka", "gone", {})
    with pytest.raises(APIError) as raised:
        await KubernetesApi(RestDouble(refused(422))).patch_status("kafkatopics", "kafka", "x", {})
    assert raised.value.status == 422
    with pytest.raises(APIError):  # still busy after every attempt: the caller parks the resource
        await KubernetesApi(RestDouble(*[refused(500)] * 3)).patch_status("kafkatopics", "kafka", "x", {}, attempts=3)


async def test_a_conflict_on_a_status_or_a_nudge_is_retried() -> None:
    """Soak: an injected 409 on the KafkaCluster's status write left it stale (the state it
    reported did not change again)."""
    rest = RestDouble(refused(409))
    await KubernetesApi(rest).patch_status("kafkaclusters", "kafka", "prod", {"clusterId": "x"})
    assert len(rest.patched) == 1
    rest = RestDouble(refused(409), refused(500))
    await KubernetesApi(rest).annotate("kafkatopics", "kafka", "orders", {"kafkaops.io/nudge": "now"})
    assert rest.patched == [("/apis/kafkaops.io/v1alpha1/namespaces/kafka/kafkatopics/orders",
                             {"metadata": {"annotations": {"kafkaops.io/nudge": "now"}}})]
