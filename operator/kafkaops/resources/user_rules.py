"""Semantic rules of KafkaUser and KafkaClientQuota (what their JSON Schemas cannot say).

Quota keys are checked per entity type as Kafka does (QuotaConfigs): user and client-id entities
take producer_byte_rate, consumer_byte_rate, request_percentage and controller_mutation_rate; an
ip entity takes connection_creation_rate only; byte rates and connection rates are whole numbers.
A KafkaUser's inline ACL rules get exactly KafkaAcl's rules (acl_rules.py).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kafkaops.resources.acl_rules import check_acl_entries, check_principal
from kafkaops.resources.issues import Finding, error, join_path
from kafkaops.resources.users import CLIENT_QUOTA_KEYS, ENTITY_FIELDS, INTEGER_QUOTA_KEYS, IP_QUOTA_KEYS

PRINCIPAL_NOT_USER = "PrincipalNotUser"
SECRET_NAME_WITH_PASSWORD_REF = "SecretNameWithPasswordRef"
QUOTA_NOT_INTEGER = "QuotaNotInteger"
QUOTA_KEY_NOT_VALID_FOR_ENTITY = "QuotaKeyNotValidForEntity"
CONFLICTING_QUOTA_ENTITY = "ConflictingQuotaEntity"
EMPTY_QUOTA_ENTITY = "EmptyQuotaEntity"
INVALID_QUOTA_ENTITY = "InvalidQuotaEntity"
INVALID_IP_ADDRESS = "InvalidIpAddress"

_MAX_LONG = 2**63 - 1


def user_principal(body: Mapping[str, Any]) -> str | None:
    """A KafkaUser's principal: spec.principal, else User:<metadata.name> (raw input, defensively)."""
    spec = body.get("spec") if isinstance(body.get("spec"), Mapping) else {}
    if isinstance(spec.get("principal"), str) and spec["principal"]:
        return str(spec["principal"])
    metadata = body.get("metadata") if isinstance(body.get("metadata"), Mapping) else {}
    name = metadata.get("name")
    return f"User:{name}" if isinstance(name, str) and name else None


def check_user(spec: Mapping[str, Any], body: Mapping[str, Any]) -> list[Finding]:
    findings = check_principal(spec.get("principal"), "spec.principal")
    principal = user_principal(body)
    if principal is not None and not findings and not principal.startswith("User:"):
        needs = [field for field in ("authentication", "quotas") if field in spec]
        if needs:
            findings.append(error("spec.principal", f"{principal!r} is not a User principal: SCRAM credentials and "
                                                    f"user quotas ({' and '.join(needs)}) belong to User:<name>",
                                  PRINCIPAL_NOT_USER))
    auth = spec.get("authentication")
    if isinstance(auth, Mapping) and "passwordSecretRef" in auth and "secretName" in auth:
        findings.append(error("spec.authentication.secretName",
                              "secretName names the Secret the operator generates; with passwordSecretRef the "
                              "password comes from that Secret: give one or the other", SECRET_NAME_WITH_PASSWORD_REF))
    quotas = spec.get("quotas")
    if isinstance(quotas, Mapping):
        findings.extend(_check_quota_values(quotas, CLIENT_QUOTA_KEYS, "a user"))
    acls = spec.get("acls")
    if isinstance(acls, list):
        findings.extend(check_acl_entries(acls, "spec.acls"))
    return findings


def check_client_quota(spec: Mapping[str, Any], body: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    entity = spec.get("entity")
    types: list[str] = []
    if isinstance(entity, Mapping):
        for name_field, entity_type, default_field in ENTITY_FIELDS:
            named, default = name_field in entity, entity.get(default_field) is True
            if named and default:
                findings.append(error(join_path("spec.entity", default_field),
                                      f"{name_field} and {default_field} both given: the entity is either one "
                                      f"{entity_type} or the default {entity_type}", CONFLICTING_QUOTA_ENTITY))
            if named or default:
                types.append(entity_type)
        ip = entity.get("ip")
        if isinstance(ip, str) and ip:
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                findings.append(error("spec.entity.ip", f"{ip!r} is not an IP address", INVALID_IP_ADDRESS))
        if not types and not findings:
            findings.append(error("spec.entity", "no entity: give user, clientId or ip (or userDefault, "
                                                 "clientIdDefault or ipDefault: true)", EMPTY_QUOTA_ENTITY))
        elif "ip" in types and len(types) > 1:
            findings.append(error("spec.entity", "an ip entity stands alone: Kafka does not combine ip with user or "
                                                 "clientId", INVALID_QUOTA_ENTITY))
    quotas = spec.get("quotas")
    if isinstance(quotas, Mapping) and types:
        if types == ["ip"]:
            findings.extend(_check_quota_values(quotas, IP_QUOTA_KEYS, "an ip"))
        else:
            findings.extend(_check_quota_values(quotas, CLIENT_QUOTA_KEYS, f"a {'+'.join(types)}"))
    return findings


def _check_quota_values(quotas: Mapping[Any, Any], allowed: tuple[str, ...], entity: str) -> list[Finding]:
    findings: list[Finding] = []
    for key, value in quotas.items():
        path = join_path("spec.quotas", str(key))
        if key not in CLIENT_QUOTA_KEYS + IP_QUOTA_KEYS:
            continue  # the schema names it
        if key not in allowed:
            findings.append(error(path, f"{key} does not apply to {entity} entity (Kafka takes "
                                        f"{', '.join(allowed)} there)", QUOTA_KEY_NOT_VALID_FOR_ENTITY))
            continue
        if key in INTEGER_QUOTA_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool):
            if value != int(value) or value > _MAX_LONG:
                findings.append(error(path, f"{value!r}: {key} is a whole number", QUOTA_NOT_INTEGER))
    return findings
