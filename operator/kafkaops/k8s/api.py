"""What the operator asks of the Kubernetes API beyond kopf: reading Secrets, and patching the
status of resources outside any handler of theirs (resync, waiting room, outages). The official
kubernetes client, run in threads."""

from __future__ import annotations

import asyncio
import base64
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Mapping
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from kafkaops.k8s.kinds import GROUP, VERSION
from kafkaops.k8s.secrets import SecretForbidden, SecretNotFound

# answers a busy or restarting API server gives; the same write a moment later succeeds
TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})


def transient(exc: BaseException) -> bool:
    """An API failure worth retrying: throttled, server errors, or the connection itself."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return status in TRANSIENT_STATUSES
    return isinstance(exc, OSError) or type(exc).__module__.startswith("urllib3")


class KubernetesApi:
    # status writes after an outage or a start come in hundreds at once; the client is synchronous,
    # so they run in threads of their own (asyncio's default pool has cpu+4 of them)
    WRITERS = 16

    def __init__(self) -> None:
        from kubernetes import client, config  # imported late: it reads KUBECONFIG at import time

        try:
            config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
        configuration = client.Configuration.get_default_copy()
        configuration.connection_pool_maxsize = self.WRITERS
        api_client = client.ApiClient(configuration)
        self.api_client = api_client
        self._core = client.CoreV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        self._writers = ThreadPoolExecutor(self.WRITERS, thread_name_prefix="kafkaops-api")

    async def read(self, namespace: str, name: str) -> Mapping[str, bytes]:
        from kubernetes.client.exceptions import ApiException

        try:
            secret = await asyncio.to_thread(self._core.read_namespaced_secret, name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                raise SecretNotFound(f"Secret {namespace}/{name} not found") from None
            if exc.status == 403:
                raise SecretForbidden(f"Secret {namespace}/{name}: forbidden") from None
            raise
        return {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}

    async def touch(self, plural: str, namespace: str, name: str, annotation: str, value: str) -> None:
        """Set one annotation (a merge patch): an event for the watchers of the object; deleted
        meanwhile is no error."""
        from kubernetes.client.exceptions import ApiException

        try:
            await asyncio.get_running_loop().run_in_executor(
                self._writers, self._custom.patch_namespaced_custom_object, GROUP, VERSION, namespace, plural, name,
                {"metadata": {"annotations": {annotation: value}}})
        except ApiException as exc:
            if exc.status != 404:
                raise

    async def patch_status(self, plural: str, namespace: str, name: str, status: Mapping[str, Any],
                           attempts: int = 5) -> None:
        """Merge `status` into the object's status; an object deleted meanwhile is no error. Transient
        API failures (429, 5xx, connection) are retried with backoff; the last one is raised."""
        from kubernetes.client.exceptions import ApiException

        retrying = AsyncRetrying(retry=retry_if_exception(transient), stop=stop_after_attempt(attempts),
                                 wait=wait_exponential_jitter(multiplier=0.2, max=5.0, jitter=0.2), reraise=True)
        try:
            async for attempt in retrying:
                with attempt:
                    await asyncio.get_running_loop().run_in_executor(
                        self._writers, self._custom.patch_namespaced_custom_object_status, GROUP, VERSION, namespace,
                        plural, name, {"status": dict(status)})
        except ApiException as exc:
            if exc.status != 404:
                raise
