"""Benchmark: `kafkaops fleet plan` on a generated fleet, and a pure-Python single-process baseline.

The fleet: 20 clusters (6 brokers each, racks a/b/c), N desired topics in total (KafkaTopic
manifests, 1,000 per file, under clusters/<name>/topics/), ACL bindings for 20% of N (KafkaAcl
manifests of 10 bindings each: a PREFIXED Read/Describe on the team's prefix, Write/Describe on
three topics, a PREFIXED group Read, an IdempotentWrite on the cluster), a policy file, and one
snapshot per cluster (format version 1, written with pyarrow) in which differences are injected:

    1%    of the declared topics missing            -> create
    2%    with another retention.ms override         -> update (and drift)
    0.5%  with fewer partitions                      -> partition-increase
    0.2%  with more partitions                       -> refused (PartitionDecrease)
    0.3%  with another replication factor            -> replica-change
    1%    extra topics nobody declares               -> orphans
    2%    of the declared ACL bindings missing, 1% extra bindings of declared principals,
    1%    bindings of undeclared principals          -> ACL updates, drift, orphans
    0.5%  of the topics declare 24 partitions, 0.5% min.insync.replicas 1 -> policy violations

For each size the pipeline runs as `kafkaops fleet plan` in a child process (local[*]); wall
time and the peak memory of its whole process tree (Python driver + Spark JVM + Python workers,
sampled from /proc every 0.2 s) are reported, and the CPU seconds of each part (the JVM's by
thread: Spark's tasks, the JIT compilers, the garbage collector, the rest; read every second,
so a process or thread that lives less than that may be missed), in all and by stage (the stage
the run's log last announced, `[4/9] plan: ...`, at each sample), with the cores it kept busy:
a stage under 2.0 on two cores waits on one thread (the driver planning a query, a task left
alone at a job's end). The baseline runs in one Python process without
Spark: `kafkaops validate`'s load_and_validate, the snapshot tables read with pyarrow, and per
cluster the same plan() plus orphans, drift of topics, and access by a prefix dictionary.

`--floor` also measures what the run costs without its Python parsing: every manifest file is
parsed once beforehand by `parse_files` (what the desired stage's Spark tasks run), in a process
per core, into JSON rows kept beside the fleet (its CPU seconds per document are reported, and
those of the YAML library alone: libyaml composing the same files with kafkaops' loader, and of
SnakeYAML, the JVM's, composing them in one thread of a JVM: what a parse in the JVM would start
from); then the same `kafkaops fleet plan` runs with the desired stage reading those rows with
Spark's JSON reader instead of parsing (`--floor-run`). Its wall time is the pipeline's floor on this machine
for this code: all of Spark's work (the JSON rows read, the set rules, plan, drift, orphans,
policy, access, report) and none of the parsing's, so the run's wall time minus it is what
parsing costs, and a goal under it cannot be reached by parsing faster.

    .venv/bin/python bench/fleet_bench.py --sizes 100000,300000,1000000 --baseline 100000,300000
    .venv/bin/python bench/fleet_bench.py --sizes 300000 --clusters 1 --new --baseline ""
    .venv/bin/python bench/fleet_bench.py --sizes 1000000 --baseline "" --floor

The second form is one new cluster: every declared topic missing from its snapshot, so nothing
is settled and the whole cluster reaches the planner (split into tasks: `--plan-task-topics`).
`--conf KEY=VALUE` (repeatable) goes to the run's `kafkaops fleet plan`: a changed default can be
run against its old value with the same code, alternating.

Before and after each run the bench times `parse_files` on 20 of the fleet's topic files in its
own process (the machine gauge, µs a document): this shared machine's speed changes by 2-3x from
one night to another, and a wall time is only comparable beside the gauge of its night.

Generated fleets are kept under --work (default /tmp/kafkaops-fleet-bench) and reused.
Not a test: numbers vary with the machine; the figures measured are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

CLUSTERS = 20
BROKERS = 6
RACKS = ("a", "b", "c")
TOPICS_PER_FILE = 1000
PRINCIPALS_PER_FILE = 200
BINDINGS_PER_PRINCIPAL = 10
TEAMS, SERVICES = 50, 20
PARTITION_CHOICES = (1, 3, 3, 6, 6, 6, 12)
RETENTION = 604_800_000
API = "apiVersion: kafkaops.io/v1alpha1"

POLICY = """\
version: 1
check: desired
topics:
  naming:
    - pattern: 't[0-9]+\\.s[0-9]+\\.[a-z]+-[0-9]+'
      message: <team>.<service>.<name>-<n>
  minReplicationFactor: 3
  minInsyncReplicas: 2
  retentionMs: {min: 3600000, max: 2592000000}
  maxPartitions: 12
acls:
  forbidWildcardPrincipal: true
  forbidWildcardResource: true
  forbidDenyShadowingAllow: true
