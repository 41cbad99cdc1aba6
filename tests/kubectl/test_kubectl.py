"""The README's operator section with the real kubectl binary (see conftest.py), in order.

Every README kubectl command is written here literally as the argument of `k(...)` (or
`k.watch(...)`); test_readme_walk.py checks that none is missing. The tests of one kubectl
version share one stack and run in file order, as a user follows the README.
"""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path

import yaml

from .conftest import ROOT, Kubectl, Stack

KINDS = ("kafkaclusters", "kafkatopics", "kafkaacls", "kafkabrokerconfigs")


def printer_columns() -> dict[str, list[dict[str, object]]]:
    """plural -> the CRD's additionalPrinterColumns, from crds/."""
    found = {}
    for path in sorted((ROOT / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        found[crd["spec"]["names"]["plural"]] = crd["spec"]["versions"][0].get("additionalPrinterColumns", [])
    return found


def header(out: str) -> list[str]:
    return re.split(r"\s{2,}", out.splitlines()[0].strip())


def test_install_crds_and_manifests(stack: Stack, k: Kubectl) -> None:
    # dev-kube starts with the built-in groups only: the kafkaops kinds appear with the CRDs.
    k("kubectl get kafkatopics.kafkaops.io -A", ok=False)
    k("kubectl apply -f crds/")
    for kind in KINDS:
        k(f"kubectl wait --for=condition=Established crd/{kind}.kafkaops.io --timeout=5s")
    # As on a real cluster, the first apply cannot map the ClusterKopfPeering before its CRD exists
    # (manifests/README.md); the rest is applied, and the second apply completes it.
    first = k("kubectl apply -k manifests/", ok=False)
    assert 'no matches for kind "ClusterKopfPeering" in version "kopf.dev/v1"' in first.stderr
    assert "deployment.apps/kafkaops created" in first.stdout
    k("kubectl wait --for condition=established --timeout=60s crd/clusterkopfpeerings.kopf.dev "
      "crd/kopfpeerings.kopf.dev")
    k("kubectl apply -k manifests/")
    k("kubectl -n kafkaops-system rollout status deploy/kafkaops")  # no pods here: rolled out at once
    # A strategic merge patch of a built-in (kubectl's choice for them): the container merges by name.
    k("kubectl set image deploy/kafkaops operator=ghcr.io/kafkaops/kafkaops:0.1.1 -n kafkaops-system")
    deployment = json.loads(k("kubectl get deploy/kafkaops -n kafkaops-system -o json").stdout)
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [c["image"] for c in containers] == ["ghcr.io/kafkaops/kafkaops:0.1.1"] and containers[0].get("args")
    assert not any(key.startswith("$") for key in json.dumps(deployment).split('"'))
    k("kubectl apply -k manifests/")  # back to the manifests' image: a client-side apply patch
    image = k("kubectl get deploy/kafkaops -n kafkaops-system -o jsonpath={.spec.template.spec.containers[0].image}")
    assert image.stdout == "ghcr.io/kafkaops/kafkaops:0.1.0"
    assert "kafkaops" in k("kubectl get clusterrole kafkaops -o name").stdout


def test_dev_examples_become_ready(stack: Stack, k: Kubectl) -> None:
    k("kubectl create namespace kafka-dev")  # kubectl sends this one as protobuf
    assert k("kubectl get namespace kafka-dev -o jsonpath={.status.phase}").stdout == "Active"
    k("kubectl apply -R -f examples/clusters/dev/")  # client-side validation on (the default)
    # Test-only: the examples point at 127.0.0.1:19092; this dev-cluster listens on a free port.
    patch = json.dumps({"spec": {"bootstrapServers": stack.kafka.url.split(",")}})
    k(f"kubectl patch kocl/dev -n kafka-dev --type merge -p '{patch}'")
    stack.start_operator()
    for kind in KINDS:
        stack.wait_until(f"kubectl get {kind} -n kafka-dev -o jsonpath='{{.items[*].status.conditions"
                         f"[?(@.type==\"Ready\")].status}}'", "True")
    started = time.monotonic()
    k("kubectl wait --for=condition=Ready kafkaclusters,kafkatopics,kafkaacls,kafkabrokerconfigs --all -n kafka-dev",
      timeout=150)
    print(f"kubectl wait for 14 examples: {time.monotonic() - started:.1f}s")


def test_get_shows_every_printer_column(stack: Stack, k: Kubectl) -> None:
    columns = printer_columns()
    out = k("kubectl get kafkaops -n kafka-dev").stdout
    blocks = [b for b in out.strip().split("\n\n") if b.strip()]
    assert len(blocks) == 4, out  # one table per kind
    shown = {tuple(header(block)) for block in blocks}
    for plural, cols in columns.items():
        if plural in ("kafkausers", "kafkaclientquotas"):  # examples/clusters/dev declares none
            continue
        expected = ("NAME", *(c["name"].upper() for c in cols if not c.get("priority")))
        assert expected in shown, (plural, shown)
    assert "No resources found in default namespace" in k("kubectl get kafkatopics.kafkaops.io").stderr
    wide = k("kubectl get kafkatopics.kafkaops.io -n kafka-dev -o wide").stdout
    assert header(wide) == ["NAME", *(c["name"].upper() for c in columns["kafkatopics"])]
    assert re.search(r"^orders\.events\.v1\s+dev\s+orders\.events\.v1\s+6\s+1\s+True\s+Applied\s+\d+s", wide, re.M), wide
    every = k("kubectl get kafkaops -A").stdout
    for kind in ("kafkacluster.kafkaops.io/dev", "kafkatopic.kafkaops.io/orders.dlq",
                 "kafkaacl.kafkaops.io/orders-service", "kafkabrokerconfig.kafkaops.io/dev-defaults"):
        assert kind in every
    # `kafka` is Strimzi's (its Kafka kind); kafkaops does not claim it.
    assert "doesn't have a resource type" in k("kubectl get kafka", ok=False).stderr


def test_explain(stack: Stack, k: Kubectl) -> None:
    out = k("kubectl explain kafkatopics.spec").stdout
    assert "KafkaTopic" in out and "kafkaops.io" in out
    for name in ("clusterRef", "partitions", "replicationFactor", "config", "deletionPolicy"):
        assert re.search(rf"^\s+{name}\s", out, re.M), name


def test_kopfs_record_of_what_it_handled_is_in_the_status_not_the_metadata(stack: Stack, k: Kubectl) -> None:
    """k8s/diffbase.py: what `kubectl get -o yaml` and `kubectl explain` show a user."""
    import json

    annotations = k("kubectl get kot/orders.state.v1 -n kafka-dev -o jsonpath={.metadata.annotations}").stdout
    assert "kopf.kafkaops.io" not in annotations, annotations
    record = json.loads(k("kubectl get kot/orders.state.v1 -n kafka-dev -o jsonpath={.status.lastHandledConfiguration}"
                          ).stdout)
    spec = json.loads(k("kubectl get kot/orders.state.v1 -n kafka-dev -o jsonpath={.spec}").stdout)
    assert record["spec"] == spec
    out = k("kubectl explain kafkatopics.status.lastHandledConfiguration").stdout
    assert "lastHandledConfiguration" in out and "Written by the operator" in out, out


def test_a_bad_manifest_is_rejected_with_its_field(stack: Stack, k: Kubectl, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: bad, namespace: kafka-dev}\n"
                   "spec: {clusterRef: {name: dev}, partitions: -3}\n")
    err = k(f"kubectl apply -f {bad} --validate=false", ok=False).stderr
    assert 'The KafkaTopic "bad" is invalid: spec.partitions' in err and "greater than or equal to 1" in err
    bad.write_text(bad.read_text().replace("partitions: -3", "partitions: 3, colour: blue"))
    err = k(f"kubectl apply -f {bad}", ok=False).stderr  # validation on: the unknown field is an error
    assert 'unknown field "spec.colour"' in err
    assert "NotFound" in k("kubectl get kot/bad -n kafka-dev", ok=False).stderr  # nothing stored


def test_patch_gives_a_new_generation_that_becomes_ready(stack: Stack, k: Kubectl) -> None:
    k("kubectl patch kot/orders.dlq -n kafka-dev --type merge -p '{\"spec\":{\"partitions\":3}}'")
    assert k("kubectl get kot/orders.dlq -n kafka-dev -o jsonpath={.metadata.generation}").stdout == "2"
    k("kubectl wait --for=jsonpath='{.status.observedGeneration}'=2 kot/orders.dlq -n kafka-dev")
    k("kubectl wait --for=condition=Ready kot/orders.dlq -n kafka-dev")
    out = k("kubectl get kot/orders.dlq -n kafka-dev").stdout
    assert re.search(r"^orders\.dlq\s+dev\s+3\s+1\s+True", out, re.M), out


def test_server_side_apply(stack: Stack, k: Kubectl, tmp_path: Path) -> None:
    k("kubectl apply --server-side -f examples/clusters/dev/topics/payments.yaml")
    doc = next(d for d in yaml.safe_load_all((ROOT / "examples/clusters/dev/topics/payments.yaml").read_text())
               if d["metadata"]["name"] == "payments.fraud-scores")
    doc["spec"]["partitions"] = doc["spec"]["partitions"] + 2
    doc["spec"]["config"].pop(next(iter(doc["spec"]["config"])))  # a field this manager no longer applies
    changed = tmp_path / "fraud.yaml"
    changed.write_text(yaml.safe_dump(doc))
    k(f"kubectl apply --server-side --field-manager=team-payments -f {changed}")
    k(f"kubectl apply --server-side --field-manager=team-payments -f {changed}")  # unchanged: a no-op
    got = yaml.safe_load(k("kubectl get kot/payments.fraud-scores -n kafka-dev -o yaml").stdout)
    assert got["spec"]["partitions"] == doc["spec"]["partitions"]
    k("kubectl wait --for=jsonpath={.status.partitions}=" + str(doc["spec"]["partitions"])
      + " kot/payments.fraud-scores -n kafka-dev")


def test_watch_sees_changes(stack: Stack, k: Kubectl) -> None:
    watch = k.watch("kubectl get kot -n kafka-dev --watch-only")  # rows of Tables, as the server prints them
    try:
        time.sleep(1.0)  # let the watch start
        k("kubectl annotate kot/orders.state.v1 -n kafka-dev kafkaops.io/note=watched")
        assert watch.stdout is not None
        first, line = watch.stdout.readline(), watch.stdout.readline()
        assert header(first) == ["NAME", "CLUSTER", "PARTITIONS", "RF", "READY", "REASON", "AGE"]
        assert re.match(r"orders\.state\.v1\s+dev\s+6\s+1\s+True\s+Applied\s+\d+s", line), line
    finally:
        watch.terminate()
        watch.wait(timeout=10)


def test_delete_goes_through_the_finalizer(stack: Stack, k: Kubectl) -> None:
    assert "kafkaops.io/finalizer" in k("kubectl get kot/orders.dlq -n kafka-dev -o jsonpath={.metadata.finalizers}"
                                        ).stdout
    k("kubectl delete kot/orders.dlq -n kafka-dev")  # waits (--wait is the default) until the object is gone
    assert "NotFound" in k("kubectl get kot/orders.dlq -n kafka-dev", ok=False).stderr
    k("kubectl delete kot/analytics.daily-rollups -n kafka-dev --wait=false")
    k("kubectl wait --for=delete kot/analytics.daily-rollups -n kafka-dev --timeout=60s")


def test_user_with_a_generated_password(stack: Stack, k: Kubectl) -> None:
    k("kubectl apply -f examples/users/ -n kafka-dev")
    k("kubectl wait --for=condition=Ready kou/dashboards -n kafka-dev", timeout=120)
    out = k("kubectl get kou -n kafka-dev").stdout
    assert "User:dashboards" in out and "SCRAM-SHA-256" in out
    encoded = k("kubectl get secret dashboards-credentials -n kafka-dev -o jsonpath='{.data.password}'").stdout
    password = base64.b64decode(encoded).decode()
    assert len(password) >= 24
    shown = k("kubectl get kou/dashboards -n kafka-dev -o json").stdout
    assert json.loads(shown)["status"]["secretName"] == "dashboards-credentials" and password not in shown
    # orders-reporting references a Secret nobody created: it waits and says which
    stack.wait_until("kubectl get kou/orders-reporting -n kafka-dev -o jsonpath={.status.conditions}",
                     "PasswordUnavailable")


def test_builtin_kinds_sent_as_protobuf(stack: Stack, k: Kubectl) -> None:
    k("kubectl create secret generic demo-secret -n kafka-dev --from-literal=password=s3cret")
    data = k("kubectl get secret demo-secret -n kafka-dev -o jsonpath={.data.password}").stdout
    assert base64.b64decode(data) == b"s3cret"
    k("kubectl create configmap demo-config -n kafka-dev --from-literal=colour=blue")
    assert k("kubectl get configmap demo-config -n kafka-dev -o jsonpath={.data.colour}").stdout == "blue"
    k("kubectl create serviceaccount demo-sa -n kafka-dev")
    k("kubectl delete secret/demo-secret configmap/demo-config serviceaccount/demo-sa -n kafka-dev")


def test_prod_example_from_the_readme(stack: Stack, k: Kubectl, tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    prod = re.search(r"\(`prod\.yaml`\):\n\n```yaml\n(.*?)```", readme, re.S)
    assert prod is not None, "the README's prod.yaml block"
    (tmp_path / "prod.yaml").write_text(prod[1])
    k("kubectl create namespace kafka")
    k("kubectl apply -k manifests/secrets-access/")
    assert "role.rbac.authorization.k8s.io/kafkaops-secrets" in k("kubectl get role -n kafka -o name").stdout
    k("kubectl apply -f prod.yaml", cwd=tmp_path)
    out = k("kubectl get kafkaops -n kafka").stdout
    assert "kafkacluster.kafkaops.io/prod" in out and "kafkatopic.kafkaops.io/orders" in out
    # prod's brokers do not resolve here: the operator says so and keeps trying.
    stack.wait_until("kubectl get kot/orders -n kafka -o jsonpath={.status.conditions}", "Reconciling")
    described = k("kubectl describe kot/orders -n kafka").stdout
    assert "Conditions:" in described or "Conditions" in described
    k("kubectl annotate kafkacluster/prod kafkaops.io/confirm-deletions=true -n kafka")
    k("kubectl annotate kot/orders kafkaops.io/managed=false -n kafka")
    k("kubectl delete kot/orders -n kafka --timeout=60s")  # released: the finalizer goes without Kafka
