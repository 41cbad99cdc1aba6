"""Planning the principal kinds: KafkaUser (SCRAM credential, user quotas, inline ACL rules) and
KafkaClientQuota. Pure: no I/O, no clock (a fresh fingerprint salt is the one random input).

Password changes. Kafka stores only a salted hash of a SCRAM password and describes only the
mechanism and iterations, so the planner cannot tell from Kafka whether the password changed. The
caller passes the current password (DesiredState.passwords, by SCRAM user name) and the ownership
store remembers a *fingerprint* of the password kafkaops last set (owner `scram/<user>`, one entry
per mechanism): PBKDF2-HMAC-SHA-256 with a random 16-byte salt and 4096 iterations over a
domain-separated input — as costly to attack as the credential Kafka itself stores, 1 ms to check.
The credential is upserted when Kafka has none for the mechanism, its iterations differ, or the
password does not match the fingerprint (no fingerprint: upserted once, then remembered).

Quotas follow the rule of topic configs: declared keys are set when Kafka holds another value, a
key is removed (None) only when the ownership record says kafkaops set it (owner `quota/<entity>`);
keys set by others are never touched. Inline ACL rules are planned exactly like a KafkaAcl's
(`acl_diff`, which plan_acl uses too).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from typing import Any

from kafkaops.kafka import KafkaError, QuotaAlteration, QuotaEntity, ScramMechanism
from kafkaops.kafka.errors import ErrorCode
from kafkaops.kafka.security import Secret
from kafkaops.reconcile.actions import (
    UNSUPPORTED_FEATURE,
    Action,
    AlterQuotas,
    CreateAcls,
    DeleteAcls,
    DeleteScramCredential,
    FieldChange,
    Problem,
    ResourcePlan,
    Step,
    UpsertScramCredential,
)
from kafkaops.reconcile.observed import ObservedState
from kafkaops.reconcile.ownership import Ownership
from kafkaops.resources.acl import AclBinding
from kafkaops.resources.kinds import KAFKA_CLIENT_QUOTA, KAFKA_USER
from kafkaops.resources.users import KafkaClientQuota, KafkaUser

PASSWORD_UNAVAILABLE = "PasswordUnavailable"
NOT_READ = "ObserveFailed"
FINGERPRINT_ITERATIONS = 4096
_FINGERPRINT_PREFIX = "pbkdf2-sha256"
_DOMAIN = b"kafkaops scram password fingerprint\x00"


def scram_owner(user: str) -> str:
    """The ownership entry of a user's credentials: {mechanism: password fingerprint}."""
    return f"scram/{user}"


def quota_owner(entity: QuotaEntity) -> str:
    """The ownership entry of an entity's quota keys (like a topic's config keys)."""
    return f"quota/{entity}"


def password_fingerprint(password: Secret, salt: bytes | None = None) -> str:
    """`pbkdf2-sha256$<iterations>$<salt hex>$<hash hex>` of a password (never the password)."""
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", _DOMAIN + password.reveal().encode("utf-8"), salt, FINGERPRINT_ITERATIONS)
    return f"{_FINGERPRINT_PREFIX}${FINGERPRINT_ITERATIONS}${salt.hex()}${digest.hex()}"


def password_matches(password: Secret, stored: str | None) -> bool:
    """Whether `stored` (a password_fingerprint) is the fingerprint of `password`."""
    if not stored:
        return False
    try:
        prefix, iterations, salt, digest = stored.split("$")
        if prefix != _FINGERPRINT_PREFIX:
            return False
        actual = hashlib.pbkdf2_hmac("sha256", _DOMAIN + password.reveal().encode("utf-8"), bytes.fromhex(salt),
                                     int(iterations))
        return hmac.compare_digest(bytes.fromhex(digest), actual)
    except ValueError:
        return False


def read_problem(error: KafkaError | None, what: str) -> Problem:
    """A Problem for a read that failed: UnsupportedFeature (naming the API and the versions) for a
    cluster without the API, else the Kafka error."""
    if error is None:
        return Problem(NOT_READ, f"cannot read {what}")
    reason = UNSUPPORTED_FEATURE if error.code == ErrorCode.unsupported_version else error.name
    return Problem(reason, f"cannot read {what}: {error.message or error.name}", error.retriable)


# --- ACLs (KafkaAcl and a KafkaUser's inline rules) ---------------------------------------------


def acl_diff(principal: str, bindings: frozenset[AclBinding], observed: ObservedState
             ) -> tuple[tuple[Step, ...], tuple[FieldChange, ...], bool] | Problem:
    """(steps, changes, whether the principal had bindings) making `principal`'s bindings exactly
    `bindings`: stale ones deleted first, then new ones created (KIP-4 order)."""
    if observed.acls is None:
        return read_problem(observed.acls_error, f"the ACLs of {principal}")
    current = observed.acls.get(principal, frozenset())
    remove = sorted(current - bindings)
    add = sorted(bindings - current)
    steps: list[Step] = []
    if remove:
        steps.append(DeleteAcls(tuple(remove)))
    if add:
        steps.append(CreateAcls(tuple(add)))
    changes = tuple(FieldChange("acl", str(b), None) for b in remove) + tuple(FieldChange("acl", None, str(b)) for b in add)
    return tuple(steps), changes, bool(current)