"""


# --- generation -----------------------------------------------------------------------------------------------------


def topic_name(c: int, i: int) -> str:
    return f"t{i % TEAMS}.s{(i // TEAMS) % SERVICES}.events-{i}"


def topic_yaml(cluster: str, name: str, partitions: int, retention: int, min_isr: str = "2") -> str:
    return (f"{API}\nkind: KafkaTopic\nmetadata:\n  name: {name}\nspec:\n  clusterRef:\n    name: {cluster}\n"
            f"  partitions: {partitions}\n  replicationFactor: 3\n  config:\n    retention.ms: \"{retention}\"\n"
            f"    min.insync.replicas: \"{min_isr}\"\n    cleanup.policy: delete\n")


def principal_bindings(cluster: str, p: int, per_cluster: int) -> tuple[str, list[tuple]]:
    """A principal's KafkaAcl document and its bindings (principal, type, name, pattern, op, permission, host)."""
    principal = f"User:svc-{p}"
    prefix = f"t{p % TEAMS}.s{(p // TEAMS) % SERVICES}."
    writes = [topic_name(0, (p * 7 + k * 13) % per_cluster) for k in range(3)]
    bindings = [(principal, "Topic", prefix, "Prefixed", op, "Allow", "*") for op in ("Read", "Describe")]
    bindings += [(principal, "Topic", t, "Literal", "Write", "Allow", "*") for t in writes]
    bindings += [(principal, "Topic", t, "Literal", "Describe", "Allow", "*") for t in writes]
    bindings += [(principal, "Group", f"svc-{p}-", "Prefixed", "Read", "Allow", "*"),
                 (principal, "Cluster", "kafka-cluster", "Literal", "IdempotentWrite", "Allow", "*")]
    assert len(bindings) == BINDINGS_PER_PRINCIPAL
    entries = [
        f"    - resource: {{type: Topic, name: \"{prefix}\", patternType: Prefixed}}\n      operations: [Read, Describe]\n",
        *(f"    - resource: {{type: Topic, name: \"{t}\"}}\n      operations: [Write, Describe]\n" for t in writes),
        f"    - resource: {{type: Group, name: \"svc-{p}-\", patternType: Prefixed}}\n      operations: [Read]\n",
        "    - resource: {type: Cluster, name: kafka-cluster}\n      operations: [IdempotentWrite]\n",
    ]
    doc = (f"{API}\nkind: KafkaAcl\nmetadata:\n  name: svc-{p}\nspec:\n  clusterRef:\n    name: {cluster}\n"
           f"  principal: \"{principal}\"\n  acls:\n" + "".join(entries))
    return doc, bindings


