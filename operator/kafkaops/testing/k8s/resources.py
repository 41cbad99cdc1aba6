"""What the emulator serves: built-in resources, and resources declared by CRD objects."""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import kmock

from . import errors

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceDef:
    """One served group/version/plural, with what the server needs to know about it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    list_kind: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    schema: dict[str, Any] | None = None  # openAPIV3Schema; None: no validation, no pruning
    custom: bool = False  # a custom resource (from a CRD): generation, no unconditional PUT, no SMP
    tracks_generation: bool = False
    storage_version: str = ""  # the version objects are stored in (all versions share one store)
    field_selectors: frozenset[str] = frozenset({"metadata.name", "metadata.namespace"})
    printer_columns: tuple[dict[str, Any], ...] = ()  # a CRD version's additionalPrinterColumns

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @functools.cached_property
    def storage_key(self) -> kmock.resource:
        """The key of this resource's objects in `kmock.ObjectsArray` (the storage version's).
        Built once: kmock.resource() checks its arguments against typing Protocols, and every
        watch event compared it afresh (17 % of the emulator's samples at 2,000 KafkaTopics, py-spy)."""
        return kmock.resource(group=self.group, version=self.storage_version or self.version, plural=self.plural)

    @property
    def group_resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def info(self) -> kmock.ResourceInfo:
        return kmock.ResourceInfo(
            namespaced=self.namespaced, kind=self.kind, singular=self.singular or self.kind.lower(),
            verbs=set(VERBS), shortnames=set(self.short_names), categories=set(self.categories),
            subresources=set(self.subresources))


def _builtin(group: str, version: str, plural: str, kind: str, namespaced: bool, **kwargs: Any) -> ResourceDef:
    return ResourceDef(group=group, version=version, plural=plural, kind=kind, namespaced=namespaced,
                       singular=kind.lower(), list_kind=f"{kind}List", storage_version=version, **kwargs)


CRD_RESOURCE = _builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                        False, short_names=("crd", "crds"), subresources=frozenset({"status"}),
                        tracks_generation=True)
NAMESPACES = _builtin("", "v1", "namespaces", "Namespace", False, short_names=("ns",),
                      subresources=frozenset({"status"}), field_selectors=frozenset({"metadata.name", "status.phase"}))

BUILTINS: tuple[ResourceDef, ...] = (
    NAMESPACES,
    _builtin("", "v1", "secrets", "Secret", True,
             field_selectors=frozenset({"metadata.name", "metadata.namespace", "type"})),
    _builtin("", "v1", "configmaps", "ConfigMap", True, short_names=("cm",)),
    _builtin("", "v1", "serviceaccounts", "ServiceAccount", True, short_names=("sa",)),
    _builtin("", "v1", "events", "Event", True, short_names=("ev",), field_selectors=frozenset({
        "metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.namespace",
        "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"})),
    _builtin("events.k8s.io", "v1", "events", "Event", True, short_names=("ev",)),
    _builtin("coordination.k8s.io", "v1", "leases", "Lease", True),
    CRD_RESOURCE,
    # What manifests/ holds, stored and served generically (no controllers, no kind-specific checks):
    _builtin("", "v1", "services", "Service", True, short_names=("svc",), subresources=frozenset({"status"})),
    _builtin("apps", "v1", "deployments", "Deployment", True, short_names=("deploy",),
             subresources=frozenset({"status"}), tracks_generation=True),
    _builtin("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, short_names=("pdb",),
             subresources=frozenset({"status"}), tracks_generation=True),
    _builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _builtin("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _builtin("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _builtin("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _builtin("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, short_names=("netpol",),
             tracks_generation=True),
)

# kopf's own peering CRDs (as in kopf's docs, peering.yaml): installed by default so that
# `kopf run` without `--standalone` finds its peering resources.
KOPF_PEERING_CRDS: tuple[dict[str, Any], ...] = tuple(
    {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.kopf.dev"},
        "spec": {
            "scope": scope,
            "group": "kopf.dev",
            "names": {"kind": kind, "plural": plural, "singular": plural[:-1]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }},
            }],
        },
    }
    for kind, plural, scope in (("ClusterKopfPeering", "clusterkopfpeerings", "Cluster"),
                                ("KopfPeering", "kopfpeerings", "Namespaced"))
)