# --- quotas ---------------------------------------------------------------------------------------


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def quota_ops(entity: QuotaEntity, declared: Mapping[str, float], observed: ObservedState, ownership: Ownership
              ) -> tuple[AlterQuotas | None, tuple[FieldChange, ...]] | Problem:
    """The alteration making `entity`'s quotas hold `declared` (owned keys no longer declared
    removed), or None when Kafka already does."""
    if observed.quotas is None:
        return read_problem(observed.quotas_error, "the client quotas")
    current = observed.quotas.get(entity, {})
    ops: dict[str, float | None] = {}
    changes: list[FieldChange] = []
    for key, value in sorted(declared.items()):
        seen = current.get(key)
        if seen is None or not _same(seen, value):
            ops[key] = value
            changes.append(FieldChange(f"quota.{key}", None if seen is None else _number(seen), _number(value)))
    for key in sorted(ownership.keys(quota_owner(entity)) - set(declared)):
        if key in current:
            ops[key] = None
            changes.append(FieldChange(f"quota.{key}", _number(current[key]), None))
    return (AlterQuotas(QuotaAlteration(entity, ops)) if ops else None), tuple(changes)


# --- KafkaUser --------------------------------------------------------------------------------------


def user_quota_entity(user: KafkaUser) -> QuotaEntity | None:
    return QuotaEntity.of(user=user.user_name) if user.principal.startswith("User:") else None


def _credential_steps(user: KafkaUser, observed: ObservedState, ownership: Ownership, password: Secret | None
                      ) -> tuple[list[Step], list[FieldChange], bool] | Problem:
    auth = user.authentication
    if auth is None:
        return [], [], False
    if observed.scram is None:
        return read_problem(observed.scram_error, f"the SCRAM credentials of {user.principal}")
    mechanism = ScramMechanism.parse(auth.type.sasl_name)
    infos = {info.mechanism: info for info in observed.scram.get(user.user_name, ())}
    owned = ownership.owners.get(scram_owner(user.user_name), {})
    steps: list[Step] = []
    changes: list[FieldChange] = []
    current = infos.get(mechanism)
    label = f"credential.{mechanism.sasl_name}"
    if password is None:
        if current is None:
            origin = ("generated by the operator into Secret" if auth.generated else "from Secret")
            return Problem(PASSWORD_UNAVAILABLE,
                           f"the password of {user.principal} ({origin} {auth.secret_name!r}, key {auth.password_key!r}) "
                           "is not available here, so its credential cannot be created")
    elif current is None or current.iterations != auth.iterations or not password_matches(password, owned.get(mechanism.sasl_name)):
        steps.append(UpsertScramCredential(user.user_name, mechanism, auth.iterations, password,
                                           password_fingerprint(password)))
        if current is None:
            changes.append(FieldChange(label, None, f"{auth.iterations} iterations"))
        elif current.iterations != auth.iterations:
            changes.append(FieldChange(f"{label}.iterations", str(current.iterations), str(auth.iterations)))
        else:
            changes.append(FieldChange(f"{label}.password", "(set)", "(changed)", sensitive=True))
    for other in sorted(infos):
        if other is not mechanism and other.sasl_name in owned:  # a mechanism kafkaops set before
            steps.append(DeleteScramCredential(user.user_name, other))
            changes.append(FieldChange(f"credential.{other.sasl_name}", f"{infos[other].iterations} iterations", None))
    return steps, changes, not infos


def plan_user(user: KafkaUser, observed: ObservedState, ownership: Ownership, password: Secret | None = None
              ) -> ResourcePlan:
    """The credential (upsert when missing, iterations changed or the password changed; other
    mechanisms kafkaops set are deleted), the user quotas and the inline ACL rules of `user`."""
    entity = user_quota_entity(user)
    base = ResourcePlan(user.source, KAFKA_USER, user.principal, Action.NONE,
                        owner=quota_owner(entity) if entity is not None else None,
                        owned_keys=frozenset(user.quotas or ()) if entity is not None else None)
    credential = _credential_steps(user, observed, ownership, password)
    if isinstance(credential, Problem):
        return _with(base, problem=credential)
    steps, changes, created = credential
    wanted_quotas = (user.quotas or {}) if entity is not None and (
        user.quotas is not None or ownership.keys(quota_owner(entity))) else None
    problem = _quota_and_acl_steps(user, entity, wanted_quotas, user.bindings, observed, ownership, steps, changes)
    if problem is not None:
        return _with(base, problem=problem)
    if not steps:
        return base
    return _with(base, action=Action.CREATE if created else Action.UPDATE, changes=tuple(changes), steps=tuple(steps))


