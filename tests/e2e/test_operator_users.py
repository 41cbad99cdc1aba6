"""KafkaUser and KafkaClientQuota end to end: the real `kafkaops run` process, the API emulator and
`kafkaops dev-cluster --sasl-port 0` (the fake cluster double with a SASL_PLAINTEXT listener that
checks the SCRAM credentials kafkaops stores). An independent client (confluent-kafka) logs in
with the password read from the Secret the operator generated, as a user would (the Kubernetes
API, and `kubectl get secret -o jsonpath` with the real kubectl); a rotation through a referenced
Secret makes the old password fail and the new one work; deletion under the Delete policy removes
the credential, the quotas and the ACLs (the fake's /state)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaops.testing.stack import ChildProcess, start_dev_cluster, start_emulator, start_operator

from conftest import REAL_KUBECONFIG, ROOT, Kube, condition, ready, wait_until

pytest.importorskip("confluent_kafka")
sys.path.insert(0, str(ROOT / "tests" / "integration"))  # the shared confluent-kafka helper
from librdkafka_client import librdkafka_login  # noqa: E402

API = "kafkaops.io/v1alpha1"


@pytest.fixture
def stack() -> Iterator[tuple[ChildProcess, ChildProcess, str]]:
    if REAL_KUBECONFIG:
        pytest.skip("KAFKAOPS_E2E_KUBECONFIG is set: this test needs the dev-cluster's SASL listener")
    with start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        kafka = start_dev_cluster("--brokers", "1", "--control-port", "0", "--sasl-port", "0")
        try:
            assert kafka.process.stdout is not None
            sasl_bootstrap = kafka.process.stdout.readline().decode().strip()  # the third line it prints
            assert sasl_bootstrap, kafka.log()
            yield api, kafka, sasl_bootstrap
        finally:
            kafka.stop()


def fake_state(kafka: ChildProcess) -> dict[str, Any]:
    with urllib.request.urlopen(f"{kafka.control_url}/state", timeout=10) as answer:
        return json.load(answer)


def secret_value(kube: Kube, name: str, key: str) -> str:
    secret = kube.core.read_namespaced_secret(name, kube.namespace)
    return base64.b64decode(secret.data[key]).decode()


def put_secret(kube: Kube, name: str, password: str) -> None:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "data": {"password": base64.b64encode(password.encode()).decode()}}
    if kube.core.list_namespaced_secret(kube.namespace, field_selector=f"metadata.name={name}").items:
        kube.core.patch_namespaced_secret(name, kube.namespace, {"data": body["data"]})
    else:
        kube.core.create_namespaced_secret(kube.namespace, body)


def login(sasl_bootstrap: str, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> bool:
    return librdkafka_login(sasl_bootstrap, mechanism, user, password)[0]


def test_users_with_generated_and_referenced_passwords_and_client_quotas(stack) -> None:
    api, kafka, sasl_bootstrap = stack
    kube = Kube(api.kubeconfig, "kafka")
    operator = start_operator(api.kubeconfig)
    try:
        kube.create("kafkaclusters", {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": "main"},
                                      "spec": {"bootstrapServers": [kafka.url], "resyncInterval": "1s",
                                               "topicDeletion": {"policy": "Delete"}}})
        wait_until(ready(kube, "kafkaclusters", "main"), timeout=60, what="the cluster Ready")
        # 1. a generated password: the operator creates the Secret; a client logs in with it
        kube.create("kafkausers", {"apiVersion": API, "kind": "KafkaUser", "metadata": {"name": "app"},
                                   "spec": {"clusterRef": {"name": "main"},
                                            "authentication": {"type": "scram-sha-512"},
                                            "quotas": {"producer_byte_rate": 1048576},
                                            "acls": [{"resource": {"type": "Topic", "name": "orders"},
                                                      "operations": ["Read", "Write"]}]}})
        user = wait_until(ready(kube, "kafkausers", "app"), timeout=60, what="KafkaUser app Ready")
        status = user["status"]
        assert (status["principal"], status["mechanism"], status["secretName"]) == ("User:app", "SCRAM-SHA-512", "app")
        generated = secret_value(kube, "app", "password")
        assert secret_value(kube, "app", "username") == "app"
        assert f'password="{generated}"' in secret_value(kube, "app", "sasl.jaas.config")
        owner = kube.core.read_namespaced_secret("app", "kafka").metadata.owner_references[0]
        assert (owner.kind, owner.uid) == ("KafkaUser", user["metadata"]["uid"])
        kubectl = shutil.which("kubectl")
        if kubectl:  # as a user reads it
            out = subprocess.run([kubectl, "--kubeconfig", str(api.kubeconfig), "-n", "kafka", "get", "secret", "app",
                                  "-o", "jsonpath={.data.password}"], capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            assert base64.b64decode(out.stdout).decode() == generated
        assert login(sasl_bootstrap, "app", generated)
        assert not login(sasl_bootstrap, "app", generated + "-wrong")
        state = fake_state(kafka)
        assert state["users"]["app"] == {"SCRAM-SHA-512": {"iterations": 4096}}
        assert {"entity": {"user": "app"}, "values": {"producer_byte_rate": 1048576.0}} in state["quotas"]
        assert sum(a["principal"] == "User:app" for a in state["acls"]) == 2

        # 2. a referenced Secret, rotated by changing its data
        put_secret(kube, "svc-password", "first-password-1")
        kube.create("kafkausers", {"apiVersion": API, "kind": "KafkaUser", "metadata": {"name": "svc"},
                                   "spec": {"clusterRef": {"name": "main"},
                                            "authentication": {"type": "scram-sha-256",
                                                               "passwordSecretRef": {"name": "svc-password"}}}})
        wait_until(ready(kube, "kafkausers", "svc"), timeout=60, what="KafkaUser svc Ready")
        assert login(sasl_bootstrap, "svc", "first-password-1", "SCRAM-SHA-256")
        finalizers = kube.core.read_namespaced_secret("svc-password", "kafka").metadata.finalizers or []
        assert "kafkaops.io/credentials-in-use" in finalizers
        put_secret(kube, "svc-password", "second-password-2")
        wait_until(lambda: login(sasl_bootstrap, "svc", "second-password-2", "SCRAM-SHA-256"), timeout=60,
                   what="the rotated password accepted")
        assert not login(sasl_bootstrap, "svc", "first-password-1", "SCRAM-SHA-256")

        # 3. a KafkaClientQuota
        kube.create("kafkaclientquotas", {"apiVersion": API, "kind": "KafkaClientQuota", "metadata": {"name": "dflt"},
                                          "spec": {"clusterRef": {"name": "main"}, "entity": {"clientIdDefault": True},
                                                   "quotas": {"request_percentage": 50}}})
        quota = wait_until(ready(kube, "kafkaclientquotas", "dflt"), timeout=60, what="KafkaClientQuota Ready")
        assert quota["status"]["entity"] == "client-id=<default>"
        assert {"entity": {"client-id": None}, "values": {"request_percentage": 50.0}} in fake_state(kafka)["quotas"]

        # 4. deletion under the Delete policy: credential, quotas and ACLs gone; the Secret released
        kube.delete("kafkausers", "app")
        kube.delete("kafkausers", "svc")
        kube.delete("kafkaclientquotas", "dflt")
        wait_until(lambda: not kube.list("kafkausers") and not kube.list("kafkaclientquotas"), timeout=60,
                   what="the users and the quota deleted")
        state = fake_state(kafka)
        assert state["users"] == {} and state["quotas"] == []
        assert not [a for a in state["acls"] if a["principal"] == "User:app"]
        assert not login(sasl_bootstrap, "app", generated)
        finalizers = kube.core.read_namespaced_secret("svc-password", "kafka").metadata.finalizers or []
        assert "kafkaops.io/credentials-in-use" not in finalizers

        # no password in the operator's log, the Events or any status
        log = operator.log(10**8)
        assert "generated its password into Secret app" in log  # the log is there, and says what happened
        seen = log + json.dumps([e.message for e in kube.events()]) + json.dumps(status)
        for password in (generated, "first-password-1", "second-password-2"):
            assert password not in seen
    finally:
        operator.stop()
        if os.environ.get("KAFKAOPS_E2E_SHOW_LOG"):
            print(operator.log(10**8))
