"""The policy stage: rules from a policy file, evaluated as Spark expressions.

The file (YAML, checked against POLICY_SCHEMA; an error names the file and the field):

    version: 1
    check: desired                 # desired (default) | observed | both: which state the rules look at
    topics:
      naming:                      # each rule applies to the topics its selectors all match
        - namespace: payments      #   KafkaTopic metadata.namespace (desired state only)
          prefix: "payments."      #   topic name prefix
          clusters: ["prod-*"]     #   cluster name globs
          pattern: '^payments\\.[a-z0-9-]+\\.v[0-9]+$'   # the whole name must match (a regex)
          message: payments topics are payments.<name>.v<N>
      minReplicationFactor: 3
      minInsyncReplicas: 2
      requireInsyncBelowReplication: true   # min.insync.replicas < replication factor
      retentionMs: {min: 3600000, max: 2592000000}   # -1 (infinite) is above any max
      maxPartitions: 200
      exclude: '^(__|_)'           # topic names no topic rule checks
    acls:
      forbidWildcardPrincipal: true   # an Allow for `User:*` (any type, name *)
      forbidWildcardResource: true    # an Allow on the Literal resource name `*`
      forbidDenyShadowingAllow: true  # an Allow that a Deny of the same (or wildcard) principal cancels
    users:
      requireQuotas:               # each entry selects KafkaUsers (desired state): each must have quotas
        - namespace: payments      #   KafkaUser metadata.namespace
          clusters: ["prod-*"]     #   cluster name globs
      forbidUsersWithoutQuotas: true  # every user of every cluster must have quotas (desired and observed)
    overrides:                     # per-cluster thresholds: the first matching entry wins
      - clusters: ["dev-*"]
        topics: {minReplicationFactor: 1, minInsyncReplicas: 1}
    severities:                    # error (default) | warning, per rule name
      RetentionAboveMaximum: warning

A user "has quotas" when its KafkaUser declares at least one (`spec.quotas`), or a quota entity of
its cluster names it or the default user (`user=<name>` or `user=<default>`, with or without a
client-id: Kafka applies the default user's quotas to every user without its own) - a
KafkaClientQuota in the desired state, a client_quotas row in the observed state. Only `User:`
principals have quotas; users of the observed state are the SCRAM users of the snapshot.

Values a manifest omits: a missing config key is Kafka's default (min.insync.replicas 1,
retention.ms 604800000); a missing partitions/replicationFactor (the broker default) is not
checked in the desired state.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import yaml

from kafkaops.fleet.errors import PolicyError
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_TOPIC, KAFKA_USER
from kafkaops.resources.topic_configs import topic_config_default

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from kafkaops.fleet.desired import Desired
    from kafkaops.fleet.observed import Observed

POLICY_COLUMNS = ["cluster", "kind", "name", "rule", "severity", "message", "value", "state", "file", "index"]

TOPIC_NAME_PATTERN = "TopicNamePattern"
RF_BELOW_MINIMUM = "ReplicationFactorBelowMinimum"
MIN_ISR_BELOW_MINIMUM = "MinInsyncReplicasBelowMinimum"
MIN_ISR_NOT_BELOW_RF = "MinInsyncReplicasNotBelowReplicationFactor"
RETENTION_BELOW_MINIMUM = "RetentionBelowMinimum"
RETENTION_ABOVE_MAXIMUM = "RetentionAboveMaximum"
PARTITIONS_ABOVE_MAXIMUM = "PartitionsAboveMaximum"
WILDCARD_PRINCIPAL = "WildcardPrincipal"
WILDCARD_RESOURCE = "WildcardResource"
DENY_SHADOWS_ALLOW = "DenyShadowsAllow"
QUOTAS_REQUIRED = "QuotasRequired"
USER_WITHOUT_QUOTAS = "UserWithoutQuotas"
RULES = (TOPIC_NAME_PATTERN, RF_BELOW_MINIMUM, MIN_ISR_BELOW_MINIMUM, MIN_ISR_NOT_BELOW_RF, RETENTION_BELOW_MINIMUM,
         RETENTION_ABOVE_MAXIMUM, PARTITIONS_ABOVE_MAXIMUM, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, DENY_SHADOWS_ALLOW,
         QUOTAS_REQUIRED, USER_WITHOUT_QUOTAS)

_POSITIVE = {"type": "integer", "minimum": 1}
_THRESHOLDS = {
    "minReplicationFactor": _POSITIVE,
    "minInsyncReplicas": _POSITIVE,
    "requireInsyncBelowReplication": {"type": "boolean"},
    "retentionMs": {"type": "object", "additionalProperties": False, "minProperties": 1,
                    "properties": {"min": {"type": "integer", "minimum": -1}, "max": {"type": "integer", "minimum": -1}}},
    "maxPartitions": _POSITIVE,
}
_GLOBS = {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1}
POLICY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["version"],
    "properties": {
        "version": {"const": 1},
        "check": {"enum": ["desired", "observed", "both"]},
        "topics": {
            "type": "object", "additionalProperties": False,
            "properties": {
                **_THRESHOLDS,
                "exclude": {"type": "string", "minLength": 1},
                "naming": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False, "required": ["pattern"],
                    "properties": {"namespace": {"type": "string", "minLength": 1},
                                   "prefix": {"type": "string", "minLength": 1},
                                   "clusters": _GLOBS,
                                   "pattern": {"type": "string", "minLength": 1},
                                   "message": {"type": "string"}}}},
            },
        },
        "acls": {
            "type": "object", "additionalProperties": False,
            "properties": {"forbidWildcardPrincipal": {"type": "boolean"},
                           "forbidWildcardResource": {"type": "boolean"},
                           "forbidDenyShadowingAllow": {"type": "boolean"}},
        },
        "users": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "requireQuotas": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False, "minProperties": 1,
                    "properties": {"namespace": {"type": "string", "minLength": 1}, "clusters": _GLOBS}}},
                "forbidUsersWithoutQuotas": {"type": "boolean"},
            },
        },
        "overrides": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["clusters", "topics"],
            "properties": {"clusters": _GLOBS,
                           "topics": {"type": "object", "additionalProperties": False, "properties": _THRESHOLDS}}}},
        "severities": {"type": "object", "propertyNames": {"enum": list(RULES)},
                       "additionalProperties": {"enum": ["error", "warning"]}},
    },
}


@dataclass(frozen=True)
class NamingRule:
    pattern: str
    namespace: str | None = None
    prefix: str | None = None
    clusters: tuple[str, ...] = ()
    message: str | None = None


@dataclass(frozen=True)
class QuotaRule:
    """users.requireQuotas entry: the KafkaUsers it selects (every selector matches) must have quotas."""

    namespace: str | None = None
    clusters: tuple[str, ...] = ()


@dataclass(frozen=True)
class Policy:
    check: str = "desired"
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    naming: tuple[NamingRule, ...] = ()
    exclude: str | None = None
    acls: Mapping[str, bool] = field(default_factory=dict)
    overrides: tuple[tuple[tuple[str, ...], Mapping[str, Any]], ...] = ()
    severities: Mapping[str, str] = field(default_factory=dict)
    file: str = ""
    require_quotas: tuple[QuotaRule, ...] = ()
    forbid_users_without_quotas: bool = False

    def thresholds_for(self, cluster: str) -> dict[str, Any]:
        merged = dict(self.thresholds)
        for globs, values in self.overrides:
            if any(fnmatch.fnmatchcase(cluster, g) for g in globs):
                merged.update(values)
                break
        return merged

    def severity(self, rule: str) -> str:
        return self.severities.get(rule, "error")

    @property
    def empty(self) -> bool:
        return not (self.thresholds or self.naming or any(self.acls.values()) or self.overrides
                    or self.require_quotas or self.forbid_users_without_quotas)


def parse_policy(text: str, file: str) -> Policy:
    """A Policy from the file's text; PolicyError naming the file and the field otherwise."""
    from jsonschema import Draft202012Validator

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise PolicyError(f"{file}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from exc
    if not isinstance(data, Mapping):
        raise PolicyError(f"{file}: a policy file is a YAML mapping with `version: 1` (see docs/fleet.md)")
    errors = sorted(Draft202012Validator(POLICY_SCHEMA).iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = []
        for err in errors:
            path = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in err.absolute_path).replace(".[", "[")
            lines.append(f"{file}: {path or '(top)'}: {err.message}")
        raise PolicyError("\n".join(lines))
    topics = data.get("topics") or {}
    naming: list[NamingRule] = []
    for i, rule in enumerate(topics.get("naming") or ()):
        _regex(rule["pattern"], f"{file}: topics.naming[{i}].pattern")
        naming.append(NamingRule(rule["pattern"], rule.get("namespace"), rule.get("prefix"),
                                 tuple(rule.get("clusters") or ()), rule.get("message")))
    if topics.get("exclude"):
        _regex(topics["exclude"], f"{file}: topics.exclude")
    retention = topics.get("retentionMs") or {}
    if "min" in retention and "max" in retention and retention["max"] != -1 and retention["min"] > retention["max"]:
        raise PolicyError(f"{file}: topics.retentionMs: min {retention['min']} is above max {retention['max']}")
    thresholds = {k: v for k, v in topics.items() if k in _THRESHOLDS}
    users = data.get("users") or {}
    return Policy(
        data.get("check", "desired"), thresholds, tuple(naming), topics.get("exclude"), dict(data.get("acls") or {}),
        tuple((tuple(o["clusters"]), dict(o["topics"])) for o in data.get("overrides") or ()),
        dict(data.get("severities") or {}), file,
        tuple(QuotaRule(r.get("namespace"), tuple(r.get("clusters") or ())) for r in users.get("requireQuotas") or ()),
        bool(users.get("forbidUsersWithoutQuotas")),
    )


def _regex(pattern: str, where: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise PolicyError(f"{where}: not a valid regular expression: {exc}") from exc


# --- evaluation -----------------------------------------------------------------------------------------------


def _facts_desired(desired: Desired) -> DataFrame:
    """cluster, topic, namespace, partitions, rf, min_isr, retention, file, index, state."""
    from pyspark.sql import functions as F

    col = F.col
    assigned = col("replica_assignment").isNotNull()
    return desired.topics.select(
        "cluster", "topic", "namespace",
        F.when(assigned, F.size("replica_assignment")).otherwise(col("partitions")).alias("partitions"),
        F.when(assigned, F.size(F.element_at("replica_assignment", 1))).otherwise(col("replication_factor")).alias("rf"),
        F.coalesce(col("config")["min.insync.replicas"], F.lit(topic_config_default("min.insync.replicas") or "1"))
        .try_cast("long").alias("min_isr"),
        F.coalesce(col("config")["retention.ms"], F.lit(topic_config_default("retention.ms") or "604800000"))
        .try_cast("long").alias("retention"),
        "file", "index", F.lit("desired").alias("state"))


def _facts_observed(observed: Observed) -> DataFrame:
    from pyspark.sql import functions as F

    col = F.col
    configs = (observed.topic_configs.filter(col("key").isin("min.insync.replicas", "retention.ms"))
               .groupBy("cluster", "topic").pivot("key", ["min.insync.replicas", "retention.ms"]).agg(F.first("value")))
    return observed.topics.filter(~F.coalesce(col("internal"), F.lit(False))).join(
        configs, ["cluster", "topic"], "left").select(
        "cluster", "topic", F.lit(None).cast("string").alias("namespace"), "partitions",
        col("replication_factor").alias("rf"),
        F.coalesce(col("`min.insync.replicas`"), F.lit(topic_config_default("min.insync.replicas") or "1"))
        .try_cast("long").alias("min_isr"),
        F.coalesce(col("`retention.ms`"), F.lit(topic_config_default("retention.ms") or "604800000"))
        .try_cast("long").alias("retention"),
        F.lit(None).cast("string").alias("file"), F.lit(None).cast("int").alias("index"),
        F.lit("observed").alias("state"))


def _violation(frame: DataFrame, kind: str, name: Column, rule: str, policy: Policy, message: Column,
               value: Column) -> DataFrame:
    from pyspark.sql import functions as F

    return frame.select("cluster", F.lit(kind).alias("kind"), name.alias("name"), F.lit(rule).alias("rule"),
                        F.lit(policy.severity(rule)).alias("severity"), message.alias("message"),
                        value.cast("string").alias("value"), "state", "file", "index")


def topic_violations(facts: DataFrame, policy: Policy, clusters: list[str]) -> list[DataFrame]:
    """Every topic rule in one pass over the topics: each rule is a conditional struct, the row's
    violations are the non-null ones (exploded). Per-cluster thresholds come from a small
    broadcast table."""
    from pyspark.sql import functions as F

    col = F.col
    spark = facts.sparkSession
    if policy.exclude:
        facts = facts.filter(~col("topic").rlike(f"^(?:{policy.exclude})"))
    s = lambda c: col(c).cast("string")  # noqa: E731

    def violation(rule: str, when: Column, message: Column, value: Column) -> Column:
        return F.when(when, F.struct(F.lit(rule).alias("rule"), F.lit(policy.severity(rule)).alias("severity"),
                                     message.alias("message"), value.cast("string").alias("value")))

    checks: list[Column] = []
    for i, rule in enumerate(policy.naming):
        selected = ~col("topic").rlike(f"^(?:{rule.pattern})$")
        if rule.namespace:
            selected = selected & F.coalesce(col("namespace") == rule.namespace, F.lit(False))
        if rule.prefix:
            selected = selected & F.startswith(col("topic"), F.lit(rule.prefix))
        if rule.clusters:
            chosen = [c for c in clusters if any(fnmatch.fnmatchcase(c, g) for g in rule.clusters)]
            selected = selected & col("cluster").isin(chosen)
        text = rule.message or f"topic name does not match {rule.pattern}"
        checks.append(violation(TOPIC_NAME_PATTERN, selected, F.lit(f"naming rule {i + 1}: {text}"), col("topic")))
    rows = [(c, *(policy.thresholds_for(c).get(k) for k in ("minReplicationFactor", "minInsyncReplicas", "maxPartitions")),
             (policy.thresholds_for(c).get("retentionMs") or {}).get("min"),
             (policy.thresholds_for(c).get("retentionMs") or {}).get("max"),
             bool(policy.thresholds_for(c).get("requireInsyncBelowReplication")))
            for c in clusters]
    if rows and any(any(v is not None and v is not False for v in r[1:]) for r in rows):
        limits = spark.createDataFrame(rows, "cluster string, min_rf long, min_isr_min long, max_partitions long, "
                                             "ret_min long, ret_max long, isr_below_rf boolean")
        facts = facts.join(F.broadcast(limits), "cluster", "left")
        infinite = col("retention") == -1
        checks += [
            violation(RF_BELOW_MINIMUM, col("rf") < col("min_rf"),
                      F.concat(F.lit("replication factor "), s("rf"), F.lit(" is below the minimum "), s("min_rf")),
                      col("rf")),
            violation(MIN_ISR_BELOW_MINIMUM, col("min_isr") < col("min_isr_min"),
                      F.concat(F.lit("min.insync.replicas "), s("min_isr"), F.lit(" is below the minimum "),
                               s("min_isr_min")), col("min_isr")),
            violation(MIN_ISR_NOT_BELOW_RF, col("isr_below_rf") & (col("min_isr") >= col("rf")),
                      F.concat(F.lit("min.insync.replicas "), s("min_isr"), F.lit(" is not below the replication "
                               "factor "), s("rf"), F.lit(": producers with acks=all stop when one broker is down")),
                      col("min_isr")),
            violation(RETENTION_BELOW_MINIMUM, ~infinite & (col("retention") < col("ret_min")),
                      F.concat(F.lit("retention.ms "), s("retention"), F.lit(" is below the minimum "), s("ret_min")),
                      col("retention")),
            violation(RETENTION_ABOVE_MAXIMUM, col("ret_max").isNotNull() & (col("ret_max") != -1)
                      & (infinite | (col("retention") > col("ret_max"))),
                      F.concat(F.lit("retention.ms "), F.when(infinite, F.lit("-1 (infinite)")).otherwise(s("retention")),
                               F.lit(" is above the maximum "), s("ret_max")), col("retention")),
            violation(PARTITIONS_ABOVE_MAXIMUM, col("partitions") > col("max_partitions"),
                      F.concat(F.lit("partitions "), s("partitions"), F.lit(" is above the maximum "),
                               s("max_partitions")), col("partitions")),
        ]
    if not checks:
        return []
    found = facts.select("*", F.explode(F.filter(F.array(*checks), lambda v: v.isNotNull())).alias("v"))
    return [found.select("cluster", F.lit(KAFKA_TOPIC).alias("kind"), col("topic").alias("name"), "v.rule",
                         "v.severity", "v.message", "v.value", "state", "file", "index")]


def acl_violations(bindings: DataFrame, policy: Policy) -> list[DataFrame]:
    """`bindings`: cluster, principal, resource_type, resource_name, pattern_type, operation, permission, host,
    file, index, state."""
    from pyspark.sql import functions as F

    from kafkaops.fleet.drift import binding_text

    col = F.col
    out: list[DataFrame] = []
    allow = bindings.filter(col("permission") == "Allow")
    text = binding_text(col("principal"))
    if policy.acls.get("forbidWildcardPrincipal"):
        out.append(_violation(allow.filter(col("principal").endswith(":*")), KAFKA_ACL, col("principal"),
                              WILDCARD_PRINCIPAL, policy,
                              F.concat(F.lit("an Allow for every principal: "), text), text))
    if policy.acls.get("forbidWildcardResource"):
        out.append(_violation(allow.filter((col("resource_name") == "*") & (col("pattern_type") == "Literal")),
                              KAFKA_ACL, col("principal"), WILDCARD_RESOURCE, policy,
                              F.concat(F.lit("an Allow on every "), col("resource_type"), F.lit(": "), text), text))
    if policy.acls.get("forbidDenyShadowingAllow"):
        deny = bindings.filter(col("permission") == "Deny").select(
            "cluster", "state", "resource_type", col("principal").alias("d_principal"),
            col("resource_name").alias("d_name"), col("pattern_type").alias("d_pattern"),
            col("operation").alias("d_operation"), col("host").alias("d_host"))
        covers = (((col("d_pattern") == "Literal") & ((col("d_name") == "*")
                                                      | ((col("d_name") == col("resource_name"))
                                                         & (col("pattern_type") == "Literal"))))
                  | ((col("d_pattern") == "Prefixed") & F.startswith(col("resource_name"), col("d_name"))))
        same_op = (col("d_operation") == "All") | (col("d_operation") == col("operation"))
        same_host = (col("d_host") == "*") | (col("d_host") == col("host"))
        by_principal = allow.join(deny.withColumn("principal", col("d_principal")),
                                  ["cluster", "state", "resource_type", "principal"])
        by_wildcard = allow.join(F.broadcast(deny.filter(col("d_principal").endswith(":*"))),
                                 ["cluster", "state", "resource_type"])
        shadowed = [joined.filter(covers & same_op & same_host) for joined in (by_principal, by_wildcard)]
        out.append(_violation(
            shadowed[0].unionByName(shadowed[1]), KAFKA_ACL, col("principal"), DENY_SHADOWS_ALLOW, policy,
            F.concat(text, F.lit(" never takes effect: Deny "), col("d_principal"), F.lit(" "), col("d_operation"),
                     F.lit(" on "), col("resource_type"), F.lit(":"), col("d_name"), F.lit(" ("), col("d_pattern"),
                     F.lit(") from "), col("d_host"), F.lit(" overrides it")), text).distinct())
    return out


def _quota_users_desired(desired: Desired) -> DataFrame:
    """cluster, user, principal, namespace, has_quotas, file, index, state: the desired KafkaUsers of
    `User:` principals, `has_quotas` when they declare some or a KafkaClientQuota of the cluster
    names them or the default user."""
    from pyspark.sql import functions as F

    col = F.col
    covers = (desired.client_quotas.select("cluster", F.explode("entity").alias("e"))
              .filter(col("e.type") == "user").select("cluster", F.coalesce(col("e.name"), F.lit("")).alias("user"))
              .distinct())
    users = desired.users.filter(F.startswith(col("principal"), F.lit("User:"))).select(
        "cluster", F.expr("substring(principal, 6)").alias("user"), "principal", "namespace",
        F.coalesce(F.size(F.map_keys("quotas")) > 0, F.lit(False)).alias("declares"), "file", "index")
    return _covered(users, covers).withColumn("state", F.lit("desired"))


def _quota_users_observed(observed: Observed) -> DataFrame:
    from pyspark.sql import functions as F

    col = F.col
    covers = observed.client_quotas.filter(col("user").isNotNull() | F.startswith(col("entity"), F.lit("user=<default>")))
    covers = covers.select("cluster", F.coalesce(col("user"), F.lit("")).alias("user")).distinct()
    users = observed.scram_credentials.select("cluster", "user").distinct().select(
        "cluster", "user", F.concat(F.lit("User:"), col("user")).alias("principal"),
        F.lit(None).cast("string").alias("namespace"), F.lit(False).alias("declares"),
        F.lit(None).cast("string").alias("file"), F.lit(None).cast("int").alias("index"))
    return _covered(users, covers).withColumn("state", F.lit("observed"))


def _covered(users: DataFrame, covers: DataFrame) -> DataFrame:
    """`users` with has_quotas: declared, or an entity naming the user (or "" = the default user)."""
    from pyspark.sql import functions as F

    col = F.col
    named = covers.withColumn("_named", F.lit(True))
    default = covers.filter(col("user") == "").select("cluster", F.lit(True).alias("_default"))
    return (users.join(named, ["cluster", "user"], "left").join(F.broadcast(default), "cluster", "left")
            .withColumn("has_quotas", col("declares") | F.coalesce(col("_named"), F.lit(False))
                        | F.coalesce(col("_default"), F.lit(False)))
            .drop("_named", "_default", "declares"))


def user_violations(facts: DataFrame, policy: Policy, clusters: list[str]) -> list[DataFrame]:
    """users.requireQuotas (the selected KafkaUsers; desired state only) and
    users.forbidUsersWithoutQuotas (every user) over `facts` (_quota_users_*)."""
    from pyspark.sql import functions as F

    col = F.col
    out: list[DataFrame] = []
    bare = facts.filter(~col("has_quotas"))
    why = F.concat(F.lit("user "), col("user"), F.lit(" has no quotas: none declared, and no quota entity names it "
                                                      "(user=<name>) or the default user (user=<default>)"))
    if policy.require_quotas:
        selected = F.lit(False)
        for rule in policy.require_quotas:
            match = col("state") == "desired"
            if rule.namespace:
                match = match & F.coalesce(col("namespace") == rule.namespace, F.lit(False))
            if rule.clusters:
                match = match & col("cluster").isin([c for c in clusters
                                                     if any(fnmatch.fnmatchcase(c, g) for g in rule.clusters)])
            selected = selected | match
        where = F.concat(F.lit(" (users.requireQuotas"), F.when(col("namespace").isNotNull(), F.concat(
            F.lit(": namespace "), col("namespace"))).otherwise(F.lit("")), F.lit(")"))
        out.append(_violation(bare.filter(selected), KAFKA_USER, col("principal"), QUOTAS_REQUIRED, policy,
                              F.concat(why, where), col("principal")))
    if policy.forbid_users_without_quotas:
        out.append(_violation(bare, KAFKA_USER, col("principal"), USER_WITHOUT_QUOTAS, policy, why, col("principal")))
    return out


def run(desired: Desired, observed: Observed, policy: Policy, clusters: list[str]) -> DataFrame:
    """Every violation: cluster, kind, name, rule, severity, message, value, state, file, index."""
    from pyspark.sql import functions as F

    spark = desired.topics.sparkSession
    frames: list[DataFrame] = []
    if policy.check in ("desired", "both"):
        frames += topic_violations(_facts_desired(desired), policy, clusters)
        frames += acl_violations(desired.bindings.withColumn("index", F.lit(None).cast("int"))
                                 .withColumn("state", F.lit("desired")), policy)
        if (policy.require_quotas or policy.forbid_users_without_quotas) and desired.users is not None:
            frames += user_violations(_quota_users_desired(desired), policy, clusters)
    if policy.check in ("observed", "both") and observed.topics is not None:
        frames += topic_violations(_facts_observed(observed), policy, clusters)
        frames += acl_violations(observed.acls.withColumn("file", F.lit(None).cast("string"))
                                 .withColumn("index", F.lit(None).cast("int")).withColumn("state", F.lit("observed")),
                                 policy)
        if policy.forbid_users_without_quotas and observed.scram_credentials is not None:
            frames += user_violations(_quota_users_observed(observed), replace(policy, require_quotas=()), clusters)
    if not frames:
        return spark.createDataFrame([], ", ".join(f"`{c}` {'int' if c == 'index' else 'string'}" for c in POLICY_COLUMNS))
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out.select(*POLICY_COLUMNS)
