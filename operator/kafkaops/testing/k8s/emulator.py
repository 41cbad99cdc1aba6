"""`KubernetesApiEmulator`: the store and kmock handler on a loopback port, plus test helpers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import kmock
import yaml

from . import errors, resources
from .handler import EmulatorHandler
from .resources import CRD_RESOURCE, NAMESPACES, ResourceDef
from .store import ApiStore

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
KUBECONFIG_TOKEN = "kafkaops-emulator-token"  # a dummy: the emulator does no authentication


def _manifest_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    for path in map(Path, paths):
        if path.is_dir():
            yield from sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
        else:
            yield path


def load_manifests(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """All YAML/JSON documents in these files and directories (not recursive), in order."""
    docs: list[dict[str, Any]] = []
    for path in _manifest_files(paths):
        docs.extend(doc for doc in yaml.safe_load_all(path.read_text("utf-8")) if isinstance(doc, dict))
    return docs


class KubernetesApiEmulator:
    """A Kubernetes API server emulator for tests, in-process on a free loopback port.

    ::

        async with KubernetesApiEmulator(crds=["crds/"]) as api:
            kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
            ...  # talk HTTP to api.url, or run an operator with KUBECONFIG=kubeconfig

    The state can be prepared before `start()` (everything but the HTTP side is synchronous):
    `install_crds()`, `create()`. `objects` holds every version of every object (kmock's
    `ObjectsArray`, for assertions); `kmock` is the kmock handler, for fault injection
    (`api.kmock["get", kmock.resource("kafkaops.io", "v1alpha1", "kafkatopics")] << 500`) and the
    request log. See `kafkaops.testing.k8s_emulator` for what is emulated and what is not.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        crds: Iterable[str | Path] = (),
        namespaces: Iterable[str] = DEFAULT_NAMESPACES,
        kopf_peering: bool = True,
        bookmark_interval: float = 60.0,
        faults: bool = False,
    ) -> None:
        self.host = host
        self._port = port
        if faults:  # fault hooks for chaos runs (k8s/chaos.py)
            from .chaos import ChaosHandler

            self.kmock: EmulatorHandler = ChaosHandler(bookmark_interval=bookmark_interval)
        else:
            self.kmock = EmulatorHandler(bookmark_interval=bookmark_interval)
        self.store: ApiStore = self.kmock.store
        self._server: kmock.Server | None = None
        for namespace in namespaces:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        if kopf_peering:
            for crd in resources.KOPF_PEERING_CRDS:
                self.create(crd)
        self.install_crds(crds)

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("the emulator is already running")
        self.kmock.stopping.clear()
        await self.kmock.__aenter__()
        self._server = kmock.Server(self.kmock, host=self.host, port=self._port or None)
        await self._server.__aenter__()

    async def stop(self) -> None:
        """Ends the open watch streams, then stops listening."""
        if self._server is None:
            return
        self.kmock.stopping.set()
        await asyncio.sleep(0.05)  # let the watch streams see it and finish their responses
        server, self._server = self._server, None
        try:
            await server.__aexit__(None, None, None)
        finally:
            await self.kmock.__aexit__(None, None, None)

    async def __aenter__(self) -> KubernetesApiEmulator:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the emulator is not running")
        return self._server.port

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT`, without a trailing slash."""
        return f"http://{self.host}:{self.port}"

    # -- helpers ----------------------------------------------------------------------------------

    @property
    def objects(self) -> kmock.ObjectsArray:
        """Every object and its versions: `api.objects["kafkaops.io/v1alpha1/kafkatopics", "ns", "t"]`.

        For assertions only: write through the API (or `create()`), or no watch sees the change.
        """
        return self.store.objects

    def resource(self, api_version: str, kind: str) -> ResourceDef:
        group, _, version = api_version.rpartition("/")
        for rdef in self.store.registry:
            if (rdef.group, rdef.version, rdef.kind) == (group, version, kind):
                return rdef
        raise errors.resource_not_found()

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """Creates an object as a POST would (validation, defaults, events); returns it."""
        rdef = self.resource(body.get("apiVersion", ""), body.get("kind", ""))
        namespace = (body.get("metadata") or {}).get("namespace") if rdef.namespaced else None
        if rdef.namespaced and not namespace:
            namespace = "default"
        obj, _ = self.store.create(rdef, namespace, body)
        return obj

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The current object, or None."""
        try:
            return self.store.get(self.resource(api_version, kind), namespace, name)
        except errors.ApiError:
            return None

    def install_crds(self, paths: Iterable[str | Path]) -> list[dict[str, Any]]:
        """Creates (or replaces, like `kubectl apply`) the CRDs in these YAML files or directories."""
        installed = []
        for doc in load_manifests(paths):
            if doc.get("kind") != "CustomResourceDefinition":
                continue
            existing = self.store.current(CRD_RESOURCE, None, doc["metadata"]["name"])
            if existing is None:
                installed.append(self.create(doc))
            else:
                doc = json.loads(json.dumps(doc))
                doc["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
                obj, _ = self.store.replace(CRD_RESOURCE, None, doc["metadata"]["name"], doc, subresource=None)
                installed.append(obj)
        return installed

    def create_namespace(self, name: str) -> dict[str, Any]:
        return self.create({"apiVersion": "v1", "kind": NAMESPACES.kind, "metadata": {"name": name}})

    def compact(self) -> int:
        """Drops the watch history: watches from an older resourceVersion get 410 Gone."""
        return self.store.compact()

    def kubeconfig(self, namespace: str = "default") -> dict[str, Any]:
        name = "kafkaops-emulator"
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": self.url}}],
            "users": [{"name": name, "user": {"token": KUBECONFIG_TOKEN}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
            "current-context": name,
        }

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        """A kubeconfig pointing at this emulator (plain HTTP, a dummy token); returns its path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(self.kubeconfig(namespace), sort_keys=False), "utf-8")
        return path
