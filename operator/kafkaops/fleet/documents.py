"""One manifest file -> rows, one per document: the pure-Python half of the desired stage.

Runs inside Spark tasks (desired.py maps it over the files), and is tested on its own.
Each document is loaded by `kafkaops.resources.loader.load_text` and checked by the same
per-document checks as `kafkaops validate` (`validation.check_document`: schema + rules);
valid documents are built into models (`build_resource`) whose fields become the row.
Invalid documents keep the identity fields (cluster, topic name, principal, broker id) read
defensively from the raw body, like `set_rules` does, so duplicates across files are
still reported when one of the copies has other errors.

Cluster of a document:
1. `spec.clusterRef.name` when the document has one (a KafkaCluster: its own name);
2. else, for a file under a `clusters/<name>/` directory (the nearest such component of
   its path), `<name>`: the document is checked and built as if it said
   `clusterRef: {name: <name>}`;
3. else none (the schema's "required field is missing" error for spec.clusterRef).
A clusterRef that disagrees with the directory wins, with a ClusterRefOutsideDirectory warning.
"""

from __future__ import annotations

import copy
import gc
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kafkaops.resources.documents import Document, Source
from kafkaops.resources.issues import Finding, Severity, ValidationIssue
from kafkaops.resources.kinds import (
    KAFKA_ACL,
    KAFKA_BROKER_CONFIG,
    KAFKA_CLIENT_QUOTA,
    KAFKA_CLUSTER,
    KAFKA_TOPIC,
    KAFKA_USER,
    KINDS,
)
from kafkaops.resources.loader import load_text
from kafkaops.resources.models import KafkaAcl, KafkaBrokerConfig, KafkaCluster, KafkaTopic, build_resource
from kafkaops.resources.rules import check_rules, effective_topic_name
from kafkaops.resources.schemas import schema_predicate
from kafkaops.resources.set_rules import get_in, nonempty_str
from kafkaops.resources.user_rules import user_principal
from kafkaops.resources.users import KafkaClientQuota, KafkaUser, entity_of, entity_text
from kafkaops.resources.validation import check_document

CLUSTER_REF_OUTSIDE_DIRECTORY = "ClusterRefOutsideDirectory"
CLUSTERS_DIRECTORY = "clusters"

# The columns of a document row, in order (desired.DOC_SCHEMA gives their Spark types).
DOC_COLUMNS = (
    "file", "index", "line", "kind", "namespace", "name", "cluster", "cluster_from", "ref_namespace", "valid",
    "topic_name", "topic_name_path", "partitions", "replication_factor", "replica_assignment", "config",
    "deletion_policy", "principal", "bindings", "broker_id", "has_broker_id",
    "bootstrap", "max_deletions", "allowed_namespaces", "lines", "field_lines", "issues",
    # KafkaUser / KafkaClientQuota (never a password: where it comes from, and the credential's shape)
    "mechanism", "iterations", "password_source", "secret_name", "quotas", "entity", "quota_entity",
    "manages_acls", "principal_path",
)
LINE_PATHS = ("metadata.name", "spec.topicName", "spec.principal", "spec.brokerId", "spec.clusterRef.name",
               "spec.clusterRef", "spec", "spec.acls", "spec.quotas", "spec.entity", "spec.authentication")


# The report links each finding to the line that declares it: field (as the plan, drift and policy
# outputs name it) -> the manifest's field path.
FIELD_PATHS = {"resource": "metadata.name", "partitions": "spec.partitions",
                "replicationFactor": "spec.replicationFactor", "replicaAssignment": "spec.replicaAssignment",
                "acl": "spec.acls", "config": "spec.config", "credential": "spec.authentication",
                "quota": "spec.quotas", "entity": "spec.entity"}


def field_lines(doc: Document, body: Any) -> dict[str, int]:
    """The lines the report links to: the resource (metadata.name), its topic name, the fields the
    plan and drift name (`partitions`, `config.retention.ms`, `acl`...)."""
    lines = {field: line for field, path in FIELD_PATHS.items() if (line := doc.lines.get(path)) is not None}
    if (line := doc.lines.get("spec.topicName", lines.get("resource"))) is not None:
        lines["topic"] = line
    for section in ("config", "quotas"):
        held = get_in(body, "spec", section)
        if isinstance(held, Mapping):
            for key in held:
                if (line := doc.lines.get(f"spec.{section}.{key}")) is not None:
                    lines[f"{section.rstrip('s')}.{key}"] = line
    return lines


