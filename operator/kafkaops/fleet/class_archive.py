"""The Spark JVM's class archive: Spark's classes mapped from one file at start-up, not loaded from its jars.

    python -m kafkaops.fleet.class_archive [--output PATH] [--if-stale]

A local fleet run starts a JVM that loads Spark's classes from its 280 jars (26,000 classes in
a small run), and a slow machine spends seconds on it: in the session's start and in every stage
that meets a class for the first time. HotSpot's class data sharing (CDS) keeps classes parsed and
verified in a file that the next JVM maps in at once (`jcmd <pid> VM.metaspace`: 17,350 of
26,363 classes shared; the others are made at run time or come through Spark's own class
loaders). JDK 17 writes that file as a JVM exits (`-XX:ArchiveClassesAtExit`), so
`record` runs a tiny fleet (written here: topics and ACLs, a document in error, a policy, a
snapshot with differences, so that every stage has work) through the pipeline in a JVM of the
small-input settings, and keeps what it loaded: 185 MiB, 1.5 minutes on a slow night. A large run
needs a few classes more (whole-stage code generation's compiler, say), which it loads from the
jars as before. `make setup` records it, as does docker/install.sh in the `EXTRAS=fleet` image.

A local run launched by `kafkaops fleet plan` uses the archive (`-XX:SharedArchiveFile`, in
session.py) only when its stamp matches this machine's JVM, Spark and the fleet's reader jar
(`usable`): HotSpot checks the same itself and, on a mismatch, prints a warning and starts
without it, which jvmconsole turns into one line that says how to rebuild. Without an archive
the run is the same, only slower to start. docs/benchmarks.md has the figures ("Spark's classes
from an archive").
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafkaops.fleet.jvm_rows import jar_path

ARCHIVE_NAME = "spark-classes.jsa"
STAMP_SUFFIX = ".stamp"
RECORD_TIMEOUT = 900.0  # seconds: the two tiny runs and the dump, on a slow machine
WORKLOAD_CLUSTER = "archive"


class ArchiveError(RuntimeError):
    """The archive cannot be recorded here; the message says why."""


def archive_path() -> Path:
    """Where the archive is written and looked for: beside the fleet's reader jar."""
    return jar_path().parent / ARCHIVE_NAME


def _stamp_path(archive: Path) -> Path:
    return archive.with_name(archive.name + STAMP_SUFFIX)


