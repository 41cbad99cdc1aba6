"""The SparkSession of a fleet run.

- `master` given (`--master URL`): that master.
- Else whatever launched us decides: under `spark-submit --master yarn ...` (or with
  `spark.master` in spark-defaults.conf) the job runs there unchanged; a plain
  `kafkaops fleet plan` runs in `local[*]`, every core of this machine.

In local mode the shuffles are sized for the machine (2 partitions per core; adaptive
execution coalesces them further), the driver gets `driver_memory`, logs are
quiet and the UI is off unless asked for. On a cluster the cluster's own settings
apply; `conf` (`--conf key=value`) overrides anything.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
APP_NAME = "kafkaops-fleet"
DEFAULT_DRIVER_MEMORY = "4g"
AUTO = "auto"  # create_session(class_archive=AUTO): Spark's class archive when one matches this machine


# A small local run (the input is a few megabytes: `make fleet-demo`, a team's repository) spends its
# time starting the JVM, compiling query plans and scheduling tiny tasks, not on data: one shuffle
# partition, no adaptive re-planning (it splits every query into more jobs), no whole-stage code
# generation (compiling generated Java costs more than interpreting a few rows), and a JVM that
# compiles with C1 only and collects garbage in one thread (C2 and parallel GC threads compete for
# the cores during a run this short). docs/benchmarks.md has the figures. A JVM limited to C1 reserves
# only 48 MiB for compiled code (240 MiB otherwise): a 100,000-topic run (30 MB of manifests, small
# by this measure) filled it during its report stage; HotSpot flushed most compiled methods and
# compiled them again (report stage 10-12 s against 8 s with room), and in one run disabled its
# compiler, printing "CodeCache is full. Compiler has been disabled" on the user's console.
# Nor does such a run compile the projections and predicates left outside whole-stage code:
# `spark.sql.codegen.factoryMode=NO_CODEGEN` evaluates them on Spark's interpreted path, the one it
# falls back to whenever compiling fails (an internal setting, read by
# CodeGeneratorWithInterpretedFallback in any mode, not only in Spark's tests; a sort's range
# partitioning still compiles its ordering). And its memory pages are 1 MiB: Spark sizes a page
# from the heap (64 MiB with a 4 GiB driver), hash aggregations and broadcast hash joins take whole
# pages however few their rows, and the broadcast relations of the stages' cached plans stay live,
# so examples/' 29 documents kept ~1 GiB of pages and the JVM collected for 2.6 s; a record larger
# than a page gets a page of its own size, so nothing is limited by it. docs/benchmarks.md has the figures ("A small fleet's fixed cost").
SMALL_INPUT_BYTES = 32 * 1024 * 1024
SMALL_RUN = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.buffer.pageSize": "1m",
}
SMALL_RUN_JAVA = ["-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m", "-XX:+UseSerialGC"]

# Any other local run, measured at 1,000,000 topics (docs/benchmarks.md, "the JVM's own work"):
# the JVM's threads' CPU, read from /proc, was 94 s in the JIT compilers and 16-28 s in G1's
# collector threads of 313-328 s. HotSpot's optimizing compiler (C2) takes a method once it has
# run 5,000 times; ten times that leaves Spark's planning code, run a few thousand times per
# query, with the quick compiler (C1), while the per-row loops of a million rows still reach C2
# (compilers 55 CPU s; C1 alone was slower: the desired stage 126 s against 110). The parallel
# collector instead of G1: no concurrent marking, no G1 write barriers in the task threads (GC
# threads 5 CPU s, tasks 158 s against 170). The run: 231-240 s -> 220 s (thresholds) -> 196-209 s
# (both), the JVM resident at 3.2 GiB instead of 4.1-4.4. Twenty times (2026-11-28, once the JVM
# read the manifests: C2 was 87 of the compilers' 105 CPU s): compilers 86-94 CPU s against
# 107-117, the tasks' CPU unchanged, the run 241-251 s against 247-270 (four alternating pairs);
# thirty times had left per-row loops in C1 (tasks +28 s).
# C2 also inlines less (2026-12-06, a fast night): a hot callee of at most 100 bytes of bytecode instead
# of 325, and none whose compiled code already exceeds 1,000 bytes instead of 2,500. Spark generates
# new classes for every query, so C2 compiles large new methods all run long, each smaller with less
# inlined: the compilers 23 CPU s against 36-39, the tasks' CPU unchanged (123-126 s), the run 103.3-103.8 s
# against 107.6-112.0 (three alternating triples; 300,000 topics 55.9 / 56.4 s against 58.9 / 58.5);
# less still (50 and 500) left the tasks 13 CPU s slower.
LARGE_RUN_JAVA = ["-XX:Tier4InvocationThreshold=100000", "-XX:Tier4MinInvocationThreshold=12000",
                  "-XX:Tier4CompileThreshold=300000", "-XX:Tier4BackEdgeThreshold=800000",
                  "-XX:FreqInlineSize=100", "-XX:InlineSmallCode=1000", "-XX:+UseParallelGC"]


def _local_cores(master: str) -> int:
    inside = master[master.find("[") + 1:master.find("]")] if "[" in master else "1"
    if inside.startswith("*"):
        return os.cpu_count() or 1
    try:
        return max(1, int(inside.split(",")[0]))
    except ValueError:
        return os.cpu_count() or 1


def _submitted_master() -> str | None:
    """The master spark-submit (or an existing context) chose, if any."""
    from pyspark import SparkContext

    active = SparkContext._active_spark_context  # noqa: SLF001 - the documented way to find one
    if active is not None:
        return active.master
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # launched by spark-submit: its JVM holds the conf
        return "(spark-submit)"
    return None


_LOG4J = """\
# Spark's own loggers are configured too: with only the root set, its shell start-up
# prints "Setting default log level".
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
logger.spark.name = org.apache.spark
logger.spark.level = {level}
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = {level}
logger.parquet.name = org.apache.parquet
logger.parquet.level = {level}
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = {level}
"""


def _log_level(verbose: bool) -> str:
    """ERROR (WARN with --verbose); KAFKAOPS_SPARK_LOG_LEVEL=WARN or INFO overrides."""
    return os.environ.get("KAFKAOPS_SPARK_LOG_LEVEL", "WARN" if verbose else "ERROR").upper()


def _quiet_log4j(verbose: bool = False) -> str:
    """A log4j2 configuration that lets only errors through (the JVM's start-up chatter otherwise
    fills the terminal)."""
    level = _log_level(verbose).lower()
    path = os.path.join(tempfile.gettempdir(), f"kafkaops-fleet-log4j2-v4-{level}.properties")
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(_LOG4J.format(level=level))
    return path


def local_java_options(*, small: bool, class_archive: Path | str | None = AUTO, verbose: bool = False) -> list[str]:
    """The driver JVM's options of a local run: quiet logs, the compiler and collector settings
    of a small or a large run, and Spark's class archive (class_archive.py) when there is one
    recorded for this JVM and Spark (`class_archive`: AUTO looks for it, None goes without)."""
    from kafkaops.fleet import class_archive as archives

    java = [f"-Dlog4j2.configurationFile=file:{_quiet_log4j(verbose)}", *(SMALL_RUN_JAVA if small else LARGE_RUN_JAVA)]
    archive = archives.usable() if class_archive == AUTO else class_archive
    if archive is not None and Path(archive).is_file():  # a missing file would turn off the JDK's own archive too
        java.append(f"-XX:SharedArchiveFile={archive}")
    return java


def create_session(
    master: str | None = None,
    *,
    conf: Mapping[str, str] | None = None,
    ui: bool = False,
    driver_memory: str | None = None,
    app_name: str = APP_NAME,
    verbose: bool = False,
    small: bool = False,
    class_archive: Path | str | None = AUTO,
) -> SparkSession:
    """The session for one run (an existing one is reused: tests share one JVM). A JVM started
    here has its console filtered (jvmconsole) unless `verbose`. `small` (local mode only): the
    input is a few megabytes, so start-up and per-query overhead dominate (SMALL_RUN).
    `class_archive`: see local_java_options; a given `spark.driver.extraJavaOptions` replaces them all."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from kafkaops.fleet import jvm_rows
    from kafkaops.fleet.jvmconsole import launch_gateway

    builder = SparkSession.builder.appName(app_name)
    submitted = _submitted_master()
    chosen = master or (None if submitted else os.environ.get("KAFKAOPS_SPARK_MASTER") or DEFAULT_MASTER)
    settings: dict[str, str] = {
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.sources.partitionOverwriteMode": "static",
        "spark.sql.parquet.compression.codec": "snappy",
        # pandas is not a dependency: plain (pickled) Python UDFs, without the fallback warning
        "spark.sql.execution.pythonUDF.arrow.enabled": "false",
        # PySpark's default records the Python call site of every DataFrame method and column function
        # in the JVM (an active-session lookup, a stack walk and two calls more each) for error
        # messages, which here would name kafkaops' own lines: 2.6 ms per `F.col` instead of 0.3, ~4 s
        # of a small run's ~1,300 such calls (docs/benchmarks.md, "A small fleet's analysis")
        "spark.python.sql.dataFrameDebugging.enabled": "false",
    }
    if chosen is not None:
        builder = builder.master(chosen)
        if chosen.startswith("local"):
            # Python workers run this interpreter (PySpark's default is whatever `python3` is on PATH,
            # which may not have kafkaops installed).
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no "hostname resolves to loopback" warning
            cores = _local_cores(chosen)
            settings.update({
                "spark.sql.shuffle.partitions": str(max(2, 2 * cores)),
                "spark.default.parallelism": str(max(2, 2 * cores)),
                "spark.sql.files.maxPartitionBytes": str(16 * 1024 * 1024),
                "spark.driver.memory": driver_memory or DEFAULT_DRIVER_MEMORY,
                "spark.ui.enabled": "true" if ui else "false",
                "spark.ui.showConsoleProgress": "false",
                "spark.driver.host": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
                "spark.driver.bindAddress": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
            })
            if small:
                settings.update(SMALL_RUN)
            if not (conf or {}).get("spark.driver.extraJavaOptions"):
                java = local_java_options(small=small, class_archive=class_archive, verbose=verbose)
                settings["spark.driver.extraJavaOptions"] = " ".join(java)
    elif driver_memory:
        settings["spark.driver.memory"] = driver_memory
    jar = jvm_rows.jar_path()
    if jar.is_file():  # the desired stage's JVM reader (jvm_rows.py), shipped to executors on a cluster too
        given = (conf or {}).get("spark.jars")
        settings["spark.jars"] = f"{given},{jar}" if given else str(jar)
        conf = {k: v for k, v in (conf or {}).items() if k != "spark.jars"}
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:  # noqa: SLF001
        # start the JVM ourselves to own its console; the builder then uses this gateway
        conf_obj = SparkConf(loadDefaults=False).setAll(list(settings.items()))
        if chosen is not None:
            conf_obj.setMaster(chosen)
        SparkContext._ensure_initialized(gateway=launch_gateway(conf_obj, verbose), conf=conf_obj)  # noqa: SLF001
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(_log_level(verbose))
    for key in ("spark.sql.shuffle.partitions",):  # runtime settings apply to a reused session too
        if key in settings:
            spark.conf.set(key, settings[key])
    return spark


def shuffle_partitions(spark: SparkSession) -> int:
    return int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
