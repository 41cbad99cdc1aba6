"""Every kustomize entry point of manifests/ (the base, secrets-access, each component, the example overlay
in deploy/) rendered by the real `kubectl kustomize`, validated against the Kubernetes schemas, and checked
for the restricted Pod Security profile and least-privilege Secrets access."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1].parent
MANIFESTS = REPO / "manifests"
COMPONENTS = MANIFESTS / "components"
SCHEMAS = Path(__file__).resolve().parent / "schemas"
OPERATOR_NS = "kafkaops-system"
POD_LABELS = {"app.kubernetes.io/name": "kafkaops", "app.kubernetes.io/component": "operator"}
KUBERNETES_VERSIONS = ["1.27", "1.32"]  # the oldest kubectl on these machines, and the one on PATH


# --- rendering ------------------------------------------------------------------------------------

def _kubectl() -> str:
    tool = shutil.which("kubectl")
    if tool is None:
        pytest.skip("kubectl is not installed (needed for `kubectl kustomize`)")
    return tool


@cache
def _render_dir(directory: Path) -> tuple[dict[str, Any], ...]:
    run = subprocess.run([_kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"kubectl kustomize {directory}: {run.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(run.stdout) if doc)


def _overlay(tmp: Path, kustomization: dict[str, Any], files: dict[str, Any] | None = None) -> Path:
    """A kustomization in tmp whose paths to the repository are relative (kustomize refuses absolute ones)."""
    tmp.mkdir(parents=True, exist_ok=True)
    rel = {key: [os.path.relpath(REPO / item, tmp) if (REPO / item).exists() else item for item in items]
           for key, items in kustomization.items() if key in ("resources", "components")}
    (tmp / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", **kustomization, **rel}))
    for name, doc in (files or {}).items():
        (tmp / name).write_text(yaml.safe_dump(doc))
    return tmp


def _watched(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kafkaops-watched-namespace",
                         "annotations": {"config.kubernetes.io/local-config": "true"}},
            "data": {"namespace": namespace}}


ALL_COMPONENTS = sorted(p.name for p in COMPONENTS.iterdir() if (p / "kustomization.yaml").exists())
OPTIONAL_COMPONENTS = [c for c in ALL_COMPONENTS if c != "namespaced"]  # namespaced needs its ConfigMap


def _build_cases() -> dict[str, Any]:
    cases: dict[str, Any] = {
        "manifests": "manifests",
        "secrets-access": "manifests/secrets-access",
        "secrets-access-team-a": ({"namespace": "team-a", "resources": ["manifests/secrets-access"]}, {}),
        "deploy/namespaced": "deploy/namespaced",
        "namespaced-team-a": ({"resources": ["manifests", "watched-namespace.yaml"],
                               "components": ["manifests/components/namespaced"]},
                              {"watched-namespace.yaml": _watched("team-a")}),
        "namespaced+all": ({"resources": ["manifests", "watched-namespace.yaml"],
                            "components": ["manifests/components/namespaced",
                                           *(f"manifests/components/{c}" for c in OPTIONAL_COMPONENTS
                                             if c != "secrets-cluster-wide")]},  # the opposite choice
                           {"watched-namespace.yaml": _watched("kafka-apps")}),
    }
    for component in OPTIONAL_COMPONENTS:
        cases[f"manifests+{component}"] = ({"resources": ["manifests"],
                                            "components": [f"manifests/components/{component}"]}, {})
    return cases


BUILDS = _build_cases()


@pytest.fixture(scope="module")
def render(tmp_path_factory: pytest.TempPathFactory) -> Any:
    def _render(case: str) -> list[dict[str, Any]]:
        spec = BUILDS[case]
        if isinstance(spec, str):
            return list(_render_dir(REPO / spec))
        kustomization, files = spec
        directory = _overlay(tmp_path_factory.mktemp(case.replace("/", "-").replace("+", "-")), kustomization, files)
        return list(_render_dir(directory))
    return _render


def _of(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def _one(objs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    (obj,) = [o for o in _of(objs, kind) if name is None or o["metadata"]["name"] == name]
    return obj


def _secret_rules(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in obj.get("rules", []) if "" in r["apiGroups"] and {"secrets", "*"} & set(r["resources"])]


# --- schema validation ----------------------------------------------------------------------------

def _strict(schema: Any) -> Any:
    """A CRD's openAPIV3Schema as the API server prunes it: unknown fields are errors, except under
    x-kubernetes-preserve-unknown-fields. (jsonschema ignores the other x-kubernetes-* keywords.)"""
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _strict(value) for key, value in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def _crd_schemas(crds: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    schemas = {}
    for crd in crds:
        for version in crd["spec"]["versions"]:
            api_version = f"{crd['spec']['group']}/{version['name']}"
            schema = _strict(version["schema"]["openAPIV3Schema"])
            schema.setdefault("properties", {}).update({"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                                        "metadata": {"type": "object"}})
            schemas[(api_version, crd["spec"]["names"]["kind"])] = schema
    return schemas


@cache
def _vendored_crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    crds = [doc for path in sorted(SCHEMAS.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text("utf-8"))
            if doc and doc.get("kind") == "CustomResourceDefinition"]
    return _crd_schemas(crds)


def validation_errors(objs: list[dict[str, Any]], version: str) -> Iterator[str]:
    """Built-in kinds against kubernetes-validate's schemas (strict); CRD-based kinds against their CRD,
    from the same build or vendored in tests/manifests/schemas. A kind with no schema anywhere is an error."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    custom = _vendored_crd_schemas() | _crd_schemas(_of(objs, "CustomResourceDefinition"))
    for obj in objs:
        where = f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
        key = (obj["apiVersion"], obj["kind"])
        if key in custom:
            for error in jsonschema.Draft7Validator(custom[key]).iter_errors(obj):
                yield f"{where}: {'.'.join(map(str, error.absolute_path))}: {error.message}"
            continue
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            yield f"{where}: {error}"
        except kubernetes_validate.SchemaNotFoundError:
            yield f"{where}: no schema for {key} (neither built in nor a CRD we know)"


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("case", list(BUILDS))
def test_every_build_renders_and_validates(render: Any, case: str, version: str) -> None:
    objs = render(case)
    assert objs
    assert not list(validation_errors(objs, version))
    ids = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs]
    assert len(ids) == len(set(ids)), ids
    assert not _of(objs, "ConfigMap")  # the local-config ConfigMap never reaches the cluster


