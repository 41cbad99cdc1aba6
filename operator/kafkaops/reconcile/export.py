"""export: manifests for what a cluster holds, so that an existing cluster can be adopted.

    result = export_documents(observed, cluster_name="prod", bootstrap_servers=["kafka:9092"])
    text = to_yaml(result.documents, origin=result.origin)

Pure: no I/O. The contract is "export, then plan on the export, reports no
changes", which shapes every rule here:

- only overrides are written (a topic's DYNAMIC_TOPIC_CONFIG keys, the cluster's
  DYNAMIC_DEFAULT_BROKER_CONFIG keys, a broker's DYNAMIC_BROKER_CONFIG keys):
  defaults are not desired state, and the plan only compares declared keys;
- sensitive values are never written: Kafka hides them anyway, and a value
  kafkaops cannot read back could only be a placeholder that would overwrite
  the real secret on apply. They are named in `notes` instead;
- every document is checked with the same checks `kafkaops validate` runs; a
  config key that would fail them is dropped with a note (the plan leaves
  undeclared keys alone, so dropping one changes nothing in Kafka);
- a KafkaAcl owns *every* binding of its principal: apply deletes the ones it
  does not list. A principal with a binding that cannot be written validly is
  therefore skipped whole, never exported in part. Bindings manifests cannot
  express at all (resource type USER, ...) are invisible to the planner too
  (read_cluster keeps them apart), so the principal's other bindings are still exported.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from kafkaops import kafka
from kafkaops.frozen import frozen
from kafkaops.kafka import ConfigSource, KafkaError
from kafkaops.reconcile.configs import is_sensitive
from kafkaops.reconcile.export_principals import annotate_placeholders, quota_documents, user_documents
from kafkaops.reconcile.observed import ObservedConfig, ObservedState, ObservedTopic
from kafkaops.reconcile.plan import DEFAULT_PROTECTED_TOPICS
from kafkaops.resources.acl import AclBinding, AclOperation, AclPermission, PatternType, ResourceType
from kafkaops.resources.issues import ValidationIssue
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_CLIENT_QUOTA, KAFKA_CLUSTER, KAFKA_TOPIC, KAFKA_USER
from kafkaops.reconcile.export_names import (  # noqa: F401  (names are part of export's API)
    MAX_NAME_LENGTH,
    document_errors,
    fit,
    is_k8s_name,
    manifest,
    principal_resource_names,
    problems_text,
    sanitise,
    topic_resource_names,
)

TOPICS = "topics"
ACLS = "acls"
BROKER_CONFIGS = "broker-configs"
USERS = "users"
QUOTAS = "quotas"
INCLUDABLE: frozenset[str] = frozenset({TOPICS, ACLS, BROKER_CONFIGS, USERS, QUOTAS})

# One file per kind when exporting to a directory, in this order.
KIND_FILES: Mapping[str, str] = {
    KAFKA_CLUSTER: "cluster.yaml",
    KAFKA_TOPIC: "topics.yaml",
    KAFKA_ACL: "acls.yaml",
    KAFKA_BROKER_CONFIG: "broker-configs.yaml",
    KAFKA_USER: "users.yaml",
    KAFKA_CLIENT_QUOTA: "quotas.yaml",
}

_CONFIG_PATH = re.compile(r"^spec\.config\.(.+)$")


@frozen
class ClusterAccess:
    """How the exported KafkaCluster is reached, so that `kafkaops plan -f DIR` (without
    --bootstrap-server) uses TLS and asks for SASL credentials as the export did.
    Only the shape is recorded: never a credential, path or password."""

    tls: bool = False
    verify_hostname: bool = True
    sasl_mechanism: str | None = None

    @classmethod
    def of(cls, security: kafka.SecuritySettings) -> ClusterAccess:
        protocol = str(security.protocol).upper()
        return cls(
            tls=protocol in ("SSL", "SASL_SSL"),
            verify_hostname=security.ssl_check_hostname,
            sasl_mechanism=str(security.sasl_mechanism) if protocol.startswith("SASL") and security.sasl_mechanism else None,
        )


@frozen
class ExportResult:
    """Manifests (plain dicts, ready for YAML, in a deterministic order) and what was left out.

    `notes` are for a human: what was skipped and why. They never hold a sensitive value.
    `origin` says where the manifests came from, for the header comment.
    """

    documents: tuple[dict[str, Any], ...]
    notes: tuple[str, ...] = ()
    origin: str = ""

    def of_kind(self, kind: str) -> tuple[dict[str, Any], ...]:
        return tuple(d for d in self.documents if d["kind"] == kind)


def _drop_invalid_config(body: dict[str, Any], what: str, notes: list[str]) -> list[ValidationIssue]:
    """Remove from body.spec.config every key validation rejects (noting each), until none is left;
    answer the errors that remain elsewhere in the document.

    Rules over several keys (min.compaction.lag.ms above max...) report one of the keys: dropping
    it resolves the conflict, hence the loop."""
    config: dict[str, str] = body["spec"].get("config", {})
    while True:
        errors = document_errors(body)
        bad: dict[str, ValidationIssue] = {}
        for issue in errors:
            match = _CONFIG_PATH.match(issue.path or "")
            if match and match.group(1) in config:
                bad.setdefault(match.group(1), issue)
        if not bad:
            if not config:
                body["spec"].pop("config", None)
            return errors
        for key, issue in sorted(bad.items()):
            del config[key]
            notes.append(f"{what}: config {key} not exported: kafkaops validate would reject it "
                         f"({issue.reason} [{issue.rule}]); it stays as it is in Kafka")


def _overrides(configs: Mapping[str, ObservedConfig], source: ConfigSource, what: str,
               notes: list[str]) -> dict[str, str]:
    """The keys set at `source` (sorted), without sensitive ones (each noted by name only)."""
    out: dict[str, str] = {}
    for key in sorted(configs):
        entry = configs[key]
        if entry.source is not source:
            continue
        if is_sensitive(key, entry):
            notes.append(f"{what}: sensitive config {key} not exported (its value is secret); "
                         "kafkaops leaves it alone while no manifest declares it")
            continue
        if entry.value is None:
            notes.append(f"{what}: config {key} not exported: Kafka reported no value for it")
            continue
        out[key] = entry.value
    return out


def clustermanifest(cluster_name: str, bootstrap_servers: Sequence[str],
                     access: ClusterAccess = ClusterAccess()) -> dict[str, Any]:
    """The KafkaCluster the other documents refer to. topicDeletion is left at its default
    (Retain): an adopted cluster should not start losing topics because a file went missing."""
    spec: dict[str, Any] = {"bootstrapServers": list(bootstrap_servers)}
    if access.tls:
        spec["tls"] = {"enabled": True} if access.verify_hostname else {"enabled": True, "verifyHostname": False}
    if access.sasl_mechanism:
        spec["sasl"] = {"mechanism": access.sasl_mechanism}
    return manifest(KAFKA_CLUSTER, cluster_name, spec)


def cluster_problem(cluster_name: str, bootstrap_servers: Sequence[str],
                    access: ClusterAccess = ClusterAccess()) -> str | None:
    """Why no valid KafkaCluster can be written for these (checked before connecting), or None."""
    if not is_k8s_name(cluster_name):
        return (f"cluster name {cluster_name!r} is not a valid Kubernetes name (lowercase letters, digits, '-' and "
                f"'.', at most {MAX_NAME_LENGTH})")
    if not bootstrap_servers:
        return "no bootstrap servers given"
    if errors := document_errors(clustermanifest(cluster_name, bootstrap_servers, access)):
        return f"the KafkaCluster would not validate: {problems_text(errors)}"
    return None


def topicmanifest(topic: ObservedTopic, resource_name: str, cluster_name: str,
                   notes: list[str]) -> dict[str, Any] | None:
    """A KafkaTopic for `topic` (None, with a note, when it cannot be exported faithfully)."""
    what = f"topic {topic.name}"
    if topic.configs is None:
        reason = str(topic.configs_error) if topic.configs_error else "they were not read"
        notes.append(f"{what} not exported: its configs could not be read ({reason})")
        return None
    spec: dict[str, Any] = {"clusterRef": {"name": cluster_name}}
    if resource_name != topic.name:
        spec["topicName"] = topic.name
    spec["partitions"] = topic.partitions
    spec["replicationFactor"] = topic.replication_factor
    config = _overrides(topic.configs, ConfigSource.DYNAMIC_TOPIC_CONFIG, what, notes)
    if config:
        spec["config"] = config
    body = manifest(KAFKA_TOPIC, resource_name, spec)
    if errors := _drop_invalid_config(body, what, notes):
        notes.append(f"{what} not exported: {problems_text(errors)}")
        return None
    return body


def acl_entries(bindings: Iterable[AclBinding]) -> list[dict[str, Any]]:
    """spec.acls for one principal: one entry per (resource, pattern, host, permission) with its
    operations sorted; defaults (patternType Literal, host *, permission Allow) left out."""
    grouped: dict[tuple[ResourceType, str, PatternType, str, AclPermission], set[AclOperation]] = defaultdict(set)
    for b in bindings:
        grouped[(b.resource_type, b.resource_name, b.pattern_type, b.host, b.permission)].add(b.operation)
    entries: list[dict[str, Any]] = []
    for (rtype, name, pattern, host, permission), operations in sorted(grouped.items()):
        resource: dict[str, Any] = {"type": rtype.value, "name": name}
        if pattern is not PatternType.LITERAL:
            resource["patternType"] = pattern.value
        entry: dict[str, Any] = {"resource": resource, "operations": sorted(op.value for op in operations)}
        if host != "*":
            entry["host"] = host
        if permission is not AclPermission.ALLOW:
            entry["permission"] = permission.value
        entries.append(entry)
    return entries


def aclmanifest(principal: str, bindings: Iterable[AclBinding], resource_name: str, cluster_name: str,
                 notes: list[str]) -> dict[str, Any] | None:
    """A KafkaAcl holding every binding of `principal`; None (with a note) when one of them would
    not validate: a KafkaAcl without it would make apply delete it."""
    body = manifest(KAFKA_ACL, resource_name, {
        "clusterRef": {"name": cluster_name},
        "principal": principal,
        "acls": acl_entries(bindings),
    })
    if errors := document_errors(body):
        notes.append(f"ACLs of {principal} not exported: {problems_text(errors)}. A KafkaAcl owns every binding of its "
                     "principal (apply deletes those it does not list), so none of them is exported; kafkaops "
                     f"leaves them alone while no KafkaAcl names {principal}")
        return None
    return body


def broker_configmanifest(broker_id: int | None, configs: Mapping[str, ObservedConfig], cluster_name: str,
                           notes: list[str]) -> dict[str, Any] | None:
    """A KafkaBrokerConfig for the cluster-wide default (broker_id None) or one broker; None when
    nothing is set there."""
    what = "cluster-wide broker config" if broker_id is None else f"config of broker {broker_id}"
    source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG if broker_id is None else ConfigSource.DYNAMIC_BROKER_CONFIG
    config = _overrides(configs, source, what, notes)
    if not config:
        return None
    suffix = "broker-defaults" if broker_id is None else f"broker-{broker_id}"
    name = f"{fit(cluster_name, MAX_NAME_LENGTH - len(suffix) - 1)}-{suffix}"
    spec: dict[str, Any] = {"clusterRef": {"name": cluster_name}}
    if broker_id is not None:
        spec["brokerId"] = broker_id
    spec["config"] = config
    body = manifest(KAFKA_BROKER_CONFIG, name, spec)
    if errors := _drop_invalid_config(body, what, notes):
        notes.append(f"{what} not exported: {problems_text(errors)}")
        return None
    return body if body["spec"].get("config") else None


# --- ACLs as read from the wire ------------------------------------------------------------------


def _enum_name(enum_type: type, value: int) -> str:
    try:
        return enum_type(value).name
    except ValueError:
        return str(value)


def describe_wire_binding(binding: kafka.AclBinding) -> str:
    return (f"{_enum_name(kafka.AclPermission, binding.permission)} {binding.principal} "
            f"{_enum_name(kafka.AclOperation, binding.operation)} on "
            f"{_enum_name(kafka.ResourceType, binding.resource_type)}:{binding.resource_name} "
            f"({_enum_name(kafka.PatternType, binding.pattern_type)}) from {binding.host}")


# --- the export -------------------------------------------------------------------------------------


def export_documents(
    observed: ObservedState,
    *,
    cluster_name: str,
    bootstrap_servers: Sequence[str],
    topics: re.Pattern[str] | None = None,
    include: frozenset[str] = INCLUDABLE,
    include_internal: bool = False,
    access: ClusterAccess = ClusterAccess(),
    unmapped_acls: Iterable[kafka.AclBinding] = (),
) -> ExportResult:
    """Manifests for what `observed` holds: a KafkaCluster, then KafkaTopics (by topic name),
    KafkaAcls (by principal), KafkaBrokerConfigs (cluster default, then by broker id), KafkaUsers
    (by user, passwords as placeholders) and KafkaClientQuotas (by entity): export_principals.py.

    `topics` selects topics by re.search on their names (ACLs and broker configs are not
    filtered by it). Internal topics and DEFAULT_PROTECTED_TOPICS are left out unless
    `include_internal`. `unmapped_acls` are the wire bindings manifests cannot express (read_cluster's): they
    are only noted.
    """
    unknown = include - INCLUDABLE
    if unknown:
        raise ValueError(f"cannot include {', '.join(sorted(unknown))}: choose from {', '.join(sorted(INCLUDABLE))}")
    if problem := cluster_problem(cluster_name, bootstrap_servers, access):
        raise ValueError(problem)
    cluster = clustermanifest(cluster_name, bootstrap_servers, access)
    notes: list[str] = []
    documents: list[dict[str, Any]] = [cluster]
    if TOPICS in include:
        documents.extend(_topics(observed, cluster_name, topics, include_internal, notes))
    if ACLS in include:
        documents.extend(_acls(observed, cluster_name, unmapped_acls, notes))
    if BROKER_CONFIGS in include:
        documents.extend(_broker_configs(observed, cluster_name, notes))
    users: list[dict[str, Any]] = []
    if USERS in include:
        users = user_documents(observed, cluster_name, notes, with_quotas=QUOTAS in include)
        documents.extend(users)
    if QUOTAS in include:
        inside = frozenset(d["spec"].get("principal", f"User:{d['metadata']['name']}")[5:] for d in users
                           if "quotas" in d["spec"])
        documents.extend(quota_documents(observed, cluster_name, notes, inside))
    return ExportResult(tuple(documents), tuple(notes), _origin(observed, cluster_name, bootstrap_servers))


def _origin(observed: ObservedState, cluster_name: str, bootstrap_servers: Sequence[str]) -> str:
    cluster_id = f", cluster id {observed.cluster_id}" if observed.cluster_id else ""
    return f"{', '.join(bootstrap_servers)}{cluster_id} (KafkaCluster {cluster_name})"


def _topics(observed: ObservedState, cluster_name: str, pattern: re.Pattern[str] | None, include_internal: bool,
            notes: list[str]) -> list[dict[str, Any]]:
    protected = re.compile(DEFAULT_PROTECTED_TOPICS)
    selected: list[ObservedTopic] = []
    internal: list[str] = []
    for name in sorted(observed.topics):
        if pattern is not None and not pattern.search(name):
            continue
        topic = observed.topics[name]
        if not include_internal and (topic.internal or protected.match(name)):
            internal.append(name)
            continue
        selected.append(topic)
    if internal:
        notes.append(f"{len(internal)} internal or platform topic(s) not exported ({', '.join(internal)}); "
                     "--include-internal exports them")
    for name, error in sorted(observed.topic_errors.items()):
        if pattern is None or pattern.search(name):
            notes.append(f"topic {name} not exported: it could not be read ({error})")
    names = topic_resource_names(t.name for t in selected)
    return [doc for t in selected if (doc := topicmanifest(t, names[t.name], cluster_name, notes)) is not None]


def _acls(observed: ObservedState, cluster_name: str, unmapped: Iterable[kafka.AclBinding],
          notes: list[str]) -> list[dict[str, Any]]:
    for wire in sorted(unmapped, key=describe_wire_binding):
        notes.append(f"ACL binding not exported: {describe_wire_binding(wire)}: manifests cannot express it; "
                     "kafkaops neither creates nor deletes such bindings")
    if observed.acls is None:
        notes.append(f"ACLs not exported: they could not be read ({_acl_error(observed.acls_error)})"
                     if observed.acls_error else "ACLs not exported: they were not read")
        return []
    names = principal_resource_names(observed.acls)
    out: list[dict[str, Any]] = []
    for principal in sorted(observed.acls):
        bindings = observed.acls[principal]
        if bindings and (doc := aclmanifest(principal, bindings, names[principal], cluster_name, notes)) is not None:
            out.append(doc)
    return out


def _acl_error(error: KafkaError) -> str:
    if error.name == "SECURITY_DISABLED":
        return "SECURITY_DISABLED: the cluster has no authorizer, so it holds no ACLs"
    return str(error)


def _broker_configs(observed: ObservedState, cluster_name: str, notes: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key in sorted(observed.broker_configs, key=lambda k: (k != "", int(k) if k.isdigit() else -1, k)):
        if key and not key.isdigit():
            continue
        doc = broker_configmanifest(int(key) if key else None, observed.broker_configs[key], cluster_name, notes)
        if doc is not None:
            out.append(doc)
    for key, error in sorted(observed.broker_config_errors.items()):
        what = "cluster-wide broker config" if not key else f"config of broker {key}"
        notes.append(f"{what} not exported: it could not be read ({error})")
    return out


# --- YAML ---------------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block style, with list items indented under their key (as the examples are written)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


class _FlowDict(dict):  # type: ignore[type-arg]
    """A mapping written on one line: `{type: Topic, name: orders}`."""


class _FlowList(list):  # type: ignore[type-arg]
    """A list written on one line: `[Describe, Read]`."""


_Dumper.add_representer(_FlowDict, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=True))
_Dumper.add_representer(_FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))


def _styled(document: Mapping[str, Any]) -> dict[str, Any]:
    """`document` with each ACL entry's resource and operations on one line, as in the examples
    (a copy: the documents themselves stay plain dicts and lists)."""
    out = dict(document)
    spec = out.get("spec")
    if out.get("kind") == KAFKA_ACL and isinstance(spec, Mapping) and isinstance(spec.get("acls"), list):
        entries = [
            {key: _FlowDict(value) if key == "resource" else _FlowList(value) if key == "operations" else value
             for key, value in entry.items()}
            for entry in spec["acls"]
        ]
        out["spec"] = {**spec, "acls": entries}
    return out


def to_yaml(documents: Sequence[Mapping[str, Any]], *, origin: str | None = None) -> str:
    """Multi-document YAML in the documents' own key order, after a comment saying where it
    came from. No timestamp: exporting an unchanged cluster twice gives the same text."""
    if origin is None:
        cluster = next((d for d in documents if d.get("kind") == KAFKA_CLUSTER), None)
        origin = (f"{', '.join(cluster['spec']['bootstrapServers'])} (KafkaCluster {cluster['metadata']['name']})"
                  if cluster else "a Kafka cluster")
    header = (f"# Exported by `kafkaops export` from {origin}.\n"
              "# Only configs set explicitly in Kafka are included (defaults are not).\n")
    if not documents:
        return header + "# Nothing of this kind to export.\n"
    body = yaml.dump_all([_styled(d) for d in documents], Dumper=_Dumper, sort_keys=False, explicit_start=True,
                         default_flow_style=False, allow_unicode=True, width=4096)
    return header + annotate_placeholders(body)


def files_by_kind(result: ExportResult, include: frozenset[str] = INCLUDABLE) -> dict[str, str]:
    """File name -> YAML text: cluster.yaml, and one file per included kind (see KIND_FILES).

    A kind with nothing to export still gets its file (just the header), so that exporting
    again into the same directory replaces what an earlier export wrote there."""
    wanted = {KAFKA_CLUSTER} | {kind for kind, part in _KIND_PARTS.items() if part in include}
    return {file: to_yaml(result.of_kind(kind), origin=result.origin)
            for kind, file in KIND_FILES.items() if kind in wanted}


_KIND_PARTS: Mapping[str, str] = {KAFKA_TOPIC: TOPICS, KAFKA_ACL: ACLS, KAFKA_BROKER_CONFIG: BROKER_CONFIGS,
                                   KAFKA_USER: USERS, KAFKA_CLIENT_QUOTA: QUOTAS}
