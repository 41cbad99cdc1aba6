"""The HTTP side: a kmock handler that serves the API store, discovery and errors.

Request flow, in kmock's priorities:

1. reactions a test adds through kmock's DSL (`api.kmock[...] << 500`) win, as in any kmock server;
2. then a fallback reaction for resource URLs: its payload is a marker exception that `_handle()`
   catches to serve the request from the store with full control of status, headers and streams
   (kmock's own renderer cannot send 201 reliably or stop a watch on a timeout);
3. then kmock's `KubernetesScaffold` fallbacks: `/api`, `/apis`, `/apis/G[/V]`, `/version`, 404s,
   fed from the registry through kmock's `resources` array.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock._internal import rendering  # StreamingError: kmock's own wrapper, handled as kmock does

import yaml

from . import discovery, errors, openapi, patches, protobuf, selectors, table
from .paths import ApiPath, parse_request
from .resources import ResourceRegistry
from .store import ApiStore

logger = logging.getLogger(__name__)


class _ServeFromStore(Exception):
    """The payload of the storage fallback reaction: "serve this one from the store"."""


@attrs.define(kw_only=True)
class EmulatorHandler(kmock.KubernetesScaffold):
    """kmock's Kubernetes scaffold (discovery, errors, request log, DSL) plus the stateful API."""

    bookmark_interval: float = 60.0
    store: ApiStore = attrs.field(init=False)
    stopping: asyncio.Event = attrs.field(init=False, factory=asyncio.Event)
    _paths: dict[int, ApiPath] = attrs.field(init=False, factory=dict)
    _own_payloads: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.store = ApiStore(ResourceRegistry(self.resources))
        (self.fallback ** 1)[self._is_resource_request] << _ServeFromStore
        for probe in ("/healthz", "/livez", "/readyz"):
            (self.fallback ** 1)[f"get {probe}"] << b"ok"
        self._own_payloads = len(self._payloads)

    def _is_resource_request(self, request: kmock.Request) -> bool:
        path = self._paths.get(request.id)
        return path is not None and path.group is not None and path.version is not None and path.plural is not None

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        # As kmock's RawHandler.__call__, but with a request parser that knows namespace URLs,
        # and with API errors (4xx Status answers) not recorded as server errors.
        raw_response: aiohttp.web.StreamResponse | None = None
        try:
            request, path = await parse_request(raw_request, id=len(self._requests))
            self._paths[request.id] = path
            self._requests.append(request)
            try:
                return await self._handle(request)
            except rendering.StreamingError as exc:
                raw_response = exc.args[0]
                raise exc.__cause__ or exc from None
            finally:
                self._paths.pop(request.id, None)
        except Exception as exc:
            if not isinstance(exc, kmock.KubernetesError):
                logger.exception("The Kubernetes API emulator failed to serve %s %s", raw_request.method,
                                 raw_request.path_qs)
                if self._errors:
                    self._errors[-1].append(exc)
            if raw_response is None or not raw_response.prepared:
                return await self._render_error(exc)
            await self._stream_error(exc, raw_response)
            await raw_response.write_eof()
            return raw_response

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        if isinstance(exc, kmock.KubernetesNotFoundError) and not isinstance(exc, errors.ApiError):
            exc = errors.resource_not_found()  # kmock's 404s, worded as the real server's
        if isinstance(exc, kmock.KubernetesError):
            return aiohttp.web.json_response(errors.status_body(exc), status=exc.status)
        return await super()._render_error(exc)

    async def _serve_version(self, request: kmock.Request) -> Any:
        document = await super()._serve_version(request)
        if isinstance(document, dict) and document.get("groupVersion", "").startswith("/"):
            document["groupVersion"] = document["groupVersion"][1:]  # kmock says "/v1" for the core group
        return document

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        own = self._serve_documents(request)
        if own is not None:
            return own
        # kmock decides by filtering its whole request log for every request (quadratic: 200 creates
        # cost 20,000 filter calls). While a test has added no reactions of its own, resource
        # requests go straight to the store; with reactions (fault injection) kmock decides.
        if len(self._payloads) == self._own_payloads and self._is_resource_request(request):
            return await self._serve(request, self._paths[request.id])
        try:
            return await super()._handle(request)
        except _ServeFromStore:
            return await self._serve(request, self._paths[request.id])

    # -- discovery, OpenAPI, version --------------------------------------------------------------

    def _serve_documents(self, request: kmock.Request) -> aiohttp.web.StreamResponse | None:
        """Discovery, OpenAPI and /version from the registry; None for any other request."""
        if str(request.method.value).upper() != "GET":
            return None
        path = request.url.path.rstrip("/") or "/"
        accept = request.headers.get("Accept", "")
        defs = list(self.store.registry)
        document: dict[str, Any] | None
        media = "application/json"
        parts = path.strip("/").split("/")
        if path == "/version":
            document = dict(discovery.SERVER_VERSION)
        elif path in ("/api", "/apis"):
            aggregated = discovery.wants_aggregated(accept)
            if aggregated:
                document, media = discovery.aggregated(defs, core=path == "/api", media_type=aggregated), aggregated
            else:
                document = discovery.api_versions() if path == "/api" else discovery.api_group_list(defs)
        elif parts[0] == "api" and len(parts) == 2:
            document = discovery.resource_list(defs, "", parts[1])
        elif parts[0] == "apis" and len(parts) == 2:
            document = discovery.api_group(defs, parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            document = discovery.resource_list(defs, parts[1], parts[2])
        elif path == "/openapi/v2":
            if openapi.V2_PROTOBUF in accept and "json" not in accept:
                # answered with the name the real server uses ("@" is not allowed in a Content-Type)
                return aiohttp.web.Response(body=openapi.v2_protobuf(), headers={
                    "Content-Type": "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"})
            document = openapi.v2_document(defs)
        elif path == "/openapi/v3":
            document = openapi.v3_index(defs)
        elif path.startswith("/openapi/v3/"):
            document = openapi.v3_document(defs, path.removeprefix("/openapi/v3/"))
        else:
            return None
        if document is None:
            raise errors.resource_not_found()
        response = aiohttp.web.Response(body=json.dumps(document).encode(), content_type="application/json")
        response.headers["Content-Type"] = media
        return response

    # -- resource requests ------------------------------------------------------------------------

    async def _serve(self, request: kmock.Request, path: ApiPath) -> aiohttp.web.StreamResponse:
        rdef = self.store.registry.get(path.group, path.version, path.plural)
        if rdef is None or (path.namespace is not None and not rdef.namespaced):
            raise errors.resource_not_found()
        if path.subresource is not None and (path.name is None or path.subresource not in rdef.subresources):
            raise errors.resource_not_found()
        params = request.params
        namespace = path.namespace if rdef.namespaced else None
        method = str(request.method.value).upper()
        field_validation = params.get("fieldValidation", "Warn")
        if field_validation not in ("Ignore", "Warn", "Strict"):
            raise errors.bad_request(f'fieldValidation parameter unsupported: "{field_validation}"')

        if method == "GET" and params.get("watch") in ("true", "1"):
            return await self._watch(request, rdef, namespace, path)
        as_table = table.wants_table(request.headers.get("Accept", "")) if path.subresource is None else None
        include = params.get("includeObject", "Metadata")
        if method == "GET" and path.name is None:
            match = self._matcher(params, rdef)
            limit = int(params["limit"]) if params.get("limit", "").isdigit() else None
            listed = self.store.list(rdef, namespace, match=match, limit=limit, continue_token=params.get("continue"))
            if as_table:
                return self._json(table.table(rdef, listed["items"], list_metadata=listed["metadata"],
                                              include_object=include, version=as_table))
            return self._json(listed)
        if method == "GET":
            obj = self.store.get(rdef, namespace, path.name or "")
            if as_table:
                return self._json(table.table(rdef, [obj], list_metadata={"resourceVersion": obj["metadata"].get(
                    "resourceVersion", "")}, include_object=include, version=as_table))
            return self._json(obj)

        body = request.data
        content_type = request.headers.get("Content-Type", "")
        if content_type.split(";")[0].strip().lower() == protobuf.MEDIA_TYPE and request.body:
            if method not in ("POST", "PUT", "DELETE"):
                raise errors.unsupported_media_type(protobuf.MEDIA_TYPE)
            body = protobuf.decode(request.body)
        if method in ("POST", "PUT") and request.body and body is None:
            raise errors.bad_request("the body of the request could not be decoded as JSON")
        if method == "POST" and path.name is None:
            if rdef.namespaced and namespace is None:
                raise errors.method_not_allowed()
            obj, warnings = self.store.create(rdef, namespace, body, field_validation=field_validation)
            return self._json(obj, status=201, warnings=warnings)
        if method == "PUT" and path.name is not None:
            obj, warnings = self.store.replace(rdef, namespace, path.name, body, subresource=path.subresource,
                                               field_validation=field_validation)
            return self._json(obj, warnings=warnings)
        if method == "PATCH" and path.name is not None and \
                content_type.split(";")[0].strip().lower() == patches.APPLY and path.subresource is None:
            if rdef.namespaced and namespace is None:
                raise errors.method_not_allowed()
            try:
                applied = yaml.safe_load(request.body or b"")
            except yaml.YAMLError as exc:
                raise errors.bad_request(f"error decoding YAML: {exc}") from None
            obj, warnings, created = self.store.apply(
                rdef, namespace, path.name, applied, manager=params.get("fieldManager", ""),
                field_validation=field_validation)
            return self._json(obj, status=201 if created else 200, warnings=warnings)
        if method == "PATCH" and path.name is not None:
            obj, warnings = self.store.patch(
                rdef, namespace, path.name, subresource=path.subresource, field_validation=field_validation,
                patched=lambda current: patches.apply_patch(current, request.body, content_type, custom=rdef.custom))
            return self._json(obj, warnings=warnings)
        if method == "DELETE" and path.name is not None:
            options = body if isinstance(body, dict) else {}
            return self._json(self.store.delete(rdef, namespace, path.name, options))
        if method == "DELETE":
            return self._json(self.store.delete_collection(rdef, namespace, self._matcher(params, rdef)))
        raise errors.method_not_allowed()

    @staticmethod
    def _matcher(params: Any, rdef: Any) -> selectors.Matcher:
        labels = selectors.label_matcher(params.get("labelSelector"))
        fields = selectors.field_matcher(params.get("fieldSelector"), rdef.field_selectors)
        return lambda obj: labels(obj) and fields(obj)

    @staticmethod
    def _json(body: dict[str, Any], status: int = 200, warnings: Sequence[str] = ()) -> aiohttp.web.Response:
        response = aiohttp.web.json_response(body, status=status)
        for warning in warnings:  # RFC 7234 warn-text: a quoted string
            escaped = warning.replace("\\", "\\\\").replace('"', '\\"')
            response.headers.add("Warning", f'299 - "{escaped}"')
        return response

    async def _watch(self, request: kmock.Request, rdef: Any, namespace: str | None,
                     path: ApiPath) -> aiohttp.web.StreamResponse:
        params = dict(request.params)
        if path.name is not None:  # GET .../NAME?watch=true: the same as a fieldSelector on the name
            params["fieldSelector"] = ",".join(filter(None, [params.get("fieldSelector"),
                                                            f"metadata.name={path.name}"]))
        match = self._matcher(params, rdef)
        timeout = float(params["timeoutSeconds"]) if params.get("timeoutSeconds") else None
        if not (params.get("resourceVersion") or "0").isdigit():
            raise errors.bad_request(f'invalid resource version "{params["resourceVersion"]}"')
        events = self.store.watch(
            rdef, namespace, match=match, resource_version=params.get("resourceVersion"),
            send_initial_events=params.get("sendInitialEvents") == "true",
            allow_bookmarks=params.get("allowWatchBookmarks") == "true", timeout=timeout,
            bookmark_interval=self.bookmark_interval, stopping=self.stopping)
        as_table = table.wants_table(request.headers.get("Accept", ""))
        include = params.get("includeObject", "Metadata")
        response = aiohttp.web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        assert request._raw_request is not None
        await response.prepare(request._raw_request)  # headers go out at once, as from the real server
        try:
            async for event in events:
                if as_table and event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                    event = {"type": event["type"], "object": table.table(
                        rdef, [event["object"]], include_object=include, version=as_table,
                        list_metadata={"resourceVersion": event["object"]["metadata"].get("resourceVersion", "")})}
                await response.write(json.dumps(event).encode() + b"\n")
            await response.write_eof()
        except ConnectionError:
            pass  # the client went away
        finally:
            await events.aclose()
        return response
