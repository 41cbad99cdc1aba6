"""The Kubernetes API's REST calls the operator makes beyond kopf (api.py: Secrets, statuses,
finalizers, annotations; shards.py: Leases), through kopf's own client: its aiohttp session and
the credentials of its login (a service account in a cluster, a kubeconfig elsewhere; re-login on
401). No second Kubernetes client is loaded: the official one costs the process 17.4 MiB
(with pydantic, requests, urllib3 and oauthlib) and a thread per call in flight.

Errors are kopf's `APIError`s, whose `status` is the HTTP status (404, 409, 403...). kopf's own
retries are off here (`backoffs=()`): each caller decides what it retries (api.py, shards.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping
from contextlib import aclosing
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import aiohttp
from kopf._cogs.clients import api as kopf_api
from kopf._cogs.clients import auth
from kopf._cogs.clients.auth import APIContext
from kopf._cogs.clients.errors import APIError, APIUnauthorizedError
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import ConnectionInfo, KubeContext, Vault, VaultKey

__all__ = ["APIError", "Rest", "ThreadRest", "object_path", "transient_connection"]

T = TypeVar("T")

log = logging.getLogger(__name__)


class _AttemptLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """kopf's request() logs a failed attempt at ERROR ("escalating"); here the caller retries it
    or reports the failure itself (a status, a log line of its own), so those lines are DEBUG."""

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.debug(msg, *args, **kwargs)


_attempts = _AttemptLog(log, {})

MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


def object_path(group: str, version: str, plural: str, namespace: str | None = None, name: str | None = None,
                subresource: str | None = None) -> str:
    """/api/v1/... for the core group (""), /apis/GROUP/VERSION/... otherwise."""
    parts = ["/api", version] if not group else ["/apis", group, version]
    if namespace is not None:
        parts += ["namespaces", quote(namespace, safe="")]
    parts.append(plural)
    if name is not None:
        parts.append(quote(name, safe=""))
    if subresource is not None:
        parts.append(subresource)
    return "/".join(parts)


def transient_connection(exc: BaseException) -> bool:
    """The connection failed, not the API: worth a retry."""
    return isinstance(exc, (OSError, aiohttp.ClientConnectionError, TimeoutError))


class Rest:
    """JSON in, JSON out. `context`: an explicit connection (tests, tools outside an operator run);
    None: kopf's vault of the running operator (every handler, daemon and task it spawned).
    At most `concurrency` requests at once: 500 status writes after an outage queue here instead
    of opening 500 connections to the API server (kopf's session sets no limit)."""

    CONCURRENCY = 16

    def __init__(self, settings: OperatorSettings | None = None, context: APIContext | None = None,
                 concurrency: int = CONCURRENCY) -> None:
        self.settings = settings or OperatorSettings()
        self.context = context
        self._slots = asyncio.Semaphore(concurrency)  # bound to the loop that first waits on it

    @classmethod
    def connected(cls, server: str, *, token: str | None = None, ca_path: str | None = None,
                  insecure: bool = False) -> Rest:
        """A Rest with a connection of its own (outside an operator run: tests, tools)."""
        info = ConnectionInfo(server=server, token=token, ca_path=ca_path, insecure=insecure)
        return cls(context=APIContext(info))

    async def close(self) -> None:
        if self.context is not None:
            await self.context.session.close()

    async def call(self, method: str, path: str, body: Mapping[str, Any] | None = None, *,
                   query: Mapping[str, str] | None = None, merge: bool = False) -> Any:
        """One request; the decoded JSON answer. `merge`: a JSON merge patch."""
        url = path + ("?" + urlencode(dict(query)) if query else "")
        extra: dict[str, Any] = {"context": self.context} if self.context is not None else {}
        async with self._slots:
            response = await kopf_api.request(method, url, settings=self.settings, payload=body,
                                              headers=MERGE_PATCH if merge else None, backoffs=(), logger=_attempts,
                                              **extra)
            async with response:
                return await response.json()

    async def get(self, path: str, *, query: Mapping[str, str] | None = None) -> Any:
        return await self.call("get", path, query=query)

    async def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return await self.call("post", path, body)

    async def put(self, path: str, body: Mapping[str, Any]) -> Any:
        return await self.call("put", path, body)

    async def merge_patch(self, path: str, body: Mapping[str, Any]) -> Any:
        return await self.call("patch", path, body, merge=True)

    async def delete(self, path: str, body: Mapping[str, Any] | None = None) -> Any:
        return await self.call("delete", path, body)


class ThreadRest(Rest):
    """A Rest for an event loop of its own (the sharder's thread, shards.py): kopf's session belongs
    to the operator's loop, so this one opens its own, with the credentials kopf's vault holds
    (read on the operator's loop). A 401 hands them back to kopf (a new login: a rotated
    service-account token, an expired exec token) and the call is made once more."""

    def __init__(self, settings: OperatorSettings | None = None, *, home: asyncio.AbstractEventLoop | None = None,
                 vault: Vault | None = None) -> None:
        super().__init__(settings)
        self._home = home if home is not None else asyncio.get_running_loop()
        self._vault = vault if vault is not None else auth.vault_var.get()
        self._held: tuple[VaultKey, KubeContext] | None = None  # the credentials of `context`

    async def _at_home(self, work: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._home))

    async def _credentials(self) -> tuple[VaultKey, KubeContext]:
        async with aclosing(self._vault.__aiter__()) as items:
            async for key, info in items:
                return key, info
        raise RuntimeError("kopf's vault has no credentials")

    async def call(self, method: str, path: str, body: Mapping[str, Any] | None = None, *,
                   query: Mapping[str, str] | None = None, merge: bool = False) -> Any:
        for attempt in (1, 2):
            if self.context is None:
                self._held = await self._at_home(self._credentials())
                self.context = APIContext(self._held[1])
            try:
                return await super().call(method, path, body, query=query, merge=merge)
            except APIUnauthorizedError as exc:
                stale, self.context = self.context, None
                await stale.session.close()
                if attempt == 2:
                    raise
                assert self._held is not None  # set with the context
                key, info = self._held
                await self._at_home(self._vault.invalidate(key, info, exc=exc))
        raise AssertionError("unreachable")
