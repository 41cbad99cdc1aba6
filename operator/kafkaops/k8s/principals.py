"""KafkaUser and KafkaClientQuota in the operator (a part of the Reconciler: a mixin, like drift.py).

Passwords. A KafkaUser's password comes from a Secret in its namespace: the one it references
(`passwordSecretRef`), or one the operator generates once (owned by the KafkaUser, keys
`username`, `password`, `sasl.jaas.config`) and reuses ever after. A referenced Secret carries
the `kafkaops.io/credentials-in-use` finalizer while a KafkaUser uses it.

Rotation without a watch on Secrets. The status remembers which version of the Secret was last
applied (`passwordSecretVersion` = uid/resourceVersion; never the password, its hash or a
fingerprint). The cluster's resync GETs every referenced Secret by name each resyncInterval: a
Secret whose version differs is reconciled again (one AlterUserScramCredentials upsertion,
batched with every other user of the cluster).

Restarts. The engine decides "password changed" from a fingerprint kept in the in-memory
ownership store, which a restart empties. When the status says the Secret's current version was
applied, the store is seeded with a fresh fingerprint of that password, so a restart re-upserts
nothing (issue 12: a restart changes nothing in Kafka).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Any, Protocol

from kafkaops.frozen import frozen
from kafkaops.k8s.context import ClusterContext
from kafkaops.k8s.secrets import SECRET_FINALIZER, SecretForbidden, SecretNotFound
from kafkaops.k8s.kinds import uid_of
from kafkaops.k8s.status import Phase, Verdict
from kafkaops.kafka.security import Secret
from kafkaops.reconcile.principals import (
    PASSWORD_UNAVAILABLE,
    client_quota_entity,
    password_fingerprint,
    quota_owner,
    scram_owner,
    user_quota_entity,
)
from kafkaops.resources.kinds import API_GROUP, API_VERSION, KAFKA_USER
from kafkaops.resources.users import KafkaClientQuota, KafkaUser
from kafkaops.resources.validation import check_custom_resource

log = logging.getLogger("kafkaops.operator")

PASSWORD_VERSION = "passwordSecretVersion"  # status: uid/resourceVersion of the Secret last applied
QUOTA_KEYS = "managedQuotaKeys"  # status: the quota keys kafkaops set (ownership survives restarts)
CREDENTIALS_FOR = "kafkaops.io/credentials-for"  # label of a generated Secret: the KafkaUser's name
SECRET_FORBIDDEN = "SecretForbidden"
SECRET_NOT_OWNED = "SecretNotOwned"
INVALID_CREDENTIAL = "InvalidCredential"
JAAS_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


@frozen
class SecretObject:
    """A Secret as the API holds it; the data never prints."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    data: Mapping[str, bytes] = field(repr=False)
    owner_uids: frozenset[str] = frozenset()
    finalizers: tuple[str, ...] = ()

    @property
    def version(self) -> str:
        return f"{self.uid}/{self.resource_version}"


class UserSecrets(Protocol):
    """What the operator does with the Secrets of KafkaUsers (KubernetesApi; a double in tests)."""

    async def read_secret(self, namespace: str, name: str) -> SecretObject: ...

    async def create_secret(self, namespace: str, name: str, data: Mapping[str, bytes], labels: Mapping[str, str],
                            owner: Mapping[str, Any]) -> SecretObject:
        """Create it (SecretExists when it already does: another writer was first)."""
        ...

    async def protect_secret(self, namespace: str, name: str) -> bool: ...

    async def release_secret(self, namespace: str, name: str) -> bool: ...


class SecretExists(RuntimeError):
    pass


@frozen
class Password:
    value: Secret
    version: str


@frozen
class PasswordProblem:
    reason: str
    message: str
    retriable: bool