def display_path(path: str) -> str:
    """A file as people know it: `file:/a/b.yaml` (Spark's spelling) -> `/a/b.yaml`; other URIs as they are."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


def directory_cluster(path: str) -> str | None:
    """`<name>` of the nearest `clusters/<name>/` directory above `path`, or None."""
    parts = display_path(path).replace("\\", "/").split("/")[:-1]  # directories only
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == CLUSTERS_DIRECTORY and parts[i + 1]:
            return parts[i + 1]
    return None


def _issue(doc: Document, finding: Finding) -> ValidationIssue:
    source = doc.source
    return ValidationIssue(
        finding.severity, source.file, source.index if source.file is not None else None, source.kind or None,
        source.name or None, finding.path, finding.reason, finding.rule, doc.line_of(finding.path), source,
    )


def check(doc: Document) -> list[ValidationIssue]:
    """`validation.check_document(doc)`, faster for documents without a schema error."""
    if doc.kind not in KINDS or not schema_predicate(doc.kind)(doc.body):
        return check_document(doc)
    return [_issue(doc, f) for f in check_rules(doc.kind, doc.body)]


def _with_directory_cluster(doc: Document, cluster: str) -> Document:
    body = copy.deepcopy(dict(doc.body))
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        return doc
    body["spec"] = {"clusterRef": {"name": cluster}, **spec}
    return Document(doc.source, body, doc.line, doc.lines)


# --- rows ------------------------------------------------------------------------------------------


def _issue_row(issue: ValidationIssue) -> dict[str, Any]:
    return {"severity": str(issue.severity), "rule": issue.rule, "path": issue.path, "line": issue.line,
            "message": issue.reason}


def _empty_row(file: str, index: int | None, kind: str | None, namespace: str | None, name: str | None,
               cluster: str | None, cluster_from: str | None, issues: list[tuple[Any, ...]]) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(DOC_COLUMNS)
    row.update(file=file, index=index, kind=kind, namespace=namespace, name=name, cluster=cluster,
               cluster_from=cluster_from, valid=False, has_broker_id=False, manages_acls=False, issues=issues)
    return row


def document_row(doc: Document, dir_cluster: str | None, extra: Iterable[ValidationIssue] = ()) -> dict[str, Any]:
    """The row of one loaded document."""
    body = doc.body
    kind = doc.kind
    ref_name = nonempty_str(get_in(body, "spec", "clusterRef", "name"))
    issues: list[ValidationIssue] = list(extra)
    cluster_from: str | None = None
    if kind == KAFKA_CLUSTER:
        cluster = nonempty_str(get_in(body, "metadata", "name"))
        cluster_from = "KafkaCluster"
        if dir_cluster and cluster and cluster != dir_cluster:
            issues.append(_issue(doc, Finding("metadata.name", f"KafkaCluster {cluster!r} is declared under "
                                              f"{CLUSTERS_DIRECTORY}/{dir_cluster}/", CLUSTER_REF_OUTSIDE_DIRECTORY,
                                              Severity.WARNING)))
    elif ref_name is not None:
        cluster, cluster_from = ref_name, "clusterRef"
        if dir_cluster and ref_name != dir_cluster:
            issues.append(_issue(doc, Finding("spec.clusterRef.name", f"clusterRef names {ref_name!r} but the file "
                                              f"is under {CLUSTERS_DIRECTORY}/{dir_cluster}/: the clusterRef wins",
                                              CLUSTER_REF_OUTSIDE_DIRECTORY, Severity.WARNING)))
    elif dir_cluster and get_in(body, "spec", "clusterRef") is None and isinstance(get_in(body, "spec"), Mapping):
        doc = _with_directory_cluster(doc, dir_cluster)
        body = doc.body
        cluster, cluster_from = dir_cluster, "directory"
    else:
        cluster = None
    issues.extend(check(doc))
    valid = not any(i.is_error for i in issues)
    source = doc.source
    row = _empty_row(source.file or "", source.index, kind, source.namespace, source.name or None, cluster,
                     cluster_from, [])
    row["line"] = doc.line
    row["valid"] = valid
    row["ref_namespace"] = nonempty_str(get_in(body, "spec", "clusterRef", "namespace")) or source.namespace
    row["lines"] = {p: line for p in LINE_PATHS if (line := doc.lines.get(p)) is not None}
    row["field_lines"] = field_lines(doc, body)
    row["issues"] = [_issue_row(i) for i in issues]
    model = build_resource(doc) if valid else None
    if kind == KAFKA_TOPIC:
        name, path = effective_topic_name(body)
        row["topic_name"], row["topic_name_path"] = name, path
        if isinstance(model, KafkaTopic):
            row["partitions"] = model.partitions
            row["replication_factor"] = model.replication_factor
            row["replica_assignment"] = [list(r) for r in model.replica_assignment] if model.replica_assignment else None
            row["config"] = dict(model.config)
            row["deletion_policy"] = str(model.deletion_policy) if model.deletion_policy else None
    elif kind == KAFKA_ACL:
        row["principal"] = nonempty_str(get_in(body, "spec", "principal"))
        if isinstance(model, KafkaAcl):
            row["bindings"] = _bindings(model.bindings)
    elif kind == KAFKA_USER:
        principal_fields(row, body, model if isinstance(model, KafkaUser) else None)
    elif kind == KAFKA_CLIENT_QUOTA:
        quota_fields(row, body, model if isinstance(model, KafkaClientQuota) else None)
    elif kind == KAFKA_BROKER_CONFIG:
        spec = get_in(body, "spec")
        broker = get_in(body, "spec", "brokerId")
        row["has_broker_id"] = isinstance(spec, Mapping) and "brokerId" in spec
        row["broker_id"] = broker if isinstance(broker, int) and not isinstance(broker, bool) else None
        if isinstance(model, KafkaBrokerConfig):
            row["config"] = dict(model.config)
    elif kind == KAFKA_CLUSTER and isinstance(model, KafkaCluster):
        spec = model.spec
        row["bootstrap"] = list(spec.bootstrap_servers)
        row["deletion_policy"] = str(spec.topic_deletion.policy)
        row["max_deletions"] = spec.topic_deletion.max_deletions_per_reconcile
        row["allowed_namespaces"] = (None if spec.allowed_namespaces is None else
                                     [{"namespace": a.namespace, "topic_prefixes": list(a.topic_prefixes)}
                                      for a in spec.allowed_namespaces])
    return row


def _bindings(bindings: Iterable[Any]) -> list[dict[str, Any]]:
    return [{"resource_type": str(b.resource_type), "resource_name": b.resource_name,
             "pattern_type": str(b.pattern_type), "host": b.host, "operation": str(b.operation),
             "permission": str(b.permission)} for b in sorted(bindings)]


def principal_fields(row: dict[str, Any], body: Any, user: KafkaUser | None) -> None:
    """A KafkaUser's row: its principal and, raw (so duplicates are found among invalid documents
    too), whether it manages the principal's ACLs and its user quota entity; when valid, the
    credential's mechanism, iterations and password source (`passwordSecretRef` or `generated`, and
    the Secret's name: never a password), its quotas and its inline ACL rules as bindings."""
    principal = user_principal(body) if isinstance(body, Mapping) else None
    spec = get_in(body, "spec")
    row["principal"] = principal
    row["principal_path"] = "spec.principal" if isinstance(spec, Mapping) and "principal" in spec else "metadata.name"
    row["manages_acls"] = isinstance(get_in(body, "spec", "acls"), list)
    if isinstance(get_in(body, "spec", "quotas"), Mapping) and principal and principal.startswith("User:"):
        row["quota_entity"] = entity_text((("user", principal[len("User:"):]),))
    if user is None:
        return
    auth = user.authentication
    if auth is not None:
        row["mechanism"] = auth.type.sasl_name
        row["iterations"] = auth.iterations
        row["password_source"] = "generated" if auth.generated else "passwordSecretRef"
        row["secret_name"] = auth.secret_name
    row["quotas"] = None if user.quotas is None else dict(user.quotas)
    row["bindings"] = _bindings(user.bindings) if user.manages_acls else None


