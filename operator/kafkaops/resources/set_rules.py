"""Rules over a whole set of documents: duplicates across files, clusterRef, namespace admission.

Identities are read from the raw manifests (defensively), so a duplicate is
reported even when one of the two documents has other problems.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from kafkaops.frozen import frozen
from kafkaops.resources.documents import Document, Source
from kafkaops.resources.issues import Finding, error, warning
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_CLIENT_QUOTA, KAFKA_CLUSTER, KAFKA_TOPIC, KAFKA_USER
from kafkaops.resources.models import KafkaCluster
from kafkaops.resources.rules import collision_key, effective_topic_name
from kafkaops.resources.user_rules import user_principal
from kafkaops.resources.users import entity_of, entity_text

UNKNOWN_CLUSTER_REF = "UnknownClusterRef"
DUPLICATE_CLUSTER = "DuplicateCluster"
DUPLICATE_RESOURCE_NAME = "DuplicateResourceName"
DUPLICATE_TOPIC = "DuplicateTopic"
DUPLICATE_ACL_PRINCIPAL = "DuplicateAclPrincipal"
DUPLICATE_BROKER_CONFIG = "DuplicateBrokerConfig"
DUPLICATE_USER = "DuplicateUser"
DUPLICATE_QUOTA_ENTITY = "DuplicateQuotaEntity"
TOPIC_NAME_COLLISION = "TopicNameCollision"
NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"
TOPIC_PREFIX_NOT_ALLOWED = "TopicPrefixNotAllowed"

ClusterKey = tuple[str | None, str]  # (namespace, name)


@frozen
class _Ref:
    namespace: str | None
    name: str


def get_in(body: Any, *keys: str) -> Any:
    """body[keys[0]][keys[1]]..., or None where a level is missing or not a mapping (raw input)."""
    current: Any = body
    for key in keys:
        if type(current) is not dict and not isinstance(current, Mapping):  # dict first: the ABC check is slow
            return None
        current = current.get(key)
    return current


def nonempty_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _cluster_ref(doc: Document) -> _Ref | None:
    name = nonempty_str(get_in(doc.body, "spec", "clusterRef", "name"))
    if name is None:
        return None
    return _Ref(nonempty_str(get_in(doc.body, "spec", "clusterRef", "namespace")) or doc.source.namespace, name)


def _place(source: Source) -> str:
    return str(source)


def check_set(
    documents: Sequence[Document],
    valid_clusters: Mapping[Source, KafkaCluster] | None = None,
) -> list[tuple[Document, Finding]]:
    """Findings that need several documents, each paired with the document it belongs to.

    `valid_clusters` (cluster documents that passed their own checks, as models)
    enables the allowedNamespaces admission rules.
    """
    out: list[tuple[Document, Finding]] = []
    clusters = [doc for doc in documents if doc.kind == KAFKA_CLUSTER]
    cluster_keys: dict[ClusterKey, list[Document]] = defaultdict(list)
    for doc in clusters:
        if doc.source.name:
            cluster_keys[(doc.source.namespace, doc.source.name)].append(doc)

    def resolve(ref: _Ref) -> Document | None:
        matches = [
            docs[0] for (namespace, name), docs in cluster_keys.items()
            if name == ref.name and (ref.namespace is None or namespace is None or namespace == ref.namespace)
        ]
        return matches[0] if len(matches) == 1 else None

    def identity(ref: _Ref) -> tuple[Any, ...]:
        target = resolve(ref)
        return ("doc", target.source) if target is not None else ("ref", ref.namespace, ref.name)

    # KafkaCluster declared twice, and any kind declared twice under one namespace/name
    _duplicates(out, cluster_keys, lambda key: f"KafkaCluster {key[1]!r}", DUPLICATE_CLUSTER, "metadata.name")
    by_object: dict[tuple[str, str, str], list[Document]] = defaultdict(list)
    for doc in documents:
        if doc.kind != KAFKA_CLUSTER and doc.source.namespace and doc.source.name:
            by_object[(doc.kind, doc.source.namespace, doc.source.name)].append(doc)
    _duplicates(out, by_object, lambda key: f"{key[0]} {key[1]}/{key[2]}", DUPLICATE_RESOURCE_NAME, "metadata.name")

    topics: dict[tuple[Any, ...], list[Document]] = defaultdict(list)
    principals: dict[tuple[Any, ...], list[Document]] = defaultdict(list)
    brokers: dict[tuple[Any, ...], list[Document]] = defaultdict(list)
    users: dict[tuple[Any, ...], list[Document]] = defaultdict(list)
    quota_entities: dict[tuple[Any, ...], list[Document]] = defaultdict(list)
    collisions: dict[tuple[Any, ...], dict[str, list[Document]]] = defaultdict(lambda: defaultdict(list))
    for doc in documents:
        if doc.kind == KAFKA_CLUSTER:
            continue
        ref = _cluster_ref(doc)
        if ref is None:
            continue
        target = resolve(ref)
        if clusters and target is None:
            known = ", ".join(sorted({name for _, name in cluster_keys})) or "none"
            where = f" in namespace {ref.namespace!r}" if ref.namespace else ""
            out.append((doc, error("spec.clusterRef.name",
                                   f"no KafkaCluster named {ref.name!r}{where} among the validated files (known: {known})",
                                   UNKNOWN_CLUSTER_REF)))
        cluster_id = identity(ref)
        if doc.kind == KAFKA_TOPIC:
            topic_name, _ = effective_topic_name(doc.body)
            if topic_name:
                topics[(cluster_id, topic_name)].append(doc)
                collisions[cluster_id][collision_key(topic_name)].append(doc)
        elif doc.kind == KAFKA_ACL:
            principal = nonempty_str(get_in(doc.body, "spec", "principal"))
            if principal:
                principals[(cluster_id, principal)].append(doc)
        elif doc.kind == KAFKA_USER:
            principal = user_principal(doc.body)
            if principal:
                users[(cluster_id, principal)].append(doc)
                if isinstance(get_in(doc.body, "spec", "acls"), list):  # manages the principal's ACLs
                    principals[(cluster_id, principal)].append(doc)
                if isinstance(get_in(doc.body, "spec", "quotas"), Mapping) and principal.startswith("User:"):
                    quota_entities[(cluster_id, entity_text((("user", principal[5:]),)))].append(doc)
        elif doc.kind == KAFKA_CLIENT_QUOTA:
            entity = get_in(doc.body, "spec", "entity")
            if isinstance(entity, Mapping) and (components := entity_of(entity)):
                quota_entities[(cluster_id, entity_text(components))].append(doc)
        elif doc.kind == KAFKA_BROKER_CONFIG:
            broker_id = get_in(doc.body, "spec", "brokerId")
            if broker_id is None or (isinstance(broker_id, int) and not isinstance(broker_id, bool)):
                brokers[(cluster_id, broker_id)].append(doc)
        if target is not None and valid_clusters and target.source in valid_clusters:
            out.extend(_admission(doc, valid_clusters[target.source]))

    _duplicates(out, topics, lambda key: f"topic {key[1]!r}", DUPLICATE_TOPIC,
                lambda doc: effective_topic_name(doc.body)[1])
    _duplicates(out, principals, lambda key: f"the ACLs of {key[1]!r}", DUPLICATE_ACL_PRINCIPAL,
                lambda doc: "spec.acls" if doc.kind == KAFKA_USER else "spec.principal")
    _duplicates(out, users, lambda key: f"KafkaUser {key[1]!r}", DUPLICATE_USER,
                lambda doc: "spec.principal" if "principal" in doc.body["spec"] else "metadata.name")
    _duplicates(out, quota_entities, lambda key: f"quota entity {key[1]}", DUPLICATE_QUOTA_ENTITY,
                lambda doc: "spec.quotas" if doc.kind == KAFKA_USER else "spec.entity")
    _duplicates(out, brokers,
                lambda key: "the cluster-wide broker config" if key[1] is None else f"the config of broker {key[1]}",
                DUPLICATE_BROKER_CONFIG, lambda doc: "spec.brokerId" if "brokerId" in doc.body["spec"] else "spec")

    for by_key in collisions.values():
        for docs in by_key.values():
            names = {effective_topic_name(doc.body)[0] for doc in docs}
            if len(names) < 2:
                continue
            for doc in docs:
                name, path = effective_topic_name(doc.body)
                others = sorted(f"{n!r}" for n in names if n != name)
                out.append((doc, warning(path, f"topic {name!r} collides with {', '.join(others)}: Kafka treats '.' "
                                               "and '_' alike in metric names", TOPIC_NAME_COLLISION)))
    return out


def _duplicates(out: list[tuple[Document, Finding]], groups: Mapping[Any, list[Document]], what: Any, rule: str,
                path: Any) -> None:
    for key, docs in groups.items():
        if len(docs) < 2:
            continue
        for doc in docs:
            others = "; ".join(_place(other.source) for other in docs if other is not doc)
            field = path(doc) if callable(path) else path
            out.append((doc, error(field, f"{what(key)} is declared more than once: also at {others}", rule)))


def _admission(doc: Document, cluster: KafkaCluster) -> list[tuple[Document, Finding]]:
    topic_name = effective_topic_name(doc.body)[0] if doc.kind == KAFKA_TOPIC else None
    problem = cluster.admission_problem(doc.source.namespace, None)
    if problem:
        return [(doc, error("spec.clusterRef", problem, NAMESPACE_NOT_ALLOWED))]
    if topic_name and (problem := cluster.admission_problem(doc.source.namespace, topic_name)):
        return [(doc, error(effective_topic_name(doc.body)[1], problem, TOPIC_PREFIX_NOT_ALLOWED))]
    return []