def jaas_config(username: str, password: str) -> str:
    def quoted(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"')

    return f'{JAAS_MODULE} required username="{quoted(username)}" password="{quoted(password)}";'


def generated_secret_data(user: KafkaUser) -> dict[str, bytes]:
    password = secrets.token_urlsafe(24)  # 32 characters, 192 bits
    return {"username": user.user_name.encode(), "password": password.encode(),
            "sasl.jaas.config": jaas_config(user.user_name, password).encode()}


def owner_reference(body: Mapping[str, Any]) -> dict[str, Any]:
    metadata = body.get("metadata") or {}
    return {"apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": KAFKA_USER, "name": metadata.get("name"),
            "uid": metadata.get("uid"), "controller": True, "blockOwnerDeletion": False}


async def read_password(api: Any, user: KafkaUser, body: Mapping[str, Any]) -> Password | PasswordProblem:
    """The current password of `user` (its generated Secret created when absent) and the Secret's
    version; or why it cannot be had (never holding a value)."""
    auth = user.authentication
    assert auth is not None
    namespace, name = user.namespace or "default", auth.secret_name
    where = (f"spec.authentication: the generated Secret {namespace}/{name}" if auth.generated else
             f"spec.authentication.passwordSecretRef: Secret {namespace}/{name}")
    if not hasattr(api, "read_secret"):
        return PasswordProblem(PASSWORD_UNAVAILABLE, f"{where}: this operator cannot read Secrets", False)
    try:
        try:
            found = await api.read_secret(namespace, name)
        except SecretNotFound:
            if not auth.generated:
                return PasswordProblem(PASSWORD_UNAVAILABLE, f"{where} not found", True)
            try:
                found = await api.create_secret(namespace, name, generated_secret_data(user),
                                                {CREDENTIALS_FOR: user.name, "app.kubernetes.io/managed-by": "kafkaops"},
                                                owner_reference(body))
                log.info("KafkaUser %s/%s: generated its password into Secret %s", namespace, user.name, name)
            except SecretExists:
                found = await api.read_secret(namespace, name)
        if auth.generated:
            uid = str((body.get("metadata") or {}).get("uid"))
            if uid not in found.owner_uids:
                return PasswordProblem(SECRET_NOT_OWNED, f"{where} exists and is not owned by this KafkaUser: name "
                                       "another spec.authentication.secretName, or reference it with passwordSecretRef",
                                       False)
        elif SECRET_FINALIZER not in found.finalizers:
            try:
                if await api.protect_secret(namespace, name):
                    found = await api.read_secret(namespace, name)  # the finalizer changed its resourceVersion
            except Exception as exc:  # noqa: BLE001 - e.g. 403: no patch on secrets; the password is still read
                log.warning("KafkaUser %s/%s: cannot protect Secret %s from deletion while in use (%s): grant "
                            "`patch` on secrets (manifests/secrets-access)", namespace, user.name, name,
                            type(exc).__name__)
    except SecretNotFound:
        return PasswordProblem(PASSWORD_UNAVAILABLE, f"{where} not found", True)
    except SecretForbidden:
        return PasswordProblem(SECRET_FORBIDDEN, f"{where}: the operator may not read or create it (403 Forbidden): "
                               f"grant it with manifests/secrets-access for namespace {namespace}", False)
    raw = found.data.get(auth.password_key)
    if raw is None:
        return PasswordProblem(PASSWORD_UNAVAILABLE, f"{where} has no key {auth.password_key!r}", True)
    try:
        text = raw.decode("utf-8").rstrip("\n")
    except UnicodeDecodeError:
        return PasswordProblem(INVALID_CREDENTIAL, f"{where}: key {auth.password_key!r} is not UTF-8 text", False)
    if not text:
        return PasswordProblem(INVALID_CREDENTIAL, f"{where}: key {auth.password_key!r} is empty", False)
    return Password(Secret(text), found.version)


def status_of(body: Mapping[str, Any]) -> Mapping[str, Any]:
    status = body.get("status")
    return status if isinstance(status, Mapping) else {}


def principal_owner(model: Any) -> str | None:
    """The ownership entry of the quota keys of a KafkaUser (User: principals) or a KafkaClientQuota."""
    if isinstance(model, KafkaUser):
        entity = user_quota_entity(model)
        return quota_owner(entity) if entity is not None else None
    if isinstance(model, KafkaClientQuota):
        return quota_owner(client_quota_entity(model))
    return None


@frozen
class PrincipalInputs:
    """What a reconcile of a KafkaUser/KafkaClientQuota adds: the password, its status fields (the
    Secret version only once applied), or why it cannot run."""

    passwords: Mapping[str, Secret] = field(default_factory=dict, repr=False)
    fields: Mapping[str, Any] = field(default_factory=dict)
    applied_fields: Mapping[str, Any] = field(default_factory=dict)
    problem: PasswordProblem | None = None

    def verdict(self) -> Verdict | None:
        problem = self.problem
        if problem is None:
            return None
        return Verdict(Phase.RECONCILING if problem.retriable else Phase.STALLED, problem.reason, problem.message)


class Principals:
    """The Reconciler's part for the principal kinds (mixed into it)."""

    clusters: Any
    catalog: Any

    async def _rerun(self, body: Mapping[str, Any]) -> None: ...  # the Reconciler's

    @property
    def _prefetched(self) -> dict[str, Password | PasswordProblem]:
        return self.__dict__.setdefault("_prefetched_passwords", {})

    async def rerun_together(self, parked: list[Mapping[str, Any]]) -> None:
        """Run resources that waited for their cluster, concurrently (their items join the same
        batches); the passwords of the KafkaUsers among them are read first (prefetch_passwords)."""
        await self.prefetch_passwords(parked)
        await asyncio.gather(*(self._rerun(body) for body in parked))
        self._prefetched.clear()  # those a rerun did not use (another cluster's, read again: harmless)

    async def prefetch_passwords(self, bodies: Iterable[Mapping[str, Any]]) -> None:
        """Read the passwords of many KafkaUsers about to run together (the waiting room) before
        any of them runs: then they reach the engine at the same moment and their credentials
        share one AlterUserScramCredentials request, instead of trickling in behind their Secret
        reads (1,000 users: 14 requests before, see docs/benchmarks.md)."""
        users = [(b, m) for b in bodies if b.get("kind") == KAFKA_USER
                 and isinstance(m := check_custom_resource(b).resource, KafkaUser) and m.authentication is not None]
        if not users:
            return
        reads = await asyncio.gather(*(read_password(self.clusters.reader, m, b) for b, m in users))
        self._prefetched.update({uid_of(b): read for (b, _), read in zip(users, reads)})

    def seed_quota_keys(self, context: ClusterContext, model: Any, body: Mapping[str, Any]) -> None:
        owner = principal_owner(model)
        if owner is None or context.engine is None:
            return
        key = context.engine.state_key()
        if owner in context.store.load(key).owners:
            return
        keys = status_of(body).get(QUOTA_KEYS) or []
        if keys:
            context.store.update(key, {owner: {k: None for k in keys if isinstance(k, str)}})

    async def principal_inputs(self, context: ClusterContext, model: Any, body: Mapping[str, Any]) -> PrincipalInputs:
        """Read the password (and seed the ownership store from the status, see the module doc)."""
        if not isinstance(model, (KafkaUser, KafkaClientQuota)):
            return PrincipalInputs()
        self.seed_quota_keys(context, model, body)
        if isinstance(model, KafkaClientQuota):
            return PrincipalInputs(fields={"entity": model.entity_text})
        fields: dict[str, Any] = {"principal": model.principal}
        if model.authentication is None:
            return PrincipalInputs(fields=fields)
        auth = model.authentication
        fields.update(secretName=auth.secret_name, mechanism=auth.type.sasl_name, iterations=auth.iterations)
        read = self._prefetched.pop(uid_of(body), None) or await read_password(self.clusters.reader, model, body)
        if isinstance(read, PasswordProblem):
            return PrincipalInputs(fields=fields, problem=read)
        await self.seed_passwords(context, [(model, read, body)])
        previous = status_of(body).get("secretName")
        if isinstance(previous, str) and previous != auth.secret_name:  # the spec names another Secret now
            await release_user_secret(self.clusters.reader, {**body, "spec": {"authentication": {
                "passwordSecretRef": {"name": previous}}}}, self.catalog.resources(context.key),
                keep=self.clusters.secrets_in_use((body.get("metadata") or {}).get("namespace")))
        return PrincipalInputs({model.user_name: read.value}, fields, {PASSWORD_VERSION: read.version})

    async def seed_passwords(self, context: ClusterContext,
                             users: Iterable[tuple[KafkaUser, Password, Mapping[str, Any]]]) -> None:
        """For each user whose status says the Secret's current version was applied and whose
        fingerprint the store lacks (a restart): a fresh fingerprint of that password. PBKDF2, 1-2 ms
        each: all of them in one thread, off the event loop."""
        if context.engine is None:
            return
        key = context.engine.state_key()
        owners = context.store.load(key).owners
        todo = []
        for user, password, body in users:
            assert user.authentication is not None
            mechanism = user.authentication.type.sasl_name
            owner = scram_owner(user.user_name)
            if status_of(body).get(PASSWORD_VERSION) == password.version and mechanism not in owners.get(owner, {}):
                todo.append((owner, mechanism, password.value))
        if not todo:
            return
        prints = await asyncio.to_thread(lambda: [password_fingerprint(value) for _, _, value in todo])
        owners = context.store.load(key).owners
        changes: dict[str, dict[str, str | None]] = {}
        for (owner, mechanism, _), fingerprint in zip(todo, prints):
            changes.setdefault(owner, dict(owners.get(owner, {})))[mechanism] = fingerprint
        context.store.update(key, changes)

    def principal_fields(self, context: ClusterContext, model: Any, inputs: PrincipalInputs, ok: bool) -> dict[str, Any]:
        """The status fields of a reconciled KafkaUser/KafkaClientQuota: the Secret's version only
        when Kafka took it; the quota keys kafkaops set (ownership that survives a restart)."""
        fields = {**inputs.fields, **(inputs.applied_fields if ok else {})}
        owner = principal_owner(model)
        if owner is not None and context.engine is not None:
            fields[QUOTA_KEYS] = sorted(context.store.load(context.engine.state_key()).keys(owner))
        return fields

    async def resync_passwords(self, context: ClusterContext, chosen: Mapping[Any, tuple[Mapping[str, Any], Any]]
                               ) -> tuple[dict[str, Secret], list[Any]]:
        """The passwords of the settled users of a resync (their Secrets read by name, concurrently)
        and the sources of users to reconcile on their own instead: their Secret changed (a
        rotation: the reconcile writes the new version to the status) or cannot be read."""
        users = [(source, body, model) for source, (body, model) in chosen.items()
                 if isinstance(model, KafkaUser) and model.authentication is not None]
        if not users:
            return {}, []
        reads = await asyncio.gather(*(read_password(self.clusters.reader, model, body) for _, body, model in users))
        passwords: dict[str, Secret] = {}
        current: list[tuple[KafkaUser, Password, Mapping[str, Any]]] = []
        apart: list[Any] = []
        for (source, body, model), read in zip(users, reads):
            if isinstance(read, Password) and status_of(body).get(PASSWORD_VERSION) == read.version:
                passwords[model.user_name] = read.value
                current.append((model, read, body))
            else:
                apart.append(source)
        await self.seed_passwords(context, current)
        return passwords, apart


def secret_still_used(name: str, namespace: str | None, uid: str, bodies: Iterable[Mapping[str, Any]]) -> bool:
    """Whether another KafkaUser of the namespace references Secret `name` (passwordSecretRef)."""
    for body in bodies:
        metadata = body.get("metadata") or {}
        if body.get("kind") != KAFKA_USER or metadata.get("uid") == uid or metadata.get("namespace") != namespace:
            continue
        if referenced_secret(body) == name:
            return True
    return False


def decode_secret(obj: Mapping[str, Any]) -> SecretObject:
    """A Secret as the API answers it (JSON) -> SecretObject."""
    meta = obj.get("metadata") or {}
    return SecretObject(meta.get("namespace"), meta.get("name"), str(meta.get("uid")), str(meta.get("resourceVersion")),
                        {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()},
                        frozenset(str(o.get("uid")) for o in (meta.get("ownerReferences") or ())),
                        tuple(meta.get("finalizers") or ()))


def referenced_secret(body: Mapping[str, Any]) -> str | None:
    ref = (((body.get("spec") or {}).get("authentication") or {}).get("passwordSecretRef")) or {}
    return ref.get("name") if isinstance(ref.get("name"), str) else None


async def release_user_secret(api: Any, body: Mapping[str, Any], others: Iterable[Mapping[str, Any]],
                              keep: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """A KafkaUser let go: the finalizer leaves its referenced Secret unless another KafkaUser of
    the namespace still references it, or it is in `keep` (a KafkaCluster logs in with it)."""
    name = referenced_secret(body)
    metadata = body.get("metadata") or {}
    if name is None or name in keep or not hasattr(api, "release_secret"):
        return
    if secret_still_used(name, metadata.get("namespace"), str(metadata.get("uid")), others):
        return
    try:
        await api.release_secret(metadata.get("namespace"), name)
    except Exception as exc:  # noqa: BLE001 - the Secret keeps a finalizer a person can remove
        log.warning("Secret %s/%s: removing the finalizer %s failed (%s)", metadata.get("namespace"), name,
                    SECRET_FINALIZER, type(exc).__name__)
