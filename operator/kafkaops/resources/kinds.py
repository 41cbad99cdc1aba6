"""The kafkaops.io API group: its version and the six kinds, with their names.

`KINDS` is the one table of the kinds' names (plural, singular, short names, schema file): the
CRDs (resources/crds.py -> crds/), the operator's watches and status writes (k8s/), the demo and
the loader read it; tests/resources/test_kinds_table.py checks crds/ and the RBAC manifests
against it."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from kafkaops.frozen import frozen

API_GROUP = "kafkaops.io"
API_VERSION = "v1alpha1"
GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"
CATEGORY = "kafkaops"  # not "kafka": Strimzi's kind Kafka answers to `kubectl get kafka`


@frozen
class KindInfo:
    """One kind: the names Kubernetes knows it by and the JSON Schema that defines it."""

    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    schema_file: str

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{API_GROUP}"


KAFKA_CLUSTER = "KafkaCluster"
KAFKA_TOPIC = "KafkaTopic"
KAFKA_ACL = "KafkaAcl"
KAFKA_BROKER_CONFIG = "KafkaBrokerConfig"
KAFKA_USER = "KafkaUser"
KAFKA_CLIENT_QUOTA = "KafkaClientQuota"

KINDS: dict[str, KindInfo] = {
    info.kind: info
    for info in (
        KindInfo(KAFKA_CLUSTER, "kafkaclusters", "kafkacluster", ("kocl",), "kafkacluster.json"),
        KindInfo(KAFKA_TOPIC, "kafkatopics", "kafkatopic", ("kot",), "kafkatopic.json"),
        KindInfo(KAFKA_ACL, "kafkaacls", "kafkaacl", ("koacl",), "kafkaacl.json"),
        KindInfo(KAFKA_BROKER_CONFIG, "kafkabrokerconfigs", "kafkabrokerconfig", ("kobc",), "kafkabrokerconfig.json"),
        KindInfo(KAFKA_USER, "kafkausers", "kafkauser", ("kou",), "kafkauser.json"),
        KindInfo(KAFKA_CLIENT_QUOTA, "kafkaclientquotas", "kafkaclientquota", ("kocq",), "kafkaclientquota.json"),
    )
}

# kind -> plural, for the Kubernetes API paths (kopf's watches, status patches, kubectl)
PLURALS: Mapping[str, str] = MappingProxyType({kind: info.plural for kind, info in KINDS.items()})


def is_kafkaops_api_version(api_version: object) -> bool:
    """True for any version of the kafkaops.io group (supported or not)."""
    return isinstance(api_version, str) and api_version.split("/", 1)[0] == API_GROUP
