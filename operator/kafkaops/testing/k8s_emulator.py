"""A Kubernetes API server emulator for end-to-end tests of the kopf operator.

No real API server can run here, so the operator's e2e tests talk to this one: a plain-HTTP
server on 127.0.0.1 that behaves like kube-apiserver wherever kopf (or a test) relies on it.

    async with KubernetesApiEmulator(crds=["crds/"]) as api: ...   # in-process, api.url
    python -m kafkaops.testing.k8s_emulator --port 0 --crds crds/   # a process; 1st line: URL
    kafkaops dev-kube                                               # for kubectl: built-ins only, kubeconfig

Built on kmock 0.8 (`kmock.KubernetesScaffold`). kmock gives: the aiohttp server on a free port,
`Status` error bodies, the request log and its DSL (tests can inject faults:
`api.kmock["patch", kmock.resource(...)] << 500`), and `ObjectsArray`, which stores every version
of every object. kmock's own stateful `KubernetesEmulator` is not used: it has no resourceVersion,
uid, generation, status subresource, validation, PUT or JSON patch, its watches cannot resume from a
resourceVersion, and its URL parser fails on `/api/v1/namespaces`. So the API semantics are written
here (package `kafkaops.testing.k8s`): `store` (the write rules, no HTTP), `watching` (the event
log and watch streams), `handler` (a KubernetesScaffold subclass with its own request parser,
serving resource URLs from the store through a kmock fallback reaction), `schema`, `selectors`,
`patches` (merge patch; JSON patch via `jsonpatch`, a kmock dependency; strategic merge and
server-side apply, approximated), `resources`, `paths`, `errors`, and what the real `kubectl` needs
(docs/architecture.md, "The emulator's fidelity"): `discovery` (legacy and aggregated v2),
`openapi` (v2, v3), `table` (server-side printing), `protobuf` (request bodies of built-ins). The state outlives `stop()`: a `start()` again serves it anew (on a new port if 0).

Running kopf in the same event loop (`kopf.operator()` in a task): when it stops, kopf waits 5 s
for, then cancels, every task created after it started, including the server side of keep-alive
connections to an in-process emulator. Close such client sessions first (or use
`aiohttp.TCPConnector(force_close=True)`), or run the emulator as a process.

Emulated:
- resourceVersion (one global counter, a string), uid, creationTimestamp on create; every write
  bumps resourceVersion; no-op writes do not (no new version, no watch event), as in the real server;
- metadata.generation for custom resources and CRDs: 1 on create, +1 when anything but metadata
  (and status, if it is a subresource) changes, and when deletionTimestamp is set;
- the status subresource: `/status` writes change only status; main-resource writes and creates
  ignore status (for CRDs with `subresources.status`);
- openAPIV3Schema: pruning of unknown fields (kept under `x-kubernetes-preserve-unknown-fields`;
  `fieldValidation=Strict` turns them into a 400, `Warn` (the default) into `Warning` headers),
  `default`s, validation with jsonschema (Draft 4, as OpenAPI v3.0) incl. `nullable`,
  `x-kubernetes-int-or-string`, duplicate keys in `x-kubernetes-list-type: map|set` lists, CEL
  `x-kubernetes-validations` rules in the subset of `k8s/cel.py`:
  422 `Status` with `details.causes` (field path + message, reasons as the real server's);
  metadata.name/labels checks;
- 409 on a stale metadata.resourceVersion (PUT, PATCH, delete preconditions), 409 AlreadyExists,
  404 NotFound, 422 for a PUT of a custom resource without resourceVersion;
- list: kind `<Kind>List`, apiVersion, metadata.resourceVersion, `limit`/`continue` pages,
  labelSelector (equality and set-based), fieldSelector (metadata.name/namespace and a few
  per-resource fields); built-in lists carry no kind/apiVersion per item, as the real ones;
- watch: ADDED/MODIFIED/DELETED from a resourceVersion (replayed from an event log), synthetic
  ADDED for rv unset or "0", `sendInitialEvents` with the `k8s.io/initial-events-end` BOOKMARK,
  periodic BOOKMARKs (`allowWatchBookmarks`), `timeoutSeconds`, selectors (objects moving out of
  a selector's view arrive as DELETED), `410 Gone` ERROR events after `compact()`;
- finalizers: DELETE sets deletionTimestamp; the object goes when its last finalizer is removed;
  no new finalizers on a deleting object; namespaces: must exist (404) and not be terminating (403)
  for creates; deleting one deletes its content, then itself;
- PATCH: merge-patch, json-patch (a failed `test` op is a 422, as kopf expects), strategic-merge
  for built-ins only (merge keys of the common lists, directives; 415 for custom resources, as the
  real server), server-side apply (`application/apply-patch+yaml`: a manager's last applied
  configuration decides what it owns, no managedFields, no conflicts), PUT, GET, DELETE (incl.
  preconditions), DELETE on a collection, generateName;
- protobuf request bodies of the built-in kinds (kubectl's `create namespace|secret|...`);
- discovery (legacy and aggregated `apidiscovery.k8s.io/v2`, subresources as `name/status` only),
  `/openapi/v2` and `/openapi/v3` from the registry, `as=Table` responses for list/get/watch from
  additionalPrinterColumns, `/version`;
- resources: namespaces, secrets (stringData folded into data, base64 checked), configmaps,
  serviceaccounts, core and events.k8s.io events, coordination.k8s.io leases, and what manifests/
  holds (services, deployments (reported rolled out at once), poddisruptionbudgets, RBAC,
  networkpolicies), stored generically, CRDs; CRDs POSTed
  (or `install_crds()`) appear in discovery with their verbs, subresources, short names,
  categories; kopf's peering CRDs (kopf.dev/v1 ClusterKopfPeering, KopfPeering) are pre-installed;
  deleting a CRD removes its resource and objects. `/healthz`, `/livez`, `/readyz`.

Not emulated: CEL beyond a subset (`k8s/cel.py`: rules outside it, e.g. macros or `oldSelf`,
are accepted and NOT evaluated), `format` checks, admission webhooks, authentication (any or no token is accepted) and RBAC, server-side
apply's field ownership and conflicts, CRD conversion beyond "None" (all served versions share
one store), garbage collection of ownerReferences and the Foreground/Orphan propagation policies,
`dryRun`, protobuf responses, `resourceVersion`/`resourceVersionMatch` on lists (always the
latest), consistent `continue` snapshots (pages are cut from the current state), managedFields, TLS, the
watch cache's timing, pods and other built-ins not listed above, kind-specific validation and
the controllers of built-ins.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence

from kafkaops.testing.k8s import DEFAULT_NAMESPACES, KubernetesApiEmulator, load_manifests

__all__ = ["KubernetesApiEmulator", "load_manifests", "main"]


async def _serve(args: argparse.Namespace) -> None:
    api = KubernetesApiEmulator(host=args.host, port=args.port, crds=args.crds,
                                namespaces=[*DEFAULT_NAMESPACES, *args.namespace],
                                kopf_peering=not args.no_kopf_peering, bookmark_interval=args.bookmark_interval,
                                faults=args.control_port is not None)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with api:
        if args.kubeconfig:
            api.write_kubeconfig(args.kubeconfig)
        control = None
        if args.control_port is not None:
            from kafkaops.testing.k8s.chaos import control_server

            control = await control_server(api, args.control_port).start()
        print(api.url, flush=True)
        if control is not None:
            print(control.url, flush=True)  # the second line: the fault hooks (docs/reliability.md)
        await stop.wait()
        if control is not None:
            await control.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkaops.testing.k8s_emulator",
                                     description="A Kubernetes API server emulator for tests (plain HTTP). "
                                                 "Prints its URL as the first line of stdout; stops on SIGTERM.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port (default)")
    parser.add_argument("--crds", action="append", default=[], metavar="PATH",
                        help="a CRD YAML file or a directory of them (repeatable)")
    parser.add_argument("--namespace", action="append", default=[], metavar="NAME",
                        help=f"a namespace to create besides {', '.join(DEFAULT_NAMESPACES)} (repeatable)")
    parser.add_argument("--kubeconfig", metavar="PATH", help="also write a kubeconfig pointing at the emulator")
    parser.add_argument("--no-kopf-peering", action="store_true", help="do not pre-install kopf's peering CRDs")
    parser.add_argument("--control-port", type=int, default=None, metavar="PORT",
                        help="serve fault hooks over HTTP on this port (0: free; its URL is the 2nd line)")
    parser.add_argument("--bookmark-interval", type=float, default=60.0, metavar="SECONDS")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