def _quota_and_acl_steps(user: KafkaUser, entity: QuotaEntity | None, quotas: Mapping[str, float] | None,
                         bindings: Any, observed: ObservedState, ownership: Ownership,
                         steps: list[Step], changes: list[FieldChange]) -> Problem | None:
    """A user's quota alteration (towards `quotas`; None: leave its quotas alone) and ACL diff
    (towards `bindings`, when it manages ACLs), appended to `steps`/`changes`; or the problem."""
    if entity is not None and quotas is not None:
        altered = quota_ops(entity, quotas, observed, ownership)
        if isinstance(altered, Problem):
            return altered
        if altered[0] is not None:
            steps.append(altered[0])
        changes.extend(altered[1])
    if user.manages_acls:
        acls = acl_diff(user.principal, bindings, observed)
        if isinstance(acls, Problem):
            return acls
        steps.extend(acls[0])
        changes.extend(acls[1])
    return None


def plan_user_removal(user: KafkaUser, observed: ObservedState, ownership: Ownership) -> ResourcePlan:
    """Deleting `user` with a Delete policy: its credential (the declared mechanism and any other
    kafkaops set), the quota keys kafkaops set, and every binding of its principal when it manages ACLs."""
    entity = user_quota_entity(user)
    base = ResourcePlan(user.source, KAFKA_USER, user.principal, Action.NONE,
                        owner=quota_owner(entity) if entity is not None else None,
                        owned_keys=frozenset() if entity is not None else None)
    steps: list[Step] = []
    changes: list[FieldChange] = []
    if user.authentication is not None:
        if observed.scram is None:
            return _with(base, problem=read_problem(observed.scram_error, f"the SCRAM credentials of {user.principal}"))
        owned = ownership.owners.get(scram_owner(user.user_name), {})
        declared = ScramMechanism.parse(user.authentication.type.sasl_name)
        for info in sorted(observed.scram.get(user.user_name, ())):
            if info.mechanism is declared or info.mechanism.sasl_name in owned:
                steps.append(DeleteScramCredential(user.user_name, info.mechanism))
                changes.append(FieldChange(f"credential.{info.mechanism.sasl_name}", f"{info.iterations} iterations", None))
    problem = _quota_and_acl_steps(user, entity, {} if entity is not None and ownership.keys(quota_owner(entity))
                                   else None, frozenset(), observed, ownership, steps, changes)
    if problem is not None:
        return _with(base, problem=problem)
    if not steps:
        return base
    return _with(base, action=Action.DELETE, changes=tuple(changes), steps=tuple(steps))


# --- KafkaClientQuota -----------------------------------------------------------------------------


def client_quota_entity(quota: KafkaClientQuota) -> QuotaEntity:
    return QuotaEntity.from_components(quota.entity)


def plan_client_quota(quota: KafkaClientQuota, observed: ObservedState, ownership: Ownership,
                      removal: bool = False) -> ResourcePlan:
    """The entity's declared quota keys (or, `removal`, none: the keys kafkaops set are removed)."""
    entity = client_quota_entity(quota)
    declared = {} if removal else quota.quotas
    base = ResourcePlan(quota.source, KAFKA_CLIENT_QUOTA, str(entity), Action.NONE, owner=quota_owner(entity),
                        owned_keys=frozenset(declared))
    made = quota_ops(entity, declared, observed, ownership)
    if isinstance(made, Problem):
        return _with(base, problem=made)
    step, changes = made
    if step is None:
        return base
    action = Action.DELETE if removal else (Action.CREATE if entity not in (observed.quotas or {}) else Action.UPDATE)
    return _with(base, action=action, changes=changes, steps=(step,))


def scram_ownership_changes(old: Ownership, done: list[tuple[Step, ...]]) -> dict[str, dict[str, str | None] | None]:
    """The `scram/<user>` entries after an apply: the fingerprint of each password set, mechanisms
    deleted forgotten (`done`: the steps Kafka accepted, per resource)."""
    entries: dict[str, dict[str, str | None]] = {}
    for steps in done:
        for step in steps:
            if isinstance(step, (UpsertScramCredential, DeleteScramCredential)):
                owner = scram_owner(step.user)
                entry = entries.setdefault(owner, dict(old.owners.get(owner, {})))
                if isinstance(step, UpsertScramCredential):
                    entry[step.mechanism.sasl_name] = step.fingerprint
                else:
                    entry.pop(step.mechanism.sasl_name, None)
    return {owner: (entry or None) for owner, entry in entries.items()}


def _with(base: ResourcePlan, *, action: Action | None = None, changes: tuple[FieldChange, ...] | None = None,
          steps: tuple[Step, ...] | None = None, problem: Problem | None = None) -> ResourcePlan:
    return ResourcePlan(base.source, base.kind, base.name, action or base.action,
                        base.changes if changes is None else changes, base.steps if steps is None else steps,
                        problem or base.problem, base.owner, base.owned_keys)