def java_binary() -> Path | None:
    """The `java` Spark's launcher runs: $JAVA_HOME/bin/java, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(os.path.realpath(found)) if found and os.path.exists(found) else None


def _spark_home() -> Path | None:
    try:
        from pyspark.find_spark_home import _find_spark_home
    except ImportError:
        return None
    return Path(os.path.realpath(_find_spark_home()))


def _file_identity(path: Path) -> list[object]:
    stat = path.stat()
    return [str(path), stat.st_size, stat.st_mtime_ns]


def fingerprint(java: Path | None = None, spark_home: Path | None = None, reader: Path | None = None) -> str | None:
    """What an archive was recorded for: the JVM (its libjvm), Spark's jars and the reader jar, by
    path, size and modification time (what HotSpot itself compares for the class path). None
    when there is no JVM or Spark here."""
    java = java or java_binary()
    spark_home = spark_home or _spark_home()
    if java is None or spark_home is None:
        return None
    reader = reader or jar_path()
    libjvm = java.parent.parent / "lib" / "server" / "libjvm.so"
    parts: list[object] = [_file_identity(java), _file_identity(libjvm) if libjvm.exists() else str(libjvm)]
    parts += [_file_identity(jar) for jar in sorted((spark_home / "jars").glob("*.jar"))]
    parts.append(_file_identity(reader) if reader.exists() else str(reader))
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def usable(archive: Path | None = None, current: str | None = None) -> Path | None:
    """The archive, when it exists and was recorded for this JVM, Spark and reader; else None."""
    archive = archive or archive_path()
    stamp = _stamp_path(archive)
    if not (archive.is_file() and stamp.is_file()):
        return None
    current = current if current is not None else fingerprint()
    return archive if current is not None and stamp.read_text("utf-8").strip() == current else None


# --- recording ------------------------------------------------------------------------------------------------


def _manifest(kind: str, name: str, spec: dict[str, object]) -> dict[str, object]:
    return {"apiVersion": "kafkaops.io/v1alpha1", "kind": kind, "metadata": {"name": name},
            "spec": {"clusterRef": {"name": WORKLOAD_CLUSTER}, **spec}}


def write_workload(root: Path) -> tuple[Path, Path, Path]:
    """A tiny fleet under `root` that takes every stage's paths: plain topic and ACL files (the JVM
    reader), a file with an error (the Python parse), topics to create, grow, refuse and leave
    alone, an orphan, drift, policy findings. Returns (manifests, snapshots, policy)."""
    import yaml

    from kafkaops.snapshot.format import FORMAT, VERSION
    from kafkaops.snapshot.take import Snapshot
    from kafkaops.snapshot.write import write_snapshot

    repo = root / "repo" / "clusters" / WORKLOAD_CLUSTER
    (repo / "topics").mkdir(parents=True)
    (repo / "acls").mkdir()
    topics = [_manifest("KafkaTopic", f"team.events.{i}", {"partitions": 3 + i % 3, "replicationFactor": 3,
                                                          "config": {"retention.ms": str(3_600_000 * (i + 1))}})
              for i in range(12)]
    (repo / "topics" / "events.yaml").write_text(yaml.safe_dump_all(topics, sort_keys=False))
    acls = [_manifest("KafkaAcl", f"team-app-{i}", {"principal": f"User:team-app-{i}", "acls": [
        {"resource": {"type": "Topic", "name": "team.", "patternType": "Prefixed"}, "operations": ["Read", "Describe"]},
        {"resource": {"type": "Group", "name": f"team-app-{i}"}, "operations": ["Read"]}]}) for i in range(4)]
    (repo / "acls" / "apps.yaml").write_text(yaml.safe_dump_all(acls, sort_keys=False))
    wrong = _manifest("KafkaTopic", "team.wrong", {"partitions": 0, "replicationFactor": 3})
    (repo / "topics" / "wrong.yaml").write_text(yaml.safe_dump(wrong, sort_keys=False))
    policy = root / "policy.yaml"
    policy.write_text("version: 1\ncheck: both\ntopics:\n  naming:\n    - pattern: 'team\\.[a-z0-9.]+'\n"
                      "  minInsyncReplicas: 2\n  maxPartitions: 4\nacls:\n  forbidWildcardPrincipal: true\n")
    brokers = (0, 1, 2)
    observed = [(f"team.events.{i}", 3 + i % 3 - (1 if i in (1, 2) else 0) + (1 if i == 3 else 0)) for i in range(11)]
    observed.append(("legacy.orphan", 1))
    rows: dict[str, list[dict[str, object]]] = {"topics": [], "partitions": [], "topic_configs": [], "acls": []}
    for i, (name, partitions) in enumerate(observed):
        c = {"cluster": WORKLOAD_CLUSTER, "topic": name}
        rows["topics"].append({**c, "topic_id": None, "partitions": partitions, "replication_factor": 3,
                               "internal": False})
        rows["partitions"] += [{**c, "partition": p, "leader": brokers[p % 3], "replicas": [brokers[(p + r) % 3]
                                for r in range(3)], "isr": list(brokers)} for p in range(partitions)]
        rows["topic_configs"].append({**c, "key": "retention.ms", "value": str(3_600_000 * (i + 1 + (i == 4))),
                                      "source": "DYNAMIC_TOPIC_CONFIG", "sensitive": False})
    rows["acls"] = [{"cluster": WORKLOAD_CLUSTER, "principal": principal, "resource_type": "Topic",
                     "resource_name": name, "pattern_type": pattern, "operation": "Read", "permission": "Allow",
                     "host": "*"} for principal, name, pattern in (("User:team-app-0", "team.", "Prefixed"),
                                                                  ("User:someone", "*", "Literal"))]
    header = {"format": FORMAT, "version": VERSION, "cluster": WORKLOAD_CLUSTER, "clusterId": None,
              "bootstrap": "127.0.0.1:9092", "controllerId": 0,
              "brokers": [{"id": b, "host": "127.0.0.1", "port": 9092 + b, "rack": "abc"[b]} for b in brokers],
              "takenAt": "2026-01-01T00:00:00Z", "seconds": 0.0,
              "counts": {"topics": len(rows["topics"]), "acls": len(rows["acls"])}, "notes": []}
    snapshots = root / "snapshots"
    write_snapshot(Snapshot(header, **{table: tuple(values) for table, values in rows.items()}), snapshots)
    return root / "repo", snapshots, policy


def _run_workload(root: Path, dump: Path) -> None:
    """In a child process: the workload through the pipeline in a JVM that writes its classes to
    `dump` when it exits, then that JVM's exit awaited (the archive is written as it exits)."""
    from pyspark import SparkContext

    from kafkaops.fleet import session as session_module
    from kafkaops.fleet.pipeline import FleetOptions, run

    repo, snapshots, policy = write_workload(root)
    java = session_module.local_java_options(small=True, class_archive=None)
    spark = session_module.create_session("local[2]", small=True, conf={
        "spark.driver.extraJavaOptions": " ".join([*java, f"-XX:ArchiveClassesAtExit={dump}", "-Xlog:cds=off",
                                                   "-Xlog:cds+dynamic=off"])})
    run(FleetOptions(desired=[str(repo)], observed=str(snapshots), out=str(root / "out"), policy=str(policy)),
        echo=lambda line: None, spark=spark)
    gateway = SparkContext._gateway  # noqa: SLF001 - the JVM this process launched
    process = gateway.proc
    spark.stop()
    gateway.shutdown()
    process.stdin.close()  # Spark's gateway server exits when its stdin ends: HotSpot then writes the archive
    process.wait(timeout=RECORD_TIMEOUT)


