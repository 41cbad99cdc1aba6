"""CRDs generated from the JSON Schemas: no drift from crds/, structural schemas, names, columns."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from kafkaops.resources import KINDS, load_paths
from kafkaops.resources.crds import (
    SchemaTranslationError,
    crd_filename,
    drifted_files,
    generate_crds,
    openapi_schema,
    render_crds,
    rendered_files,
    structural_schema,
)
from kafkaops.resources.schemas import registry, schema_for, validator_for

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "crds"

# What apiextensions.k8s.io/v1 JSONSchemaProps accepts (value validations + structure + extensions).
K8S_KEYWORDS = {
    "description", "type", "format", "title", "default", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties",
    "minProperties", "required", "items", "allOf", "oneOf", "anyOf", "not", "properties", "additionalProperties",
    "nullable", "example", "externalDocs", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-validations",
    "x-kubernetes-embedded-resource",
}


def test_crd_files_match_the_generated_ones() -> None:
    """Regenerate with `kafkaops crds --output-dir crds` when this fails."""
    expected = rendered_files()
    on_disk = {p.name: p.read_text("utf-8") for p in CRD_DIR.glob("*.yaml")}
    assert sorted(on_disk) == sorted(expected)
    for name, text in expected.items():
        assert on_disk[name] == text, f"crds/{name} drifted from the JSON Schema; run: kafkaops crds --output-dir crds"
    assert drifted_files(CRD_DIR) == []


def test_generation_is_deterministic() -> None:
    assert render_crds() == render_crds()
    assert len(list(yaml.safe_load_all(render_crds()))) == len(KINDS)


def _nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("kind", list(KINDS))
def test_openapi_schema_is_structural(kind: str) -> None:
    for path, node in _nodes(openapi_schema(kind)):
        assert set(node) <= K8S_KEYWORDS, (path, set(node) - K8S_KEYWORDS)
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields") or \
            node.get("x-kubernetes-int-or-string"), path
        assert "$ref" not in node and "definitions" not in node
        assert node.get("additionalProperties") is not False, path
        assert not ("properties" in node and "additionalProperties" in node), path
        assert node.get("uniqueItems") is not True, path
        if node.get("x-kubernetes-list-type") == "map":
            for key in node["x-kubernetes-list-map-keys"]:
                assert key in node["items"]["required"], path
        if "default" in node:
            Draft202012Validator({k: v for k, v in node.items() if k in {"type", "enum", "minimum", "pattern"}}
                                 ).validate(node["default"])


@pytest.mark.parametrize("kind", list(KINDS))
def test_crd_names_columns_and_status(kind: str) -> None:
    crd = next(c for c in generate_crds() if c["spec"]["names"]["kind"] == kind)
    info = KINDS[kind]
    names = crd["spec"]["names"]
    assert crd["metadata"]["name"] == f"{info.plural}.kafkaops.io"
    assert (names["plural"], names["singular"], names["categories"]) == (info.plural, info.singular, ["kafkaops"])
    assert crd["spec"]["scope"] == "Namespaced" and crd["spec"]["group"] == "kafkaops.io"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
    assert columns["READY"]["jsonPath"] == '.status.conditions[?(@.type=="Ready")].status'
    assert columns["REASON"]["jsonPath"] == '.status.conditions[?(@.type=="Ready")].reason'
    assert columns["AGE"] == {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp",
                              "description": "Time since creation"}
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert {"observedGeneration", "conditions", "lastSyncTime"} <= set(status["properties"])
    condition = status["properties"]["conditions"]["items"]["properties"]
    assert set(condition) == {"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"}


def test_kind_specific_names_and_fields() -> None:
    crds = {c["spec"]["names"]["kind"]: c for c in generate_crds()}
    short = {kind: crd["spec"]["names"]["shortNames"] for kind, crd in crds.items()}
    assert short == {"KafkaCluster": ["kocl"], "KafkaTopic": ["kot"], "KafkaAcl": ["koacl"],
                     "KafkaBrokerConfig": ["kobc"], "KafkaUser": ["kou"], "KafkaClientQuota": ["kocq"]}
    topic_version = crds["KafkaTopic"]["spec"]["versions"][0]
    columns = {c["name"]: c["jsonPath"] for c in topic_version["additionalPrinterColumns"]}
    assert columns["PARTITIONS"] == ".status.partitions" and columns["RF"] == ".status.replicationFactor"
    topic_status = topic_version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert {"topicId", "partitions", "replicationFactor", "reassignment"} <= set(topic_status)
    assert set(topic_status["reassignment"]["properties"]) == {
        "state", "partitionsTotal", "partitionsDone", "bytesTotal", "bytesDone", "startedAt", "estimatedCompletion"}
    cluster_status = crds["KafkaCluster"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert {"clusterId", "controllerId", "brokers", "features"} <= set(cluster_status["properties"])
    assert cluster_status["properties"]["features"]["x-kubernetes-preserve-unknown-fields"] is True
    spec = topic_version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["config"]["additionalProperties"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert "replicaAssignment" in spec["x-kubernetes-validations"][0]["rule"]


def test_json_schemas_are_valid_draft_2020_12() -> None:
    for kind in KINDS:
        Draft202012Validator.check_schema(schema_for(kind))
        assert validator_for(kind) is validator_for(kind)


def test_translation_rejects_what_a_crd_cannot_express() -> None:
    resolver = registry().resolver()
    with pytest.raises(SchemaTranslationError, match="needs a type"):
        structural_schema({"properties": {"a": {"type": "string"}}}, resolver)
    with pytest.raises(SchemaTranslationError, match="no CRD equivalent"):
        structural_schema({"type": "object", "propertyNames": {"pattern": "^a"}}, resolver)
    with pytest.raises(SchemaTranslationError, match="oneOf"):
        structural_schema({"type": "object", "oneOf": [{"required": ["a"]}]}, resolver)
    translated = structural_schema({"type": ["string", "null"], "const": "x", "exclusiveMinimum": 1,
                                    "uniqueItems": True, "$comment": "c"}, resolver)
    assert translated == {"type": "string", "nullable": True, "enum": ["x"], "minimum": 1, "exclusiveMinimum": True}


def test_examples_pass_the_crd_schemas_too() -> None:
    """What kafkaops validate accepts, the API server's schema accepts as well."""
    documents = load_paths([REPO / "examples", Path(__file__).parent / "corpus" / "valid"]).documents
    assert documents
    for doc in documents:
        Draft202012Validator(openapi_schema(doc.kind)).validate(dict(doc.body))