def test_validation_catches_a_typo_in_a_servicemonitor_and_a_deployment(render: Any) -> None:
    objs = render("manifests+service-monitor")
    monitor = _one(objs, "ServiceMonitor")
    monitor["spec"]["endpoints"][0]["scrapeTimout"] = "10s"
    deployment = _one(objs, "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFileSystem"] = True
    errors = list(validation_errors([monitor, deployment], "1.32"))
    assert len(errors) == 2, errors
    assert "scrapeTimout" in errors[0] and "Deployment" in errors[1]
    unknown = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert "no schema" in next(validation_errors([unknown], "1.32"))


# --- restricted Pod Security Standard -------------------------------------------------------------

RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    """The rules of the `restricted` Pod Security Standard (baseline included, as of Kubernetes 1.32),
    plus the read-only root filesystem our Deployment promises. Pure: a pod spec in, problems out."""
    problems = []
    pod_sc = pod.get("securityContext") or {}
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(flag):
            problems.append(f"spec.{flag} is true")
    for volume in pod.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            problems.append(f"volume {volume['name']}: type {sorted(kinds - RESTRICTED_VOLUMES)} not allowed")
    if pod_sc.get("runAsUser") == 0:
        problems.append("spec.securityContext.runAsUser is 0")
    containers = [*(pod.get("initContainers") or []), *pod["containers"], *(pod.get("ephemeralContainers") or [])]
    for c in containers:
        sc = c.get("securityContext") or {}
        where = f"container {c['name']}"
        if sc.get("privileged"):
            problems.append(f"{where}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{where}: allowPrivilegeEscalation must be false")
        if sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is not True:
            problems.append(f"{where}: runAsNonRoot must be true")
        if sc.get("runAsUser") == 0:
            problems.append(f"{where}: runAsUser is 0")
        seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
        if seccomp not in {"RuntimeDefault", "Localhost"}:
            problems.append(f"{where}: seccompProfile.type must be RuntimeDefault or Localhost, not {seccomp}")
        capabilities = sc.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            problems.append(f"{where}: capabilities.drop must contain ALL")
        if set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
            problems.append(f"{where}: capabilities.add beyond NET_BIND_SERVICE")
        if any(p.get("hostPort") for p in c.get("ports") or []):
            problems.append(f"{where}: hostPort")
        if sc.get("procMount", "Default") != "Default":
            problems.append(f"{where}: procMount")
        if sc.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{where}: readOnlyRootFilesystem must be true")
    return problems