def record(output: Path | None = None) -> Path:
    """Record the archive (and its stamp) at `output` (default: archive_path()); returns its path.
    ArchiveError when it cannot be: no JVM or Spark here, or the recording run failed (its output
    is in the message)."""
    output = output or archive_path()
    if _spark_home() is None:
        raise ArchiveError("the archive holds Spark's classes, and PySpark is not installed: "
                           "pip install 'kafkaops[fleet]'")
    if java_binary() is None:
        raise ArchiveError("no Java runtime (java on PATH, or $JAVA_HOME/bin/java): Spark needs Java 17+")
    current = fingerprint()
    assert current is not None  # both found above
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="kafkaops-classes-") as tmp:
        started = time.monotonic()
        child = subprocess.run([sys.executable, "-m", "kafkaops.fleet.class_archive", "--workload", tmp,
                                "--dump", str(partial)], capture_output=True, text=True, timeout=RECORD_TIMEOUT)
        if child.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
            partial.unlink(missing_ok=True)
            detail = (child.stderr or child.stdout).strip()[-2000:]
            raise ArchiveError(f"the recording run failed (exit {child.returncode}, "
                               f"{time.monotonic() - started:.0f} s){':' + chr(10) + detail if detail else ''}")
    _stamp_path(output).unlink(missing_ok=True)  # a stamp never vouches for another archive, even for a moment
    os.replace(partial, output)
    _stamp_path(output).write_text(current + "\n", "utf-8")
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkaops.fleet.class_archive",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, help=f"where to write the archive (default: {archive_path()})")
    parser.add_argument("--if-stale", action="store_true",
                        help="record only when there is no archive recorded for this JVM, Spark and reader jar")
    parser.add_argument("--workload", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.workload is not None and args.dump is not None:
        _run_workload(args.workload, args.dump)
        return 0
    if args.if_stale and (current := usable(args.output)) is not None:
        print(f"{current} is up to date")
        return 0
    try:
        started = time.monotonic()
        recorded = record(args.output)
    except ArchiveError as exc:
        print(f"kafkaops.fleet.class_archive: {exc}", file=sys.stderr)
        return 1
    print(f"recorded {recorded} ({recorded.stat().st_size / 2**20:.0f} MiB, {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
