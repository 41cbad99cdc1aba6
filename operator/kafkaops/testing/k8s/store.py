"""The emulator's state and its API semantics, with no HTTP in it.

Objects live in a `kmock.ObjectsArray` (so tests can assert on every version an object had),
keyed by the storage version's resource, namespace and name. Every write bumps one global
resourceVersion and appends a watch event to an in-memory log, from which watch streams replay
"everything after resourceVersion N"; `compact()` drops the log, as etcd compaction does, so that
older resourceVersions get "410 Gone". All methods but `watch()` are synchronous: one event loop
serves the HTTP requests, so each call is atomic.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import random
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import kmock

from . import errors, patches, resources
from .resources import CRD_RESOURCE, NAMESPACES, ResourceDef, ResourceRegistry
from .schema import SchemaValidator, apply_defaults, metadata_causes, prune
from .watching import Event, EventLog
from .values import clone

SERVER_MANAGED = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
NAME_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    return meta


def _rolled_out(deployment: dict[str, Any]) -> None:
    """No pods run here: a Deployment's status says it rolled out at once (so `kubectl rollout status`
    answers), the only status any built-in kind gets from the emulator."""
    replicas = (deployment.get("spec") or {}).get("replicas", 1)
    reason = ("NewReplicaSetAvailable", f'ReplicaSet "{deployment["metadata"]["name"]}" has successfully progressed.')
    deployment["status"] = {
        "observedGeneration": deployment["metadata"].get("generation", 1), "replicas": replicas,
        "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
        "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                        "message": "Deployment has minimum availability."},
                       {"type": "Progressing", "status": "True", "reason": reason[0], "message": reason[1]}]}


def _is(rdef: ResourceDef, other: ResourceDef) -> bool:
    return (rdef.group, rdef.plural) == (other.group, other.plural)


class ApiStore:
    """Objects, resourceVersions and the write rules of the API server; raises `ApiError`s."""

    def __init__(self, registry: ResourceRegistry, *, max_events: int = 100_000) -> None:
        self.registry = registry
        self.objects = kmock.ObjectsArray()
        self._rv = 100
        self.log = EventLog(self._rv, max_events=max_events)
        self._validators: dict[int, SchemaValidator] = {}
        # server-side apply: each field manager's last applied configuration, per object
        self._applied: dict[tuple[Any, str | None, str, str], dict[str, Any]] = {}
        for rdef in resources.BUILTINS:
            registry.add(rdef)

    @property
    def resource_version(self) -> int:
        return self._rv

    # -- reading ----------------------------------------------------------------------------------

    def current(self, rdef: ResourceDef, namespace: str | None, name: str) -> dict[str, Any] | None:
        key = (rdef.storage_key, namespace if rdef.namespaced else None, name)
        if key in self.objects and not self.objects[key].deleted:
            return clone(self.objects[key].raw)
        return None

    def get(self, rdef: ResourceDef, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self.current(rdef, namespace, name)
        if obj is None:
            raise errors.not_found(rdef.plural, rdef.group, name)
        return self._present(rdef, obj)

    def live(self, rdef: ResourceDef, namespace: str | None = None) -> list[dict[str, Any]]:
        """Current objects of a resource (in one namespace, or all), sorted by namespace and name."""
        found = [(key[1] or "", key[2], obj) for key, obj in self.objects.items()
                 if key[0] == rdef.storage_key and not obj.deleted and (namespace is None or key[1] == namespace)]
        return [self._present(rdef, clone(obj.raw)) for _, _, obj in sorted(found, key=lambda t: t[:2])]

    def list(self, rdef: ResourceDef, namespace: str | None, *, match: Callable[[dict[str, Any]], bool],
             limit: int | None = None, continue_token: str | None = None) -> dict[str, Any]:
        items = [obj for obj in self.live(rdef, namespace) if match(obj)]
        list_rv = self._rv
        if continue_token:
            try:
                token = json.loads(base64.urlsafe_b64decode(continue_token.encode()))
                list_rv, after = int(token["rv"]), tuple(token["after"])
            except (ValueError, KeyError, TypeError, binascii.Error):
                raise errors.bad_request("continue key is not valid") from None
            if list_rv < self.log.oldest_rv:
                raise errors.expired("The provided continue parameter is too old to display a consistent list "
                                     "result. You can start a new list without the continue parameter.")
            items = [obj for obj in items if (obj["metadata"].get("namespace") or "", obj["metadata"]["name"]) > after]
        metadata: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if limit and len(items) > limit:
            last = items[limit - 1]["metadata"]
            after = [last.get("namespace") or "", last["name"]]
            metadata["continue"] = base64.urlsafe_b64encode(json.dumps({"rv": list_rv, "after": after}).encode()).decode()
            metadata["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        if not rdef.custom:  # typed lists of built-in resources carry no kind/apiVersion per item
            for item in items:
                item.pop("kind", None)
                item.pop("apiVersion", None)
        return {"apiVersion": rdef.api_version, "kind": rdef.list_kind, "metadata": metadata, "items": items}

    # -- writing ----------------------------------------------------------------------------------

    def create(self, rdef: ResourceDef, namespace: str | None, body: Any, *,
               field_validation: str = "Warn") -> tuple[dict[str, Any], list[str]]:
        obj = self._decoded(rdef, body)
        meta = _meta(obj)
        if rdef.namespaced:
            if meta.get("namespace") not in (None, "", namespace):
                raise errors.bad_request("the namespace of the provided object does not match the namespace sent "
                                         "on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        for key in (*SERVER_MANAGED, "resourceVersion"):
            meta.pop(key, None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generate_name(rdef, namespace, meta["generateName"])
        name = meta.get("name")
        if isinstance(name, str) and self.current(rdef, namespace, name) is not None:
            raise errors.already_exists(rdef.plural, rdef.group, name)
        if rdef.namespaced:
            self._check_namespace_open(rdef, namespace or "", name or "")
        if "status" in rdef.subresources and rdef.custom:
            obj.pop("status", None)  # the status subresource is written through /status only
        self._builtin_hooks(rdef, obj, None)
        crd_defs = resources.crd_resources(obj) if _is(rdef, CRD_RESOURCE) else []
        warnings = self._admit(rdef, obj, field_validation)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=now())
        if rdef.tracks_generation:
            meta["generation"] = 1
        if crd_defs:
            self._set_crd_status(obj)
        meta["resourceVersion"] = str(self._next_rv())
        self._store(rdef, obj)
        self._emit("ADDED", rdef, obj, None)
        for crd_def in crd_defs:
            self.registry.add(crd_def)
        return self._present(rdef, obj), warnings

    def replace(self, rdef: ResourceDef, namespace: str | None, name: str, body: Any, *, subresource: str | None,
                field_validation: str = "Warn") -> tuple[dict[str, Any], list[str]]:
        return self._update(rdef, namespace, name, self._decoded(rdef, body), subresource=subresource,
                            field_validation=field_validation, require_rv=True)

    def patch(self, rdef: ResourceDef, namespace: str | None, name: str, patched: Callable[[dict[str, Any]], Any], *,
              subresource: str | None, field_validation: str = "Warn") -> tuple[dict[str, Any], list[str]]:
        """`patched(current_object)` returns the object as the patch makes it (see `patches.apply_patch`)."""
        old = self._existing(rdef, namespace, name, subresource)
        new = patched(self._present(rdef, old))
        return self._update(rdef, namespace, name, self._decoded(rdef, new), subresource=subresource,
                            field_validation=field_validation, require_rv=False)

    def apply(self, rdef: ResourceDef, namespace: str | None, name: str, applied: Any, *, manager: str,
              field_validation: str = "Strict") -> tuple[dict[str, Any], list[str], bool]:
        """Server-side apply (simplified, see `patches.server_side_apply`): creates the object if it
        does not exist; returns (object, warnings, created)."""
        if not manager:
            raise errors.bad_request("PATCH requests of type application/apply-patch+yaml require fieldManager "
                                     "to be set")
        applied = self._decoded(rdef, applied)
        if not (applied.get("metadata") or {}).get("name") in (None, name):
            raise errors.bad_request(f"the name of the object ({applied['metadata']['name']}) does not match the "
                                     f"name on the URL ({name})")
        key = (rdef.storage_key, namespace if rdef.namespaced else None, name, manager)
        if self.current(rdef, namespace, name) is None:
            body = clone(applied)
            _meta(body)["name"] = name
            obj, warnings = self.create(rdef, namespace, body, field_validation=field_validation)
            self._applied[key] = applied
            return obj, warnings, True
        previous = self._applied.get(key)
        obj, warnings = self.patch(rdef, namespace, name, subresource=None, field_validation=field_validation,
                                   patched=lambda current: patches.server_side_apply(current, applied, previous))
        self._applied[key] = applied
        return obj, warnings, False

    def delete(self, rdef: ResourceDef, namespace: str | None, name: str,
               options: dict[str, Any] | None = None) -> dict[str, Any]:
        old = self._existing(rdef, namespace, name, None)
        meta = old["metadata"]
        preconditions = (options or {}).get("preconditions") or {}
        if preconditions.get("uid") not in (None, meta["uid"]):
            raise errors.conflict(rdef.plural, rdef.group, name, f"Precondition failed: UID in precondition: "
                                  f"{preconditions['uid']}, UID in object meta: {meta['uid']}")
        if preconditions.get("resourceVersion") not in (None, meta["resourceVersion"]):
            raise errors.conflict(rdef.plural, rdef.group, name, f"Precondition failed: ResourceVersion in "
                                  f"precondition: {preconditions['resourceVersion']}, ResourceVersion in object "
                                  f"meta: {meta['resourceVersion']}")
        if _is(rdef, NAMESPACES):
            return self._delete_namespace(old)
        if not meta.get("finalizers"):
            final = self._remove(rdef, old)
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": {"name": name, "group": rdef.group, "kind": rdef.plural, "uid": final["metadata"]["uid"]}}
        if meta.get("deletionTimestamp"):
            return self._present(rdef, old)
        new = clone(old)
        new["metadata"].update(deletionTimestamp=now(), deletionGracePeriodSeconds=0)
        if rdef.tracks_generation:
            new["metadata"]["generation"] = int(meta.get("generation", 0)) + 1
        new["metadata"]["resourceVersion"] = str(self._next_rv())
        self._store(rdef, new)
        self._emit("MODIFIED", rdef, new, old)
        return self._present(rdef, new)

    def delete_collection(self, rdef: ResourceDef, namespace: str | None,
                          match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        for obj in self.live(rdef, namespace):
            if match(obj) and self.current(rdef, obj["metadata"].get("namespace"), obj["metadata"]["name"]):
                self.delete(rdef, obj["metadata"].get("namespace"), obj["metadata"]["name"])
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}

    def compact(self) -> int:
        """Forget the watch history (like etcd compaction): older resourceVersions get 410 Gone."""
        return self.log.compact()

    def watch(self, rdef: ResourceDef, namespace: str | None, *, match: Callable[[dict[str, Any]], bool],
              **options: Any) -> AsyncIterator[dict[str, Any]]:
        """Watch events as the API server streams them (see `EventLog.watch` for the options)."""
        return self.log.watch(rdef, namespace, match=match, present=self._present,
                              initial=lambda: [obj for obj in self.live(rdef, namespace) if match(obj)], **options)

    # -- internals --------------------------------------------------------------------------------

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _store(self, rdef: ResourceDef, obj: dict[str, Any]) -> None:
        if (rdef.group, rdef.plural) == ("apps", "deployments"):
            _rolled_out(obj)
        meta = obj["metadata"]
        key = (rdef.storage_key, meta.get("namespace") if rdef.namespaced else None, meta["name"])
        stored = clone(obj)
        stored["apiVersion"] = f"{rdef.group}/{rdef.storage_key.version}" if rdef.group else rdef.storage_key.version
        if key in self.objects:
            self.objects[key].history.append(stored)
        else:
            self.objects[key] = stored

    def _emit(self, kind: str, rdef: ResourceDef, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self.log.append(Event(int(obj["metadata"]["resourceVersion"]), rdef.storage_key,
                              obj["metadata"].get("namespace"), kind, clone(obj), clone(old)))

    def _present(self, rdef: ResourceDef, obj: dict[str, Any]) -> dict[str, Any]:
        obj["apiVersion"] = rdef.api_version
        obj["kind"] = rdef.kind
        return obj

    def _decoded(self, rdef: ResourceDef, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        obj = clone(body)
        obj["kind"] = obj.get("kind") or rdef.kind  # as the server's decoder: defaults from the URL
        obj["apiVersion"] = obj.get("apiVersion") or rdef.api_version
        if obj["kind"] != rdef.kind or obj["apiVersion"] != rdef.api_version:
            raise errors.bad_request(f"the API version in the data ({obj.get('apiVersion')}) and kind "
                                     f"({obj.get('kind')}) do not match the resource {rdef.api_version}, "
                                     f"Kind={rdef.kind}")
        if "metadata" in obj and not isinstance(obj["metadata"], dict):
            raise errors.bad_request("metadata must be an object")
        return obj

    def _existing(self, rdef: ResourceDef, namespace: str | None, name: str,
                  subresource: str | None) -> dict[str, Any]:
        if subresource is not None and subresource not in rdef.subresources:
            raise errors.resource_not_found()
        old = self.current(rdef, namespace, name)
        if old is None:
            raise errors.not_found(rdef.plural, rdef.group, name)
        return old

    def _update(self, rdef: ResourceDef, namespace: str | None, name: str, new: dict[str, Any], *,
                subresource: str | None, field_validation: str, require_rv: bool) -> tuple[dict[str, Any], list[str]]:
        old = self._existing(rdef, namespace, name, subresource)
        old_meta, meta = old["metadata"], _meta(new)
        if meta.get("name") not in (None, name):
            raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                                     f"({name})")
        if rdef.namespaced and meta.get("namespace") not in (None, "", namespace):
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent on "
                                     "the request")
        rv = meta.get("resourceVersion")
        if rv not in (None, "") and rv != old_meta["resourceVersion"]:
            raise errors.conflict(rdef.plural, rdef.group, name)
        if rv in (None, "") and require_rv and rdef.custom:
            raise errors.invalid(rdef.kind, rdef.group, name, [errors.cause(
                "FieldValueInvalid", "metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update")])
        if subresource == "status":  # only the status changes; everything else stays as it was
            status = new.get("status")
            new = clone(old)
            new.pop("status", None)
            if status is not None:
                new["status"] = status
            meta = new["metadata"]
        else:
            if "status" in rdef.subresources:
                new.pop("status", None)
                if "status" in old:
                    new["status"] = clone(old["status"])
            meta["name"] = name
            if rdef.namespaced:
                meta["namespace"] = namespace
            for key in SERVER_MANAGED:
                meta.pop(key, None)
                if key in old_meta:
                    meta[key] = old_meta[key]
            added = [f for f in meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])]
            if old_meta.get("deletionTimestamp") and added:
                raise errors.invalid(rdef.kind, rdef.group, name, [errors.cause(
                    "FieldValueForbidden", "metadata.finalizers", f"Forbidden: no new finalizers can be added if the "
                    f"object is being deleted, found new finalizers {json.dumps(added)}")])
        self._builtin_hooks(rdef, new, old)
        crd_defs = resources.crd_resources(new) if _is(rdef, CRD_RESOURCE) else []
        warnings = self._admit(rdef, new, field_validation)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        self._present(rdef, new)
        if new == self._present(rdef, clone(old)):
            return new, warnings  # a no-op write: no new resourceVersion, no watch event
        if rdef.tracks_generation and self._spec_part(rdef, new) != self._spec_part(rdef, old):
            meta["generation"] = int(old_meta.get("generation", 0)) + 1
        meta["resourceVersion"] = str(self._next_rv())
        self._store(rdef, new)
        self._emit("MODIFIED", rdef, new, old)
        if crd_defs:
            self.registry.remove(crd_defs[0].group, crd_defs[0].plural)
            for crd_def in crd_defs:
                self.registry.add(crd_def)
        self._maybe_finalize(rdef, new)
        return new, warnings

    @staticmethod
    def _spec_part(rdef: ResourceDef, obj: dict[str, Any]) -> dict[str, Any]:
        """What changes metadata.generation: all but metadata (and status, if it is a subresource)."""
        skip = {"metadata", "apiVersion", "kind"} | ({"status"} if "status" in rdef.subresources else set())
        return {key: value for key, value in obj.items() if key not in skip}

    def _admit(self, rdef: ResourceDef, obj: dict[str, Any], field_validation: str) -> list[str]:
        """Prune, default, validate, as the real server does in this order; 422 on field errors."""
        meta = obj["metadata"]
        causes = metadata_causes(obj, dns_label=_is(rdef, NAMESPACES))
        warnings: list[str] = []
        if rdef.schema is not None:
            pruned = prune(obj, rdef.schema)
            if pruned and field_validation == "Strict":
                raise errors.bad_request("strict decoding error: " + ", ".join(
                    f'unknown field "{path}"' for path in pruned))
            if field_validation != "Ignore":
                warnings = [f'unknown field "{path}"' for path in pruned]
            apply_defaults(obj, rdef.schema)
            causes += self._validator(rdef.schema).causes(obj)
        if causes:
            raise errors.invalid(rdef.kind, rdef.group, meta.get("name"), causes)
        return warnings

    def _validator(self, schema: dict[str, Any]) -> SchemaValidator:
        if id(schema) not in self._validators:
            self._validators[id(schema)] = SchemaValidator(schema)
        return self._validators[id(schema)]

    def _generate_name(self, rdef: ResourceDef, namespace: str | None, prefix: str) -> str:
        while True:
            name = prefix + "".join(random.choices(NAME_SUFFIX_CHARS, k=5))
            if self.current(rdef, namespace, name) is None:
                return name

    def _check_namespace_open(self, rdef: ResourceDef, namespace: str, name: str) -> None:
        ns = self.current(NAMESPACES, None, namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(rdef.plural, rdef.group, name, f'{rdef.group_resource} "{name}" is forbidden: '
                                   f"unable to create new content in namespace {namespace} because it is being "
                                   f"terminated")

    def _builtin_hooks(self, rdef: ResourceDef, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if rdef.group == "" and rdef.plural == "secrets":
            data = obj.get("data") or {}
            causes = []
            for key, value in data.items():
                try:
                    base64.b64decode(value, validate=True)
                except (binascii.Error, TypeError, ValueError):
                    causes.append(errors.cause("FieldValueInvalid", f"data[{key}]", "Invalid value: illegal base64"))
            if causes:
                raise errors.invalid(rdef.kind, "", obj["metadata"].get("name"), causes)
            for key, value in (obj.pop("stringData", None) or {}).items():  # write-only, merged into data
                data[key] = base64.b64encode(str(value).encode()).decode()
            if data:
                obj["data"] = data
            obj.setdefault("type", "Opaque")
        elif _is(rdef, NAMESPACES):
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            status = obj.setdefault("status", {})
            status.setdefault("phase", (old or {}).get("status", {}).get("phase", "Active"))

    def _set_crd_status(self, crd: dict[str, Any]) -> None:
        names = crd["spec"]["names"]
        conditions = [{"type": kind, "status": "True", "reason": reason, "message": message,
                       "lastTransitionTime": now()}
                      for kind, reason, message in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                                    ("Established", "InitialNamesAccepted",
                                                     "the initial names have been accepted"))]
        crd["status"] = {"conditions": conditions, "acceptedNames": clone(names),
                         "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]}

    def _maybe_finalize(self, rdef: ResourceDef, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if _is(rdef, NAMESPACES):
            self._maybe_finish_namespace(meta["name"])
        elif meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(rdef, obj)

    def _remove(self, rdef: ResourceDef, last: dict[str, Any]) -> dict[str, Any]:
        final = clone(last)
        final["metadata"]["resourceVersion"] = str(self._next_rv())
        namespace = final["metadata"].get("namespace") if rdef.namespaced else None
        self.objects[rdef.storage_key, namespace, final["metadata"]["name"]].delete()
        self._emit("DELETED", rdef, final, last)
        if _is(rdef, CRD_RESOURCE):
            self._uninstall_crd(final)
        if rdef.namespaced and namespace:
            self._maybe_finish_namespace(namespace)
        return self._present(rdef, final)

    def _uninstall_crd(self, crd: dict[str, Any]) -> None:
        """The CRD is gone: so are its resources from discovery, and its objects (no finalizers honoured)."""
        spec = crd.get("spec") or {}
        for gone in self.registry.remove(spec.get("group", ""), (spec.get("names") or {}).get("plural", "")):
            for obj in self.live(gone):
                if self.current(gone, obj["metadata"].get("namespace"), obj["metadata"]["name"]) is not None:
                    self._remove(gone, obj)

    def _delete_namespace(self, old: dict[str, Any]) -> dict[str, Any]:
        name = old["metadata"]["name"]
        current = old
        if not old["metadata"].get("deletionTimestamp"):
            current = clone(old)
            current["metadata"]["deletionTimestamp"] = now()
            current["metadata"]["deletionGracePeriodSeconds"] = 0
            current.setdefault("status", {})["phase"] = "Terminating"
            current["metadata"]["resourceVersion"] = str(self._next_rv())
            self._store(NAMESPACES, current)
            self._emit("MODIFIED", NAMESPACES, current, old)
        for key, obj in list(self.objects.items()):
            if key[1] == name and not obj.deleted:
                rdef = self.registry.get(key[0].group, key[0].version, key[0].plural)
                if rdef is not None and self.current(rdef, name, key[2]) is not None:
                    self.delete(rdef, name, key[2])
        self._maybe_finish_namespace(name)
        return self.current(NAMESPACES, None, name) or self._present(NAMESPACES, current)

    def _maybe_finish_namespace(self, name: str) -> None:
        ns = self.current(NAMESPACES, None, name)
        if ns is None or not ns["metadata"].get("deletionTimestamp") or ns["metadata"].get("finalizers"):
            return
        if any(key[1] == name and not obj.deleted for key, obj in self.objects.items()):
            return
        self._remove(NAMESPACES, ns)
