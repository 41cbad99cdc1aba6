"""Discovery documents as kube-apiserver serves them, from the registry (pure functions, no HTTP).

Two shapes:

- the legacy one: `/api` (APIVersions), `/apis` (APIGroupList), `/apis/G` (APIGroup),
  `/api/v1` and `/apis/G/V` (APIResourceList). Subresources appear as `name/status` entries with
  only the subresource's verbs and no short names or categories, as on a real server: clients
  skip them when they resolve a name, a short name or a category;
- the aggregated one (`application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`),
  which kubectl >= 1.30 asks `/api` and `/apis` for: one document per root with every group,
  version and resource, subresources nested inside their resource.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .resources import VERBS, ResourceDef

SUBRESOURCE_VERBS = ("get", "patch", "update")
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
SERVER_VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-kafkaops-emulator", "gitCommit": "",
                  "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23",
                  "compiler": "gc", "platform": "linux/amd64"}


def wants_aggregated(accept: str) -> str | None:
    """The aggregated media type the Accept header asks for first, or None for the legacy shape."""
    for part in accept.split(","):
        params = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in part.split(";")[1:])}
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList":
            if params.get("v") == "v2":
                return AGGREGATED_V2
            if params.get("v") == "v2beta1":
                return AGGREGATED_V2BETA1
    return None


def _groups(defs: Iterable[ResourceDef]) -> dict[str, dict[str, list[ResourceDef]]]:
    """group -> version -> resources, in registration order (built-ins first, then CRDs)."""
    groups: dict[str, dict[str, list[ResourceDef]]] = {}
    for rdef in defs:
        groups.setdefault(rdef.group, {}).setdefault(rdef.version, []).append(rdef)
    return groups


def _preferred(versions: dict[str, list[ResourceDef]]) -> str:
    """The storage version if all share one (CRDs), else the first served."""
    storage = {d.storage_version for ds in versions.values() for d in ds if d.custom}
    if len(storage) == 1 and next(iter(storage)) in versions:
        return next(iter(storage))
    return next(iter(versions))


def _group_document(group: str, versions: dict[str, list[ResourceDef]]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    preferred = _preferred(versions)
    return {"name": group, "versions": listed,
            "preferredVersion": {"groupVersion": f"{group}/{preferred}", "version": preferred}}


def api_versions() -> dict[str, Any]:
    """`/api`."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def api_group_list(defs: Iterable[ResourceDef]) -> dict[str, Any]:
    """`/apis`."""
    groups = [_group_document(g, vs) for g, vs in _groups(defs).items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(defs: Iterable[ResourceDef], group: str) -> dict[str, Any] | None:
    """`/apis/G`, or None if no such group is served."""
    versions = _groups(defs).get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_document(group, versions)}


def resource_list(defs: Iterable[ResourceDef], group: str, version: str) -> dict[str, Any] | None:
    """`/api/v1` or `/apis/G/V`, or None if that group/version is not served."""
    served = _groups(defs).get(group, {}).get(version)
    if not served:
        return None
    entries: list[dict[str, Any]] = []
    for rdef in served:
        entry: dict[str, Any] = {"name": rdef.plural, "singularName": rdef.singular or rdef.kind.lower(),
                                 "namespaced": rdef.namespaced, "kind": rdef.kind, "verbs": list(VERBS)}
        if rdef.short_names:
            entry["shortNames"] = list(rdef.short_names)
        if rdef.categories:
            entry["categories"] = list(rdef.categories)
        entries.append(entry)
        for sub in sorted(rdef.subresources):
            entries.append({"name": f"{rdef.plural}/{sub}", "singularName": "", "namespaced": rdef.namespaced,
                            "kind": rdef.kind, "verbs": list(SUBRESOURCE_VERBS)})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": entries}


def _aggregated_resource(rdef: ResourceDef) -> dict[str, Any]:
    kind = {"group": rdef.group, "version": rdef.version, "kind": rdef.kind}
    entry: dict[str, Any] = {"resource": rdef.plural, "responseKind": kind,
                             "scope": "Namespaced" if rdef.namespaced else "Cluster",
                             "singularResource": rdef.singular or rdef.kind.lower(), "verbs": list(VERBS)}
    if rdef.short_names:
        entry["shortNames"] = list(rdef.short_names)
    if rdef.categories:
        entry["categories"] = list(rdef.categories)
    if rdef.subresources:
        entry["subresources"] = [{"subresource": sub, "responseKind": kind, "verbs": list(SUBRESOURCE_VERBS)}
                                 for sub in sorted(rdef.subresources)]
    return entry


def aggregated(defs: Iterable[ResourceDef], *, core: bool, media_type: str = AGGREGATED_V2) -> dict[str, Any]:
    """`/api` (core=True) or `/apis` in the aggregated shape."""
    items = []
    for group, versions in _groups(defs).items():
        if bool(group) == core:
            continue
        preferred = _preferred(versions)
        ordered = [preferred, *(v for v in versions if v != preferred)]
        items.append({
            "metadata": {"name": group} if group else {},
            "versions": [{"version": v, "freshness": "Current",
                          "resources": [_aggregated_resource(d) for d in versions[v]]} for v in ordered],
        })
    api_version = "apidiscovery.k8s.io/v2beta1" if media_type == AGGREGATED_V2BETA1 else "apidiscovery.k8s.io/v2"
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items}