def generate(root: Path, total_topics: int, seed: int = 7, clusters: int = CLUSTERS, new: bool = False) -> dict:
    """Write repo/, snapshots/ and policy.yaml under root; returns counts. `new`: no declared topic
    is in any snapshot (new clusters: every topic a create, no other injected difference)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
    try:
        from kafkaops.snapshot.format import SCHEMAS
    except ImportError:  # pragma: no cover
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fleet"))
        from fleet_helpers import SCHEMAS  # type: ignore[no-redef]

    rng = random.Random(seed)
    per_cluster = total_topics // clusters
    principals = max(1, total_topics // 5 // BINDINGS_PER_PRINCIPAL // clusters)
    counts: dict[str, int] = defaultdict(int)
    repo, snaps = root / "repo", root / "snapshots"
    for c in range(clusters):
        cluster = f"kc{c:02d}"
        folder = repo / "clusters" / cluster
        (folder / "topics").mkdir(parents=True, exist_ok=True)
        (folder / "acls").mkdir(parents=True, exist_ok=True)
        (folder / "cluster.yaml").write_text(
            f"{API}\nkind: KafkaCluster\nmetadata:\n  name: {cluster}\nspec:\n  bootstrapServers: "
            f"[\"{cluster}-0.kafka:9092\"]\n  topicDeletion:\n    policy: Retain\n")
        topics, partitions, configs = defaultdict(list), defaultdict(list), defaultdict(list)

        def observe(name: str, parts: int, rf: int, retention: int, min_isr: str = "2") -> None:
            topics["cluster"].append(cluster); topics["topic"].append(name); topics["topic_id"].append(None)  # noqa: E702
            topics["partitions"].append(parts); topics["replication_factor"].append(rf)  # noqa: E702
            topics["internal"].append(False)
            start = rng.randrange(BROKERS)
            for p in range(parts):
                replicas = [(start + p + r) % BROKERS for r in range(rf)]
                partitions["cluster"].append(cluster); partitions["topic"].append(name)  # noqa: E702
                partitions["partition"].append(p); partitions["leader"].append(replicas[0])  # noqa: E702
                partitions["replicas"].append(replicas); partitions["isr"].append(replicas)  # noqa: E702
            for key, value in (("retention.ms", str(retention)), ("min.insync.replicas", min_isr),
                               ("cleanup.policy", "delete")):
                configs["cluster"].append(cluster); configs["topic"].append(name); configs["key"].append(key)  # noqa: E702
                configs["value"].append(value); configs["source"].append("DYNAMIC_TOPIC_CONFIG")  # noqa: E702
                configs["sensitive"].append(False)

        chunk: list[str] = []
        for i in range(per_cluster):
            name = topic_name(c, i)
            parts = rng.choice(PARTITION_CHOICES)
            retention = RETENTION + (i % 7) * 3_600_000
            min_isr = "2"
            breach = rng.random()  # policy violations, declared and applied alike
            if breach < 0.005:
                parts = 24
                counts["injected_policy_partitions"] += 1
            elif breach < 0.01:
                min_isr = "1"
                counts["injected_policy_min_isr"] += 1
            chunk.append(topic_yaml(cluster, name, parts, retention, min_isr))
            counts["desired_topics"] += 1
            roll = rng.random()
            if new:
                counts["new_topics"] += 1
            elif roll < 0.01:
                counts["injected_missing"] += 1
            elif roll < 0.03:
                observe(name, parts, 3, retention + 1000, min_isr)
                counts["injected_retention"] += 1
            elif roll < 0.035 and parts > 1:
                observe(name, parts - 1, 3, retention, min_isr)
                counts["injected_fewer_partitions"] += 1
            elif roll < 0.037:
                observe(name, parts + 1, 3, retention, min_isr)
                counts["injected_more_partitions"] += 1
            elif roll < 0.040:
                observe(name, parts, 2, retention, min_isr)
                counts["injected_replication"] += 1
            else:
                observe(name, parts, 3, retention, min_isr)
            if len(chunk) == TOPICS_PER_FILE or i == per_cluster - 1:
                (folder / "topics" / f"topics-{i // TOPICS_PER_FILE:04d}.yaml").write_text("---\n".join(chunk))
                counts["files"] += 1
                chunk = []
        for k in range(per_cluster // 100):  # undeclared topics
            observe(f"legacy.{cluster}.orphan-{k}", rng.choice(PARTITION_CHOICES), 3, RETENTION)
            counts["injected_orphan_topics"] += 1
        observe("__consumer_offsets", 50, 3, RETENTION)
        acl_rows: dict[str, list] = defaultdict(list)

        def acl_row(b: tuple) -> None:
            for key, value in zip(("principal", "resource_type", "resource_name", "pattern_type", "operation",
                                   "permission", "host"), b):
                acl_rows[key].append(value)
            acl_rows["cluster"].append(cluster)

        docs: list[str] = []
        for p in range(principals):
            doc, bindings = principal_bindings(cluster, p, per_cluster)
            docs.append(doc)
            for b in bindings:
                counts["desired_bindings"] += 1
                roll = rng.random()
                if roll < 0.02:
                    counts["injected_missing_bindings"] += 1
                    continue
                acl_row(b)
                if roll < 0.03:
                    acl_row((b[0], "Topic", f"t{p % TEAMS}.extra-{p}", "Literal", "Read", "Allow", "*"))
                    counts["injected_extra_bindings"] += 1
                if roll < 0.04:
                    acl_row((f"User:legacy-{p}", "Topic", b[2], b[3], "Read", "Allow", "*"))
                    counts["injected_orphan_bindings"] += 1
            if len(docs) == PRINCIPALS_PER_FILE or p == principals - 1:
                (folder / "acls" / f"acls-{p // PRINCIPALS_PER_FILE:04d}.yaml").write_text("---\n".join(docs))
                counts["files"] += 1
                docs = []
        base = snaps / cluster
        base.mkdir(parents=True, exist_ok=True)
        for table, data in (("topics", topics), ("partitions", partitions), ("topic_configs", configs),
                            ("acls", acl_rows), ("broker_configs", {})):
            schema = SCHEMAS[table]
            columns = {f.name: data.get(f.name, []) for f in schema}
            pq.write_table(pa.table(columns, schema=schema), base / f"{table}.parquet")
        counts["observed_topics"] += len(topics["topic"])
        counts["observed_partitions"] += len(partitions["topic"])
        header = {"format": "kafkaops-snapshot", "version": 1, "cluster": cluster, "clusterId": f"id-{cluster}",
                  "bootstrap": f"{cluster}-0.kafka:9092", "controllerId": 0,
                  "brokers": [{"id": b, "host": f"{cluster}-{b}.kafka", "port": 9092, "rack": RACKS[b % 3]}
                              for b in range(BROKERS)],
                  "takenAt": "2026-11-22T00:00:00Z", "seconds": 1.0,
                  "counts": {"topics": len(topics["topic"]), "partitions": len(partitions["topic"])}, "notes": []}
        (base / "header.json").write_text(json.dumps(header))
    (root / "policy.yaml").write_text(POLICY)
    (root / "counts.json").write_text(json.dumps(counts, indent=1))
    return dict(counts)


def fleet_for(work: Path, size: int, clusters: int = CLUSTERS, new: bool = False) -> tuple[Path, dict]:
    shape = "" if (clusters, new) == (CLUSTERS, False) else f"-c{clusters}" + ("-new" if new else "")
    root = work / f"fleet-{size}{shape}"
    if (root / "counts.json").exists():
        return root, json.loads((root / "counts.json").read_text())
    shutil.rmtree(root, ignore_errors=True)
    started = time.monotonic()
    counts = generate(root, size, clusters=clusters, new=new)
    print(f"generated {size:,} topics in {time.monotonic() - started:.0f} s: {root}", file=sys.stderr)
    return root, counts


# --- measuring -------------------------------------------------------------------------------------------------------


_NAMED: set[int] = set()  # worker processes over 1 GiB already named on stderr


_TICK, _PAGE = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class _Stat:
    """What /proc/<pid>/stat (or a thread's) says: name, parent, CPU seconds, resident bytes."""

    name: str
    ppid: int
    cpu: float
    rss: int


def _stat(path: str) -> _Stat | None:
    try:
        with open(path, "rb") as handle:
            head, tail = handle.read().rsplit(b")", 1)
        fields = tail.split()
        return _Stat(head.rsplit(b"(", 1)[-1].decode(errors="replace"), int(fields[1]),
                     (int(fields[11]) + int(fields[12])) / _TICK, int(fields[21]) * _PAGE)
    except (OSError, IndexError, ValueError):
        return None


def _tree(root_pid: int) -> dict[int, _Stat]:
    """root_pid and every descendant, from /proc."""
    stats = {int(e): st for e in os.listdir("/proc") if e.isdigit() and (st := _stat(f"/proc/{e}/stat")) is not None}
    children: dict[int, list[int]] = defaultdict(list)
    for pid, st in stats.items():
        children[st.ppid].append(pid)
    found, stack = {}, [root_pid]
    while stack:
        pid = stack.pop()
        if pid in stats:
            found[pid] = stats[pid]
        stack.extend(children.get(pid, ()))
    return found


def _tree_rss(root_pid: int) -> dict[str, int]:
    """Resident bytes of root_pid and every descendant (from /proc), by part: `driver` (root_pid),
    `jvm` (processes named java) and `workers` (the rest: Spark's Python workers and their daemon)."""
    tree = _tree(root_pid)
    parts = {"driver": 0, "jvm": 0, "workers": 0}
    for pid, st in tree.items():
        java = st.name == "java"
        part = "driver" if pid == root_pid else "jvm" if java else "workers"
        parent = tree.get(st.ppid)
        if parent is not None and parent.name == "java" and not java and not st.name.startswith("python"):
            # the JVM forked a thread of its own to start a Python worker and it has not exec'd yet:
            # its resident pages are the JVM's own (copy on write), not memory of its own
            continue
        parts[part] += st.rss
        if part == "workers" and st.rss > 2**30 and pid not in _NAMED:
            _NAMED.add(pid)
            print(f"  [sampler] {st.name} (pid {pid}, parent {st.ppid}): {st.rss / 2**20:.0f} MiB", file=sys.stderr)
    return parts


def _thread_group(name: str) -> str:
    """What a JVM thread does, by HotSpot's and Spark's thread names."""
    if "CompilerThre" in name:
        return "JIT compilers"
    if name.startswith(("GC Thread", "G1 ", "VM Thread")):
        return "garbage collector"
    if name.startswith("Executor task"):
        return "Spark tasks"
    return "other"


def _cpu_by_thread(root_pid: int, seen: dict[tuple[int, int], tuple[str, float]]) -> None:
    """Record the CPU seconds so far of every thread of the JVMs under root_pid and of every other
    process of the tree (keyed (pid, tid); tid 0 for a whole process), into `seen`."""
    for pid, st in _tree(root_pid).items():
        if st.name != "java":
            seen[(pid, 0)] = ("driver" if pid == root_pid else "Python workers", st.cpu)
            continue
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in threads:
            if (thread := _stat(f"/proc/{pid}/task/{tid}/stat")) is not None:
                seen[(pid, int(tid))] = (_thread_group(thread.name), thread.cpu)


_GROUPS = ("Spark tasks", "JIT compilers", "garbage collector", "other", "Python workers", "driver")


def _cpu_groups(seen: dict[tuple[int, int], tuple[str, float]]) -> dict[str, float]:
    groups: dict[str, float] = defaultdict(float)
    for group, seconds in seen.values():
        groups[group] += seconds
    return groups


def cpu_report(seen: dict[tuple[int, int], tuple[str, float]]) -> str:
    groups = _cpu_groups(seen)
    jvm = sum(v for k, v in groups.items() if k not in ("driver", "Python workers"))
    return (f"CPU seconds: JVM {jvm:.0f} (" + ", ".join(f"{k} {groups.get(k, 0):.0f}" for k in _GROUPS[:4])
            + "), " + ", ".join(f"{k} {groups.get(k, 0):.0f}" for k in _GROUPS[4:]))


class StageCpu:
    """CPU seconds by thread group (`_GROUPS`) and wall seconds of each stage of a `fleet plan` run,
    the stage read from the last progress line of its log (`[3/9] observed: ...`) at each sample:
    where the run keeps both cores busy and where it waits on one (docs/benchmarks.md)."""

    def __init__(self, log: Path) -> None:
        self.log, self.offset, self.stage = log, 0, "launch"
        self.cpu: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.wall: dict[str, float] = defaultdict(float)
        self.last: tuple[float, dict[str, float]] | None = None

    def _current(self) -> str:
        try:
            with open(self.log, "rb") as handle:
                handle.seek(self.offset)
                text = handle.read()
        except OSError:
            return self.stage
        end = text.rfind(b"\n") + 1  # whole lines only: a line still being written is read next time
        self.offset += end
        for line in text[:end].decode(errors="replace").splitlines():
            if (m := re.match(r"\[\d+/\d+\] (\w+):", line)) is not None:
                self.stage = m.group(1)
        return self.stage

    def sample(self, now: float, seen: dict[tuple[int, int], tuple[str, float]]) -> None:
        """Charge the CPU used since the last sample to the stage the run was in at the last one."""
        groups = _cpu_groups(seen)
        if self.last is not None:
            then, before = self.last
            self.wall[self.stage] += now - then
            for group in _GROUPS:
                self.cpu[self.stage][group] += max(0.0, groups.get(group, 0.0) - before.get(group, 0.0))
        self._current()
        self.last = (now, dict(groups))

    def table(self) -> list[str]:
        head = "| stage | wall s | " + " | ".join(_GROUPS) + " | all CPU s | cores busy |"
        lines = [head, "| --- | ---: | " + " | ".join("---:" for _ in _GROUPS) + " | ---: | ---: |"]
        for stage, wall in self.wall.items():
            total = sum(self.cpu[stage].values())
            lines.append(f"| {stage} | {wall:.1f} | " + " | ".join(f"{self.cpu[stage][g]:.1f}" for g in _GROUPS)
                         + f" | {total:.1f} | {total / wall if wall else 0:.2f} |")
        return lines


def measure(argv: list[str], log: Path, cpu: dict | None = None,
            stages: StageCpu | None = None) -> tuple[float, float, int, dict[str, tuple[float, float]]]:
    """(wall seconds, peak MiB of the process tree, exit code, peak MiB of each part of it and when:
    `{part: (MiB, seconds after the start)}`) of a command. With `cpu`, the CPU seconds of every
    thread of the tree, sampled every second (and charged to `stages`, when given)."""
    started = time.monotonic()
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    peak = 0
    parts: dict[str, tuple[int, float]] = {}
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        ticks = 0
        while not done.is_set():
            if cpu is not None and ticks % 5 == 0:  # every second: CPU seconds only grow
                _cpu_by_thread(process.pid, cpu)
                if stages is not None:
                    stages.sample(time.monotonic(), cpu)
            ticks += 1
            now = _tree_rss(process.pid)
            peak = max(peak, sum(now.values()))
            for part, value in now.items():
                if value > parts.get(part, (0, 0.0))[0]:
                    parts[part] = (value, time.monotonic() - started)
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = process.wait()
    done.set()
    sampler.join()
    return time.monotonic() - started, peak / 2**20, code, {k: (v / 2**20, t) for k, (v, t) in parts.items()}


# --- the pure-Python baseline (run in its own process: --baseline-run ROOT) -----------------------------------------


def baseline(root: Path) -> dict:
    """validate + plan + orphans + topic drift + access, single process, no Spark."""
    import pyarrow.parquet as pq

    from kafkaops.fleet.plan import desired_state, observed_state
    from kafkaops.reconcile.plan import DEFAULT_PROTECTED_TOPICS, PlanOptions, plan
    from kafkaops.resources.models import KafkaAcl, KafkaCluster, KafkaTopic
    from kafkaops.resources.validation import load_and_validate

    times: dict[str, float] = {}
    t = time.monotonic()
    validated = load_and_validate([root / "repo"])
    times["validate"] = time.monotonic() - t
    t = time.monotonic()
    by_cluster: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r in validated.valid:
        if isinstance(r, KafkaCluster):
            by_cluster[r.name]["cluster"].append(r)
        elif isinstance(r, (KafkaTopic, KafkaAcl)):
            by_cluster[r.cluster_ref.name]["topics" if isinstance(r, KafkaTopic) else "acls"].append(r)
    changes = orphan_count = drift_count = access_rows = 0
    protected = re.compile(DEFAULT_PROTECTED_TOPICS)
    for cluster in sorted(p.name for p in (root / "snapshots").iterdir()):
        base = root / "snapshots" / cluster
        header = json.loads((base / "header.json").read_text())
        header["brokers"] = [(b["id"], b["host"], b["port"], b["rack"]) for b in header["brokers"]]
        topics = pq.read_table(base / "topics.parquet").to_pylist()
        parts: dict[str, list] = defaultdict(list)
        for p in pq.read_table(base / "partitions.parquet").to_pylist():
            parts[p["topic"]].append((p["partition"], p["replicas"]))
        configs: dict[str, list] = defaultdict(list)
        for row in pq.read_table(base / "topic_configs.parquet").to_pylist():
            configs[row["topic"]].append(row)
        rows = [{**row, "assignment": [r for _, r in sorted(parts[row["topic"]])], "all_led": True,
                 "configs": configs[row["topic"]]} for row in topics]
        acls = pq.read_table(base / "acls.parquet").to_pylist()
        group = by_cluster[cluster]
        desired = desired_state(cluster, [], [], [], None)
        desired = type(desired)(tuple(group["topics"]), tuple(group["acls"]), (),
                                group["cluster"][0] if group["cluster"] else None)
        declared = {t.topic_name: frozenset(t.config) for t in desired.topics}
        observed = observed_state(header, rows, acls, [], declared)
        made = plan(desired, observed, None, PlanOptions())
        changes += sum(1 for r in made.resources if r.action.value != "none" or r.problem)
        names = {t["topic"] for t in topics}
        orphan_count += sum(1 for n in names - set(declared) if not protected.match(n))
        for wanted in desired.topics:
            seen = observed.topics.get(wanted.topic_name)
            if seen is not None:
                drift_count += (wanted.partitions != seen.partitions) + (wanted.replication_factor != seen.replication_factor)
                for key, value in wanted.config.items():
                    cfg = (seen.configs or {}).get(key)
                    drift_count += cfg is None or cfg.value != value
        prefixes: dict[str, list] = defaultdict(list)
        literal: dict[str, list] = defaultdict(list)
        for a in acls:
            if a["resource_type"] == "Topic" and a["operation"] in ("Read", "Write", "All"):
                (prefixes if a["pattern_type"] == "Prefixed" else literal)[a["resource_name"]].append(a)
        lengths = sorted({len(p) for p in prefixes})
        for name in names:
            hits = literal.get(name, []) + literal.get("*", [])
            for n in lengths:
                hits += prefixes.get(name[:n], []) if len(name) >= n else []
            access_rows += len({(h["principal"], h["operation"]) for h in hits})
    times["plan+orphans+drift+access"] = time.monotonic() - t
    return {"changes": changes, "orphans": orphan_count, "drift": drift_count, "access": access_rows,
            "invalid": len(validated.invalid), "times": times}


# --- the floor: the pipeline with its parsing done beforehand (--floor; run as --floor-run ROWS -- ARGS) ------------


def manifest_files(repo: Path) -> list[Path]:
    """The manifests the desired stage reads (*.yaml / *.yml, hidden names skipped like Spark does)."""
    return sorted(p for p in repo.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
                  and not any(part.startswith((".", "_")) for part in p.relative_to(repo).parts))


def _parse_share(task: tuple[str, list[str]]) -> tuple[int, int, float, float]:
    """One process's share of the files: its rows written to `out`; (files, rows, CPU seconds of
    parse_files, CPU seconds of libyaml composing the same texts with kafkaops' loader)."""
    import yaml

    from kafkaops.fleet.documents import parse_files
    from kafkaops.resources.loader import _Loader

    out, files = task
    texts = [(f"file:{f}", Path(f).read_text("utf-8")) for f in files]
    rows = 0
    started = time.process_time()
    with open(out, "w", encoding="utf-8") as handle:
        for row in parse_files(texts):
            handle.write(row + "\n")
            rows += 1
    parsing = time.process_time() - started
    started = time.process_time()
    for _, text in texts:
        loader = _Loader(text)
        try:
            while loader.check_node():
                loader.get_node()
        except yaml.YAMLError:
            pass  # the rest of a file with a syntax error is not parsed (nor by parse_files)
        finally:
            loader.dispose()
    return len(files), rows, parsing, time.process_time() - started


GAUGE_FILES = 20  # topic files of 1,000 documents each
GAUGE_NORMAL = "76-96 µs on the nights of the 136-169 s runs"


def machine_gauge(repo: Path) -> float:
    """The machine's speed at this moment, in the unit the fleet's figures depend on most: µs a
    document of `parse_files` on the first 20 topic files of the fleet, in this process (best CPU
    time of three). Shared machines change speed by 2-3x between nights (docs/benchmarks.md), so a
    run's wall time is read beside the gauge taken before and after it."""
    from kafkaops.fleet.documents import parse_files

    files = [f for f in manifest_files(repo) if f.parent.name == "topics"][:GAUGE_FILES]
    texts = [(f"file:{f}", f.read_text("utf-8")) for f in files]
    best, documents = float("inf"), 0
    for _ in range(3):
        started = time.process_time()
        documents = sum(1 for _ in parse_files(texts))
        best = min(best, time.process_time() - started)
    return best * 1e6 / max(1, documents)


def parse_beforehand(repo: Path, rows: Path, processes: int) -> dict[str, float]:
    """Every manifest under `repo` parsed into JSON rows under `rows` (a file per process; one
    process: this one):
    {files, documents, parse_cpu, yaml_cpu} (CPU seconds summed over the processes)."""
    from multiprocessing import get_context

    shutil.rmtree(rows, ignore_errors=True)
    rows.mkdir(parents=True)
    files = [str(f) for f in manifest_files(repo)]
    shares = [(str(rows / f"part-{i:04d}.json"), files[i::processes]) for i in range(processes)]
    if processes == 1:  # in this process (a module imported by path cannot be pickled to a pool)
        done = [_parse_share(share) for share in shares]
    else:
        with get_context("spawn").Pool(processes) as pool:
            done = pool.map(_parse_share, shares)
    return {"files": sum(d[0] for d in done), "documents": sum(d[1] for d in done),
            "parse_cpu": sum(d[2] for d in done), "yaml_cpu": sum(d[3] for d in done)}


def jvm_yaml(repo: Path) -> dict[str, float]:
    """SnakeYAML, the YAML 1.1 library Spark ships (the one a desired stage parsing in the JVM would
    use), composing every manifest under `repo` into nodes with their line marks, in one thread of a
    JVM started with Spark's jars: {documents, cpu} (that thread's CPU seconds, its JIT warm-up in
    them as a run's would be). Driven over Py4J one file at a time: no Java to compile."""
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway()
    try:
        jvm = gateway.jvm
        options = jvm.org.yaml.snakeyaml.LoaderOptions()
        options.setCodePointLimit(2**31 - 1)
        threads = jvm.java.lang.management.ManagementFactory.getThreadMXBean()
        documents = 0
        started = threads.getCurrentThreadCpuTime()  # Py4J runs one caller's calls in one JVM thread
        for f in manifest_files(repo):
            text = jvm.java.nio.file.Files.readString(jvm.java.io.File(str(f)).toPath())
            composed = jvm.org.yaml.snakeyaml.Yaml(options).composeAll(jvm.java.io.StringReader(text))
            documents += jvm.scala.jdk.javaapi.CollectionConverters.asScala(composed).size()
        return {"documents": documents, "cpu": (threads.getCurrentThreadCpuTime() - started) / 1e9}
    finally:
        gateway.shutdown()
        gateway.proc.stdin.close()  # PySpark's gateway JVM exits when its stdin closes
        gateway.proc.wait()


def rows_reader(rows: str | Path):  # noqa: ANN201 - a stand-in for desired.parse
    """A stand-in for `desired.parse` that ignores the manifests' texts and reads the rows parsed
    beforehand under `rows` with Spark's JSON reader (the same schema, kept in as many partitions)."""
    from kafkaops.fleet import desired

    def parse(spark, files, partitions=None, jvm_files=None):  # noqa: ANN001, ANN202, ARG001 - desired.parse's signature
        parsed = spark.read.schema(desired.doc_schema()).option("mode", "FAILFAST").json(Path(rows).resolve().as_uri())
        return parsed if partitions is None else parsed.coalesce(partitions)

    return parse


def floor_run(rows: str, argv: list[str]) -> None:
    """`kafkaops <argv>` with the desired stage's parsing replaced by Spark's JSON reader on `rows`."""
    from kafkaops.cli.main import main as kafkaops_main
    from kafkaops.fleet import desired

    desired.parse = rows_reader(rows)
    sys.argv = ["kafkaops", *argv]
    kafkaops_main()


def _summary(log: Path) -> str:
    """The run's closing counts line (`20 cluster(s): ... change(s), ...`)."""
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if re.match(r"\d+ cluster\(s\):", ln)]
    return lines[-1] if lines else ""


