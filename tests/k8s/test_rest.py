"""k8s/rest.py: the operator's own API calls through kopf's client, over real HTTP.

Against the Kubernetes API emulator: paths, JSON merge patches of statuses, errors as kopf's
APIError with the HTTP status. Against `ApiServerDouble` (a few lines of aiohttp on 127.0.0.1):
what the emulator does not do, a 401 for a stale token, and how many requests are in flight.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from kopf._cogs.structs.credentials import ConnectionInfo, Vault

from kafkaops.k8s.api import KubernetesApi
from kafkaops.k8s.rest import APIError, Rest, ThreadRest, object_path
from kafkaops.k8s.shards import LeaseApi
from kafkaops.testing.k8s_emulator import KubernetesApiEmulator

REPO = Path(__file__).resolve().parents[2]
TOPIC = {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic",
         "metadata": {"name": "orders", "namespace": "kafka"},
         "spec": {"clusterRef": {"name": "main"}, "partitions": 1}}


@pytest.fixture
async def rest() -> AsyncIterator[Rest]:
    async with KubernetesApiEmulator(crds=[REPO / "crds"], namespaces=["kafka"]) as api:
        connected = Rest.connected(api.url, token="any")
        yield connected
        await connected.close()


async def test_statuses_secrets_and_errors_through_kopfs_client(rest: Rest) -> None:
    await rest.post(object_path("kafkaops.io", "v1alpha1", "kafkatopics", "kafka"), TOPIC)
    api = KubernetesApi(rest)
    await api.patch_status("kafkatopics", "kafka", "orders", {"observedGeneration": 1, "partitions": 1})
    await api.patch_status("kafkatopics", "kafka", "orders", {"partitions": 2})  # a merge: the rest stays
    got = await rest.get(object_path("kafkaops.io", "v1alpha1", "kafkatopics", "kafka", "orders"))
    assert got["status"] == {"observedGeneration": 1, "partitions": 2}
    await api.patch_status("kafkatopics", "kafka", "gone", {"partitions": 1})  # deleted meanwhile: no error

    secret = await api.create_secret("kafka", "alice", {"password": b"s3cret"}, {"app": "x"},
                                     {"apiVersion": "v1", "kind": "KafkaUser", "name": "alice", "uid": "u-1"})
    assert secret.data == {"password": b"s3cret"} and secret.owner_uids == frozenset({"u-1"})
    assert await api.protect_secret("kafka", "alice") and (await api.read_secret("kafka", "alice")).finalizers
    assert await api.release_secret("kafka", "alice") and not (await api.read_secret("kafka", "alice")).finalizers
    with pytest.raises(APIError) as missing:
        await rest.get(object_path("", "v1", "secrets", "kafka", "nobody"))
    assert missing.value.status == 404


class ApiServerDouble:
    """Answers GET /apis/coordination.k8s.io/v1/namespaces/NS/leases: 401 unless the bearer token is
    `token`; counts the requests in flight (each takes `delay` seconds). GET /busy: always 503."""

    def __init__(self, token: str, delay: float = 0.0) -> None:
        self.token, self.delay = token, delay
        self.seen: list[str] = []
        self.in_flight = self.most_in_flight = 0

    async def busy(self, _request: web.Request) -> web.Response:
        return web.json_response({"kind": "Status", "code": 503, "message": "busy"}, status=503)

    async def leases(self, request: web.Request) -> web.Response:
        self.seen.append(request.headers.get("Authorization", ""))
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response({"kind": "Status", "code": 401, "message": "Unauthorized"}, status=401)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        return web.json_response({"kind": "LeaseList", "items": []})


@pytest.fixture
async def server_double() -> AsyncIterator[tuple[ApiServerDouble, str]]:
    double = ApiServerDouble(token="fresh", delay=0.05)
    app = web.Application()
    app.router.add_get("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", double.leases)
    app.router.add_get("/busy", double.busy)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield double, f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_a_failed_attempt_is_the_callers_to_report_not_an_error_line(server_double, caplog) -> None:
    """kopf's request() logs each failed attempt at ERROR; the operator's callers retry (status
    writes) or report (a Secret's 403 in the status) themselves, so those lines are DEBUG here."""
    _, url = server_double
    rest = Rest.connected(url, token="fresh")
    try:
        with caplog.at_level(logging.DEBUG), pytest.raises(APIError) as busy:
            await rest.get("/busy")
    finally:
        await rest.close()
    assert busy.value.status == 503
    attempts = [r for r in caplog.records if "Request attempt" in r.getMessage()]
    assert attempts and all(r.levelno == logging.DEBUG for r in attempts), attempts


async def test_at_most_sixteen_calls_at_once(server_double) -> None:
    double, url = server_double
    rest = Rest.connected(url, token="fresh")
    try:
        await asyncio.gather(*(LeaseApi(rest).list("ns") for _ in range(50)))
    finally:
        await rest.close()
    assert len(double.seen) == 50 and double.most_in_flight == Rest.CONCURRENCY


async def test_the_sharders_own_loop_hands_a_stale_token_back_to_kopf(server_double) -> None:
    """ThreadRest, on an event loop in another thread (the sharder's): the credentials come from
    kopf's vault on the operator's loop; a 401 invalidates them there, kopf logs in again (played
    here by a task that refills the emptied vault) and the call is made once more."""
    double, url = server_double
    vault = Vault()
    await vault.populate({"first": ConnectionInfo(server=url, token="stale")})

    async def kopf_logs_in_again() -> None:
        await vault.wait_for_emptiness()
        await vault.populate({"second": ConnectionInfo(server=url, token="fresh")})

    relogin = asyncio.create_task(kopf_logs_in_again())
    rest = ThreadRest(home=asyncio.get_running_loop(), vault=vault)

    async def in_the_thread() -> list[dict]:
        try:
            return await LeaseApi(rest).list("ns")
        finally:
            await rest.close()

    assert await asyncio.to_thread(asyncio.run, in_the_thread()) == []
    assert double.seen == ["Bearer stale", "Bearer fresh"]
    await relogin