def quota_fields(row: dict[str, Any], body: Any, quota: KafkaClientQuota | None) -> None:
    """A KafkaClientQuota's row: its entity (text, raw; components when valid) and quotas."""
    entity = get_in(body, "spec", "entity")
    if isinstance(entity, Mapping) and (components := entity_of(entity)):
        row["quota_entity"] = entity_text(components)
    if quota is not None:
        row["entity"] = [{"type": t, "name": n} for t, n in quota.entity]
        row["quotas"] = dict(quota.quotas)


def parse_file(file: str, text: str) -> Iterator[dict[str, Any]]:
    """Every row of one manifest file: its documents, and its file-level errors (a YAML syntax error)."""
    shown = display_path(file)
    dir_cluster = directory_cluster(shown)
    loaded = load_text(text, shown)
    attached: dict[Source, list[ValidationIssue]] = {}
    loose: list[ValidationIssue] = []
    known = {doc.source for doc in loaded.documents}
    for issue in loaded.errors:
        if issue.source is not None and issue.source in known:
            attached.setdefault(issue.source, []).append(issue)
        else:
            loose.append(issue)
    for doc in loaded.documents:
        yield document_row(doc, dir_cluster, attached.get(doc.source, ()))
    for issue in loose:
        yield _empty_row(shown, issue.index, issue.kind, None, issue.name, dir_cluster, None, [_issue_row(issue)])


def parse_files(items: Iterable[tuple[str, str]]) -> Iterator[str]:
    """(file, text) pairs -> one JSON object per row (what a Spark task runs; Spark's JSON reader
    turns them into typed rows in the JVM, much faster than converting Python objects).

    The cyclic garbage collector is paused while the task's files are parsed, and resumed (if it
    was on) when the iteration ends: loading and checking a document makes no reference cycles
    (tests/fleet/test_fleet_stages.py checks it), so its young collections, ~50 per thousand
    documents, only walked objects that reference counting frees anyway, and the full ones a
    worker's whole heap (pyspark's modules): 8 of the ~92 µs a document took
    (docs/benchmarks.md, "A document's 92 µs")."""
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for file, text in items:
            for row in parse_file(file, text or ""):
                yield dumps({k: v for k, v in row.items() if v is not None})  # absent = null: less to parse
    finally:
        if was_enabled:
            gc.enable()
