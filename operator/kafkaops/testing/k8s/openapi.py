"""OpenAPI documents generated from the registry, as kube-apiserver serves them (pure functions).

- `/openapi/v3`: an index of one document per group/version (`api/v1`, `apis/G/V`), each at a
  `serverRelativeURL` with a content hash;
- `/openapi/v3/apis/G/V`: paths for every resource (with `x-kubernetes-group-version-kind` and the
  `fieldValidation` query parameter on PATCH, which is what kubectl >= 1.27 looks for to choose
  server-side field validation) and `components.schemas`: a CRD version's openAPIV3Schema with
  `metadata` referring to ObjectMeta, as the real server publishes it (so `kubectl explain` works);
- `/openapi/v2`: Swagger 2.0 with every kind's schema in JSON; in protobuf (gnostic's
  `openapi.v2.Document`, which kubectl asks for when v3 cannot answer, e.g. for a kind whose CRD
  is created by the same `kubectl apply`) a document with no definitions: kubectl then skips
  client-side validation of those kinds, as a real server's v2 does for a kind it does not know
  yet, and computes strategic merge patches from its compiled-in types.

Built-in kinds get a permissive schema (`x-kubernetes-preserve-unknown-fields`) with their names,
not the real ones: the emulator does not validate built-ins either. Their PATCH operations do not
list `application/strategic-merge-patch+json`, so kubectl computes strategic merge patches from
its compiled-in types, not from these schemas.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from .resources import ResourceDef

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
BUILTIN_PREFIX = {"": "io.k8s.api.core", "apps": "io.k8s.api.apps", "policy": "io.k8s.api.policy",
                  "rbac.authorization.k8s.io": "io.k8s.api.rbac", "networking.k8s.io": "io.k8s.api.networking",
                  "coordination.k8s.io": "io.k8s.api.coordination", "events.k8s.io": "io.k8s.api.events",
                  "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions"}
API_VERSION_DOC = ("APIVersion defines the versioned schema of this representation of an object. Servers should "
                   "convert recognized schemas to the latest internal value, and may reject unrecognized values.")
KIND_DOC = ("Kind is a string value representing the REST resource this object represents. Servers may infer "
            "this from the endpoint the client submits requests to. In CamelCase.")
METADATA_DOC = "Standard object's metadata."
_STR = {"type": "string"}
OBJECT_META_SCHEMA: dict[str, Any] = {
    "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects "
                   "users must create.",
    "type": "object",
    "properties": {
        "name": {**_STR, "description": "Name must be unique within a namespace."},
        "generateName": {**_STR, "description": "An optional prefix used by the server to generate a unique name."},
        "namespace": {**_STR, "description": "Namespace defines the space within which each name must be unique."},
        "labels": {"type": "object", "additionalProperties": {**_STR, "default": ""},
                   "description": "Map of string keys and values that can be used to organize and categorize "
                                  "objects."},
        "annotations": {"type": "object", "additionalProperties": {**_STR, "default": ""},
                        "description": "Annotations is an unstructured key value map stored with a resource."},
        "finalizers": {"type": "array", "items": {**_STR, "default": ""}, "x-kubernetes-list-type": "set",
                       "description": "Must be empty before the object is deleted from the registry."},
        "uid": {**_STR, "description": "UID is the unique in time and space value for this object."},
        "resourceVersion": {**_STR, "description": "An opaque value that represents the internal version of "
                                                   "this object."},
        "generation": {"type": "integer", "format": "int64",
                       "description": "A sequence number representing a specific generation of the desired state."},
        "creationTimestamp": {**_STR, "format": "date-time",
                              "description": "The server time when this object was created."},
        "deletionTimestamp": {**_STR, "format": "date-time",
                              "description": "The time after which this resource will be deleted."},
        "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
        "ownerReferences": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        "managedFields": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    },
}
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")


def schema_name(rdef: ResourceDef) -> str:
    """The component name the real server uses: reversed group for CRDs, io.k8s.api.* for built-ins."""
    if not rdef.custom:
        prefix = BUILTIN_PREFIX.get(rdef.group, "io.k8s.api." + rdef.group.split(".")[0])
        return f"{prefix}.{rdef.version}.{rdef.kind}"
    reversed_group = ".".join(reversed(rdef.group.split(".")))
    return f"{reversed_group}.{rdef.version}.{rdef.kind}"


def _gvk(rdef: ResourceDef) -> dict[str, str]:
    return {"group": rdef.group, "version": rdef.version, "kind": rdef.kind}


def _ref(name: str, version: int) -> str:
    return f"#/components/schemas/{name}" if version == 3 else f"#/definitions/{name}"


def _published_schema(rdef: ResourceDef, version: int) -> dict[str, Any]:
    schema = copy.deepcopy(rdef.schema) if rdef.schema else {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string", "description": API_VERSION_DOC}
    properties["kind"] = {"type": "string", "description": KIND_DOC}
    meta_ref = {"$ref": _ref(OBJECT_META, version)}
    properties["metadata"] = {"allOf": [meta_ref], "description": METADATA_DOC} if version == 3 else \
        {**meta_ref, "description": METADATA_DOC}
    schema["x-kubernetes-group-version-kind"] = [_gvk(rdef)]
    return schema


def _list_schema(rdef: ResourceDef, version: int) -> dict[str, Any]:
    return {"type": "object", "required": ["items"],
            "description": f"{rdef.list_kind} is a list of {rdef.kind}",
            "properties": {"apiVersion": {"type": "string", "description": API_VERSION_DOC},
                           "kind": {"type": "string", "description": KIND_DOC},
                           "metadata": {"type": "object"},
                           "items": {"type": "array", "items": {"$ref": _ref(schema_name(rdef), version)}}},
            "x-kubernetes-group-version-kind": [{**_gvk(rdef), "kind": rdef.list_kind}]}


def _param(name: str, where: str = "query", required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": where, "required": required, "schema": {"type": "string", "uniqueItems": True}}


def _operation(rdef: ResourceDef, action: str, verb: str, subresource: str, body: bool, ref: str,
               params: Iterable[str] = (), patch: bool = False) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": f"{verb}{rdef.kind}{subresource.capitalize()}",
        "tags": [f"{rdef.group or 'core'}_{rdef.version}"],
        "parameters": [_param(p) for p in params],
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(rdef),
    }
    if body:
        types = PATCH_TYPES if patch else ("*/*",)
        schema = {"type": "object"} if patch else {"$ref": ref}
        op["requestBody"] = {"required": True, "content": {t: {"schema": schema} for t in types}}
    return op


def _paths(rdef: ResourceDef) -> dict[str, Any]:
    prefix = f"/apis/{rdef.group}/{rdef.version}" if rdef.group else f"/api/{rdef.version}"
    base = f"{prefix}/namespaces/{{namespace}}/{rdef.plural}" if rdef.namespaced else f"{prefix}/{rdef.plural}"
    one, many = _ref(schema_name(rdef), 3), _ref(schema_name(rdef), 3) + "List"
    write = ("dryRun", "fieldManager", "fieldValidation", "pretty")
    scope = [{"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}}] \
        if rdef.namespaced else []
    paths: dict[str, Any] = {
        base: {
            "get": _operation(rdef, "list", "list", "", False, many,
                              ("labelSelector", "fieldSelector", "limit", "continue", "watch", "resourceVersion")),
            "post": _operation(rdef, "post", "create", "", True, one, write),
            "delete": _operation(rdef, "deletecollection", "deletecollection", "", False, one),
            "parameters": scope,
        },
        f"{base}/{{name}}": {
            "get": _operation(rdef, "get", "read", "", False, one),
            "put": _operation(rdef, "put", "replace", "", True, one, write),
            "patch": _operation(rdef, "patch", "patch", "", True, one, (*write, "force"), patch=True),
            "delete": _operation(rdef, "delete", "delete", "", False, one, ("gracePeriodSeconds",
                                                                             "propagationPolicy")),
            "parameters": [*scope, {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
        },
    }
    for sub in sorted(rdef.subresources):
        paths[f"{base}/{{name}}/{sub}"] = {
            "get": _operation(rdef, "get", "read", sub, False, one),
            "put": _operation(rdef, "put", "replace", sub, True, one, write),
            "patch": _operation(rdef, "patch", "patch", sub, True, one, (*write, "force"), patch=True),
            "parameters": paths[f"{base}/{{name}}"]["parameters"],
        }
    return paths


def _served(defs: Iterable[ResourceDef]) -> dict[str, list[ResourceDef]]:
    """`api/v1` or `apis/G/V` -> its resources."""
    found: dict[str, list[ResourceDef]] = {}
    for rdef in defs:
        key = f"apis/{rdef.group}/{rdef.version}" if rdef.group else f"api/{rdef.version}"
        found.setdefault(key, []).append(rdef)
    return found


def v3_document(defs: Iterable[ResourceDef], group_version_path: str) -> dict[str, Any] | None:
    """The document of `api/v1` or `apis/G/V`, or None if not served."""
    served = _served(defs).get(group_version_path.strip("/"))
    if not served:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {OBJECT_META: copy.deepcopy(OBJECT_META_SCHEMA)}
    for rdef in served:
        paths.update(_paths(rdef))
        schemas[schema_name(rdef)] = _published_schema(rdef, 3)
        schemas[schema_name(rdef) + "List"] = _list_schema(rdef, 3)
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": paths,
            "components": {"schemas": schemas}}


def document_hash(document: dict[str, Any]) -> str:
    return hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest().upper()


def v3_index(defs: Iterable[ResourceDef]) -> dict[str, Any]:
    """`/openapi/v3`: where each group/version's document is, with a hash of its content."""
    defs = list(defs)
    paths = {}
    for key in _served(defs):
        document = v3_document(defs, key)
        assert document is not None
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={document_hash(document)}"}
    return {"paths": paths}


V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def _length_delimited(number: int, payload: bytes) -> bytes:
    size, out = len(payload), bytearray()
    while True:
        byte, size = size & 0x7F, size >> 7
        out.append(byte | (0x80 if size else 0))
        if not size:
            break
    return bytes([number << 3 | 2]) + bytes(out) + payload


def v2_protobuf() -> bytes:
    """`openapi.v2.Document{swagger: "2.0", info: {title, version}}` in the protobuf wire format."""
    info = _length_delimited(1, b"Kubernetes") + _length_delimited(2, b"v1.32.0")
    return _length_delimited(1, b"2.0") + _length_delimited(2, info)


def v2_document(defs: Iterable[ResourceDef]) -> dict[str, Any]:
    """`/openapi/v2`: every served kind's schema under `definitions` (no paths: kubectl reads kinds)."""
    definitions: dict[str, Any] = {OBJECT_META: copy.deepcopy(OBJECT_META_SCHEMA)}
    for rdef in defs:
        definitions[schema_name(rdef)] = _published_schema(rdef, 2)
        definitions[schema_name(rdef) + "List"] = _list_schema(rdef, 2)
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": {},
            "definitions": definitions}
