"""export of users and client quotas: KafkaUser manifests for the SCRAM credentials a cluster
holds, KafkaClientQuota manifests for its other quota entities. Pure, like export.py, with the same
contract: plan on the export reports no changes.

- Never a secret: Kafka describes only a credential's mechanism and iterations. A KafkaUser gets a
  `passwordSecretRef` *placeholder* (Secret `<metadata.name>-password`, key `password`) with a YAML
  comment saying so. Planned without that password, an existing credential is kept as it is; once
  the Secret exists, the first apply sets the credential to its password.
- A user with credentials of both mechanisms is exported with SCRAM-SHA-512; the other credential is
  noted and left alone (kafkaops deletes only mechanisms it set).
- The quotas of entity `user=<name>` go into that user's KafkaUser when one is exported; every
  other entity (client-id, user + client-id, defaults, ip) gets a KafkaClientQuota.
- ACL bindings stay with the KafkaAcl export (a KafkaUser without `acls` leaves them to it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kafkaops.kafka import QuotaEntity, ScramCredentialInfo, ScramMechanism
from kafkaops.reconcile.export_names import document_errors, is_k8s_name, manifest, principal_resource_names, problems_text
from kafkaops.reconcile.observed import ObservedState
from kafkaops.resources.kinds import KAFKA_CLIENT_QUOTA, KAFKA_USER
from kafkaops.resources.users import DEFAULT_ITERATIONS, ENTITY_FIELDS, INTEGER_QUOTA_KEYS

PASSWORD_PLACEHOLDER_COMMENT = ("placeholder: create this Secret with the user's password before applying "
                                "(kafkaops never exports passwords)")
_PLACEHOLDER_LINE = re.compile(r"^( *)passwordSecretRef:$", re.M)


def _value(key: str, value: float) -> int | float:
    return int(value) if key in INTEGER_QUOTA_KEYS and float(value).is_integer() else value


def _quotas(values: Mapping[str, float]) -> dict[str, int | float]:
    return {key: _value(key, values[key]) for key in sorted(values)}


def user_resource_names(users: list[str]) -> dict[str, str]:
    """metadata.name per SCRAM user: the user name itself when it is a valid Kubernetes name (then the
    principal User:<name> needs no spec.principal), else a sanitised form with a hash."""
    kept = {user: user for user in users if is_k8s_name(user)}
    others = principal_resource_names(f"User:{u}" for u in users if u not in kept)
    taken = set(kept.values())
    return kept | {u: (name if name not in taken else f"{name}-user") for u in users if u not in kept
                   for name in [others[f"User:{u}"]]}


def _choose(infos: tuple[ScramCredentialInfo, ...]) -> ScramCredentialInfo:
    return max(infos, key=lambda info: info.mechanism is ScramMechanism.SCRAM_SHA_512)


def user_documents(observed: ObservedState, cluster_name: str, notes: list[str],
                   with_quotas: bool = True) -> list[dict[str, Any]]:
    """A KafkaUser per user with a SCRAM credential (its `user=<name>` quotas included when
    `with_quotas` and they were read)."""
    if observed.scram is None:  # not read (not asked for), or the read failed
        if (error := observed.scram_error) is not None:
            notes.append(f"users not exported: their SCRAM credentials could not be read ({error})")
        return []
    users = sorted(u for u, infos in observed.scram.items() if infos)
    names = user_resource_names(users)
    out: list[dict[str, Any]] = []
    for user in users:
        infos = tuple(i for i in observed.scram[user] if i.mechanism is not ScramMechanism.UNKNOWN)
        if not infos:
            notes.append(f"user {user} not exported: its credential's mechanism is unknown to kafkaops")
            continue
        chosen = _choose(infos)
        for other in infos:
            if other is not chosen:
                notes.append(f"user {user}: its {other.mechanism.sasl_name} credential is not exported (a KafkaUser "
                             f"declares one mechanism; kafkaops leaves the other alone)")
        name = names[user]
        auth: dict[str, Any] = {"type": chosen.mechanism.sasl_name.lower(),
                                "passwordSecretRef": {"name": f"{name}-password"[:253], "key": "password"}}
        if chosen.iterations != DEFAULT_ITERATIONS:
            auth["iterations"] = chosen.iterations
        spec: dict[str, Any] = {"clusterRef": {"name": cluster_name}}
        if name != user:
            spec["principal"] = f"User:{user}"
        spec["authentication"] = auth
        quotas = (observed.quotas or {}).get(QuotaEntity.of(user=user)) if with_quotas else None
        if quotas:
            spec["quotas"] = _quotas(quotas)
        body = manifest(KAFKA_USER, name, spec)
        if errors := document_errors(body):
            notes.append(f"user {user} not exported: kafkaops validate would reject it ({problems_text(errors)})")
            continue
        out.append(body)
    return out


def quota_documents(observed: ObservedState, cluster_name: str, notes: list[str],
                    skip_users: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """A KafkaClientQuota per quota entity, but `user=<name>` entities of `skip_users` (exported
    inside their KafkaUser)."""
    if observed.quotas is None:  # not read (not asked for), or the read failed
        if (error := observed.quotas_error) is not None:
            notes.append(f"client quotas not exported: they could not be read ({error})")
        return []
    entities = sorted((e for e, values in observed.quotas.items() if values
                       and not (e.types == ("user",) and e.name("user") in skip_users)), key=str)
    names = principal_resource_names(f"quota-{e}" for e in entities)
    out: list[dict[str, Any]] = []
    for entity in entities:
        raw: dict[str, Any] = {}
        for name_field, entity_type, default_field in ENTITY_FIELDS:
            if entity.has(entity_type):
                if (value := entity.name(entity_type)) is None:
                    raw[default_field] = True
                else:
                    raw[name_field] = value
        spec = {"clusterRef": {"name": cluster_name}, "entity": raw, "quotas": _quotas(observed.quotas[entity])}
        body = manifest(KAFKA_CLIENT_QUOTA, names[f"quota-{entity}"], spec)
        if errors := document_errors(body):
            notes.append(f"quotas of {entity} not exported: kafkaops validate would reject them "
                         f"({problems_text(errors)}); they stay as they are in Kafka")
            continue
        out.append(body)
    return out


def annotate_placeholders(text: str) -> str:
    """YAML text with the placeholder comment above each `passwordSecretRef:` line."""
    return _PLACEHOLDER_LINE.sub(lambda m: f"{m.group(1)}# {PASSWORD_PLACEHOLDER_COMMENT}\n{m.group(0)}", text)
