"""The JVM of a local fleet run runs with the JIT, code cache and collector settings session.py chooses."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kafkaops.fleet.session import LARGE_RUN_JAVA, SMALL_RUN_JAVA


def test_a_large_local_run_raises_the_optimizing_compilers_thresholds_and_inlines_less(spark) -> None:
    # the tests' session is made like a large local run (no small-input settings); the JVM reports
    # the values it runs with, not only the arguments it was given
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - the JVM of this session
    diagnostics = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    wanted = dict(flag.removeprefix("-XX:").split("=") for flag in LARGE_RUN_JAVA if "=" in flag)
    running = {name: diagnostics.getVMOption(name).getValue() for name in wanted}
    assert running == wanted
    assert running["Tier4InvocationThreshold"] == "100000"  # twenty times HotSpot's 5,000
    # C2 inlines less than HotSpot's 325 / 2,500 (its compilations of Spark's generated code)
    assert (running["FreqInlineSize"], running["InlineSmallCode"]) == ("100", "1000")
    assert diagnostics.getVMOption("UseParallelGC").getValue() == "true"
    assert diagnostics.getVMOption("UseG1GC").getValue() == "false"


def test_a_small_local_run_has_room_for_its_compiled_code(spark) -> None:
    # A JVM limited to C1 (the small-input settings) reserves 48 MiB for compiled code unless told
    # otherwise; a 100,000-topic run filled that and HotSpot disabled its compiler mid-run. Asked of
    # the same Java that runs Spark here, with the small run's options.
    java_home = spark.sparkContext._jvm.java.lang.System.getProperty("java.home")  # noqa: SLF001
    shown = subprocess.run([str(Path(java_home) / "bin" / "java"), *SMALL_RUN_JAVA, "-XX:+PrintFlagsFinal",
                            "-version"], capture_output=True, text=True, check=True, timeout=60).stdout
    flags = {line.split()[1]: line.split()[3] for line in shown.splitlines() if line.count("=") == 1
             and len(line.split()) >= 4}
    assert flags["TieredStopAtLevel"] == "1"
    assert int(flags["ReservedCodeCacheSize"]) >= 240 * 1024 * 1024


_COMPILATIONS = """
import json, random
from kafkaops.fleet.session import create_session

spark = create_session("local[1]", small=True)
metric = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
frame = spark.createDataFrame([(i, f"n{i}") for i in range(50)], "a int, b string")
frame.count()  # whatever turning Python's rows into Spark's compiles, it does so before the counts


def compilations(mode):
    spark.conf.set("spark.sql.codegen.factoryMode", mode)
    before = metric.getCount()
    k = random.randrange(10**6, 10**7)  # code never generated before: none from Spark's cache
    rows = frame.filter(f"a % 3 = 0 and a + {k} > 0").selectExpr(f"a * {k} as c", "upper(b) as d").collect()
    assert len(rows) == 17
    return metric.getCount() - before


small = compilations(spark.conf.get("spark.sql.codegen.factoryMode"))
print(json.dumps({"small": small, "compiled": compilations("FALLBACK"), "page": spark.conf.get("spark.buffer.pageSize")}))
spark.stop()
"""


def test_a_small_local_run_evaluates_expressions_without_compiling_them() -> None:
    # The small-input settings rely on an internal Spark setting (spark.sql.codegen.factoryMode):
    # a small run's filter and projection are evaluated, not compiled to Java first; the same query
    # with Spark's default mode, in the same JVM, compiles (so the count can see it). A run of its
    # own: the tests' shared session has the large-run settings.
    import json
    import sys

    shown = subprocess.run([sys.executable, "-c", _COMPILATIONS], capture_output=True, text=True, timeout=180)
    assert shown.returncode == 0, shown.stderr
    counts = json.loads(shown.stdout.strip().splitlines()[-1])
    assert counts == {"small": 0, "compiled": counts["compiled"], "page": "1m"} and counts["compiled"] >= 1, counts


def test_a_column_function_is_three_calls_into_the_jvm_not_thirteen(spark, monkeypatch) -> None:
    # PySpark's default records each DataFrame method's and column function's Python call site in the
    # JVM (spark.python.sql.dataFrameDebugging.enabled): an active-session lookup, the setting, the
    # origin looked up, set and cleared, 13 commands where the function itself takes 3 (find the
    # class, the method, call it). Our sessions turn that off: counted here as py4j sends them.
    from pyspark.errors import utils as error_utils
    from pyspark.sql import functions as F

    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    client = spark.sparkContext._gateway._gateway_client  # noqa: SLF001
    sent = []
    original = client.send_command
    monkeypatch.setattr(error_utils, "_enable_debugging_cache", None)  # read the setting again, as a new process would
    F.col("first")  # which reads it

    def counted(command, *args, **kwargs):  # noqa: ANN001, ANN202 - py4j's send_command
        sent.append(command)
        return original(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", counted)
    for name in ("a", "b", "c", "d", "e"):
        F.col(name)
    assert len(sent) == 3 * 5, sent
