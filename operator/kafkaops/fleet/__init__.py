"""kafkaops fleet: the whole fleet's desired state against snapshots of its clusters, on Spark.

    kafkaops fleet plan -f repo/ --observed snapshots/ --output-dir out/ [--policy policy.yaml]

Stages (pipeline.py), each a small module working on Spark DataFrames:

| module | what it does |
|---|---|
| `session.py` | The SparkSession: `local[*]` by default, `--master` or spark-submit's otherwise. |
| `desired.py` | Manifests read and parsed inside Spark (locally in two partitions per core, or one per 128 MB of manifests), per-document checks distributed, checks across documents (duplicates, clusterRefs) as aggregations. |
| `jvm_rows.py`, `jvm/ManifestRows.java` | The JVM reader: a file of plain KafkaTopics and KafkaAcls read in the Spark task (SnakeYAML) into the rows the Python parse makes; any other file is left to Python. |
| `jvm_build.py` | Compiles `jvm/ManifestRows.java` into the reader's jar against the installed PySpark (`make setup`, the fleet image's install step). |
| `observed.py` | Snapshots (format `kafkaops-snapshot` version 1): headers checked, Parquet tables read. |
| `plan.py` | Per cluster, inside one task (a cluster with more than 20,000 declared topics to plan: several, split by topic): `DesiredState` + `ObservedState` -> `kafkaops.reconcile.plan.plan` (topics, ACLs, broker configs, users, client quotas; no password is ever read). |
| `drift.py`, `orphans.py` | Declared values that differ; topics and ACL bindings declared nowhere. |
| `policy.py` | The policy file (YAML, schema-checked) and its rules as Spark expressions. |
| `access.py` | Who can read/write which topic: ACL bindings matched to topics by equi-joins on names and prefixes. |
| `principals.py` | Every principal with its credential (mechanism, iterations), quotas and ACLs: the report's Principals. |
| `preflight.py` | The CLI's local arguments checked before Spark starts (paths, manifests, snapshots, policy). |
| `jvmconsole.py` | The JVM's console output, filtered: start-up chatter hidden unless `--verbose`. |
| `findings.py` | The report's rows: first findings of each output with reason, manifest line, human units (`units.py`). |
| `report.py`, `charts.py` | report.html: sortable, filterable tables, links to manifest lines, inline SVG charts. |
| `summary.py` | summary.md: totals and the top findings per cluster, for CI and pull requests. |
| `demo.py` | `make fleet-demo`: two example clusters, snapshots and a fleet plan of examples/. |

Nothing here imports pyspark at import time except the modules that need it, so
`kafkaops --help` stays fast. See docs/fleet.md.
"""

# Declared topics per planning task (`plan.cluster_rows`, `--plan-task-topics`): a cluster with more
# left to plan (a new cluster, a config changed on every topic) is split by topic into several
# tasks, each holding its share only (a new cluster of 500,000 topics in one task took the Python
# workers to 2.3 GiB; in tasks of 20,000, 549 MiB). Here, not in plan.py: the CLI shows it in its
# help without importing the stage.
PLAN_TASK_TOPICS = 20_000
