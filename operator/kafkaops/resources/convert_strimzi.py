"""Strimzi KafkaTopic and KafkaUser (simple authorization) manifests -> kafkaops KafkaTopic and KafkaAcl.

Pure: documents in, manifests and issues out (`kafkaops convert --from strimzi` does the reading and
writing). Every field of the input is either converted or reported as an issue naming the resource,
the field path and the reason; nothing is dropped silently. docs/strimzi-migration.md explains the
mapping and the hand-over.

Handles kafka.strimzi.io/v1beta2 and v1 (the same fields, v1 without KafkaUser's deprecated
`operation`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkaops.frozen import frozen
from kafkaops.resources.issues import Severity, ValidationIssue

STRIMZI_GROUP = "kafka.strimzi.io"
STRIMZI_VERSIONS = ("v1beta2", "v1")
API_VERSION = "kafkaops.io/v1alpha1"
CLUSTER_LABEL = "strimzi.io/cluster"

NOT_CONVERTED = "NotConverted"  # a field that has no kafkaops equivalent (warning)
SERVER_FIELD = "ServerField"  # written by the API server or an operator, not desired state (warning)
NO_CLUSTER = "NoClusterRef"
INVALID_STRIMZI = "InvalidStrimziResource"
SKIPPED_KIND = "SkippedKind"
DUPLICATE_PRINCIPAL = "DuplicatePrincipal"
DUPLICATE_BINDING = "DuplicateAclBinding"  # Strimzi lists it twice; kafkaops once (a binding is a set member)

# Annotations with the same meaning on both sides.
ANNOTATIONS = {
    ("strimzi.io/pause-reconciliation", "true"): ("kafkaops.io/paused", "true"),
    ("strimzi.io/managed", "false"): ("kafkaops.io/managed", "false"),
}
SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                   "deletionGracePeriodSeconds", "managedFields", "selfLink", "finalizers", "ownerReferences")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

RESOURCE_TYPES = {"topic": "Topic", "group": "Group", "cluster": "Cluster", "transactionalid": "TransactionalId"}
PATTERN_TYPES = {"literal": "Literal", "prefix": "Prefixed"}
OPERATIONS = {name.lower(): name for name in (
    "Read", "Write", "Create", "Delete", "Alter", "Describe", "ClusterAction", "AlterConfigs", "DescribeConfigs",
    "IdempotentWrite", "All")}
PERMISSIONS = {"allow": "Allow", "deny": "Deny"}
TLS_AUTHENTICATION = ("tls", "tls-external")  # Strimzi's principal is then User:CN=<name>


@frozen
class StrimziDocument:
    """One YAML document of the input, and where it came from."""

    file: str
    index: int
    obj: Mapping[str, Any]


@frozen
class ConvertOptions:
    cluster: str | None = None  # the KafkaCluster every output refers to (overrides strimzi.io/cluster)
    deletion_policy: str | None = "Retain"  # written into every KafkaTopic; None leaves the cluster's default


@frozen
class Converted:
    source: StrimziDocument
    manifest: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.manifest["kind"])

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        return self.manifest["metadata"].get("namespace")


@frozen
class ConversionResult:
    converted: tuple[Converted, ...] = ()
    issues: tuple[ValidationIssue, ...] = ()

    @property
    def errors(self) -> tuple[ValidationIssue, ...]:
        return tuple(issue for issue in self.issues if issue.is_error)

    @property
    def warnings(self) -> tuple[ValidationIssue, ...]:
        return tuple(issue for issue in self.issues if not issue.is_error)


@dataclass
class _Report:
    """Collects the issues of one document."""

    doc: StrimziDocument
    kind: str | None
    name: str | None
    issues: list[ValidationIssue] = field(default_factory=list)

    def add(self, severity: Severity, path: str, reason: str, rule: str) -> None:
        self.issues.append(ValidationIssue(severity, self.doc.file, self.doc.index, self.kind, self.name, path,
                                           reason, rule))

    def dropped(self, path: str, reason: str, rule: str = NOT_CONVERTED) -> None:
        self.add(Severity.WARNING, path, f"not converted: {reason}", rule)

    def error(self, path: str, reason: str, rule: str = INVALID_STRIMZI) -> None:
        self.add(Severity.ERROR, path, reason, rule)


def documents_of(file: str, loaded: Iterable[Any]) -> list[StrimziDocument]:
    """The YAML documents of one file, numbered from 0; a `kind: List` (`kubectl get -o yaml`) counts as
    its items, numbered on."""
    out: list[StrimziDocument] = []
    for obj in loaded:
        if obj is None:
            continue
        if isinstance(obj, Mapping) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
            out += [StrimziDocument(file, len(out) + i, item) for i, item in enumerate(obj["items"])]
        else:
            out.append(StrimziDocument(file, len(out), obj))
    return out


def convert(documents: Iterable[StrimziDocument], options: ConvertOptions = ConvertOptions()) -> ConversionResult:
    converted: list[Converted] = []
    issues: list[ValidationIssue] = []
    for doc in documents:
        manifest, doc_issues = convert_document(doc, options)
        issues += doc_issues
        if manifest is not None:
            converted.append(Converted(doc, manifest))
    duplicates = list(_duplicate_principals(converted))
    dropped = {(issue.file, issue.index) for issue in duplicates}
    kept = tuple(item for item in converted if (item.source.file, item.source.index) not in dropped)
    return ConversionResult(kept, tuple(issues + duplicates))


def convert_document(doc: StrimziDocument, options: ConvertOptions) -> tuple[dict[str, Any] | None,
                                                                             list[ValidationIssue]]:
    """One Strimzi document -> (our manifest or None, its issues)."""
    obj = doc.obj
    kind = obj.get("kind") if isinstance(obj, Mapping) else None
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    report = _Report(doc, str(kind) if kind else None, str(name) if name else None)
    api_version = str(obj.get("apiVersion", "")) if isinstance(obj, Mapping) else ""
    group, _, version = api_version.rpartition("/")
    if group != STRIMZI_GROUP or kind not in ("KafkaTopic", "KafkaUser"):
        report.add(Severity.WARNING, "", f"skipped: {api_version or '?'} {kind or '?'} is not a Strimzi KafkaTopic "
                   "or KafkaUser", SKIPPED_KIND)
        return None, report.issues
    if version not in STRIMZI_VERSIONS:
        report.error("apiVersion", f"unknown Strimzi API version {version!r} (known: {', '.join(STRIMZI_VERSIONS)})")
        return None, report.issues
    if not isinstance(metadata, Mapping) or not isinstance(name, str) or not name:
        report.error("metadata.name", "a name is required")
        return None, report.issues
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        report.error("spec", "must be a mapping")
        return None, report.issues
    out_metadata, cluster = _metadata(metadata, options, report)
    for key in obj:
        if key == "status":
            report.dropped("status", "written by the Strimzi operator, not desired state", SERVER_FIELD)
        elif key not in ("apiVersion", "kind", "metadata", "spec"):
            report.dropped(key, "not a field of a Strimzi custom resource")
    if cluster is None:
        report.error("metadata.labels", f"no {CLUSTER_LABEL} label: give the KafkaCluster with --cluster", NO_CLUSTER)
        return None, report.issues
    if kind == "KafkaTopic":
        out_spec = _topic_spec(spec, cluster, options, report)
    else:
        out_spec = _acl_spec(spec, str(name), cluster, report)
    if out_spec is None or any(issue.is_error for issue in report.issues):
        return None, report.issues
    out_kind = "KafkaTopic" if kind == "KafkaTopic" else "KafkaAcl"
    return {"apiVersion": API_VERSION, "kind": out_kind, "metadata": out_metadata, "spec": out_spec}, report.issues


def _metadata(metadata: Mapping[str, Any], options: ConvertOptions,
              report: _Report) -> tuple[dict[str, Any], str | None]:
    out: dict[str, Any] = {"name": metadata["name"]}
    if metadata.get("namespace"):
        out["namespace"] = metadata["namespace"]
    labels = dict(metadata.get("labels") or {})
    label_cluster = labels.pop(CLUSTER_LABEL, None)
    cluster = options.cluster or (str(label_cluster) if label_cluster else None)
    if labels:
        out["labels"] = {str(k): str(v) for k, v in labels.items()}
    annotations: dict[str, str] = {}
    for key, value in (metadata.get("annotations") or {}).items():
        key, value = str(key), str(value)
        mapped = ANNOTATIONS.get((key, value.lower()))
        if mapped:
            annotations[mapped[0]] = mapped[1]
        elif key == LAST_APPLIED:
            report.dropped(f"metadata.annotations[{key}]", "written by kubectl apply", SERVER_FIELD)
        elif key.startswith("strimzi.io/"):
            report.dropped(f"metadata.annotations[{key}]", "a Strimzi operator setting with no kafkaops equivalent")
        else:
            annotations[key] = value
    if annotations:
        out["annotations"] = annotations
    for key in metadata:
        if key in SERVER_METADATA:
            report.dropped(f"metadata.{key}", "set by the API server or the Strimzi operator", SERVER_FIELD)
        elif key not in ("name", "namespace", "labels", "annotations"):
            report.dropped(f"metadata.{key}", "not carried over")
    return out, cluster


def _config_value(value: Any) -> str | int | float | bool | None:
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, list) and all(isinstance(item, (str, int, float)) for item in value):
        return ",".join(str(item) for item in value)  # Kafka's list configs are comma-separated
    return None


def _topic_spec(spec: Mapping[str, Any], cluster: str, options: ConvertOptions,
                report: _Report) -> dict[str, Any] | None:
    out: dict[str, Any] = {"clusterRef": {"name": cluster}}
    for key, value in spec.items():
        if key == "topicName":
            out["topicName"] = value
        elif key == "partitions":
            out["partitions"] = value
        elif key == "replicas":
            out["replicationFactor"] = value
        elif key == "config":
            if not isinstance(value, Mapping):
                report.error("spec.config", "must be a mapping of config keys to values")
                continue
            config = {}
            for config_key, config_value in value.items():
                converted = _config_value(config_value)
                if converted is None:
                    report.dropped(f"spec.config[{config_key}]", f"value of type {type(config_value).__name__} "
                                   "is not a Kafka config value")
                else:
                    config[str(config_key)] = converted
            if config:
                out["config"] = config
        else:
            report.dropped(f"spec.{key}", "no such field in kafkaops' KafkaTopic")
    if options.deletion_policy:
        out["deletionPolicy"] = options.deletion_policy
    return out


def _acl_spec(spec: Mapping[str, Any], name: str, cluster: str, report: _Report) -> dict[str, Any] | None:
    authentication = spec.get("authentication")
    auth_type = authentication.get("type") if isinstance(authentication, Mapping) else None
    user = f"CN={name}" if auth_type in TLS_AUTHENTICATION else name
    for key in spec:
        if key == "authentication":
            report.dropped("spec.authentication", "kafkaops manages ACLs, not users or their credentials (keep "
                           "the Strimzi User Operator, or your own tooling, for SCRAM passwords and TLS certificates)")
        elif key == "quotas":
            report.dropped("spec.quotas", "kafkaops does not manage client quotas")
        elif key == "template":
            report.dropped("spec.template", "templates of the Strimzi user Secret have no kafkaops equivalent")
        elif key != "authorization":
            report.dropped(f"spec.{key}", "no such field in kafkaops' KafkaAcl")
    authorization = spec.get("authorization")
    if authorization is None:
        report.dropped("spec", "the KafkaUser has no spec.authorization: there are no ACLs to convert")
        return None
    if not isinstance(authorization, Mapping) or authorization.get("type") != "simple":
        kind = authorization.get("type") if isinstance(authorization, Mapping) else authorization
        report.error("spec.authorization.type", f"only simple authorization can be converted, not {kind!r}")
        return None
    for key in authorization:
        if key not in ("type", "acls"):
            report.dropped(f"spec.authorization.{key}", "no such field in kafkaops' KafkaAcl")
    rules = authorization.get("acls") or []
    if not isinstance(rules, list):
        report.error("spec.authorization.acls", "must be a list")
        return None
    acls = []
    seen: dict[tuple[Any, ...], str] = {}
    for index, rule in enumerate(rules):
        path = f"spec.authorization.acls[{index}]"
        acl = _acl(rule, path, report)
        if acl is None:
            continue
        kept = []
        for op in acl["operations"]:
            binding = (*sorted(acl["resource"].items()), acl.get("host"), acl.get("permission"), op)
            if binding in seen:
                report.add(Severity.WARNING, f"{path}.operations", f"{op} on {acl['resource']['name']} is already "
                           f"granted by {seen[binding]}: listed once", DUPLICATE_BINDING)
            else:
                seen[binding] = path
                kept.append(op)
        if kept:
            acls.append(acl | {"operations": kept})
    return {"clusterRef": {"name": cluster}, "principal": f"User:{user}", "acls": acls}


def _acl(rule: Any, path: str, report: _Report) -> dict[str, Any] | None:
    if not isinstance(rule, Mapping):
        report.error(path, "must be a mapping")
        return None
    resource = rule.get("resource")
    if not isinstance(resource, Mapping):
        report.error(f"{path}.resource", "is required")
        return None
    resource_type = RESOURCE_TYPES.get(str(resource.get("type", "")).lower())
    if resource_type is None:
        report.error(f"{path}.resource.type", f"unknown resource type {resource.get('type')!r} "
                     f"(known: {', '.join(RESOURCE_TYPES.values())})")
        return None
    out_resource: dict[str, Any] = {"type": resource_type}
    if resource_type == "Cluster":
        out_resource["name"] = "kafka-cluster"
    elif resource.get("name"):
        out_resource["name"] = str(resource["name"])
    else:
        report.error(f"{path}.resource.name", f"a {resource_type} rule needs a name")
        return None
    pattern = str(resource.get("patternType", "literal")).lower()
    if resource_type != "Cluster":
        if pattern not in PATTERN_TYPES:
            report.error(f"{path}.resource.patternType", f"unknown pattern type {resource.get('patternType')!r}")
            return None
        if PATTERN_TYPES[pattern] != "Literal":
            out_resource["patternType"] = PATTERN_TYPES[pattern]
    for key in resource:
        if key not in ("type", "name", "patternType"):
            report.dropped(f"{path}.resource.{key}", "no such field in a kafkaops ACL resource")
    names = list(rule.get("operations") or [])
    if "operation" in rule:  # v1beta2's deprecated single operation
        names.append(rule["operation"])
    operations = []
    for index, op in enumerate(names):
        known = OPERATIONS.get(str(op).lower())
        if known is None:
            report.error(f"{path}.operations[{index}]", f"unknown operation {op!r}")
            return None
        if known not in operations:
            operations.append(known)
    if not operations:
        report.error(f"{path}.operations", "at least one operation is required")
        return None
    out: dict[str, Any] = {"resource": out_resource, "operations": operations}
    host = str(rule.get("host", "*"))
    if host != "*":
        out["host"] = host
    permission = PERMISSIONS.get(str(rule.get("type", "allow")).lower())
    if permission is None:
        report.error(f"{path}.type", f"unknown rule type {rule.get('type')!r} (allow or deny)")
        return None
    if permission != "Allow":
        out["permission"] = permission
    for key in rule:
        if key not in ("resource", "operations", "operation", "host", "type"):
            report.dropped(f"{path}.{key}", "no such field in a kafkaops ACL")
    return out


def _duplicate_principals(converted: list[Converted]) -> Iterator[ValidationIssue]:
    """Two Strimzi users (in different namespaces, or different inputs) map to one Kafka principal: kafkaops
    allows one KafkaAcl per principal and cluster, so the later one is an error and is not output."""
    first: dict[tuple[str, str], Converted] = {}
    for item in converted:
        if item.kind != "KafkaAcl":
            continue
        key = (item.manifest["spec"]["clusterRef"]["name"], item.manifest["spec"]["principal"])
        if key in first:
            other = first[key]
            yield ValidationIssue(Severity.ERROR, item.source.file, item.source.index, "KafkaUser", item.name,
                                  "spec.principal", f"{key[1]} on cluster {key[0]} is also converted from "
                                  f"{other.source.file}[{other.source.index}]: one KafkaAcl per principal",
                                  DUPLICATE_PRINCIPAL)
        else:
            first[key] = item
