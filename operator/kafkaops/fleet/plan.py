"""The plan stage: what `kafkaops apply` would do, per cluster, by the engine's own planner.

Spark gathers each cluster's desired resources and its snapshot into one row (aggregations in
the JVM; a cluster with more than PLAN_TASK_TOPICS declared topics to plan into several rows, split
by topic: `cluster_rows`); one Python task per row rebuilds the engine's inputs from it -
`DesiredState` (the KafkaTopic/KafkaAcl/KafkaBrokerConfig/KafkaUser/KafkaClientQuota/KafkaCluster
models) and `ObservedState` (topics with assignments and configs, ACLs by principal, broker
configs, SCRAM credentials by user, client quotas by entity, brokers from the header) - and calls
`kafkaops.reconcile.plan.plan`, the pure function `kafkaops plan` calls. Every ResourcePlan with
an action or a problem becomes a row. The topics that provably need nothing are found first in
the JVM (`settled_topics`) and left out of the row, declaration and snapshot alike: the task
gets what there is to decide, not the whole cluster, and at most its share of a large cluster.

Like `kafkaops plan --no-state`: there is no ownership record in the fleet, so a config or quota
key removed from a manifest is never planned for reset.

Passwords: the fleet has none (nor wants any), and a snapshot holds only each credential's
mechanism and iterations. `fleet_passwords` hands the planner a stand-in for exactly the users
whose declared credential is missing or has other iterations - the plan `kafkaops plan` makes
when it has their password (an upsert: `create`, or `update` when the user has a credential of
another mechanism) - and none for the others, whose credential is present as declared and is
kept (a password rotation is invisible in a snapshot). The stand-in is random, never leaves the
task, and shows nowhere: a plan's changes name mechanisms and iterations only.

Snapshots hold only non-default topic configs; a declared key missing from the snapshot is
given Kafka's default (the catalog's) with source DEFAULT_CONFIG, which is what a
DescribeConfigs would have said, so the field changes read the same (`old: "... (default)"`).
"""

from __future__ import annotations

