"""The authorizer of the fake cluster test double: ACL bindings, filters and
Kafka's matching rules (ResourcePatternFilter / AccessControlEntryFilter).
"""

from __future__ import annotations

import enum


# Kafka's wire values and binding records; shared with the client (the noida-db tests keep both
# honest). The double stores what the wire carried: a field may hold an int no enum member has,
# which validate_binding / validate_filter refuse as Kafka does.
from kafkaops.kafka.models import AclBinding, AclOperation, AclPermission, PatternType, ResourceType  # noqa: E402
from kafkaops.kafka.models import AclBindingFilter  # noqa: E402


WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"


def _enum_ok(enum_type: type[enum.IntEnum], value: int, *, allow_any: bool) -> bool:
    try:
        member = enum_type(value)
    except ValueError:
        return False
    if member.name == "UNKNOWN":
        return False
    return allow_any or member.name not in ("ANY", "MATCH")


def validate_binding(binding: AclBinding) -> str | None:
    """Kafka's INVALID_REQUEST message for an ACL that cannot be created, or None."""
    if not _enum_ok(ResourceType, binding.resource_type, allow_any=False):
        return f"Invalid resourceType {binding.resource_type}"
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {binding.pattern_type}"
    if not _enum_ok(AclOperation, binding.operation, allow_any=False):
        return f"Invalid operation {binding.operation}"
    if not _enum_ok(AclPermission, binding.permission, allow_any=False):
        return f"Invalid permissionType {binding.permission}"
    if not binding.resource_name:
        return "Resource name should not be empty"
    if binding.resource_type == ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if ":" not in binding.principal or binding.principal.startswith(":"):
        return (
            f"Could not parse principal from `{binding.principal}` "
            "(no colon is present separating the principal type from the principal name)"
        )
    if not binding.host:
        return "Invalid host: host should not be empty"
    return None


def validate_filter(acl_filter: AclBindingFilter) -> str | None:
    """INVALID_REQUEST message for a filter with UNKNOWN values, or None."""
    checks = (
        (ResourceType, acl_filter.resource_type, "resourceType"),
        (PatternType, acl_filter.pattern_type, "patternType"),
        (AclOperation, acl_filter.operation, "operation"),
        (AclPermission, acl_filter.permission, "permissionType"),
    )
    for enum_type, value, label in checks:
        if not _enum_ok(enum_type, value, allow_any=True):
            return f"Invalid {label} {value} in filter"
    return None


def _name_matches(acl_filter: AclBindingFilter, binding: AclBinding) -> bool:
    name = acl_filter.resource_name
    pattern = acl_filter.pattern_type
    if pattern == PatternType.MATCH:
        if name is None:
            return True
        if binding.pattern_type == PatternType.LITERAL:
            return binding.resource_name in (name, WILDCARD)
        return binding.pattern_type == PatternType.PREFIXED and name.startswith(binding.resource_name)
    if pattern != PatternType.ANY and pattern != binding.pattern_type:
        return False
    return name is None or name == binding.resource_name


def matches(acl_filter: AclBindingFilter, binding: AclBinding) -> bool:
    """Kafka's AclBindingFilter.matches."""
    if acl_filter.resource_type not in (ResourceType.ANY, binding.resource_type):
        return False
    if not _name_matches(acl_filter, binding):
        return False
    if acl_filter.principal is not None and acl_filter.principal != binding.principal:
        return False
    if acl_filter.host is not None and acl_filter.host != binding.host:
        return False
    if acl_filter.operation not in (AclOperation.ANY, binding.operation):
        return False
    return acl_filter.permission in (AclPermission.ANY, binding.permission)


def group_by_resource(bindings: list[AclBinding]) -> dict[tuple[int, str, int], list[AclBinding]]:
    """Bindings grouped by resource pattern, in first-seen order (DescribeAcls shape)."""
    grouped: dict[tuple[int, str, int], list[AclBinding]] = {}
    for binding in bindings:
        key = (binding.resource_type, binding.resource_name, binding.pattern_type)
        grouped.setdefault(key, []).append(binding)
    return grouped
