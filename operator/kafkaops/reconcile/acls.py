"""The one place where manifest ACL bindings and wire ACL bindings meet.

`resources.AclBinding` speaks the manifests' vocabulary (`Topic`, `Read`,
`Prefixed`); `kafka.AclBinding` carries Kafka's wire codes. The engine plans
in the manifest vocabulary and converts at the edge, both ways.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from kafkaops import kafka
from kafkaops.resources import acl as manifest

_RESOURCE = {t: kafka.ResourceType(t.code) for t in manifest.ResourceType}
_OPERATION = {o: kafka.AclOperation(o.code) for o in manifest.AclOperation}
_PATTERN = {p: kafka.PatternType(p.code) for p in manifest.PatternType}
_PERMISSION = {p: kafka.AclPermission(p.code) for p in manifest.AclPermission}

_RESOURCE_BACK = {v: k for k, v in _RESOURCE.items()}
_OPERATION_BACK = {v: k for k, v in _OPERATION.items()}
_PATTERN_BACK = {v: k for k, v in _PATTERN.items()}
_PERMISSION_BACK = {v: k for k, v in _PERMISSION.items()}


def to_wire(binding: manifest.AclBinding) -> kafka.AclBinding:
    return kafka.AclBinding(
        _RESOURCE[binding.resource_type],
        binding.resource_name,
        _PATTERN[binding.pattern_type],
        binding.principal,
        binding.host,
        _OPERATION[binding.operation],
        _PERMISSION[binding.permission],
    )


def from_wire(binding: kafka.AclBinding) -> manifest.AclBinding | None:
    """The manifest form of a binding read from Kafka; None for what manifests cannot declare
    (resource type USER, pattern MATCH/ANY, operation ANY/UNKNOWN)."""
    try:
        return manifest.AclBinding(
            _RESOURCE_BACK[kafka.ResourceType(binding.resource_type)],
            binding.resource_name,
            _PATTERN_BACK[kafka.PatternType(binding.pattern_type)],
            binding.principal,
            binding.host,
            _OPERATION_BACK[kafka.AclOperation(binding.operation)],
            _PERMISSION_BACK[kafka.AclPermission(binding.permission)],
        )
    except (KeyError, ValueError):
        return None


def exact_filter(binding: manifest.AclBinding) -> kafka.AclBindingFilter:
    """A DeleteAcls filter matching exactly this binding and nothing else."""
    return kafka.AclBindingFilter.exact(to_wire(binding))


def split_acls(bindings: Iterable[kafka.AclBinding]) -> tuple[dict[str, frozenset[manifest.AclBinding]], tuple[kafka.AclBinding, ...]]:
    """Wire bindings -> (manifest bindings by principal, the bindings manifests cannot express).

    The planner cannot act on the second kind; the snapshot counts them and the export names them."""
    by_principal: dict[str, set[manifest.AclBinding]] = defaultdict(set)
    unmapped: list[kafka.AclBinding] = []
    for wire in bindings:
        binding = from_wire(wire)
        if binding is None:
            unmapped.append(wire)
        else:
            by_principal[binding.principal].add(binding)
    return {p: frozenset(b) for p, b in by_principal.items()}, tuple(unmapped)
