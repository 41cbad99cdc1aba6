"""The Batcher coalesces SCRAM and quota alterations from many callers into a few requests
(counted on the fake cluster double), and shares one bulk describe among a window's callers."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from kafkaops.kafka import AdminClient, Batcher
from kafkaops.kafka.apis import Api
from kafkaops.kafka.models import QuotaAlteration, QuotaEntity, ScramCredentialInfo, ScramDeletion, ScramMechanism
from kafkaops.kafka.scram import scram_upsertion

log = logging.getLogger(__name__)
SHA512 = ScramMechanism.SCRAM_SHA_512


@pytest.fixture
async def cluster(quiet_fake):
    return quiet_fake


@pytest.fixture
async def batcher(cluster):
    async with AdminClient.connect(cluster.bootstrap, retry_backoff=0.01) as admin:
        yield Batcher(admin)


async def test_1000_upsertions_submitted_at_once_take_at_most_5_requests(batcher, cluster):
    started = time.perf_counter()
    upsertions = [scram_upsertion(f"user-{i:04d}", SHA512, f"password-{i}") for i in range(1000)]
    salted = time.perf_counter() - started
    cluster.clear_requests()
    started = time.perf_counter()
    results = await asyncio.gather(*(batcher.alter_scram_credential(u) for u in upsertions))
    sent = time.perf_counter() - started
    requests = cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS)
    log.warning("1,000 SCRAM upsertions: salting %.2f s, %d AlterUserScramCredentials request(s), %.3f s", salted, requests, sent)
    assert all(r.ok for r in results)
    assert requests <= 5
    assert len(cluster.state.principals.scram) == 1000

    # ...and the callers of one window share one bulk describe
    cluster.clear_requests()
    described = await asyncio.gather(*(batcher.describe_all_scram_credentials() for _ in range(50)))
    assert cluster.count(Api.DESCRIBE_USER_SCRAM_CREDENTIALS) == 1
    assert described[0].value["user-0999"] == (ScramCredentialInfo(SHA512, 4096),)
    assert len(described[49].value) == 1000


async def test_deletions_and_quota_alterations_are_batched_too(batcher, cluster):
    await asyncio.gather(*(batcher.alter_scram_credential(scram_upsertion(f"u{i}", SHA512, "pw")) for i in range(200)))
    cluster.clear_requests()
    deleted = await batcher.alter_scram_credentials_each(ScramDeletion(f"u{i}", SHA512) for i in range(200))
    assert all(r.ok for r in deleted)
    assert cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS) == 1
    assert cluster.state.principals.scram == {}

    entities = [QuotaEntity.of(user=f"u{i}") for i in range(1000)]
    checked = await batcher.alter_client_quotas_each(
        (QuotaAlteration(e, {"producer_byte_rate": 1024}) for e in entities), validate_only=True
    )
    assert all(r.ok for r in checked) and cluster.state.principals.quotas == {}
    results = await asyncio.gather(
        *(batcher.alter_client_quota(QuotaAlteration(e, {"producer_byte_rate": 1024})) for e in entities)
    )
    assert all(r.ok for r in results)
    assert cluster.count(Api.ALTER_CLIENT_QUOTAS) == 2  # one validate_only, one real
    shared = await asyncio.gather(*(batcher.describe_all_client_quotas() for _ in range(20)))
    assert cluster.count(Api.DESCRIBE_CLIENT_QUOTAS) == 1
    assert shared[0].value[entities[7]] == {"producer_byte_rate": 1024.0}


async def test_a_user_rotated_and_switched_in_one_window(batcher, cluster):
    await batcher.alter_scram_credential(scram_upsertion("ann", ScramMechanism.SCRAM_SHA_256, "old"))
    cluster.clear_requests()
    upsert, delete = await asyncio.gather(
        batcher.alter_scram_credential(scram_upsertion("ann", SHA512, "new")),
        batcher.alter_scram_credential(ScramDeletion("ann", ScramMechanism.SCRAM_SHA_256)),
    )
    assert upsert.ok and delete.ok
    assert set(cluster.state.principals.scram["ann"]) == {int(SHA512)}
    assert cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS) == 2  # one alteration per user per request


async def test_upsertions_trickling_in_for_longer_than_linger_max_share_one_request(cluster):
    """The operator's callers salt their own credential before submitting it (CPU work), so the
    items of users reconciled together arrive spread out; the alteration lanes keep the window
    open while they keep coming (Batcher._lane slow_arrivals), past the usual linger_max."""
    upsertions = [scram_upsertion(f"drip-{i:02d}", SHA512, f"password-{i}") for i in range(60)]
    async with AdminClient.connect(cluster.bootstrap, retry_backoff=0.01, linger=0.05, linger_max=0.3) as admin:
        batcher = Batcher(admin)
        cluster.clear_requests()

        async def caller(i: int):
            await asyncio.sleep(0.01 * i)  # 60 items over 0.6 s: twice linger_max
            return await batcher.alter_scram_credential(upsertions[i])

        results = await asyncio.gather(*(caller(i) for i in range(60)))
    assert all(r.ok for r in results)
    assert cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS) == 1