import itertools
import math
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kafkaops.fleet import PLAN_TASK_TOPICS
from kafkaops.fleet.drift import drift_rows
from kafkaops.kafka import BrokerInfo, ConfigSource, QuotaEntity, ScramCredentialInfo, ScramMechanism
from kafkaops.kafka.security import Secret
from kafkaops.reconcile.actions import Action, Plan
from kafkaops.reconcile.desired import DesiredState
from kafkaops.reconcile.observed import ObservedConfig, ObservedState, ObservedTopic
from kafkaops.reconcile.configs import SENSITIVE_NAME_PATTERN, is_sensitive
from kafkaops.reconcile.plan import DEFAULT_PROTECTED_TOPICS, PlanOptions, plan, plan_prune
from kafkaops.resources.acl import AclBinding, AclOperation, AclPermission, PatternType, ResourceType
from kafkaops.resources.documents import Source
from kafkaops.resources.kinds import (
    KAFKA_ACL,
    KAFKA_BROKER_CONFIG,
    KAFKA_CLIENT_QUOTA,
    KAFKA_CLUSTER,
    KAFKA_TOPIC,
    KAFKA_USER,
)
from kafkaops.resources.models import (
    ClusterRef,
    DeletionPolicy,
    FrozenDict,
    KafkaAcl,
    KafkaBrokerConfig,
    KafkaCluster,
    KafkaClusterSpec,
    KafkaTopic,
    TopicDeletion,
)
from kafkaops.resources.topic_configs import TOPIC_CONFIGS, topic_config_default
from kafkaops.resources.users import (
    KafkaClientQuota,
    KafkaUser,
    PasswordSecretRef,
    ScramAuthentication,
    ScramType,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from kafkaops.fleet.desired import Desired
    from kafkaops.fleet.observed import Observed

PLAN_DDL = ("record string, cluster string, kind string, name string, action string, "
            "changes array<struct<field:string,old:string,new:string>>, changed_fields array<string>, "
            "problem_reason string, problem_message string, file string, `index` int, namespace string, "
            "resource string, note string, field string, desired string, observed string, observed_source string")
PLAN_COLUMNS = ["cluster", "kind", "name", "action", "changed_fields", "changes", "problem_reason",
                "problem_message", "file", "index", "namespace", "resource"]
PLAN_COLUMNS_ALL = ["record", "cluster", "kind", "name", "action", "changes", "changed_fields", "problem_reason",
                    "problem_message", "file", "index", "namespace", "resource", "note"]
_LISTS = ("d_topics", "d_acls", "d_brokers", "d_cluster", "d_users", "d_quotas", "o_topics", "o_partitions",
          "o_configs", "o_acls", "o_brokers", "o_scram", "o_quotas")


def decode_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A cluster_rows row (its lists as JSON texts) as Python lists of dicts."""
    import json

    lists = row["lists"] or {}
    decoded: dict[str, Any] = {"cluster": row["cluster"]}
    for key in _LISTS:
        decoded[key] = json.loads(lists[key]) if key in lists else []
    decoded["d_cluster"] = decoded["d_cluster"][0] if decoded["d_cluster"] else None
    return decoded


def plan_json(row: Mapping[str, Any], headers: Mapping[str, Mapping[str, Any]], prune: bool,
              protected: str) -> Iterator[str]:
    """plan_cluster over a row whose lists arrive as JSON (to_json in the JVM, json.loads here: far
    cheaper than Spark's conversion of nested rows into Python objects), answering JSON rows."""
    import json

    decoded = decode_row(row)
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for out in plan_cluster(decoded, headers, prune, protected):
        if isinstance(out, dict):  # a drift row
            yield encode({"record": "drift", **out})
            continue
        item = dict(zip(PLAN_COLUMNS_ALL, out))
        if item["changes"] is not None:
            item["changes"] = [{"field": f, "old": o, "new": n} for f, o, n in item["changes"]]
        yield encode(item)


# --- rebuilding the engine's inputs from rows (pure; tested without Spark) -----------------------------


def _source(kind: str, row: Mapping[str, Any]) -> Source:
    return Source(row["file"], row["index"] if row["index"] is not None else 0, kind, row["namespace"],
                  row["name"] or "")


def topic_model(cluster: str, row: Mapping[str, Any]) -> KafkaTopic:
    assignment = row["replica_assignment"]
    policy = row["deletion_policy"]
    return KafkaTopic(
        _source(KAFKA_TOPIC, row), row["name"] or row["topic"], row["namespace"],
        ClusterRef(cluster, row["ref_namespace"]), row["topic"], row["partitions"], row["replication_factor"],
        None if assignment is None else tuple(tuple(r) for r in assignment),
        FrozenDict(row["config"] or {}), None if policy is None else DeletionPolicy(policy),
    )


def binding_model(principal: str, b: Mapping[str, Any]) -> AclBinding:
    return AclBinding(ResourceType(b["resource_type"]), b["resource_name"], PatternType(b["pattern_type"]), principal,
                      b["host"], AclOperation(b["operation"]), AclPermission(b["permission"]))


def acl_model(cluster: str, row: Mapping[str, Any]) -> KafkaAcl:
    principal = row["principal"]
    bindings = frozenset(binding_model(principal, b) for b in row["bindings"] or ())
    return KafkaAcl(_source(KAFKA_ACL, row), row["name"] or principal, row["namespace"],
                    ClusterRef(cluster, row["ref_namespace"]), principal, (), bindings)


def broker_config_model(cluster: str, row: Mapping[str, Any]) -> KafkaBrokerConfig:
    return KafkaBrokerConfig(_source(KAFKA_BROKER_CONFIG, row), row["name"] or "", row["namespace"],
                             ClusterRef(cluster, row["ref_namespace"]), row["broker_id"],
                             FrozenDict(row["config"] or {}))


def cluster_model(cluster: str, row: Mapping[str, Any]) -> KafkaCluster:
    spec = KafkaClusterSpec(
        tuple(row["bootstrap"] or ()),
        topic_deletion=TopicDeletion(DeletionPolicy(row["deletion_policy"] or "Retain"),
                                     row["max_deletions"] if row["max_deletions"] is not None else 10),
    )
    source = Source(row["file"], row["index"] if row["index"] is not None else 0, KAFKA_CLUSTER, row["namespace"],
                    cluster)
    return KafkaCluster(source, cluster, row["namespace"], spec)


_SOURCES = {s.name: s for s in ConfigSource}


def user_model(cluster: str, row: Mapping[str, Any]) -> KafkaUser:
    """A KafkaUser from its row: the credential's mechanism, iterations and password source (the
    Secret's name; never a password), its quotas and its inline ACL rules as bindings."""
    principal = row["principal"]
    auth = None
    if row.get("mechanism"):
        secret = row.get("secret_name") or row["name"] or ""
        auth = ScramAuthentication(ScramType(row["mechanism"].lower()), secret,
                                   PasswordSecretRef(secret) if row.get("password_source") == "passwordSecretRef" else None,
                                   row["iterations"])
    bindings = row.get("bindings")
    policy = row.get("deletion_policy")
    return KafkaUser(_source(KAFKA_USER, row), row["name"] or principal, row["namespace"],
                     ClusterRef(cluster, row["ref_namespace"]), principal, auth,
                     None if row.get("quotas") is None else FrozenDict(sorted(row["quotas"].items())),
                     None if bindings is None else (),
                     frozenset(binding_model(principal, b) for b in bindings or ()),
                     None if policy is None else DeletionPolicy(policy))


def client_quota_model(cluster: str, row: Mapping[str, Any]) -> KafkaClientQuota:
    policy = row.get("deletion_policy")
    return KafkaClientQuota(_source(KAFKA_CLIENT_QUOTA, row), row["name"] or "", row["namespace"],
                            ClusterRef(cluster, row["ref_namespace"]),
                            tuple((e["type"], e["name"]) for e in row["entity"] or ()),
                            FrozenDict(sorted((row["quotas"] or {}).items())),
                            None if policy is None else DeletionPolicy(policy))


def _config_source(name: str | None) -> ConfigSource:
    return _SOURCES.get(name or "", ConfigSource.UNKNOWN)


def desired_state(cluster: str, topics: list, acls: list, brokers: list, kafka_cluster: Mapping | None,
                  users: Sequence[Mapping[str, Any]] = (), quotas: Sequence[Mapping[str, Any]] = ()) -> DesiredState:
    """Declared resources in the order `kafkaops plan` meets them: by file, then document index."""
    order = lambda r: (r["file"] or "", r["index"] or 0)  # noqa: E731
    return DesiredState(
        tuple(topic_model(cluster, r) for r in sorted(topics, key=order)),
        tuple(acl_model(cluster, r) for r in sorted(acls, key=order)),
        tuple(broker_config_model(cluster, r) for r in sorted(brokers, key=order)),
        cluster_model(cluster, kafka_cluster) if kafka_cluster is not None else None,
        tuple(user_model(cluster, r) for r in sorted(users, key=order)),
        tuple(client_quota_model(cluster, r) for r in sorted(quotas, key=order)),
    )


_ENTITY_COLUMNS = (("user", "user"), ("client-id", "client_id"), ("ip", "ip"))  # entity type, client_quotas column


def quota_entity(row: Mapping[str, Any]) -> QuotaEntity:
    """The QuotaEntity of a client_quotas row. Its user/client_id/ip columns are null both for "no
    such component" and for the default entity; the canonical `entity` text tells them apart."""
    named = [(t, row[c]) for t, c in _ENTITY_COLUMNS if row[c] is not None]
    unnamed = [t for t, c in _ENTITY_COLUMNS if row[c] is None]
    for count in range(len(unnamed) + 1):
        for defaults in itertools.combinations(unnamed, count):
            try:
                entity = QuotaEntity(tuple(named) + tuple((t, None) for t in defaults))
            except ValueError:
                continue
            if str(entity) == row["entity"]:
                return entity
    raise ValueError(f"client_quotas: entity {row['entity']!r} does not match its user/client_id/ip columns")


Credentials = dict[str, tuple[ScramCredentialInfo, ...]]  # by SCRAM user
Quotas = dict[QuotaEntity, dict[str, float]]


def principals_observed(header: Mapping[str, Any], scram: Sequence[Mapping[str, Any]],
                        quotas: Sequence[Mapping[str, Any]]) -> tuple[Credentials | None, Quotas | None]:
    """SCRAM credentials by user and quotas by entity from the snapshot rows; None for a table the
    snapshot lacks or could not fill (header `unread`): the planner then says it was not read."""
    unread = set(header.get("unread") or ())
    credentials: dict[str, list[ScramCredentialInfo]] | None = None
    if "scram_credentials" not in unread:
        credentials = {}
        for row in scram:
            credentials.setdefault(row["user"], []).append(
                ScramCredentialInfo(ScramMechanism.parse(row["mechanism"]), row["iterations"]))
    by_entity: dict[QuotaEntity, dict[str, float]] | None = None
    if "client_quotas" not in unread:
        by_entity = {}
        for row in quotas:
            by_entity.setdefault(quota_entity(row), {})[row["key"]] = float(row["value"])
    return (None if credentials is None else {u: tuple(sorted(c)) for u, c in credentials.items()}), by_entity


def fleet_passwords(users: tuple[KafkaUser, ...], observed: ObservedState) -> dict[str, Secret]:
    """A stand-in password for each user whose declared credential Kafka lacks (for its mechanism)
    or holds with other iterations: the planner then upserts it, as `kafkaops plan` would given the
    password. Users whose credential is present as declared get none: kept as they are."""
    if observed.scram is None:
        return {}
    stand_in = Secret(secrets.token_urlsafe(24))
    wanted: dict[str, Secret] = {}
    for user in users:
        auth = user.authentication
        if auth is None:
            continue
        mechanism = ScramMechanism.parse(auth.type.sasl_name)
        held = {info.mechanism: info.iterations for info in observed.scram.get(user.user_name, ())}
        if held.get(mechanism) != auth.iterations:
            wanted[user.user_name] = stand_in
    return wanted


def observed_state(header: Mapping[str, Any], topics: list, acls: list, broker_configs: list,
                   declared_keys: Mapping[str, frozenset[str]], scram: Sequence[Mapping[str, Any]] = (),
                   quotas: Sequence[Mapping[str, Any]] = ()) -> ObservedState:
    """The engine's view of a cluster, from its snapshot rows. `declared_keys`: topic -> declared
    config keys, which get Kafka's default when the snapshot (non-default entries only) lacks them."""
    observed_topics: dict[str, ObservedTopic] = {}
    for row in topics:
        name = row["topic"]
        configs = {c["key"]: ObservedConfig(c["value"], _config_source(c["source"]), bool(c["sensitive"]))
                   for c in row["configs"] or ()}
        for key in declared_keys.get(name, ()):
            if key not in configs and (default := topic_config_default(key)) is not None:
                configs[key] = ObservedConfig(default, ConfigSource.DEFAULT_CONFIG)
        assignment = tuple(tuple(r or ()) for r in row["assignment"] or ())
        if not assignment and row["partitions"]:
            assignment = ((),) * row["partitions"]
        observed_topics[name] = ObservedTopic(name, assignment, row["topic_id"], bool(row["internal"]),
                                              row["all_led"] if row["all_led"] is not None else True, configs)
    by_principal: dict[str, set[AclBinding]] = {}
    for row in acls:
        try:
            binding = binding_model(row["principal"], row)
        except ValueError:  # a spelling manifests cannot declare: never planned against
            continue
        by_principal.setdefault(row["principal"], set()).add(binding)
    brokers = {b[0]: BrokerInfo(b[0], b[1], b[2], b[3]) for b in header["brokers"]}
    configs_by_broker: dict[str, dict[str, ObservedConfig]] = {"": {}, **{str(b): {} for b in brokers}}
    for row in broker_configs:
        configs_by_broker.setdefault(row["broker"] or "", {})[row["key"]] = ObservedConfig(
            row["value"], _config_source(row["source"]), bool(row["sensitive"]))
    credentials, by_entity = principals_observed(header, scram, quotas)
    return ObservedState(
        cluster_id=header["clusterId"], controller_id=header["controllerId"], brokers=brokers,
        topics=observed_topics, all_topic_names=frozenset(observed_topics),
        acls={p: frozenset(b) for p, b in by_principal.items()}, broker_configs=configs_by_broker,
        scram=credentials, quotas=by_entity,
    )


def plan_rows(cluster: str, made: Plan) -> Iterator[tuple[Any, ...]]:
    """Plan rows (PLAN_COLUMNS_ALL order): resources with an action or a problem, then the plan's notes."""
    for r in made.resources:
        if r.action is Action.NONE and r.problem is None:
            continue
        declared = r.source.file is not None
        changes = [(c.field, c.old, c.new) for c in r.changes]
        fields = list(dict.fromkeys(c.field for c in r.changes))
        yield ("resource", cluster, r.kind, r.name, r.action.value, changes, fields,
               r.problem.reason if r.problem else None, r.problem.message if r.problem else None,
               r.source.file if declared else None, r.source.index if declared else None,
               r.source.namespace, r.source.name if declared else None, None)
    for note in made.notes:
        yield ("note", cluster, None, None, None, None, None, None, None, None, None, None, None, note)


def index_snapshot(row: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, list], dict[str, dict[str, Any]]]:
    """A cluster's snapshot lists by topic: its row, its partitions (by partition number; they
    arrive as [topic, partition, leader, [replicas]]) and its configs by key."""
    parts: dict[str, list] = {}
    for p in row["o_partitions"] or ():
        entry = parts.get(p[0])
        if entry is None:
            parts[p[0]] = [p]
        else:
            entry.append(p)
    for entry in parts.values():
        if any(entry[i][1] > entry[i + 1][1] for i in range(len(entry) - 1)):
            entry.sort(key=lambda x: x[1])
    configs: dict[str, dict[str, Any]] = {}
    for c in row["o_configs"] or ():
        configs.setdefault(c["topic"], {})[c["key"]] = c
    return {t["topic"]: t for t in row["o_topics"] or ()}, parts, configs


def plan_cluster(row: Mapping[str, Any], headers: Mapping[str, Mapping[str, Any]], prune: bool,
                 protected: str) -> Iterator[tuple[Any, ...] | dict[str, Any]]:
    """One cluster's plan rows (tuples), then its drift rows (dicts, drift.py): both from the same
    DesiredState and ObservedState. Runs in a Spark task; `row`: the cluster and its lists.

    The resources are `reconcile.plan.plan(...)` of the cluster's declared resources and
    `reconcile.plan.plan_prune` for its undeclared topics. The row usually lacks the settled
    topics (`settled_topics`: declared and observed alike, both sides dropped), which plan() would
    answer with nothing and which are neither undeclared nor prunable: the same rows as planning
    everything (tests/fleet compares both ways). A row may be one shard of a large cluster
    (`cluster_rows`): its topics whole, and the undeclared topics and every other kind only in
    shard 0, so the prune's count and cap, its note and the other kinds' rows come from that one."""
    cluster = row["cluster"]
    header = headers[cluster]
    wanted = desired_state(cluster, row["d_topics"] or [], row["d_acls"] or [], row["d_brokers"] or [],
                           row["d_cluster"], row.get("d_users") or [], row.get("d_quotas") or [])
    seen, parts, configs = index_snapshot(row)
    declared = {t.topic_name: frozenset(t.config) for t in wanted.topics}
    snapshot = [{**t, "assignment": [p[3] for p in parts.get(name, ())],
                 "all_led": all(p[2] is not None and p[2] >= 0 for p in parts.get(name, ())),
                 "configs": list(configs.get(name, {}).values())}
                for name, t in seen.items()]
    observed = observed_state(header, snapshot, row["o_acls"] or [], row["o_brokers"] or [], declared,
                              row.get("o_scram") or [], row.get("o_quotas") or [])
    wanted = replace(wanted, passwords=fleet_passwords(wanted.users, observed))
    options = PlanOptions(prune=prune, protected_topics=protected)
    made = plan(wanted, observed, None, replace(options, prune=False), cluster)
    pruned, notes = plan_prune(wanted, observed, options)
    yield from plan_rows(cluster, replace(made, resources=made.resources + tuple(pruned), notes=tuple(notes)))
    yield from drift_rows(cluster, wanted, observed)


# --- the stage -----------------------------------------------------------------------------------------


def settled_topics(topics: DataFrame, observed: Observed, brokers: Mapping[str, int]) -> DataFrame:
    """(cluster, topic) of the declared topics that provably need nothing from the planner: the
    topic exists, has no explicit assignment, its replication factor fits the brokers, its
    partitions and replication factor are the snapshot's (partition rows counted; the lowest
    partition's replicas), and every declared config key is the topic's own, non-sensitive override
    (DYNAMIC_TOPIC_CONFIG) with the very same string and a name `is_sensitive` does not hide. For
    such a topic `plan_topic` answers Action.NONE with no change and no problem (no reassignment is
    in flight in a snapshot, no key is owned without a state file) and drift has nothing to report.

    Column expressions and joins in the JVM, so a fleet where most topics are as declared sends
    only the others (and the undeclared ones) to the Python planner. Anything this cannot prove is
    planned: equality the Kafka way (`0.5` vs `0.50`, list order) is the planner's to decide.
    `topics`: cluster, topic, partitions, replication_factor, replica_assignment, config;
    `brokers`: the number of brokers of each cluster (0: unknown, no bound)."""
    from pyspark.sql import functions as F

    col = F.col
    keys = ("cluster", "topic")
    replicas = F.when(col("replicas").isNull(), F.lit(0)).otherwise(F.size("replicas"))
    # whether the topic exists, its partition rows counted and the lowest partition's replicas, in
    # one aggregation of the topics' and the partitions' rows: a semi join to the snapshot's topics
    # had Spark broadcast its million names (160 MiB built in the driver) at a million topics
    is_topic = col("_topic")
    shape = (observed.topics.select(*keys, F.lit(True).alias("_topic"), F.lit(None).cast("int").alias("partition"),
                                    F.lit(None).cast("array<int>").alias("replicas"))
             .unionByName(observed.partitions.select(*keys, F.lit(False).alias("_topic"), "partition", "replicas"))
             .groupBy(*keys).agg(F.max(is_topic).alias("_exists"), F.count(F.when(~is_topic, F.lit(1))).alias("_parts"),
                                 F.min_by(replicas, col("partition")).alias("_rf")))  # a topic row's partition is null: skipped
    counts = F.create_map(*[x for name, n in sorted(brokers.items()) for x in (F.lit(name), F.lit(n))]) \
        if brokers else F.create_map().cast("map<string,int>")
    limit = F.coalesce(F.element_at(counts, col("cluster")), F.lit(0))
    parts, rf = col("_parts"), F.coalesce(col("_rf"), F.lit(0))  # counted, never null; no partition rows: no _rf
    wanted_rf, wanted_parts = col("replication_factor"), col("partitions")
    # Each topic's config rows as one list, `ok` where the row can settle its key (the topic's own
    # override, not hidden, a name is_sensitive does not hide): every join here is on (cluster,
    # topic), so the joined sides keep one partitioning. A declared key is settled when the topic
    # holds it and every row of that key is ok with the very same string (a snapshot's duplicate
    # rows of a key stay conservative). Exploding the declarations and joining them to the config
    # rows on the key instead: two more shuffles, the plan stage 34-37 s at a million topics against 32.
    held = observed.topic_configs.groupBy(*keys).agg(F.collect_list(F.struct(
        "key", "value", ((col("source") == "DYNAMIC_TOPIC_CONFIG") & ~F.coalesce(col("sensitive"), F.lit(False))
                         & ~hidden_name(col("key"))).alias("ok"))).alias("_held"))
    rows = F.coalesce(col("_held"), F.array().cast(held.schema["_held"].dataType))
    settled = F.forall(F.map_entries(F.coalesce(col("config"), F.create_map().cast("map<string,string>"))), lambda e: (
        F.exists(rows, lambda h: h["key"] == e["key"])
        & F.forall(rows, lambda h: (h["key"] != e["key"]) | F.coalesce(h["ok"] & (h["value"] == e["value"]), F.lit(False)))))
    return (topics.filter(col("replica_assignment").isNull())
            .join(shape, list(keys)).filter(col("_exists"))
            .filter((wanted_rf.isNull() | (((limit == 0) | (wanted_rf <= limit)) & (wanted_rf == rf)))
                    & (wanted_parts.isNull() | (wanted_parts == parts)))
            .join(held, list(keys), "left")
            .filter(settled)
            .select(*keys))


# reconcile.configs' sensitive-name pattern as Java reads it (Python's IGNORECASE folds Unicode too)
SENSITIVE_NAME_JAVA = "(?iu)" + SENSITIVE_NAME_PATTERN
# the catalog's topic configs whose names the pattern does not hide (all of them, as of Kafka 4.0)
UNHIDDEN_TOPIC_CONFIGS = tuple(sorted(name for name in TOPIC_CONFIGS if not is_sensitive(name)))


def hidden_name(key: Column) -> Column:
    """Whether `is_sensitive` hides a config of this name, as a column: the catalog's names are
    looked up in a hash set and only the others meet the pattern (3 million config rows at a million
    topics: the pattern on every row was 1.7 s of the settled set's 15)."""
    from pyspark.sql import functions as F

    return F.when(key.isin(*UNHIDDEN_TOPIC_CONFIGS), F.lit(False)).otherwise(key.rlike(SENSITIVE_NAME_JAVA))


def cluster_rows(desired: Desired, observed: Observed, skip_settled: bool = True,
                 held: list[DataFrame] | None = None, task_topics: int = PLAN_TASK_TOPICS,
                 split: dict[str, int] | None = None) -> DataFrame:
    """One row per planning task: `cluster`, `shard` and `lists`, a map from each list name
    (_LISTS) to the JSON array of its rows; without the settled topics (`settled_topics`, both
    their declaration and their snapshot rows) unless `skip_settled` is false. The settled set is
    cached (several lists leave it out: recomputed for each, the plan stage took 101 s instead of
    64 at a million topics), and so are the snapshot topics left (and, when a cluster is split,
    the declarations left); all are appended to `held`, for the caller to unpersist once the rows
    are used.

    A cluster is one task unless more than `task_topics` of its declared topics are left: then it
    is split into ceil(left / task_topics) shards by a hash of the topic name (those clusters and
    their shard counts are put in `split`). A topic's declarations, snapshot row, partitions and
    configs land in the same shard, so the planner sees every topic whole (the planner's topics
    are independent of each other: placement works per topic). Everything else - the undeclared
    snapshot topics (names only: the prune's count and cap are cluster-wide), ACLs, broker
    configs, users, quotas and the KafkaCluster - goes to shard 0. When some cluster is split, the
    undeclared topics' partitions and configs are not sent at all: nothing reads them.

    Every row becomes JSON where it is (map side), the rows are gathered per (cluster, shard, list)
    into one JSON array text, and those per task: two shuffles in all, and no join of the large
    per-task rows (joining them would shuffle them again for every list)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    col = F.col
    kind = col("kind")
    as_json = {"ignoreNullFields": "false"}
    held = held if held is not None else []

    def kept(frame: DataFrame) -> DataFrame:
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        held.append(frame)
        return frame

    valid = desired.valid.filter(col("cluster").isin(observed.clusters))
    d_topics = valid.filter(kind == KAFKA_TOPIC).withColumn("topic", col("topic_name"))
    o_topics, o_partitions, o_configs = observed.topics, observed.partitions, observed.topic_configs
    keys = ["cluster", "topic"]
    task_topics = max(1, task_topics)
    # only a cluster declaring more than task_topics topics can need several tasks (a count on the
    # cached documents); its declarations left are those less its settled ones
    declared = {r["cluster"]: r["count"] for r in d_topics.groupBy("cluster").count().collect()}
    large = sorted(name for name, n in declared.items() if n > task_topics)
    left = o_topics.select(*keys)
    settled: dict[str, int] = {}
    if skip_settled:
        brokers = {name: len(h.brokers) for name, h in observed.headers.items()}
        quiet = kept(settled_topics(d_topics, observed, brokers))
        d_topics = d_topics.join(quiet, keys, "left_anti")
        left = left.join(quiet, keys, "left_anti")
        if large:
            settled = {r["cluster"]: r["count"] for r in quiet.groupBy("cluster").count().collect()}
    # the snapshot topics left (undeclared or unsettled: usually few) are materialized, so that
    # Spark knows their size and broadcasts them: the millions of partition and config rows are
    # then filtered where they are read instead of shuffled to meet the settled set
    left = kept(left)
    shards = {name: n for name in large if (n := math.ceil((declared[name] - settled.get(name, 0)) / task_topics)) > 1}
    if split is not None:
        split.update(shards)
    first = F.lit(0)
    if shards:
        # the declarations left tell the snapshot's declared topics (split with them) from the
        # undeclared ones (names only, all in shard 0: the prune's count and cap are cluster-wide)
        d_topics = kept(d_topics)
        d_keys = d_topics.select(*keys)
        o_declared = kept(left.join(d_keys, keys, "left_semi"))
        undeclared = kept(left.join(d_keys, keys, "left_anti"))
        o_declared.count()
        undeclared.count()
        count = F.element_at(F.create_map(*[x for name, n in sorted(shards.items()) for x in (F.lit(name), F.lit(n))]),
                             col("cluster"))  # null for the clusters planned in one task: shard 0
        by_topic = F.coalesce(F.pmod(F.xxhash64(col("topic")), count), first).cast("int")
        snapshot_topics = [(o_topics.join(o_declared, keys, "left_semi"), by_topic),
                           (o_topics.join(undeclared, keys, "left_semi"), first)]
        o_partitions, o_configs = (frame.join(o_declared, keys, "left_semi") for frame in (o_partitions, o_configs))
    else:
        left.count()
        by_topic = first
        snapshot_topics = [(o_topics.join(left, keys, "left_semi"), first)]
        o_partitions, o_configs = (frame.join(left, keys, "left_semi") for frame in (o_partitions, o_configs))

    def tagged(frame: DataFrame, tag: str, shard: Any, *columns: Any) -> DataFrame:
        return frame.select("cluster", shard.alias("shard"), F.lit(tag).alias("tag"),
                            F.to_json(F.struct(*columns), as_json).alias("j"))

    principals = desired.acls.select("cluster", "principal").distinct()
    users = desired.users.select("cluster", F.regexp_extract("principal", "^User:(.*)$", 1).alias("user"))
    users = users.filter(col("user") != "").distinct()
    parts = [
        tagged(d_topics, "d_topics", by_topic, "topic", "partitions",
               "replication_factor", "replica_assignment", "config", "deletion_policy", "file", "index", "namespace",
               "name", "ref_namespace"),
        tagged(valid.filter(kind == KAFKA_ACL), "d_acls", first, "principal", "bindings", "file", "index", "namespace",
               "name", "ref_namespace"),
        tagged(valid.filter(kind == KAFKA_BROKER_CONFIG), "d_brokers", first, "broker_id", "config", "file", "index",
               "namespace", "name", "ref_namespace"),
        tagged(valid.filter(kind == KAFKA_CLUSTER), "d_cluster", first, "namespace", "bootstrap", "deletion_policy",
               "max_deletions", "file", "index"),
        tagged(valid.filter(kind == KAFKA_USER), "d_users", first, "principal", "mechanism", "iterations",
               "password_source", "secret_name", "quotas", "bindings", "deletion_policy", "file", "index", "namespace",
               "name", "ref_namespace"),
        tagged(valid.filter(kind == KAFKA_CLIENT_QUOTA), "d_quotas", first, "entity", "quotas", "deletion_policy",
               "file", "index", "namespace", "name", "ref_namespace"),
        # the snapshot as flat lists (Python assembles the topics): no per-topic shuffle or join
        *(tagged(frame, "o_topics", shard, "topic", "topic_id", "internal", "partitions")
          for frame, shard in snapshot_topics),
        # [topic, partition, leader, [replicas]]: to_json of a one-field struct quotes the topic safely
        o_partitions.select("cluster", by_topic.alias("shard"), F.lit("o_partitions").alias("tag"), F.concat(
            F.lit("["), F.to_json(F.array(col("topic"))).substr(F.lit(2), F.length(F.to_json(F.array(col("topic")))) - 2),
            F.lit(","), col("partition").cast("string"), F.lit(","), F.coalesce(col("leader").cast("string"), F.lit("null")),
            F.lit(",["), F.array_join(col("replicas"), ","), F.lit("]]")).alias("j")),
        tagged(o_configs, "o_configs", by_topic, "topic", "key", "value", "source", "sensitive"),
        tagged(observed.acls.join(principals, ["cluster", "principal"], "left_semi"), "o_acls", first, "principal",
               "resource_type", "resource_name", "pattern_type", "operation", "permission", "host"),
        tagged(observed.broker_configs, "o_brokers", first, "broker", "key", "value", "source", "sensitive"),
        # the credentials of declared users only; every quota entity (few, and a user's quotas
        # may be held by a KafkaClientQuota's entity too)
        tagged(observed.scram_credentials.join(users, ["cluster", "user"], "left_semi"), "o_scram", first, "user",
               "mechanism", "iterations"),
        tagged(observed.client_quotas, "o_quotas", first, "entity", "user", "client_id", "ip", "key", "value"),
    ]
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part)
    per_list = rows.groupBy("cluster", "shard", "tag").agg(
        F.concat(F.lit("["), F.concat_ws(",", F.collect_list("j")), F.lit("]")).alias("text"))
    tasks = len(observed.clusters) + sum(n - 1 for n in shards.values())
    return (per_list.groupBy("cluster", "shard")
            .agg(F.map_from_entries(F.collect_list(F.struct("tag", "text"))).alias("lists"))
            .repartition(max(1, tasks)))


def run(desired: Desired, observed: Observed, prune: bool = False,
        protected_topics: str = DEFAULT_PROTECTED_TOPICS, held: list[DataFrame] | None = None,
        task_topics: int = PLAN_TASK_TOPICS, split: dict[str, int] | None = None) -> DataFrame:
    """Plan rows of every cluster with a snapshot (records `resource`, `note` and `drift`; see
    PLAN_DDL), from one or more planning tasks per cluster (cluster_rows, `task_topics`; the clusters
    split in several tasks are put in `split`).
    `held`: gets the frames cached on the way (cluster_rows), to unpersist once the rows are used."""
    spark = observed.topics.sparkSession
    headers = {name: h.as_dict() for name, h in observed.headers.items()}
    if not headers:
        return spark.createDataFrame([], PLAN_DDL)
    rows = cluster_rows(desired, observed, held=held, task_topics=task_topics, split=split).rdd.flatMap(
        lambda row: plan_json(row.asDict(recursive=False), headers, prune, protected_topics))
    return spark.read.schema(PLAN_DDL).json(rows)
