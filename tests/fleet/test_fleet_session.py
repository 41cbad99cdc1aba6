"""The JVM of a large local fleet run runs with the JIT and collector settings session.py chooses."""

from __future__ import annotations

from kafkaops.fleet.session import LARGE_RUN_JAVA


def test_a_large_local_run_raises_the_optimizing_compilers_thresholds(spark) -> None:
    # the tests' session is made like a large local run (no small-input settings); the JVM reports
    # the values it runs with, not only the arguments it was given
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - the JVM of this session
    diagnostics = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    wanted = dict(flag.removeprefix("-XX:").split("=") for flag in LARGE_RUN_JAVA if "=" in flag)
    running = {name: diagnostics.getVMOption(name).getValue() for name in wanted}
    assert running == wanted
    assert running["Tier4InvocationThreshold"] == "50000"  # ten times HotSpot's 5,000
    assert diagnostics.getVMOption("UseParallelGC").getValue() == "true"
    assert diagnostics.getVMOption("UseG1GC").getValue() == "false"
