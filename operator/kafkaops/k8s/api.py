"""What the operator asks of the Kubernetes API beyond kopf: reading Secrets, and patching the
status of resources outside any handler of theirs (resync, waiting room, outages). Through kopf's
own client and credentials (rest.py)."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from kafkaops.k8s.kinds import FINALIZER, GROUP, VERSION
from kafkaops.k8s.principals import SecretExists, SecretObject, decode_secret
from kafkaops.k8s.rest import APIError, Rest, object_path, transient_connection
from kafkaops.k8s.secrets import SECRET_FINALIZER, SecretForbidden, SecretNotFound

# answers a busy or restarting API server gives; the same write a moment later succeeds. 409 too:
# the status and annotation merge patches here carry no resourceVersion (no precondition), so a
# conflict is the server's own (an etcd update race), gone on the next attempt
TRANSIENT_STATUSES = frozenset({409, 429, 500, 502, 503, 504})


def transient(exc: BaseException) -> bool:
    """An API failure worth retrying: throttled, server errors, or the connection itself."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return status in TRANSIENT_STATUSES
    return transient_connection(exc)


def _status(exc: BaseException) -> int | None:
    return exc.status if isinstance(exc, APIError) else None


def _secret_error(exc: Exception, namespace: str, name: str) -> Exception:
    """The API's answer about a Secret as the operator's own error (404, 403), else itself."""
    status = _status(exc)
    if status == 404:
        return SecretNotFound(f"Secret {namespace}/{name} not found")
    if status == 403:
        return SecretForbidden(f"Secret {namespace}/{name}: forbidden")
    return exc


def _retrying(attempts: int) -> AsyncRetrying:
    return AsyncRetrying(retry=retry_if_exception(transient), stop=stop_after_attempt(attempts),
                         wait=wait_exponential_jitter(multiplier=0.2, max=5.0, jitter=0.2), reraise=True)


def _secret_path(namespace: str, name: str | None = None) -> str:
    return object_path("", "v1", "secrets", namespace, name)


class KubernetesApi:
    """Secrets, statuses, finalizers and annotations, as plain dicts over `Rest` (kopf's client:
    async, no thread per call; hundreds of status writes after an outage share its connections)."""

    def __init__(self, rest: Rest | None = None) -> None:
        self.rest = rest or Rest()

    async def read(self, namespace: str, name: str) -> Mapping[str, bytes]:
        try:
            secret = await self.rest.get(_secret_path(namespace, name))
        except APIError as exc:
            raise _secret_error(exc, namespace, name) from None
        return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}

    async def read_secret(self, namespace: str, name: str) -> SecretObject:
        """A Secret with the metadata a KafkaUser needs (uid, resourceVersion, owners, finalizers)."""
        try:
            secret = await self.rest.get(_secret_path(namespace, name))
        except APIError as exc:
            raise _secret_error(exc, namespace, name) from None
        return decode_secret(secret)

    async def create_secret(self, namespace: str, name: str, data: Mapping[str, bytes], labels: Mapping[str, str],
                            owner: Mapping[str, Any]) -> SecretObject:
        """Create an Opaque Secret owned by `owner` (SecretExists: someone was first)."""
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels), "ownerReferences": [dict(owner)]},
                "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}
        try:
            secret = await self.rest.post(_secret_path(namespace), body)
        except APIError as exc:
            if exc.status == 409:
                raise SecretExists(f"Secret {namespace}/{name} exists") from None
            raise _secret_error(exc, namespace, name) from None
        return decode_secret(secret)

    async def protect_secret(self, namespace: str, name: str) -> bool:
        return await self._secret_finalizer(namespace, name, present=True)

    async def release_secret(self, namespace: str, name: str) -> bool:
        return await self._secret_finalizer(namespace, name, present=False)

    async def _secret_finalizer(self, namespace: str, name: str, present: bool) -> bool:
        """Add or remove SECRET_FINALIZER. False: the Secret does not exist."""
        path = _secret_path(namespace, name)

        async def read() -> tuple[list[str], bool, str]:
            return _finalizer_state(await self.rest.get(path))

        async def patch(body: dict[str, Any]) -> None:
            await self.rest.merge_patch(path, body)

        return await _change_finalizers(read, patch, SECRET_FINALIZER, present, f"Secret {namespace}/{name}")

    async def guard(self, plural: str, namespace: str, name: str) -> None:
        """Put our finalizer on a kafkaops.io object that lacks it (what kopf does before its first
        handler). An object gone or being deleted meanwhile is left alone.

        Sharded mode: a replica picking up a cluster guards its resources before reconciling
        them: objects another replica made Ready but whose finalizer that replica's kopf never
        added (ownership moved before its patch) were otherwise released by a deletion without
        deleting in Kafka (found by the sharding e2e under load)."""
        path = object_path(GROUP, VERSION, plural, namespace, name)

        async def read() -> tuple[list[str], bool, str]:
            return _finalizer_state(await self.rest.get(path))

        async def patch(body: dict[str, Any]) -> None:
            await self.rest.merge_patch(path, body)

        await _change_finalizers(read, patch, FINALIZER, True, f"{plural} {namespace}/{name}")

    async def annotate(self, plural: str, namespace: str, name: str, annotations: Mapping[str, str]) -> None:
        """Merge annotations into a kafkaops.io object (a watch event for kopf); gone meanwhile: no error."""
        await self._merge(object_path(GROUP, VERSION, plural, namespace, name),
                          {"metadata": {"annotations": dict(annotations)}}, 5)

    async def patch_status(self, plural: str, namespace: str, name: str, status: Mapping[str, Any],
                           attempts: int = 5) -> None:
        """Merge `status` into the object's status; an object deleted meanwhile is no error. Transient
        API failures (429, 5xx, connection) are retried with backoff; the last one is raised."""
        await self._merge(object_path(GROUP, VERSION, plural, namespace, name, "status"), {"status": dict(status)},
                          attempts)

    async def _merge(self, path: str, body: Mapping[str, Any], attempts: int) -> None:
        try:
            async for attempt in _retrying(attempts):
                with attempt:
                    await self.rest.merge_patch(path, body)
        except APIError as exc:
            if exc.status != 404:
                raise


def _finalizer_state(obj: Mapping[str, Any]) -> tuple[list[str], bool, str]:
    metadata = obj.get("metadata") or {}
    return list(metadata.get("finalizers") or []), bool(metadata.get("deletionTimestamp")), \
        str(metadata.get("resourceVersion"))


async def _change_finalizers(read: Callable[[], Awaitable[tuple[list[str], bool, str]]],
                             patch: Callable[[dict[str, Any]], Awaitable[None]], finalizer: str, present: bool,
                             what: str, attempts: int = 5) -> bool:
    """Add (present) or remove one finalizer, guarded by the object's resourceVersion: a concurrent
    change of its finalizers is re-read, not overwritten. An object being deleted takes no new
    finalizer. False: the object does not exist."""
    for _ in range(attempts):
        try:
            finalizers, deleting, version = await read()
        except APIError as exc:
            if exc.status == 404:
                return False
            raise
        if (finalizer in finalizers) == present or (present and deleting):
            return True  # as wanted already
        finalizers = [*finalizers, finalizer] if present else [f for f in finalizers if f != finalizer]
        try:
            await patch({"metadata": {"finalizers": finalizers, "resourceVersion": version}})
            return True
        except APIError as exc:
            if exc.status == 404:
                return False
            if exc.status != 409:
                raise
    raise RuntimeError(f"{what}: its finalizers kept changing ({attempts} attempts)")
