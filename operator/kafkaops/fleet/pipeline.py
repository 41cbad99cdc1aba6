"""`kafkaops fleet plan` as stages: session, desired, observed, plan, drift, orphans, policy, access, report.

Each stage writes its dataset under the output directory (Parquet) and prints one line to stderr
when it starts and one when it ends, with what it found and how long it took:

    [4/9] plan: 20 clusters ...
    [4/9] plan: 41,873 changes (1,002 refused) in 20 clusters - 38.2 s

Nothing big ever reaches the driver: the report is built from aggregates (counts per cluster,
per broker, the top principals) and the first rows of each output, read back from the written
datasets, so every stage's work is done once.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from kafkaops.fleet import PLAN_TASK_TOPICS, hadoopfs, preflight
from kafkaops.fleet.errors import NO_SNAPSHOT, FleetError, InputProblem
from kafkaops.fleet.report import ReportData, render_html
from kafkaops.fleet.summary import principal_changes, render_markdown
from kafkaops.reconcile.plan import DEFAULT_PROTECTED_TOPICS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafkaops.fleet.policy import Policy

OUTPUTS = ("plan", "drift", "orphans", "policy", "access", "issues", "principals")
STAGES = ("session", "desired", "observed", "plan", "drift", "orphans", "policy", "access", "report")


@dataclass
class FleetOptions:
    desired: list[str]
    observed: str
    out: str
    master: str | None = None
    policy: str | None = None
    prune: bool = False
    internal_topics: str = DEFAULT_PROTECTED_TOPICS
    access_from: str = "observed"  # observed | desired
    conf: dict[str, str] = field(default_factory=dict)
    driver_memory: str | None = None
    ui: bool = False
    verbose: bool = False  # Spark's own console output (WARN logs, Java's warnings) shown
    plan_task_topics: int = PLAN_TASK_TOPICS  # declared topics per planning task (plan.cluster_rows)


@dataclass
class FleetResult:
    out: str
    clusters: list[dict[str, Any]]
    problems: list[InputProblem]
    issues: dict[str, int]
    totals: dict[str, int]
    stages: list[tuple[str, float, str]]
    policy_errors: int = 0

    @property
    def changes(self) -> int:
        return sum(sum(v for k, v in (c.get("plan") or {}).items()) for c in self.clusters)

    @property
    def refused(self) -> int:
        return sum(int(c.get("problems") or 0) for c in self.clusters)

    @property
    def has_input_errors(self) -> bool:
        return any(p.severity == "error" for p in self.problems) or bool(self.issues.get("errors"))

    def summary(self) -> str:
        """The one-line totals `kafkaops fleet plan` prints last."""
        return (f"{len(self.clusters)} cluster(s): {self.changes} change(s){principal_changes(self.clusters)}, "
                f"{self.refused} refused, "
                f"{self.totals.get('drift', 0)} drifted value(s), {self.totals.get('orphans', 0)} orphan(s), "
                f"{self.policy_errors} policy error(s), {self.issues.get('invalid_documents', 0)} invalid "
                f"manifest(s), {len(self.problems)} input problem(s)")


Echo = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Progress:
    """`[n/N] stage: ...` lines, with the time each stage took."""

    def __init__(self, echo: Echo = _stderr) -> None:
        self.echo = echo
        self.done: list[tuple[str, float, str]] = []
        self._stage = ""
        self._started = 0.0

    def start(self, stage: str, what: str) -> None:
        self._stage, self._started = stage, time.monotonic()
        self.echo(f"[{STAGES.index(stage) + 1}/{len(STAGES)}] {stage}: {what} ...")

    def end(self, detail: str) -> float:
        seconds = time.monotonic() - self._started
        self.done.append((self._stage, seconds, detail))
        self.echo(f"[{STAGES.index(self._stage) + 1}/{len(STAGES)}] {self._stage}: {detail} - {seconds:.1f} s")
        return seconds


def _n(value: int) -> str:
    return f"{value:,}"


def _write(frame: DataFrame, path: str) -> None:
    frame.write.mode("overwrite").parquet(path)


def _rows(frame: DataFrame, limit: int) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in frame.limit(limit).collect()]


def _counts(frame: DataFrame, *keys: str) -> dict[tuple, int]:
    return {tuple(r[k] for k in keys): int(r["count"]) for r in frame.groupBy(*keys).count().collect()}


def load_policy(spark: SparkSession, path: str | None) -> Policy | None:
    from kafkaops.fleet.policy import PolicyError, parse_policy

    if path is None:
        return None
    try:
        text = hadoopfs.read_text(spark, path)
    except Exception as exc:  # noqa: BLE001 - py4j FileNotFound and the like: name the file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PolicyError(f"{path}: cannot read the policy file: {first}") from exc
    return parse_policy(text, path)


def run(options: FleetOptions, echo: Echo = _stderr, spark: SparkSession | None = None) -> FleetResult:
    """Run every stage; outputs under options.out. FleetError when the run cannot happen at all (local
    arguments are checked before Spark starts: preflight)."""
    checked = preflight.check(options.desired, options.observed, options.policy, options.out)
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from kafkaops.fleet import access, desired as desired_stage, drift, findings, observed as observed_stage, orphans
    from kafkaops.fleet import plan as plan_stage
    from kafkaops.fleet import policy as policy_stage
    from kafkaops.fleet.session import SMALL_INPUT_BYTES, create_session

    col = F.col
    progress = Progress(echo)
    started_at = datetime.now(timezone.utc)

    progress.start("session", "starting Spark" if spark is None else "using the given Spark session")
    if spark is None:
        small = checked.input_bytes is not None and checked.input_bytes <= SMALL_INPUT_BYTES
        spark = create_session(options.master, conf=options.conf, ui=options.ui, driver_memory=options.driver_memory,
                               verbose=options.verbose, small=small)
    sc = spark.sparkContext
    progress.end(f"Spark {spark.version}, master {sc.master}"
                 + (", small-input settings" if spark.conf.get("spark.sql.codegen.wholeStage") == "false" else ""))
    policy = checked.policy if checked.policy is not None else load_policy(spark, options.policy)
    out = options.out.rstrip("/")
    paths = {name: hadoopfs.join(out, name) for name in OUTPUTS}
    try:
        hadoopfs.mkdirs(spark, out)
    except Exception as exc:  # noqa: BLE001
        raise FleetError(f"--out {out}: cannot create it: {exc}") from exc

    # --- desired
    progress.start("desired", f"reading and validating manifests under {', '.join(options.desired)}")
    desired = desired_stage.load(spark, options.desired)
    stats = desired.docs.agg(F.count(F.lit(1)).alias("documents"), F.countDistinct("file").alias("files")).first()
    issue_counts = _counts(desired.issues, "severity")
    invalid_docs = (desired.issues.filter(col("severity") == "error").select("file", "index").distinct().count())
    issues = {"errors": issue_counts.get(("error",), 0), "warnings": issue_counts.get(("warning",), 0),
              "invalid_documents": invalid_docs}
    desired_clusters = sorted(r[0] for r in desired.docs.filter(col("cluster").isNotNull())
                              .select("cluster").distinct().collect())
    desired = desired.kept()  # the valid documents kept now, with a short plan; the parsed ones are not read again
    desired.docs.unpersist()
    progress.end(f"{_n(stats['documents'])} documents in {_n(stats['files'])} files ({desired.reader_note()}), "
                 f"{_n(invalid_docs)} invalid "
                 f"({_n(issues['errors'])} errors, {_n(issues['warnings'])} warnings), "
                 f"{len(desired_clusters)} clusters")

    # --- observed
    progress.start("observed", f"reading snapshots under {options.observed}")
    observed = observed_stage.load(spark, options.observed)
    problems = list(observed.problems)
    for name in desired_clusters:
        if name not in observed.headers and name not in observed.skipped:
            problems.append(InputProblem("observed", hadoopfs.join(options.observed, name, "header.json"),
                                         NO_SNAPSHOT, f"cluster {name!r} is declared but has no snapshot: not planned",
                                         name, "warning"))
    for problem in problems:
        echo(f"  problem: {problem}")
    progress.end(f"{len(observed.headers)} snapshots read, {len(observed.skipped)} skipped")
    clusters = sorted(set(desired_clusters) | set(observed.headers))

    # --- plan
    progress.start("plan", f"planning {len(observed.headers)} clusters with kafkaops.reconcile.plan")
    held: list[DataFrame] = []
    split: dict[str, int] = {}  # clusters planned in several tasks: how many
    planned = plan_stage.run(desired, observed, options.prune, options.internal_topics, held,
                             options.plan_task_topics, split).persist(StorageLevel.MEMORY_AND_DISK)
    _write(planned.filter(col("record") == "resource").select(*plan_stage.PLAN_COLUMNS), paths["plan"])
    notes = [(r["cluster"], r["note"]) for r in planned.filter(col("record") == "note").select("cluster", "note").collect()]
    plan_out = spark.read.parquet(paths["plan"])
    kind_counts = _counts(plan_out.withColumn("refused", col("problem_reason").isNotNull()), "cluster", "kind", "action",
                          "refused")
    plan_counts: dict[tuple, int] = {}
    for (c, k, a, r), v in kind_counts.items():
        plan_counts[(c, a, r)] = plan_counts.get((c, a, r), 0) + v
    changes = sum(v for (c, a, refused), v in plan_counts.items() if not refused)
    refused = sum(v for (c, a, refused), v in plan_counts.items() if refused)
    tasks = (f"; {_n(len(split))} large cluster(s) planned in {_n(sum(split.values()))} tasks "
             f"(--plan-task-topics {options.plan_task_topics})") if split else ""
    progress.end(f"{_n(changes)} changes, {_n(refused)} refused{tasks}")

    # --- drift (computed with the plan, per cluster: no join of its own)
    progress.start("drift", "writing the declared values that differ (found while planning)")
    _write(drift.run(planned), paths["drift"])
    planned.unpersist()
    for frame in held:
        frame.unpersist()
    drift_counts = _counts(spark.read.parquet(paths["drift"]), "cluster")
    progress.end(f"{_n(sum(drift_counts.values()))} drifted values")

    # --- orphans
    progress.start("orphans", "finding topics and ACL bindings declared nowhere")
    _write(orphans.run(desired, observed, options.internal_topics), paths["orphans"])
    orphan_counts = _counts(spark.read.parquet(paths["orphans"]), "cluster", "kind")
    progress.end(f"{_n(sum(v for (c, k), v in orphan_counts.items() if k == 'KafkaTopic'))} topics, "
                 f"{_n(sum(v for (c, k), v in orphan_counts.items() if k == 'KafkaAcl'))} ACL bindings")

    # --- policy
    progress.start("policy", f"checking {options.policy}" if policy else "no --policy: writing an empty dataset")
    if policy is None:
        frame = spark.createDataFrame([], ", ".join(f"`{c}` {'int' if c == 'index' else 'string'}"
                                                    for c in policy_stage.POLICY_COLUMNS))
    else:
        frame = policy_stage.run(desired, observed, policy, clusters)
    _write(frame, paths["policy"])
    policy_counts = _counts(spark.read.parquet(paths["policy"]), "cluster", "severity")
    policy_errors = sum(v for (c, s), v in policy_counts.items() if s == "error")
    progress.end(f"{_n(policy_errors)} errors, {_n(sum(policy_counts.values()) - policy_errors)} warnings")

    # --- access
    progress.start("access", f"matching {options.access_from} ACL bindings to topics")
    if options.access_from == "desired":
        frame = access.run(desired.topics.select("cluster", "topic"), desired.bindings)
    else:
        frame = access.run(observed.topics.select("cluster", "topic"), observed.acls)
    _write(frame, paths["access"])
    access_out = spark.read.parquet(paths["access"])
    access_counts = _counts(access_out, "cluster")
    progress.end(f"{_n(sum(access_counts.values()))} (principal, topic, access) rows")

    # --- report
    progress.start("report", "summarising")
    from kafkaops.fleet import principals as principals_stage

    _write(principals_stage.run(desired, observed), paths["principals"])
    principals_out = spark.read.parquet(paths["principals"])
    problem_rows = [(p.stage, p.cluster, p.file, None, None, None, p.severity, p.rule, None, None, p.message)
                    for p in problems]
    issue_frame = desired.issues.select("file", "index", "kind", "namespace", "name", "cluster", "severity", "rule",
                                        "path", "line", "message").withColumn("stage", F.lit("desired"))
    if problem_rows:
        extra = spark.createDataFrame(problem_rows, "stage string, cluster string, file string, `index` int, "
                                                    "kind string, namespace string, severity string, rule string, "
                                                    "path string, line int, message string")
        extra = extra.withColumn("name", F.lit(None).cast("string"))
        issue_frame = issue_frame.unionByName(extra)
    _write(issue_frame.select("stage", "cluster", "file", "index", "kind", "namespace", "name", "severity", "rule",
                              "path", "line", "message"), paths["issues"])
    report_dir = hadoopfs.local_path(out)
    data = ReportData(
        generated_at=started_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
        report_dir=os.path.abspath(report_dir) if report_dir is not None else None, cwd=os.getcwd(),
        snapshots={name: h.file for name, h in observed.headers.items()},
        inputs={"desired": ", ".join(options.desired), "observed": options.observed, "out": out,
                "master": sc.master, **({"policy": options.policy} if options.policy else {}),
                "prune": "yes" if options.prune else "no"},
        access_from=options.access_from,
    )
    desired_topics = _counts(desired.topics, "cluster")
    observed_topics = _counts(observed.topics, "cluster")
    for name in clusters:
        header = observed.headers.get(name)
        status = "ok" if header else ("snapshot rejected" if name in observed.skipped else "no snapshot")
        if header and name not in desired_clusters:
            status = "not declared"
        plan_by_action: dict[str, int] = {}
        for (c, a, refused_), v in plan_counts.items():
            if c == name and not refused_:
                plan_by_action[a] = plan_by_action.get(a, 0) + v
        data.clusters.append({
            "cluster": name, "status": status, "snapshot": header.taken_at if header else None,
            "brokers": len(header.brokers) if header else None,
            "desired_topics": desired_topics.get((name,), 0), "observed_topics": observed_topics.get((name,), 0),
            "plan": plan_by_action,
            "kinds": {k: sum(v for (c2, k2, a, r), v in kind_counts.items() if c2 == name and k2 == k and not r)
                      for (c, k, _, _) in kind_counts if c == name},
            "problems": sum(v for (c, a, r), v in plan_counts.items() if c == name and r),
            "drift": drift_counts.get((name,), 0),
            "orphan_topics": orphan_counts.get((name, "KafkaTopic"), 0),
            "orphan_acls": orphan_counts.get((name, "KafkaAcl"), 0),
            "policy_errors": policy_counts.get((name, "error"), 0),
            "policy_warnings": policy_counts.get((name, "warning"), 0),
            "access": access_counts.get((name,), 0),
            "notes": [n for c, n in notes if c == name],
        })
    data.problems = [{"stage": p.stage, "cluster": p.cluster, "file": p.file, "rule": p.rule, "message": p.message}
                     for p in problems]
    data.issues = issues
    replicas = (observed.partitions.select("cluster", F.explode("replicas").alias("broker"))
                .groupBy("cluster", "broker").count().withColumnRenamed("count", "replicas"))
    leaders = (observed.partitions.filter(col("leader") >= 0).groupBy("cluster", col("leader").alias("broker")).count()
               .withColumnRenamed("count", "leaders"))
    brokers = observed.brokers.select("cluster", "broker")
    per_broker = (brokers.join(replicas, ["cluster", "broker"], "full").join(leaders, ["cluster", "broker"], "left")
                  .fillna(0, ["replicas", "leaders"]))
    data.brokers = [r.asDict() for r in per_broker.collect()]  # brokers of the fleet: hundreds of rows
    data.principals = _rows(access.top_principals(access_out, 15), 15)
    data.tables, merged = findings.collect(spark, paths, desired)
    data.totals = {"plan": changes + refused, "drift": sum(drift_counts.values()),
                   "orphans": sum(orphan_counts.values()), "policy": merged["policy"],
                   "access": sum(access_counts.values()), "principals": principals_out.count()}
    data.notes = ["plan: like `kafkaops plan --no-state` (the fleet has no ownership record: keys removed from "
                  "manifests are never planned for reset)."]
    progress.end("report.html, summary.md")
    data.stages = list(progress.done)
    hadoopfs.write_text(spark, hadoopfs.join(out, "report.html"), render_html(data))
    hadoopfs.write_text(spark, hadoopfs.join(out, "summary.md"), render_markdown(data))
    desired.unpersist()
    total = sum(s for _, s, _ in progress.done)
    echo(f"done in {total:.1f} s: {out}/report.html, {out}/summary.md")
    return FleetResult(out, data.clusters, problems, issues, data.totals, list(progress.done), policy_errors)