def _workloads(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] in {"Deployment", "StatefulSet", "DaemonSet", "Job", "Pod"}]


@pytest.mark.parametrize("case", list(BUILDS))
def test_restricted_pod_security_holds_in_every_build(render: Any, case: str) -> None:
    objs = render(case)
    for workload in _workloads(objs):
        pod = workload["spec"] if workload["kind"] == "Pod" else workload["spec"]["template"]["spec"]
        assert restricted_violations(pod) == [], workload["metadata"]["name"]
    for namespace in _of(objs, "Namespace"):
        labels = namespace["metadata"]["labels"]
        assert labels["pod-security.kubernetes.io/enforce"] == "restricted", namespace["metadata"]["name"]


def test_restricted_check_rejects_what_the_profile_forbids(render: Any) -> None:
    pod = _one(render("manifests"), "Deployment")["spec"]["template"]["spec"]
    assert restricted_violations(pod) == []
    bad = yaml.safe_load(yaml.safe_dump(pod))
    bad["hostNetwork"] = True
    bad["volumes"].append({"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}})
    del bad["securityContext"]["seccompProfile"]
    sc = bad["containers"][0]["securityContext"]
    del sc["seccompProfile"]
    sc["allowPrivilegeEscalation"] = True
    sc["capabilities"] = {"drop": ["NET_RAW"], "add": ["SYS_ADMIN"]}
    sc["readOnlyRootFilesystem"] = False
    sc["runAsNonRoot"] = False
    problems = restricted_violations(bad)
    for needle in ("hostNetwork", "hostPath", "seccompProfile", "allowPrivilegeEscalation", "drop must contain ALL",
                   "capabilities.add", "readOnlyRootFilesystem", "runAsNonRoot"):
        assert any(needle in p for p in problems), (needle, problems)


# --- Secrets only where KafkaClusters live ---------------------------------------------------------

def test_base_grants_no_secrets_cluster_wide(render: Any) -> None:
    objs = render("manifests")
    for role in _of(objs, "ClusterRole") + _of(objs, "Role"):
        assert _secret_rules(role) == [], role["metadata"]["name"]


@pytest.mark.parametrize("case,namespace", [("secrets-access", "kafka"), ("secrets-access-team-a", "team-a")])
def test_secrets_access_is_a_role_in_one_namespace(render: Any, case: str, namespace: str) -> None:
    objs = render(case)
    assert sorted(o["kind"] for o in objs) == ["Role", "RoleBinding"]
    role, binding = _one(objs, "Role"), _one(objs, "RoleBinding")
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == namespace
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "patch", "create"]}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": role["metadata"]["name"]}
    # kustomize's namespace transformer must not move the subject out of the operator's namespace.
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kafkaops", "namespace": OPERATOR_NS}]


def test_cluster_wide_secrets_is_an_explicit_component(render: Any) -> None:
    objs = render("manifests+secrets-cluster-wide")
    (role,) = [r for r in _of(objs, "ClusterRole") if _secret_rules(r)]
    assert role["metadata"]["name"] == "kafkaops-secrets"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "patch", "create"]}]
    binding = _one(objs, "ClusterRoleBinding", "kafkaops-secrets")
    assert binding["roleRef"]["name"] == "kafkaops-secrets"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kafkaops", "namespace": OPERATOR_NS}]


@pytest.mark.parametrize("case,watched", [("deploy/namespaced", "kafka-apps"), ("namespaced-team-a", "team-a"),
                                          ("namespaced+all", "kafka-apps")])
