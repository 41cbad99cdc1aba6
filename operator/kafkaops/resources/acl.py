"""Kafka ACL vocabulary: resource types, operations, pattern types, permissions, and AclBinding.

The enum values are the spellings used in manifests; `.code` is Kafka's wire
code (AclResourceType, AclOperation, PatternType, AclPermissionType).
"""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from types import MappingProxyType

from kafkaops.frozen import frozen


class ResourceType(StrEnum):
    TOPIC = "Topic"
    GROUP = "Group"
    CLUSTER = "Cluster"
    TRANSACTIONAL_ID = "TransactionalId"
    DELEGATION_TOKEN = "DelegationToken"

    @property
    def code(self) -> int:
        return _RESOURCE_CODES[self]


class AclOperation(StrEnum):
    ALL = "All"
    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    CLUSTER_ACTION = "ClusterAction"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"
    IDEMPOTENT_WRITE = "IdempotentWrite"
    CREATE_TOKENS = "CreateTokens"
    DESCRIBE_TOKENS = "DescribeTokens"

    @property
    def code(self) -> int:
        return _OPERATION_CODES[self]


class PatternType(StrEnum):
    LITERAL = "Literal"
    PREFIXED = "Prefixed"

    @property
    def code(self) -> int:
        return {PatternType.LITERAL: 3, PatternType.PREFIXED: 4}[self]


class AclPermission(StrEnum):
    ALLOW = "Allow"
    DENY = "Deny"

    @property
    def code(self) -> int:
        return {AclPermission.DENY: 2, AclPermission.ALLOW: 3}[self]


_RESOURCE_CODES = {
    ResourceType.TOPIC: 2,
    ResourceType.GROUP: 3,
    ResourceType.CLUSTER: 4,
    ResourceType.TRANSACTIONAL_ID: 5,
    ResourceType.DELEGATION_TOKEN: 6,
}
_OPERATION_CODES = {
    AclOperation.ALL: 2,
    AclOperation.READ: 3,
    AclOperation.WRITE: 4,
    AclOperation.CREATE: 5,
    AclOperation.DELETE: 6,
    AclOperation.ALTER: 7,
    AclOperation.DESCRIBE: 8,
    AclOperation.CLUSTER_ACTION: 9,
    AclOperation.DESCRIBE_CONFIGS: 10,
    AclOperation.ALTER_CONFIGS: 11,
    AclOperation.IDEMPOTENT_WRITE: 12,
    AclOperation.CREATE_TOKENS: 13,
    AclOperation.DESCRIBE_TOKENS: 14,
}

_O = AclOperation
# Kafka's matrix of the operations that mean something on each resource type.
VALID_OPERATIONS: MappingProxyType[ResourceType, frozenset[AclOperation]] = MappingProxyType({
    ResourceType.TOPIC: frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DELETE, _O.ALTER, _O.DESCRIBE,
                                   _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.ALL}),
    ResourceType.GROUP: frozenset({_O.READ, _O.DESCRIBE, _O.DELETE, _O.ALL}),
    ResourceType.CLUSTER: frozenset({_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
                                     _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE, _O.ALL}),
    ResourceType.TRANSACTIONAL_ID: frozenset({_O.DESCRIBE, _O.WRITE, _O.ALL}),
    ResourceType.DELEGATION_TOKEN: frozenset({_O.DESCRIBE, _O.ALL}),
})

CLUSTER_RESOURCE_NAME = "kafka-cluster"
WILDCARD = "*"


@frozen(order=True)
class AclBinding:
    """One Kafka ACL binding: a single operation for a principal on a resource pattern."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission

    def __str__(self) -> str:
        return (f"{self.permission} {self.principal} {self.operation} on {self.resource_type}:"
                f"{self.resource_name} ({self.pattern_type}) from {self.host}")


def principal_problem(principal: str) -> str | None:
    """Why `principal` is not of the form Type:name, or None."""
    kind, sep, name = principal.partition(":")
    if not sep:
        return f"{principal!r} is not Type:name (e.g. User:{principal})"
    if not kind.strip() or kind != kind.strip():
        return f"{principal!r} has an empty or padded principal type before ':'"
    if not name.strip():
        return f"{principal!r} has an empty name after ':'"
    return None


def host_problem(host: str) -> str | None:
    """Why `host` is neither * nor an IP address, or None."""
    if host == WILDCARD:
        return None
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return f"{host!r} is neither * nor an IP address (Kafka matches ACL hosts by IP, not by name)"
    return None
