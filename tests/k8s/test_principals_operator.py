"""KafkaUser and KafkaClientQuota in the operator's decisions, without Kubernetes: bodies in,
status/events out, against the fake cluster double (which stores SCRAM credentials and quotas)
and a Secrets double."""

from __future__ import annotations

import copy
import json
import logging

import pytest

from kafkaops.k8s.context import Clusters, OperatorSettings
from kafkaops.k8s.kinds import ClaimKey, claim_key
from kafkaops.k8s.metrics import Metrics
from kafkaops.k8s.principals import (
    CREDENTIALS_FOR,
    PASSWORD_VERSION,
    SecretExists,
    SecretObject,
    release_user_secret,
)
from kafkaops.k8s.reconciler import Reconciler
from kafkaops.k8s.secrets import SECRET_FINALIZER, SecretNotFound
from kafkaops.kafka import AclBindingFilter, AdminClient, ScramMechanism
from kafkaops.kafka.scram import salted_password
from kafkaops.testing.fake_cluster import FakeClusterDouble

from k8s_helpers import CatalogDouble, body, cluster_body, condition, connect

WIRE = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


class UserSecretsDouble:
    """The Secrets of a namespace as the API would hold them: uid, resourceVersion bumped on every
    change, owners, finalizers. Counts reads (the resync GETs each referenced Secret)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict] = {}
        self.version = 100
        self.reads = 0

    def put(self, namespace: str, name: str, data: dict[str, bytes], owners: frozenset[str] = frozenset()) -> None:
        self.version += 1
        old = self.objects.get((namespace, name))
        self.objects[(namespace, name)] = {"uid": old["uid"] if old else f"secret-{name}", "rv": str(self.version),
                                           "data": dict(data), "owners": owners,
                                           "finalizers": old["finalizers"] if old else ()}

    def _object(self, namespace: str, name: str) -> SecretObject:
        held = self.objects[(namespace, name)]
        return SecretObject(namespace, name, held["uid"], held["rv"], dict(held["data"]), held["owners"],
                            tuple(held["finalizers"]))

    async def read(self, namespace: str, name: str):  # the KafkaCluster credentials path
        return (await self.read_secret(namespace, name)).data

    async def read_secret(self, namespace: str, name: str) -> SecretObject:
        self.reads += 1
        if (namespace, name) not in self.objects:
            raise SecretNotFound(f"Secret {namespace}/{name} not found")
        return self._object(namespace, name)

    async def create_secret(self, namespace, name, data, labels, owner) -> SecretObject:
        if (namespace, name) in self.objects:
            raise SecretExists(name)
        self.put(namespace, name, data, frozenset({owner["uid"]}))
        self.objects[(namespace, name)]["labels"] = dict(labels)
        return self._object(namespace, name)

    async def _finalizer(self, namespace: str, name: str, present: bool) -> bool:
        held = self.objects.get((namespace, name))
        if held is None:
            return False
        others = tuple(f for f in held["finalizers"] if f != SECRET_FINALIZER)
        held["finalizers"] = (*others, SECRET_FINALIZER) if present else others
        self.version += 1
        held["rv"] = str(self.version)
        return True

    async def protect_secret(self, namespace: str, name: str) -> bool:
        return await self._finalizer(namespace, name, True)

    async def release_secret(self, namespace: str, name: str) -> bool:
        return await self._finalizer(namespace, name, False)


@pytest.fixture
async def fake():
    async with FakeClusterDouble(brokers=1, acls_enabled=True) as cluster:
        yield cluster


@pytest.fixture
def secrets_api():
    return UserSecretsDouble()


def settings() -> OperatorSettings:
    return OperatorSettings(client_overrides={"linger": 0.01, "wait_poll_min": 0.01}, retry_delay=1.0, metrics_port=None)


@pytest.fixture
async def reconciler(fake, secrets_api):
    clusters = Clusters(secrets_api, settings())
    reconciler = Reconciler(clusters, CatalogDouble(), Metrics())
    result = await connect(reconciler, cluster_body(fake.bootstrap, topicDeletion={"policy": "Delete"}))
    assert condition(result, "Ready")["status"] == "True", result.status
    yield reconciler
    await clusters.close_all()


def user_body(name: str, auth: dict | None = None, **spec) -> dict:
    full = {"clusterRef": {"name": "main"}, **spec}
    if auth is not None:
        full["authentication"] = auth
    return body("KafkaUser", name, full)


def password_works(fake, user: str, mechanism: str, password: str) -> bool:
    held = fake.state.principals.scram.get(user, {}).get(WIRE[mechanism])
    return held is not None and held.salted_password == salted_password(ScramMechanism.parse(mechanism), password,
                                                                       held.salt, held.iterations)


async def test_generated_password_secret_is_created_once_and_the_credential_works(reconciler, fake, secrets_api) -> None:
    user = user_body("app", {"type": "scram-sha-512"}, quotas={"producer_byte_rate": 1048576})
    result = await reconciler.reconcile(user)
    assert condition(result, "Ready")["status"] == "True", result.status
    status = result.status
    assert status["principal"] == "User:app" and status["mechanism"] == "SCRAM-SHA-512"
    assert status["iterations"] == 4096 and status["secretName"] == "app"
    assert status["managedQuotaKeys"] == ["producer_byte_rate"]
    held = secrets_api.objects[("team", "app")]
    assert held["owners"] == {user["metadata"]["uid"]} and held["labels"][CREDENTIALS_FOR] == "app"
    password = held["data"]["password"].decode()
    assert len(password) >= 24 and held["data"]["username"] == b"app"
    assert held["data"]["sasl.jaas.config"].decode() == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="'
        + password + '";')
    assert password_works(fake, "app", "SCRAM-SHA-512", password)
    assert fake.state.principals.quotas[(("user", "app"),)] == {"producer_byte_rate": 1048576.0}
    assert status[PASSWORD_VERSION] == f"secret-app/{held['rv']}"
    # nothing of the password in the status or the Event
    assert password not in json.dumps(status) and password not in str(result.event)
    # a second reconcile reuses the Secret: no new password, no upsertion
    changes = fake.state.principals.scram_changes
    again = await reconciler.reconcile({**user, "status": status})
    assert again.status is None and secrets_api.objects[("team", "app")]["data"]["password"].decode() == password
    assert fake.state.principals.scram_changes == changes


async def test_referenced_secret_rotation_through_the_resync(reconciler, fake, secrets_api) -> None:
    secrets_api.put("team", "svc-pw", {"pw": b"first-password\n"})
    user = user_body("svc", {"type": "scram-sha-256", "passwordSecretRef": {"name": "svc-pw", "key": "pw"}})
    reconciler.catalog.add(user)
    result = await reconciler.reconcile(user)
    assert condition(result, "Ready")["status"] == "True", result.status
    assert SECRET_FINALIZER in secrets_api.objects[("team", "svc-pw")]["finalizers"]
    assert password_works(fake, "svc", "SCRAM-SHA-256", "first-password")
    user["status"] = result.status
    context = reconciler.clusters.contexts()[0]
    changes = fake.state.principals.scram_changes
    assert await reconciler.resync(context, [user], {}) == [] and fake.state.principals.scram_changes == changes
    published = []

    async def writer(plural, namespace, name, status):
        published.append(status)

    reconciler.status_writer = writer
    secrets_api.put("team", "svc-pw", {"pw": b"second-password"})  # the rotation
    await reconciler.resync(context, [user], {})
    assert fake.state.principals.scram_changes == changes + 1
    assert password_works(fake, "svc", "SCRAM-SHA-256", "second-password")
    assert not password_works(fake, "svc", "SCRAM-SHA-256", "first-password")
    assert published and published[-1][PASSWORD_VERSION].endswith("/" + secrets_api.objects[("team", "svc-pw")]["rv"])
    assert "second-password" not in json.dumps(published)


async def test_a_restarted_operator_upserts_nothing(reconciler, fake, secrets_api) -> None:
    secrets_api.put("team", "r-pw", {"password": b"restart-pw"})
    users = [user_body(f"r{i}", {"type": "scram-sha-256", "passwordSecretRef": {"name": "r-pw"}}) for i in range(3)]
    for user in users:
        user["status"] = (await reconciler.reconcile(user)).status
    # the finalizer write bumped the Secret's version after the first user read it: read again
    users = [{**u, "status": (await reconciler.reconcile(u)).status or u["status"]} for u in users]
    changes = fake.state.principals.scram_changes
    fresh = Reconciler(Clusters(secrets_api, settings()), CatalogDouble(), Metrics())  # memory empty
    await connect(fresh, cluster_body(fake.bootstrap))
    try:
        for user in users:
            assert (await fresh.reconcile(user, resuming=True)).status is None
        assert await fresh.resync(fresh.clusters.contexts()[0], users, {}) == []
        assert fake.state.principals.scram_changes == changes, "a restart changed nothing in Kafka"
        # a credential deleted outside kafkaops is restored by the resync (drift: presence)
        del fake.state.principals.scram["r1"]
        changed = await fresh.resync(fresh.clusters.contexts()[0], users, {})
        assert [c[1].event.reason for c in changed] == ["DriftRestored"]
        assert password_works(fake, "r1", "SCRAM-SHA-256", "restart-pw")
    finally:
        await fresh.clusters.close_all()


async def test_missing_secret_waits_and_a_foreign_generated_name_is_stalled(reconciler, secrets_api) -> None:
    missing = user_body("m", {"type": "scram-sha-256", "passwordSecretRef": {"name": "nope"}})
    result = await reconciler.reconcile(missing)
    ready = condition(result, "Ready")
    assert ready["status"] == "False" and ready["reason"] == "PasswordUnavailable"
    assert "Secret team/nope not found" in ready["message"] and result.retry_after is not None
    secrets_api.put("team", "taken", {"password": b"x"})
    foreign = user_body("f", {"type": "scram-sha-256", "secretName": "taken"})
    result = await reconciler.reconcile(foreign)
    assert condition(result, "Stalled")["reason"] == "SecretNotOwned" and result.retry_after is None


async def test_deletion_policy_removes_credential_quotas_and_acls(reconciler, fake, secrets_api) -> None:
    acls = [{"resource": {"type": "Topic", "name": "orders"}, "operations": ["Read"]}]
    secrets_api.put("team", "del-pw", {"password": b"pw-del"})
    user = user_body("gone", {"type": "scram-sha-256", "passwordSecretRef": {"name": "del-pw"}},
                     quotas={"consumer_byte_rate": 2048}, acls=acls)
    reconciler.catalog.add(user)
    assert condition(await reconciler.reconcile(user), "Ready")["status"] == "True"
    assert "gone" in fake.state.principals.scram
    removed = await reconciler.remove(user)
    assert removed.release and removed.event.reason == "Deleted"
    assert "gone" not in fake.state.principals.scram and (("user", "gone"),) not in fake.state.principals.quotas
    async with AdminClient.connect(fake.bootstrap) as admin:
        assert await admin.describe_acls(AclBindingFilter(principal="User:gone")) == ()
    await release_user_secret(secrets_api, user, reconciler.catalog.resources(("team", "main")))
    assert SECRET_FINALIZER not in secrets_api.objects[("team", "del-pw")]["finalizers"]


async def test_retain_policy_keeps_the_credential(fake, secrets_api) -> None:
    reconciler = Reconciler(Clusters(secrets_api, settings()), CatalogDouble(), Metrics())
    await connect(reconciler, cluster_body(fake.bootstrap))  # Retain by default
    try:
        user = user_body("kept", {"type": "scram-sha-256"})
        assert condition(await reconciler.reconcile(user), "Ready")["status"] == "True"
        removed = await reconciler.remove(user)
        assert removed.release and removed.event.reason == "Retained" and "kept" in fake.state.principals.scram
    finally:
        await reconciler.clusters.close_all()


async def test_client_quota_and_conflicting_claims(reconciler, fake) -> None:
    quota = body("KafkaClientQuota", "defaults", {"clusterRef": {"name": "main"}, "entity": {"clientIdDefault": True},
                                                  "quotas": {"request_percentage": 25.5}})
    reconciler.catalog.add(quota)
    result = await reconciler.reconcile(quota)
    assert condition(result, "Ready")["status"] == "True", result.status
    assert result.status["entity"] == "client-id=<default>" and result.status["managedQuotaKeys"] == ["request_percentage"]
    assert fake.state.principals.quotas[(("client-id", None),)] == {"request_percentage": 25.5}
    assert claim_key(quota) == ClaimKey("quota", "team", "main", "client-id=<default>")
    second = reconciler.catalog.add(body("KafkaClientQuota", "again", copy.deepcopy(quota["spec"]),
                                         created="2026-01-02T00:00:00Z"))
    assert condition(await reconciler.reconcile(second), "Stalled")["reason"] == "ResourceConflict"
    first_user = reconciler.catalog.add(user_body("one", principal="User:shared", quotas={}))
    other = reconciler.catalog.add(body("KafkaUser", "two", {"clusterRef": {"name": "main"}, "principal": "User:shared"},
                                        created="2026-01-02T00:00:00Z"))
    assert condition(await reconciler.reconcile(first_user), "Ready")["status"] == "True"
    assert condition(await reconciler.reconcile(other), "Stalled")["reason"] == "ResourceConflict"
    removed = await reconciler.remove(quota)
    assert removed.release and (("client-id", None),) not in fake.state.principals.quotas


async def test_passwords_never_reach_logs(reconciler, secrets_api, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    secrets_api.put("team", "log-pw", {"password": b"log-secret-value"})
    user = user_body("logged", {"type": "scram-sha-256", "passwordSecretRef": {"name": "log-pw"}})
    result = await reconciler.reconcile(user)
    generated = await reconciler.reconcile(user_body("gen", {"type": "scram-sha-256"}))
    password = secrets_api.objects[("team", "gen")]["data"]["password"].decode()
    text = caplog.text + json.dumps(result.status) + json.dumps(generated.status) + repr(secrets_api._object("team", "gen"))
    assert "log-secret-value" not in text and password not in text


async def test_switching_to_another_secret_releases_the_first(reconciler, fake, secrets_api) -> None:
    secrets_api.put("team", "pw-a", {"password": b"password-a"})
    secrets_api.put("team", "pw-b", {"password": b"password-b"})
    user = reconciler.catalog.add(user_body("switch", {"type": "scram-sha-256", "passwordSecretRef": {"name": "pw-a"}}))
    user["status"] = (await reconciler.reconcile(user)).status
    assert SECRET_FINALIZER in secrets_api.objects[("team", "pw-a")]["finalizers"]
    user["spec"]["authentication"]["passwordSecretRef"]["name"] = "pw-b"
    user["metadata"]["generation"] = 2
    result = await reconciler.reconcile(user)
    assert condition(result, "Ready")["status"] == "True" and result.status["secretName"] == "pw-b"
    assert SECRET_FINALIZER not in secrets_api.objects[("team", "pw-a")]["finalizers"]
    assert SECRET_FINALIZER in secrets_api.objects[("team", "pw-b")]["finalizers"]
    assert password_works(fake, "switch", "SCRAM-SHA-256", "password-b")