def test_kubernetes_validate_strict() -> None:
    tool = shutil.which("kubernetes-validate") or (
        str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "kubernetes-validate"))
    if not Path(tool).exists():
        pytest.skip("kubernetes-validate is not installed (pip install kubernetes-validate to run this check)")
    files = [str(CRD_DIR / crd_filename(kind)) for kind in KINDS]
    run = subprocess.run([tool, "--strict", *files], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("passed") == len(files)


# Names other Kafka operators' CRDs answer to (docs/architecture.md): Strimzi's short names,
# category and kind Kafka; Confluent for Kubernetes' and Redpanda's kinds (plural/singular).
OTHER_OPERATORS_NAMES = {
    "k", "kt", "kc", "ku", "kb", "kr", "knp", "kmm", "kmm2", "kctr", "strimzi", "kafka", "kafkas",
    "confluent", "redpanda", "redpandas", "topic", "topics", "user", "users", "schema", "schemas",
}


def test_short_names_and_category_collide_with_no_other_kafka_operator() -> None:
    for crd in generate_crds():
        names = crd["spec"]["names"]
        claimed = {*names["shortNames"], *names["categories"]}
        assert not claimed & OTHER_OPERATORS_NAMES, (names["kind"], claimed & OTHER_OPERATORS_NAMES)
        assert all(short.startswith("ko") for short in names["shortNames"])
        assert names["categories"] == ["kafkaops"]
