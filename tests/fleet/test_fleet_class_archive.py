"""Spark's class archive (kafkaops/fleet/class_archive.py): used only when its stamp matches this
machine, named to a local run's JVM only when it exists, a JVM's complaint about it made one line,
and mapped by the tests' own session when `make setup` recorded it. Recording it (the command the
image's install step runs) and a JVM mapping what was recorded: tests/packaging/test_lean_install.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kafkaops.fleet import class_archive, jvmconsole
from kafkaops.fleet.session import LARGE_RUN_JAVA, SMALL_RUN_JAVA, local_java_options

needs_java = pytest.mark.skipif(class_archive.java_binary() is None,
                                reason="no Java runtime: `make setup` installs one (Spark needs it)")


def _machine(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A JVM, a Spark home and a reader jar as files (only their identity is fingerprinted)."""
    java = tmp_path / "jdk" / "bin" / "java"
    libjvm = tmp_path / "jdk" / "lib" / "server" / "libjvm.so"
    jars = tmp_path / "spark" / "jars"
    for path in (java, libjvm, jars / "spark-core_2.13-4.3.0.jar", jars / "spark-sql_2.13-4.3.0.jar"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * 10)
    reader = tmp_path / "kafkaops-fleet.jar"
    reader.write_bytes(b"jar")
    return java, tmp_path / "spark", reader


def test_an_archive_is_used_only_where_its_stamp_matches_the_jvm_spark_and_reader(tmp_path: Path) -> None:
    java, spark_home, reader = _machine(tmp_path)
    recorded = class_archive.fingerprint(java, spark_home, reader)
    archive = tmp_path / "spark-classes.jsa"
    assert class_archive.usable(archive, recorded) is None  # nothing recorded yet
    archive.write_bytes(b"archive")
    assert class_archive.usable(archive, recorded) is None  # no stamp: nothing vouches for it
    (tmp_path / "spark-classes.jsa.stamp").write_text(recorded + "\n")
    assert class_archive.usable(archive, recorded) == archive

    def changed(path: Path, data: bytes) -> str | None:
        old, stat = path.read_bytes(), path.stat()
        path.write_bytes(data)
        try:
            return class_archive.fingerprint(java, spark_home, reader)
        finally:
            path.write_bytes(old)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            assert class_archive.fingerprint(java, spark_home, reader) == recorded

    # another JVM build, another Spark jar, a rebuilt reader, one jar more: each is another fingerprint
    others = [changed(java.parent.parent / "lib" / "server" / "libjvm.so", b"y" * 11),
              changed(spark_home / "jars" / "spark-sql_2.13-4.3.0.jar", b"z" * 12),
              changed(reader, b"jar2")]
    (spark_home / "jars" / "hadoop-client-api-3.4.1.jar").write_bytes(b"h")
    others.append(class_archive.fingerprint(java, spark_home, reader))
    assert len(set(others) | {recorded}) == 5
    assert all(class_archive.usable(archive, other) is None for other in others)
    assert class_archive.usable(archive, None) is None  # no JVM or Spark here at all


def test_a_local_runs_jvm_is_given_the_archive_only_when_there_is_one(tmp_path: Path) -> None:
    archive = tmp_path / "spark-classes.jsa"
    archive.write_bytes(b"archive")
    option = f"-XX:SharedArchiveFile={archive}"
    small = local_java_options(small=True, class_archive=archive)
    assert small[1:] == [*SMALL_RUN_JAVA, option] and small[0].startswith("-Dlog4j2.configurationFile=file:")
    assert local_java_options(small=False, class_archive=archive)[1:] == [*LARGE_RUN_JAVA, option]
    assert local_java_options(small=False, class_archive=None)[1:] == LARGE_RUN_JAVA
    # HotSpot given a file that is not there starts without its own JDK archive too: never named then
    gone = local_java_options(small=True, class_archive=tmp_path / "gone.jsa")
    assert gone[1:] == SMALL_RUN_JAVA and not any("SharedArchiveFile" in o for o in gone)


def test_the_jvms_warnings_about_an_unusable_archive_become_one_line_unless_verbose() -> None:
    lines = ["[0.249s][warning][cds,dynamic] Unable to use shared archive. The top archive failed to load: /x.jsa",
             "[0.250s][warning][cds] shared class paths mismatch",
             "WARNING: Using incubator modules: jdk.incubator.vector",
             "10:00:02 ERROR Executor: Exception in task 0.0 in stage 3.0 (TID 7)"]
    assert list(jvmconsole.shown(lines, verbose=False)) == [jvmconsole.CLASS_ARCHIVE_UNUSED, lines[3]]
    assert list(jvmconsole.shown(lines, verbose=True)) == lines


def test_recording_without_a_java_runtime_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(class_archive.ArchiveError, match=r"no Java runtime \(java on PATH, or \$JAVA_HOME/bin/java\)"):
        class_archive.record(tmp_path / "classes.jsa")
    assert list(tmp_path.iterdir()) == []  # nothing written


@needs_java
def test_a_fleet_run_of_this_checkout_maps_the_archive_make_setup_recorded(spark) -> None:
    # `make setup` records the archive for this machine; the tests' session is launched the way
    # `kafkaops fleet plan` launches one, so its JVM must have been given it.
    archive = class_archive.usable()
    if archive is None:
        pytest.skip("no archive recorded for this JVM and Spark: `make setup` records it")
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - the JVM of this session
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert f"-XX:SharedArchiveFile={archive}" in arguments
    assert shutil.which("jcmd") is None or _mapped_megabytes(int(jvm.java.lang.ProcessHandle.current().pid())) > 100


def _mapped_megabytes(pid: int) -> float:
    """The size of the class archives a running JVM mapped (`jcmd <pid> VM.info`): the JDK's own is ~12 MiB."""
    info = subprocess.run(["jcmd", str(pid), "VM.info"], capture_output=True, text=True, timeout=60).stdout
    line = next(line for line in info.splitlines() if line.startswith("CDS archive(s) mapped at:"))
    return int(line.split("size ")[1].split(",")[0]) / 2**20