def crd_resources(crd: dict[str, Any]) -> list[ResourceDef]:
    """The served versions of a CRD object; 422 if the CRD itself is not acceptable."""
    name = crd.get("metadata", {}).get("name", "")
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural, kind = spec.get("group", ""), names.get("plural", ""), names.get("kind", "")
    causes = []
    for path, value in (("spec.group", group), ("spec.names.plural", plural), ("spec.names.kind", kind)):
        if not value:
            causes.append(errors.cause("FieldValueRequired", path, "Required value"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(errors.cause("FieldValueNotSupported", "spec.scope",
                                   f'Unsupported value: "{spec.get("scope", "")}": supported values: '
                                   '"Cluster", "Namespaced"'))
    if group and plural and name != f"{plural}.{group}":
        causes.append(errors.cause("FieldValueInvalid", "metadata.name",
                                   f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group'))
    versions = spec.get("versions") or []
    storage = [v["name"] for v in versions if v.get("storage")]
    if not versions:
        causes.append(errors.cause("FieldValueRequired", "spec.versions", "Required value"))
    elif len(storage) != 1:
        causes.append(errors.cause("FieldValueInvalid", "spec.versions",
                                   "Invalid value: must have exactly one version marked as storage version"))
    for index, version in enumerate(versions):
        if not (version.get("schema") or {}).get("openAPIV3Schema"):
            causes.append(errors.cause("FieldValueRequired", f"spec.versions[{index}].schema.openAPIV3Schema",
                                       "Required value: schemas are required"))
    if causes:
        raise errors.invalid("CustomResourceDefinition", "apiextensions.k8s.io", name, causes)
    return [
        ResourceDef(
            group=group, version=version["name"], plural=plural, kind=kind,
            namespaced=spec["scope"] == "Namespaced",
            singular=names.get("singular") or kind.lower(), list_kind=names.get("listKind") or f"{kind}List",
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            subresources=frozenset(sub for sub in (version.get("subresources") or {}) if sub == "status"),
            schema=copy.deepcopy(version["schema"]["openAPIV3Schema"]),
            custom=True, tracks_generation=True, storage_version=storage[0],
            printer_columns=tuple(copy.deepcopy(version.get("additionalPrinterColumns") or ())),
        )
        for version in versions if version.get("served", True)
    ]


@dataclass
class ResourceRegistry:
    """Served resources by (group, version, plural); mirrored into kmock's discovery (`resources`)."""

    discovery: kmock.ResourcesArray
    _defs: dict[tuple[str, str, str], ResourceDef] = field(default_factory=dict)

    def add(self, rdef: ResourceDef) -> None:
        self._defs[rdef.group, rdef.version, rdef.plural] = rdef
        self.discovery[kmock.resource(group=rdef.group, version=rdef.version, plural=rdef.plural)] = rdef.info()

    def remove(self, group: str, plural: str) -> list[ResourceDef]:
        gone = [d for key, d in self._defs.items() if key[0] == group and key[2] == plural]
        for rdef in gone:
            del self._defs[rdef.group, rdef.version, rdef.plural]
            resource = kmock.resource(group=rdef.group, version=rdef.version, plural=rdef.plural)
            if resource in self.discovery:
                del self.discovery[resource]
        return gone

    def get(self, group: str | None, version: str | None, plural: str | None) -> ResourceDef | None:
        return self._defs.get((group or "", version or "", plural or ""))

    def versions_of(self, group: str, plural: str) -> list[ResourceDef]:
        return [d for key, d in self._defs.items() if key[0] == group and key[2] == plural]

    def __iter__(self) -> Iterator[ResourceDef]:
        return iter(list(self._defs.values()))
