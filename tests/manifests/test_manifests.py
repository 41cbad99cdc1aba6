"""manifests/: valid Kubernetes objects, least-privilege RBAC, and the Argo CD health check run under Lua."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
HEALTH_LUA = MANIFESTS / "argocd" / "health.lua"

NAMESPACE = "kafkaops-system"
KAFKAOPS_RESOURCES = ["kafkaclusters", "kafkatopics", "kafkaacls", "kafkabrokerconfigs", "kafkausers", "kafkaclientquotas"]
# No schema in kubernetes-validate's catalogue; test_kustomize_builds.py validates them against their CRDs.
CUSTOM_KINDS = {"ClusterKopfPeering", "KopfPeering", "ServiceMonitor"}


def _docs(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text("utf-8")) if doc is not None]


def _manifest_files(directory: Path = MANIFESTS) -> list[Path]:
    return sorted(p for p in directory.glob("*.yaml") if p.name != "kustomization.yaml")


def _all_files() -> list[Path]:
    return sorted(MANIFESTS.rglob("*.yaml"))


def _objects(directory: Path = MANIFESTS) -> list[dict[str, Any]]:
    return [doc for path in _manifest_files(directory) for doc in _docs(path)]


def _one(kind: str, directory: Path = MANIFESTS) -> dict[str, Any]:
    (obj,) = [doc for doc in _objects(directory) if doc["kind"] == kind]
    return obj


def _rule_pairs(rules: list[dict[str, Any]]) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(group, resource, tuple(sorted(rule["verbs"])))
            for rule in rules for group in rule["apiGroups"] for resource in rule["resources"]}


def _kubectl() -> str:
    tool = shutil.which("kubectl")
    if tool is None:
        pytest.skip("kubectl is not installed (needed for `kubectl kustomize`)")
    return tool


# --- the files ------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", _all_files(), ids=lambda p: str(p.relative_to(MANIFESTS)))
def test_every_manifest_is_valid_yaml_with_a_kind(path: Path) -> None:
    docs = _docs(path)
    assert docs, path
    for doc in docs:
        assert isinstance(doc, dict) and doc.get("apiVersion") and doc.get("kind"), (path, doc)
        if doc["kind"] not in {"Kustomization", "Component"}:
            assert doc["metadata"]["name"], path


def test_kustomization_lists_every_manifest_file() -> None:
    kustomization = _docs(MANIFESTS / "kustomization.yaml")[0]
    assert kustomization["namespace"] == NAMESPACE
    assert sorted(kustomization["resources"]) == sorted(p.name for p in _manifest_files())
    labels = kustomization["labels"][0]
    assert labels["pairs"]["app.kubernetes.io/part-of"] == "kafkaops"
    assert labels["includeSelectors"] is False  # selectors are immutable; never relabel them


def test_namespaced_component_lists_its_files() -> None:
    for directory in sorted(p for p in (MANIFESTS / "components").iterdir() if p.is_dir()):
        component = _docs(directory / "kustomization.yaml")[0]
        assert component["kind"] == "Component", directory
        assert sorted(component["resources"]) == sorted(p.name for p in _manifest_files(directory)), directory
    secrets_access = _docs(MANIFESTS / "secrets-access" / "kustomization.yaml")[0]
    assert secrets_access["kind"] == "Kustomization"
    assert secrets_access["resources"] == [p.name for p in _manifest_files(MANIFESTS / "secrets-access")]


def test_namespaced_objects_are_in_the_operator_namespace() -> None:
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                      "ClusterKopfPeering"}
    for obj in _objects():
        if obj["kind"] in cluster_scoped:
            assert "namespace" not in obj["metadata"], obj["kind"]
        else:
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["kind"]
    assert _one("Namespace")["metadata"]["name"] == NAMESPACE


def test_kubernetes_validate_strict() -> None:
    tool = shutil.which("kubernetes-validate") or str(REPO / ".venv" / "bin" / "kubernetes-validate")
    if not Path(tool).exists():
        pytest.skip("kubernetes-validate is not installed (pip install kubernetes-validate to run this check)")
    files = [p for p in _all_files() if p.name != "kustomization.yaml"]
    builtin = sum(1 for p in files for doc in _docs(p) if doc["kind"] not in CUSTOM_KINDS)
    run = subprocess.run([tool, "--strict", *map(str, files)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count(" passed ") == builtin, run.stdout + run.stderr
    for line in (run.stdout + run.stderr).splitlines():
        if line.startswith("WARN"):  # only the custom kinds may go unchecked
            assert any(f"kind {kind} " in line for kind in CUSTOM_KINDS), line


# --- Deployment, PDB, Service ---------------------------------------------------------------------

def test_deployment_replicas_probes_resources_and_security() -> None:
    deployment = _one("Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    (container,) = pod["containers"]
    assert container["image"] == "ghcr.io/kafkaops/kafkaops:0.1.0"
    command = container["command"] + container["args"]
    assert command[:2] == ["kafkaops", "run"]
    assert "--all-namespaces" in command
    assert command[command.index("--liveness") + 1] == "http://0.0.0.0:8080/healthz"
    assert command[command.index("--peering") + 1] == "kafkaops"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 9090, "healthz": 8080}
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] == "/healthz"
        assert ports[container[probe]["httpGet"]["port"]] == 8080
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "256Mi"}
    assert container["resources"]["limits"] == {"cpu": "1", "memory": "512Mi"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["runAsNonRoot"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"  # kopf's peer identity
    assert env["KAFKAOPS_LOG_FORMAT"]["value"] == "json"
    anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert anti[0]["podAffinityTerm"]["labelSelector"]["matchLabels"] == spec["selector"]["matchLabels"]
    # The read-only root filesystem leaves /tmp as the one writable path.
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/tmp"}


def test_pdb_and_metrics_service_select_the_operator_pods() -> None:
    pod_labels = _one("Deployment")["spec"]["template"]["metadata"]["labels"]
    pdb = _one("PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    service = _one("Service")
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}]
    annotations = service["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == "9090" and annotations["prometheus.io/path"] == "/metrics"


# --- RBAC -----------------------------------------------------------------------------------------

def test_cluster_role_grants_exactly_what_the_operator_needs() -> None:
    role = _one("ClusterRole")
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}  # no resourceNames tricks, no nonResourceURLs
        for key in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[key], rule
    crud = ("get", "list", "patch", "update", "watch")
    expected = {("kafkaops.io", r, crud) for r in KAFKAOPS_RESOURCES}
    expected |= {("kafkaops.io", f"{r}/status", ("patch", "update")) for r in KAFKAOPS_RESOURCES}
    expected |= {
        ("", "events", ("create", "patch")),
        ("events.k8s.io", "events", ("create", "patch")),
        ("apiextensions.k8s.io", "customresourcedefinitions", ("get", "list", "watch")),
        ("kopf.dev", "clusterkopfpeerings", ("get", "list", "patch", "watch")),
    }
    assert _rule_pairs(role["rules"]) == expected
    assert {(g, r) for g, r, _ in _rule_pairs(role["rules"])} == {(g, r) for g, r, _ in expected}


def test_service_account_is_the_one_bound() -> None:
    account = _one("ServiceAccount")
    binding = _one("ClusterRoleBinding")
    deployment = _one("Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": _one("ClusterRole")["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": NAMESPACE}]


def test_namespaced_variant_keeps_secrets_in_the_watched_namespace() -> None:
    directory = MANIFESTS / "components" / "namespaced"
    role = _one("Role", directory)
    binding = _one("RoleBinding", directory)
    watched = role["metadata"]["namespace"]
    assert watched != NAMESPACE and binding["metadata"]["namespace"] == watched
    pairs = _rule_pairs(role["rules"])
    cluster_pairs = _rule_pairs(_one("ClusterRole")["rules"])
    namespaced_part = {p for p in cluster_pairs
                       if p[1] not in {"customresourcedefinitions", "clusterkopfpeerings"}}
    assert pairs == namespaced_part | {("kopf.dev", "kopfpeerings", ("get", "list", "patch", "watch")),
                                       ("", "secrets", ("create", "get", "patch"))}
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kafkaops", "namespace": NAMESPACE}]
    discovery = _one("ClusterRole", directory)
    assert _rule_pairs(discovery["rules"]) == {
        ("apiextensions.k8s.io", "customresourcedefinitions", ("get", "list", "watch")),
        ("", "namespaces", ("list", "watch")),
    }
    peering = _one("KopfPeering", directory)
    assert peering["metadata"] == peering["metadata"] | {"name": "kafkaops", "namespace": watched}


# --- peering --------------------------------------------------------------------------------------

def test_peering_crds_and_object() -> None:
    crds = {doc["metadata"]["name"]: doc for doc in _docs(MANIFESTS / "peering.yaml")
            if doc["kind"] == "CustomResourceDefinition"}
    assert set(crds) == {"clusterkopfpeerings.kopf.dev", "kopfpeerings.kopf.dev"}
    scopes = {name: crd["spec"]["scope"] for name, crd in crds.items()}
    assert scopes == {"clusterkopfpeerings.kopf.dev": "Cluster", "kopfpeerings.kopf.dev": "Namespaced"}
    for crd in crds.values():
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1" and crd["spec"]["group"] == "kopf.dev"
        (version,) = crd["spec"]["versions"]
        assert version["name"] == "v1" and version["served"] and version["storage"]
        status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
        assert status == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    peering = _one("ClusterKopfPeering")
    assert peering["apiVersion"] == "kopf.dev/v1" and peering["metadata"]["name"] == "kafkaops"


def test_peering_matches_what_kopf_looks_for() -> None:
    kopf_refs = pytest.importorskip("kopf._cogs.structs.references")
    crds = {doc["spec"]["names"]["plural"]: doc for doc in _docs(MANIFESTS / "peering.yaml")
            if doc["kind"] == "CustomResourceDefinition"}
    for selector in (kopf_refs.CLUSTER_PEERINGS_K, kopf_refs.NAMESPACED_PEERINGS_K):
        crd = crds[selector.any_name]
        assert (crd["spec"]["group"], crd["spec"]["versions"][0]["name"]) == (selector.group, selector.version)


# --- kustomize builds (when kubectl is around) ------------------------------------------------------

def _build(directory: Path) -> list[dict[str, Any]]:
    run = subprocess.run([_kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return [doc for doc in yaml.safe_load_all(run.stdout) if doc]


def test_kustomize_build() -> None:
    built = _build(MANIFESTS)
    kinds = sorted(doc["kind"] for doc in built)
    assert kinds == sorted(doc["kind"] for doc in _objects())
    for doc in built:
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kafkaops"
    (peering,) = [doc for doc in built if doc["kind"] == "ClusterKopfPeering"]
    assert "namespace" not in peering["metadata"]  # cluster-scoped; kustomize would otherwise add one
    (deployment,) = [doc for doc in built if doc["kind"] == "Deployment"]
    assert "app.kubernetes.io/part-of" not in deployment["spec"]["selector"]["matchLabels"]


# --- Argo CD health check -------------------------------------------------------------------------

LUA_VERSIONS = ["lua51", "lua54"]  # Argo CD's gopher-lua speaks 5.1; 5.4 guards against dialect slips


@pytest.fixture(params=LUA_VERSIONS)
def lua(request: pytest.FixtureRequest) -> Any:
    module = pytest.importorskip(f"lupa.{request.param}")
    return module.LuaRuntime(unpack_returned_tuples=True)


def to_lua(lua: Any, value: Any) -> Any:
    """Python -> Lua the way Argo CD hands objects over: dicts as tables, lists as 1-based tables."""
    if isinstance(value, dict):
        table = lua.table()
        for key, item in value.items():
            if item is not None:
                table[key] = to_lua(lua, item)
        return table
    if isinstance(value, (list, tuple)):
        table = lua.table()
        for index, item in enumerate(value, start=1):
            table[index] = to_lua(lua, item)
        return table
    return value


def health(lua: Any, obj: dict[str, Any]) -> tuple[str, str]:
    lua.globals().obj = to_lua(lua, obj)
    hs = lua.execute(HEALTH_LUA.read_text("utf-8"))
    assert hs is not None
    assert set(hs.keys()) <= {"status", "message"}
    assert hs["status"] in {"Healthy", "Progressing", "Degraded", "Suspended", "Missing"}
    return hs["status"], hs["message"]


def cond(ctype: str, status: str, reason: str | None = None, message: str | None = None) -> dict[str, Any]:
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2025-01-01T00:00:00Z", "observedGeneration": 3}


def topic(*conditions: dict[str, Any], generation: int | None = 3, observed: int | None = 3,
          status: bool = True, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic",
                           "metadata": {"name": "orders", "namespace": "kafka-apps", "generation": generation,
                                        "annotations": annotations},
                           "spec": {"partitions": 6}}
    if status:
        obj["status"] = {"observedGeneration": observed, "conditions": list(conditions) if conditions else None}
    return obj


READY = cond("Ready", "True", "Reconciled", "topic matches the spec")


def test_health_no_status(lua: Any) -> None:
    assert health(lua, topic(status=False)) == ("Progressing", "waiting for the operator to observe generation 3")


def test_health_empty_object(lua: Any) -> None:
    assert health(lua, {}) == ("Progressing", "waiting for the operator to observe the resource")
    assert health(lua, {"metadata": {}, "status": {}}) == (
        "Progressing", "waiting for the operator to observe the resource")


def test_health_stale_observed_generation(lua: Any) -> None:
    # Even a Ready=True from the previous generation says nothing about the new spec.
    assert health(lua, topic(READY, generation=4, observed=3)) == (
        "Progressing", "waiting for the operator to observe generation 4")
    assert health(lua, topic(READY, observed=None)) == (
        "Progressing", "waiting for the operator to observe generation 3")


def test_health_stale_but_paused_is_suspended(lua: Any) -> None:
    paused = cond("Ready", "False", "Paused", "kafkaops.io/paused is set")
    status, message = health(lua, topic(paused, generation=5, observed=4,
                                        annotations={"kafkaops.io/paused": "true"}))
    assert status == "Suspended" and "generation 5" in message
    assert health(lua, topic(paused, generation=5, observed=4,
                             annotations={"kafkaops.io/paused": "false"}))[0] == "Progressing"


def test_health_status_without_conditions(lua: Any) -> None:
    assert health(lua, topic()) == ("Progressing", "waiting for the Ready condition")
    assert health(lua, topic(cond("Drifted", "False"))) == ("Progressing", "waiting for the Ready condition")


def test_health_stalled_is_degraded(lua: Any) -> None:
    stalled = cond("Stalled", "True", "PartitionDecrease", "partitions cannot shrink from 6 to 3")
    not_ready = cond("Ready", "False", "PartitionDecrease", "stalled")
    assert health(lua, topic(not_ready, cond("Reconciling", "False"), stalled)) == (
        "Degraded", "PartitionDecrease: partitions cannot shrink from 6 to 3")
    # Stalled wins over everything after the generation check, Ready=True included.
    assert health(lua, topic(READY, stalled))[0] == "Degraded"
    assert health(lua, topic(cond("Stalled", "True"))) == ("Degraded", "stalled")
    assert health(lua, topic(READY, cond("Stalled", "False", "Ok")))[0] == "Healthy"


def test_health_paused_is_suspended(lua: Any) -> None:
    paused = cond("Ready", "False", "Paused", "kafkaops.io/paused is set; not reconciling")
    assert health(lua, topic(paused, annotations={"kafkaops.io/paused": "true"})) == (
        "Suspended", "Paused: kafkaops.io/paused is set; not reconciling")
    assert health(lua, topic(cond("Ready", "False", "Paused"))) == ("Suspended", "Paused")


def test_health_reconciling_is_progressing(lua: Any) -> None:
    reconciling = cond("Reconciling", "True", "Reassigning", "reassigning 3 of 6 partitions")
    assert health(lua, topic(cond("Ready", "False", "Reconciling"), reconciling)) == (
        "Progressing", "Reassigning: reassigning 3 of 6 partitions")
    assert health(lua, topic(cond("Ready", "Unknown"), cond("Reconciling", "True"))) == (
        "Progressing", "reconciling")
    assert health(lua, topic(READY, reconciling))[0] == "Progressing"


def test_health_ready_is_healthy(lua: Any) -> None:
    assert health(lua, topic(READY, cond("Reconciling", "False"), cond("Stalled", "False"),
                             cond("Drifted", "False"))) == ("Healthy", "Reconciled: topic matches the spec")
    assert health(lua, topic(cond("Ready", "True"))) == ("Healthy", "ready")


def test_health_ready_with_drift_mentions_it(lua: Any) -> None:
    drifted = cond("Drifted", "True", "ConfigDrift", "retention.ms changed outside kafkaops")
    assert health(lua, topic(READY, drifted)) == (
        "Healthy", "Reconciled: topic matches the spec (drift detected: ConfigDrift: retention.ms changed outside kafkaops)")
    assert health(lua, topic(cond("Ready", "True"), cond("Drifted", "True"))) == (
        "Healthy", "ready (drift detected: Drifted)")


def test_health_not_ready_is_degraded(lua: Any) -> None:
    assert health(lua, topic(cond("Ready", "False", "AuthenticationFailed", "SASL handshake rejected"))) == (
        "Degraded", "AuthenticationFailed: SASL handshake rejected")
    assert health(lua, topic(cond("Ready", "False", None, "broker unreachable"))) == (
        "Degraded", "broker unreachable")
    assert health(lua, topic(cond("Ready", "False"))) == ("Degraded", "not ready")


def test_health_unknown_ready_is_progressing(lua: Any) -> None:
    assert health(lua, topic(cond("Ready", "Unknown", "Pending", "first reconcile queued"))) == (
        "Progressing", "Pending: first reconcile queued")


def test_health_tolerates_odd_conditions(lua: Any) -> None:
    # A condition without type/status, and an empty conditions list, must not break the script.
    odd = {"reason": "x"}
    assert health(lua, topic(odd, READY))[0] == "Healthy"
    obj = topic()
    obj["status"]["conditions"] = []
    assert health(lua, obj) == ("Progressing", "waiting for the Ready condition")
    no_generation = topic(READY, generation=None)
    assert health(lua, no_generation)[0] == "Healthy"


def test_health_uses_the_first_ready_condition(lua: Any) -> None:
    assert health(lua, topic(READY, cond("Ready", "False", "Late")))[0] == "Healthy"


@pytest.mark.parametrize("kind", ["KafkaCluster", "KafkaTopic", "KafkaAcl", "KafkaBrokerConfig"])
def test_health_is_kind_agnostic_and_readme_installs_it_for_every_kind(lua: Any, kind: str) -> None:
    obj = topic(READY)
    obj["kind"] = kind
    assert health(lua, obj)[0] == "Healthy"
    assert f"resource.customizations.health.kafkaops.io_{kind}" in (MANIFESTS / "README.md").read_text("utf-8")
