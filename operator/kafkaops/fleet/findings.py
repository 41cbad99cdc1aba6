"""The report's rows: the first findings of each output, each with its reason, its manifest line
and human units.

`collect` reads the written datasets back (only the first `limit` rows of each, in the order people
fix things: refused changes first, policy errors before warnings), merges a policy finding seen in
both the desired and the observed state into one row, and finds the manifest file and line of
every row (the line of the field when the manifest has it: `config.retention.ms`, `partitions`,
`acl`..., else of `metadata.name`). The functions that shape a row are pure (tested without Spark).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kafkaops.fleet import units
from kafkaops.fleet.policy import (
    DENY_SHADOWS_ALLOW,
    MIN_ISR_BELOW_MINIMUM,
    MIN_ISR_NOT_BELOW_RF,
    PARTITIONS_ABOVE_MAXIMUM,
    RETENTION_ABOVE_MAXIMUM,
    RETENTION_BELOW_MINIMUM,
    RF_BELOW_MINIMUM,
    TOPIC_NAME_PATTERN,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
)
from kafkaops.reconcile.actions import FieldChange
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_CLIENT_QUOTA, KAFKA_TOPIC, KAFKA_USER

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafkaops.fleet.desired import Desired

REPORT_ROWS = 500  # per table; the datasets hold every row
SEVERITY_ORDER = {"error": 0, "warning": 1}

# the manifest field a policy rule is about (the report links to its line)
RULE_FIELDS = {
    TOPIC_NAME_PATTERN: "topic", RF_BELOW_MINIMUM: "replicationFactor", MIN_ISR_BELOW_MINIMUM: "config.min.insync.replicas",
    MIN_ISR_NOT_BELOW_RF: "config.min.insync.replicas", RETENTION_BELOW_MINIMUM: "config.retention.ms",
    RETENTION_ABOVE_MAXIMUM: "config.retention.ms", PARTITIONS_ABOVE_MAXIMUM: "partitions", WILDCARD_PRINCIPAL: "acl",
    WILDCARD_RESOURCE: "acl", DENY_SHADOWS_ALLOW: "acl",
}
_FALLBACK_FIELDS = {"replicationFactor": ("replicaAssignment",), "config.min.insync.replicas": ("config",),
                    "config.retention.ms": ("config",)}


def line_of(location: Mapping[str, Any] | None, field: str | None) -> int | None:
    """The line of `field` in a document (location: `line`, `field_lines`), else of the resource."""
    if not location:
        return None
    lines = location.get("field_lines") or {}
    if field is not None and field.startswith(("config.", "quota.", "credential.")) and field not in lines:
        candidates: tuple[str, ...] = (field.split(".")[0],)
    else:
        candidates = _FALLBACK_FIELDS.get(field or "", ())
    for key in (field, *candidates, "resource"):
        if key is not None and lines.get(key) is not None:
            return int(lines[key])
    return location.get("line")


def change_text(changes: Iterable[Mapping[str, Any]] | None, limit: int = 300) -> str:
    """A plan row's changes as `kafkaops plan` prints them, with units: `config.retention.ms:
    86400000 (1 day) -> 604800000 (7 days)`."""
    parts = []
    for c in changes or ():
        field = c["field"]
        old = None if c.get("old") is None else units.with_unit(field, c["old"])
        new = None if c.get("new") is None else units.with_unit(field, c["new"])
        parts.append(str(FieldChange(field, old, new)))
    text = "; ".join(parts)
    return text if len(text) <= limit else text[:limit - 1] + "…"


PRINCIPAL_ACLS_SHOWN = 10


def principal_row(r: Mapping[str, Any]) -> dict[str, Any]:
    """A principals/ row for the report: its credential, quotas and ACLs in the cluster beside what
    its KafkaUser declares (mechanisms, iterations, quota values, binding texts: nothing secret)."""
    acls = list(r.get("acls") or ())
    shown = acls[:PRINCIPAL_ACLS_SHOWN]
    if len(acls) > len(shown):
        shown.append(f"… and {len(acls) - len(shown)} more (principals/)")
    declared = r.get("declared_mechanism")
    if declared and r.get("password_source"):
        declared = f"{declared}, password {'generated' if r['password_source'] == 'generated' else 'from a Secret'}"
    return {"cluster": r["cluster"], "principal": r["principal"],
            "credential": ", ".join(r.get("credentials") or ()) or None, "declared": declared,
            "quotas": ", ".join(r.get("quotas") or ()) or None,
            "declared_quotas": ", ".join(r.get("declared_quotas") or ()) or None,
            "acl_count": int(r.get("acl_count") or 0), "acls": "; ".join(shown) or None,
            "file": r.get("file"), "index": r.get("index"), "line": r.get("line")}


def plan_row(r: Mapping[str, Any]) -> dict[str, Any]:
    refused = r.get("problem_reason")
    return {**_where(r), "action": "refused" if refused else r["action"], "change": change_text(r.get("changes")),
            "reason": f"{refused}: {r.get('problem_message') or ''}".rstrip(": ") if refused else ""}


def drift_row(r: Mapping[str, Any]) -> dict[str, Any]:
    field = r["field"]
    want, have = units.with_unit(field, r.get("desired")), units.with_unit(field, r.get("observed"))
    source = r.get("observed_source")
    if field == "acl":
        why = ("declared, missing in the cluster" if r.get("observed") is None
               else "in the cluster, not declared for this principal (apply deletes it)")
    elif source == "DEFAULT_CONFIG" or (field.startswith("config.") and r.get("observed") is None):
        why = "not set in the cluster (Kafka's default in effect); apply sets it"
    elif source:
        why = f"set to another value in the cluster ({source}); apply sets it back"
    elif field == "partitions":
        why = ("fewer partitions in the cluster: apply adds them" if _int(r.get("observed")) < _int(r.get("desired"))
               else "more partitions in the cluster than declared: Kafka cannot remove partitions (apply refuses)")
    elif field in ("replicationFactor", "replicaAssignment"):
        why = "other replicas in the cluster: apply reassigns the partitions"
    else:
        why = "the cluster differs from the manifest"
    return {**_where(r), "field": field, "desired": want if r.get("desired") is not None else "(none)",
            "observed": have if r.get("observed") is not None else "(none)", "reason": why}


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def orphan_row(r: Mapping[str, Any]) -> dict[str, Any]:
    if r["kind"] == KAFKA_ACL:
        why = ("a binding its principal's KafkaAcl (or KafkaUser acls) lacks (apply deletes it)"
               if r.get("principal_declared")
               else "a principal whose ACLs no KafkaAcl or KafkaUser declares (kafkaops leaves it alone)")
    else:
        why = "declared in no manifest (apply --prune deletes it where the cluster allows)"
    return {**_where(r), "detail": r.get("detail") or "", "reason": why}


def policy_row(r: Mapping[str, Any]) -> dict[str, Any]:
    states = list(r.get("states") or [r.get("state")])
    return {**_where(r), "rule": r["rule"], "severity": r["severity"], "state": " + ".join(s for s in states if s),
            "reason": units.annotate(r.get("message") or "")}


def issue_row(r: Mapping[str, Any]) -> dict[str, Any]:
    return {**_where(r), "severity": r.get("severity"), "path": r.get("path") or "", "rule": r.get("rule"),
            "reason": r.get("message") or ""}


def _where(r: Mapping[str, Any]) -> dict[str, Any]:
    return {"cluster": r.get("cluster"), "kind": r.get("kind"), "name": r.get("name"), "file": r.get("file"),
            "index": r.get("index"), "line": r.get("line")}


def policy_sort_key(row: Mapping[str, Any]) -> tuple:
    return (SEVERITY_ORDER.get(row.get("severity") or "", 2), row.get("cluster") or "", row.get("rule") or "",
            row.get("name") or "")


# --- reading the datasets back (Spark) -----------------------------------------------------------------


def _rows(frame: DataFrame, limit: int) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in frame.limit(limit).collect()]


def merged_policy(frame: DataFrame) -> DataFrame:
    """One row per finding: the same rule on the same resource with the same value in the desired
    and the observed state is one row with `states` [desired, observed] (the manifest's file and
    message kept)."""
    from pyspark.sql import functions as F

    col = F.col
    desired_first = F.when(col("state") == "desired", 0).otherwise(1)
    return (frame.groupBy("cluster", "kind", "name", "rule", "severity", "value")
            .agg(F.array_sort(F.collect_set("state")).alias("states"),
                 F.min_by("message", desired_first).alias("message"),
                 F.min_by("file", F.when(col("file").isNotNull(), 0).otherwise(1)).alias("file"),
                 F.min("index").alias("index")))


def collect(spark: SparkSession, paths: Mapping[str, str], desired: Desired,
            limit: int = REPORT_ROWS) -> tuple[dict[str, list[dict[str, Any]]], dict[str, int]]:
    """The report's tables (plan, drift, orphans, policy, issues), each row with its manifest line,
    and the number of policy findings after merging."""
    from pyspark.sql import functions as F

    col = F.col
    plan = spark.read.parquet(paths["plan"]).orderBy(col("problem_reason").isNull(), "cluster", col("kind").desc(),
                                                      "name")
    drift = spark.read.parquet(paths["drift"]).orderBy("cluster", col("kind").desc(), "name", "field")
    orphans = spark.read.parquet(paths["orphans"]).orderBy("cluster", col("kind").desc(), "name", "detail")
    policy = merged_policy(spark.read.parquet(paths["policy"])).cache()
    severity = F.when(col("severity") == "error", 0).otherwise(1)
    raw = {
        "plan": _rows(plan, limit),
        "drift": _rows(drift, limit),
        "orphans": _rows(orphans, limit),
        "policy": _rows(policy.orderBy(severity, "cluster", "rule", "name"), limit),
        "issues": _rows(spark.read.parquet(paths["issues"]).filter(col("stage") == "desired")
                        .orderBy(severity, "file", "index"), limit),
    }
    if "principals" in paths:
        raw["principals"] = _rows(spark.read.parquet(paths["principals"]).orderBy("cluster", "principal"), limit)
    counts = {"policy": policy.count()}
    policy.unpersist()
    _find_manifests(spark, raw["policy"], desired)
    _find_lines(spark, raw, desired)
    shaped = {"plan": [plan_row(r) for r in raw["plan"]], "drift": [drift_row(r) for r in raw["drift"]],
              "orphans": [orphan_row(r) for r in raw["orphans"]],
              "policy": sorted((policy_row(r) for r in raw["policy"]), key=policy_sort_key),
              "issues": [issue_row(r) for r in raw["issues"]]}
    if "principals" in raw:
        shaped["principals"] = [principal_row(r) for r in raw["principals"]]
    return shaped, counts


def _find_manifests(spark: SparkSession, rows: list[dict[str, Any]], desired: Desired) -> None:
    """The manifest (file, document index) of a finding that lacks it: one in the observed state only
    on a declared topic or principal, or on an ACL binding (the bindings table has no index)."""
    from pyspark.sql import functions as F

    wanted = {(r["cluster"], r["kind"], r["name"]) for r in rows if r.get("index") is None}
    if not wanted:
        return
    keys = spark.createDataFrame(sorted(wanted), "cluster string, kind string, name string")
    topics = desired.topics.select("cluster", F.lit(KAFKA_TOPIC).alias("kind"), F.col("topic").alias("name"),
                                   "file", "index")
    acls = desired.acls.select("cluster", F.lit(KAFKA_ACL).alias("kind"), F.col("principal").alias("name"),
                               "file", "index")
    if desired.users is not None and desired.client_quotas is not None:
        acls = acls.unionByName(desired.users.select("cluster", F.lit(KAFKA_USER).alias("kind"),
                                                     F.col("principal").alias("name"), "file", "index"))
        acls = acls.unionByName(desired.client_quotas.select("cluster", F.lit(KAFKA_CLIENT_QUOTA).alias("kind"),
                                                             F.col("quota_entity").alias("name"), "file", "index"))
    found = {(r["cluster"], r["kind"], r["name"]): (r["file"], r["index"]) for r in
             topics.unionByName(acls).join(F.broadcast(keys), ["cluster", "kind", "name"], "left_semi").collect()}
    for r in rows:
        if r.get("index") is None and (hit := found.get((r["cluster"], r["kind"], r["name"]))):
            r["file"], r["index"] = hit


def _find_lines(spark: SparkSession, tables: Mapping[str, list[dict[str, Any]]], desired: Desired) -> None:
    """Each row's `line`: the line of its field in its document (`file`, `index`)."""
    from pyspark.sql import functions as F

    wanted = {(r["file"], r["index"]) for rows in tables.values() for r in rows
              if r.get("file") and r.get("index") is not None and r.get("line") is None}
    if not wanted or desired.valid is None:
        return
    keys = spark.createDataFrame(sorted(wanted), "file string, `index` int")
    located = {(r["file"], r["index"]): r.asDict(recursive=True) for r in
               desired.valid.select("file", "index", "line", "field_lines")
               .join(F.broadcast(keys), ["file", "index"], "left_semi").collect()}
    fields = {"plan": lambda r: "resource", "drift": lambda r: r["field"], "orphans": lambda r: None,
              "policy": lambda r: RULE_FIELDS.get(r["rule"]), "issues": lambda r: None,
              "principals": lambda r: "credential"}
    for name, rows in tables.items():
        for r in rows:
            if r.get("line") is None and (where := located.get((r.get("file"), r.get("index")))):
                r["line"] = line_of(where, fields[name](r))