def test_namespaced_overlay_puts_everything_in_the_configured_namespace(render: Any, case: str,
                                                                        watched: str) -> None:
    objs = render(case)
    names = {(o["kind"], o["metadata"]["name"]) for o in objs}
    assert ("ClusterRole", "kafkaops") not in names and ("ClusterKopfPeering", "kafkaops") not in names
    for kind in ("Role", "RoleBinding", "KopfPeering"):
        assert _one(objs, kind, "kafkaops")["metadata"]["namespace"] == watched, kind
    role = _one(objs, "Role", "kafkaops")
    assert _secret_rules(role) == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "patch", "create"]}]
    assert not any(_secret_rules(r) for r in _of(objs, "ClusterRole"))
    args = _one(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:2] == ["--namespace", watched] and "--all-namespaces" not in args
    assert not any("WATCHED" in str(o) for o in objs)  # the placeholder is always replaced
    for obj in objs:
        if obj["kind"] not in {"Role", "RoleBinding", "KopfPeering"} and "namespace" in obj["metadata"]:
            assert obj["metadata"]["namespace"] == OPERATOR_NS, obj["kind"]


def test_namespaced_component_without_its_configmap_fails_clearly(tmp_path: Path) -> None:
    directory = _overlay(tmp_path, {"resources": ["manifests"], "components": ["manifests/components/namespaced"]})
    run = subprocess.run([_kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "kafkaops-watched-namespace" in run.stderr


# --- ServiceMonitor and NetworkPolicy target the operator --------------------------------------------

def test_service_monitor_scrapes_the_metrics_service(render: Any) -> None:
    objs = render("manifests+service-monitor")
    monitor, service = _one(objs, "ServiceMonitor"), _one(objs, "Service", "kafkaops-metrics")
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"] == OPERATOR_NS
    assert "namespaceSelector" not in monitor["spec"]  # its own namespace, whatever an overlay makes it
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    matching = [s for s in _of(objs, "Service")
                if monitor["spec"]["selector"]["matchLabels"].items() <= s["metadata"]["labels"].items()]
    assert matching == [service]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"


def test_network_policy_allows_metrics_in_and_dns_api_kafka_out(render: Any) -> None:
    objs = render("manifests+network-policy")
    policy = _one(objs, "NetworkPolicy")
    deployment = _one(objs, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["podSelector"]["matchLabels"] == POD_LABELS
    assert sorted(policy["spec"]["policyTypes"]) == ["Egress", "Ingress"]
    ports = {p["name"]: p["containerPort"] for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]}
    (ingress,) = policy["spec"]["ingress"]
    assert ingress["ports"] == [{"port": "metrics", "protocol": "TCP"}] and ports["metrics"] == 9090
    egress = [(p["port"], p.get("endPort", p["port"]), p["protocol"])
              for rule in policy["spec"]["egress"] for p in rule["ports"]]
    for rule in policy["spec"]["egress"]:
        assert set(rule) == {"ports"}  # ports only: destinations are not known in advance
    assert {(53, 53, "UDP"), (53, 53, "TCP"), (443, 443, "TCP"), (6443, 6443, "TCP")} <= set(egress)
    assert (9092, 9098, "TCP") in egress
    assert len(egress) == 5  # nothing else goes out


def test_sharding_component_runs_three_active_replicas_with_a_lease_role(render: Any) -> None:
    objs = render("manifests+sharding")
    deployment = _one(objs, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["KAFKAOPS_SHARDING"]["value"] == "leases"  # overrides --peering (every replica active)
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"  # holderIdentity
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"  # where the Leases live
    role = _one(objs, "Role", "kafkaops-leases")
    assert role["metadata"]["namespace"] == OPERATOR_NS
    assert role["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                              "verbs": ["get", "list", "watch", "create", "update", "delete"]}]
    binding = _one(objs, "RoleBinding", "kafkaops-leases")
    assert binding["roleRef"]["name"] == "kafkaops-leases" and binding["metadata"]["namespace"] == OPERATOR_NS
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kafkaops", "namespace": OPERATOR_NS}]
