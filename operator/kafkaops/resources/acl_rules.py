"""The rules of ACL rules: one principal's list of ACL entries, as KafkaAcl declares them and a
KafkaUser declares its inline `acls` (one implementation for both kinds, so they behave alike).

Reads the raw manifest defensively (a document that also breaks the schema still gets every rule
that applies) and returns Findings with the field path and a CamelCase rule name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkaops.resources.acl import (
    CLUSTER_RESOURCE_NAME,
    VALID_OPERATIONS,
    WILDCARD,
    AclOperation,
    ResourceType,
    host_problem,
    principal_problem,
)
from kafkaops.resources.issues import Finding, error, join_path, warning

INVALID_PRINCIPAL = "InvalidPrincipal"
INVALID_ACL_HOST = "InvalidAclHost"
OPERATION_NOT_VALID = "OperationNotValidForResource"
INVALID_CLUSTER_RESOURCE_NAME = "InvalidClusterResourceName"
DUPLICATE_ACL_BINDING = "DuplicateAclBinding"
REDUNDANT_ACL_OPERATION = "RedundantAclOperation"
WILDCARD_PREFIXED = "WildcardWithPrefixedPattern"

_RESOURCE_TYPES = frozenset(t.value for t in ResourceType)
_OPERATIONS = frozenset(op.value for op in AclOperation)


def check_principal(principal: Any, path: str) -> list[Finding]:
    if isinstance(principal, str) and principal and (problem := principal_problem(principal)):
        return [error(path, problem, INVALID_PRINCIPAL)]
    return []


def check_acl_rules(spec: Mapping[str, Any], principal_path: str, acls_path: str) -> list[Finding]:
    """The principal at `principal_path` (None/absent: not checked here) and the entries at `acls_path`."""
    findings = check_principal(spec.get(principal_path.rsplit(".", 1)[-1]), principal_path)
    acls = spec.get(acls_path.rsplit(".", 1)[-1])
    if isinstance(acls, list):
        findings.extend(check_acl_entries(acls, acls_path))
    return findings


def check_acl_entries(acls: list[Any], acls_path: str) -> list[Finding]:
    findings: list[Finding] = []
    seen: dict[tuple[Any, ...], str] = {}
    for i, entry in enumerate(acls):
        if not isinstance(entry, Mapping):
            continue
        base = join_path(acls_path, i)
        resource = entry.get("resource") if isinstance(entry.get("resource"), Mapping) else {}
        type_text = resource.get("type") if isinstance(resource.get("type"), str) else None
        resource_type = ResourceType(type_text) if type_text in _RESOURCE_TYPES else None
        name = resource.get("name") if isinstance(resource.get("name"), str) else None
        pattern = resource.get("patternType", "Literal")
        if resource_type == ResourceType.CLUSTER and name is not None and name != CLUSTER_RESOURCE_NAME:
            findings.append(error(join_path(base, "resource", "name"),
                                  f"a Cluster resource is always named {CLUSTER_RESOURCE_NAME!r}, not {name!r}",
                                  INVALID_CLUSTER_RESOURCE_NAME))
        if name == WILDCARD and pattern == "Prefixed":
            findings.append(warning(join_path(base, "resource", "name"),
                                    "'*' with patternType Prefixed matches only names starting with '*'; "
                                    "use Literal for every resource", WILDCARD_PREFIXED))
        host = entry.get("host") if isinstance(entry.get("host"), str) else None
        if host is not None and (problem := host_problem(host)):
            findings.append(error(join_path(base, "host"), problem, INVALID_ACL_HOST))
        operations = entry.get("operations")
        if not isinstance(operations, list):
            continue
        if "All" in operations and len(set(operations)) > 1:
            findings.append(warning(join_path(base, "operations"),
                                    "All already grants every operation; the others are redundant",
                                    REDUNDANT_ACL_OPERATION))
        for j, op in enumerate(operations):
            if not isinstance(op, str) or op not in _OPERATIONS:
                continue
            path = join_path(base, "operations", j)
            if resource_type is not None and AclOperation(op) not in VALID_OPERATIONS[resource_type]:
                allowed = ", ".join(sorted(o.value for o in VALID_OPERATIONS[resource_type]))
                findings.append(error(path, f"{op} does not apply to a {resource_type} resource (valid: {allowed})",
                                      OPERATION_NOT_VALID))
            key = (type_text, name, pattern, host or "*", op, entry.get("permission", "Allow"))
            if key in seen:
                findings.append(warning(path, f"the same binding is already listed at {seen[key]}",
                                        DUPLICATE_ACL_BINDING))
            else:
                seen[key] = path
    return findings