# --- main ----------------------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,300000,1000000", help="total desired topics, comma list")
    parser.add_argument("--baseline", default="100000,300000", help="sizes that also run the pure-Python baseline")
    parser.add_argument("--work", default="/tmp/kafkaops-fleet-bench", help="where fleets are generated and kept")
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--clusters", type=int, default=CLUSTERS, help="clusters the topics are spread over")
    parser.add_argument("--new", action="store_true",
                        help="no declared topic in any snapshot (new clusters: every topic a create)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="passed to `kafkaops fleet plan --conf` (repeatable): to compare settings")
    parser.add_argument("--floor", action="store_true",
                        help="also run the pipeline with its parsing done beforehand (the floor without parsing)")
    parser.add_argument("--baseline-run", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--floor-run", default=None, help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.floor_run:
        floor_run(args.floor_run, [a for a in rest if a != "--"])
        return
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.baseline_run:
        print(json.dumps(baseline(Path(args.baseline_run))))
        return
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    baseline_sizes = {int(s) for s in args.baseline.split(",") if s}
    results = []
    for size in sizes:
        root, counts = fleet_for(work, size, args.clusters, args.new)
        out = root / "out"
        argv = [sys.executable, "-m", "kafkaops", "fleet", "plan", "-f", str(root / "repo"), "--observed",
                str(root / "snapshots"), "--output-dir", str(out), "--policy", str(root / "policy.yaml"),
                "--driver-memory", args.driver_memory]
        if args.master:
            argv += ["--master", args.master]
        for setting in args.conf:
            argv += ["--conf", setting]
        log = root / "fleet.log"
        cpu: dict[tuple[int, int], tuple[str, float]] = {}
        by_stage = StageCpu(log)
        gauge_before = machine_gauge(root / "repo")
        wall, peak, code, parts = measure(argv, log, cpu, by_stage)
        gauge_after = machine_gauge(root / "repo")
        stages = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("[") and " - " in line]
        row = {"size": size, "engine": "spark local[*]", "wall": wall, "peak": peak, "code": code, "counts": counts,
               "stages": stages}
        results.append(row)
        print(f"fleet {size:,}: {wall:.1f} s, peak {peak:.0f} MiB (each part's own peak: "
              + ", ".join(f"{k} {v:.0f} MiB at {t:.0f} s" for k, (v, t) in parts.items()) + f"), exit {code}",
              file=sys.stderr)
        for line in stages:
            print("   " + line, file=sys.stderr)
        print(f"   machine gauge (parse_files on {GAUGE_FILES} topic files, one process): {gauge_before:.0f} µs a "
              f"document before the run, {gauge_after:.0f} after ({GAUGE_NORMAL})", file=sys.stderr)
        print("   " + cpu_report(cpu), file=sys.stderr)
        print("   CPU seconds by stage (sampled every second; a stage's CPU is charged from its start line on):",
              file=sys.stderr)
        for line in by_stage.table():
            print("   " + line, file=sys.stderr)
        if args.floor:
            processes = os.cpu_count() or 1
            parsed = parse_beforehand(root / "repo", root / "floor-rows", processes)
            per_doc = 1e6 / max(1, parsed["documents"])
            print(f"parsed beforehand: {parsed['documents']:,} documents in {parsed['files']:,} files, "
                  f"{processes} processes: parse_files {parsed['parse_cpu']:.1f} CPU s "
                  f"({parsed['parse_cpu'] * per_doc:.1f} µs per document), of it at least the YAML library's "
                  f"{parsed['yaml_cpu']:.1f} CPU s ({parsed['yaml_cpu'] * per_doc:.1f} µs)", file=sys.stderr)
            snake = jvm_yaml(root / "repo")
            print(f"the JVM's YAML library (SnakeYAML, shipped with Spark) composing the same files: "
                  f"{snake['documents']:,} documents, {snake['cpu']:.1f} CPU s in one thread "
                  f"({snake['cpu'] * 1e6 / max(1, snake['documents']):.1f} µs per document)", file=sys.stderr)
            flog = root / "floor.log"
            fwall, fpeak, fcode, _ = measure([sys.executable, __file__, "--floor-run", str(root / "floor-rows"), "--",
                                              *argv[3:]], flog)
            same = _summary(flog) == _summary(log) != ""  # no counts line: a run that failed
            results.append({"size": size, "engine": "spark local[*], parsing done beforehand (floor)", "wall": fwall,
                            "peak": fpeak, "code": fcode})
            print(f"floor {size:,}: {fwall:.1f} s (the run {wall / fwall:.2f}x it; parsing {wall - fwall:.1f} s of "
                  f"the run's wall time), peak {fpeak:.0f} MiB, exit {fcode}, outputs' counts "
                  + ("the same as the run's" if same else f"DIFFER: {_summary(flog)!r} against {_summary(log)!r}"),
                  file=sys.stderr)
            for line in flog.read_text(errors="replace").splitlines():
                if line.startswith("[") and " - " in line:
                    print("   " + line, file=sys.stderr)
        if size in baseline_sizes:
            blog = root / "baseline.log"
            bwall, bpeak, bcode, _ = measure([sys.executable, __file__, "--baseline-run", str(root)], blog)
            detail = blog.read_text().strip().splitlines()[-1] if blog.exists() else ""
            results.append({"size": size, "engine": "pure Python, 1 process", "wall": bwall, "peak": bpeak,
                            "code": bcode, "detail": detail})
            print(f"baseline {size:,}: {bwall:.1f} s, peak {bpeak:.0f} MiB ({detail})", file=sys.stderr)
    print(f"\nMachine: {os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}")
    print("| desired topics | ACL bindings | observed partitions | engine | wall s | peak MiB (process tree) |")
    print("| ---: | ---: | ---: | --- | ---: | ---: |")
    for row in results:
        counts = next(r["counts"] for r in results if r["size"] == row["size"] and "counts" in r)
        print(f"| {row['size']:,} | {counts.get('desired_bindings', 0):,} | {counts.get('observed_partitions', 0):,} | "
              f"{row['engine']} | {row['wall']:.1f} | {row['peak']:.0f} |")


if __name__ == "__main__":
    main()
