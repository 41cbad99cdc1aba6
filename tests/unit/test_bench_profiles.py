"""The benches' profiles, which docs/benchmarks.md quotes: `fleet_bench.py` charges the CPU it samples
to the stage the run's log announced, `apply_bench.py --phases` charges time and the collector's
pauses to the engine step they fell in. Pure bookkeeping: no server, no timing asserted."""

from __future__ import annotations

import gc
from pathlib import Path

from bench_helpers import load_bench

from kafkaops.cli.render import requests_text
from kafkaops.reconcile import engine as engine_module
from kafkaops.reconcile.ownership import Ownership


def test_fleet_bench_charges_cpu_to_the_stage_announced_at_the_sample_before(tmp_path: Path) -> None:
    stage_cpu = load_bench("fleet_bench").StageCpu
    log = tmp_path / "fleet.log"
    log.write_text("")
    stages = stage_cpu(log)

    def seen(driver: float, tasks: float, workers: float) -> dict[tuple[int, int], tuple[str, float]]:
        return {(1, 0): ("driver", driver), (2, 11): ("Spark tasks", tasks), (3, 0): ("Python workers", workers)}

    stages.sample(0.0, seen(0.0, 0.0, 0.0))
    with log.open("a") as out:
        out.write("[1/9] session: starting Spark ...\n")
    stages.sample(1.0, seen(0.5, 0.0, 0.0))  # before the line was read: launch's
    with log.open("a") as out:
        out.write("WARN some Spark noise\n[1/9] session: Spark 4.3.0 - 4.0 s\n[2/9] desired: reading ...\n")
    stages.sample(3.0, seen(0.5, 2.0, 0.0))  # session's (the stage at the sample before)
    with log.open("a") as out:
        out.write("[3/9] observed: rea")  # a line still being written is not read yet
    stages.sample(4.0, seen(0.5, 2.5, 1.5))  # desired's
    with log.open("a") as out:
        out.write("ding snapshots\n")
    stages.sample(5.0, seen(0.5, 3.0, 3.0))  # still desired's: the observed line was incomplete at 4.0
    stages.sample(6.0, seen(0.6, 3.0, 3.0))  # observed's

    assert dict(stages.wall) == {"launch": 1.0, "session": 2.0, "desired": 2.0, "observed": 1.0}
    assert stages.cpu["launch"]["driver"] == 0.5
    assert stages.cpu["session"]["Spark tasks"] == 2.0
    assert stages.cpu["desired"]["Spark tasks"] == 1.0 and stages.cpu["desired"]["Python workers"] == 3.0
    assert round(stages.cpu["observed"]["driver"], 6) == 0.1
    rows = {line.split(" | ")[0].lstrip("| "): line for line in stages.table()[2:]}
    assert list(rows) == ["launch", "session", "desired", "observed"]
    assert rows["desired"].endswith("| 4.0 | 2.00 |")  # 4 CPU seconds in 2 s: both cores busy
    assert rows["session"].endswith("| 2.0 | 1.00 |")


def test_apply_bench_phases_charge_time_and_collector_pauses_to_their_step() -> None:
    phases = load_bench("apply_bench").Phases()
    phases.marks = [(1.0, "plan"), (2.0, "other"), (2.5, "send"), (4.0, "other"), (4.2, "wait"), (5.0, "record"),
                    (5.5, "record")]
    # a pause is charged to the step it started in: one starting as `send` begins is send's
    phases.pauses = [(0.5, 0.1), (1.5, 0.2), (2.5, 0.03), (4.5, 0.05), (5.9, 0.01)]
    summary = phases.summary(0.0, 6.0)
    assert summary == {"read": (1.0, 0.1), "plan": (1.0, 0.2), "other": (0.7, 0.0), "send": (1.5, 0.03),
                       "wait": (0.8, 0.05), "record": (1.0, 0.01)}


def test_apply_bench_phases_wrap_the_engine_and_put_it_back() -> None:
    phases = load_bench("apply_bench").Phases()
    originals = {name: getattr(engine_module, name) for name, _ in phases.STEPS}
    phases.install()
    try:
        assert all(getattr(engine_module, name) is not original for name, original in originals.items())
        assert phases.on_collection in gc.callbacks
        assert engine_module.ownership_changes(Ownership(), []) == originals["ownership_changes"](Ownership(), [])
        assert [label for _, label in phases.marks] == ["record", "record"]  # the recording step, then after it
        gc.collect()
        assert phases.pauses  # the collector's pause was seen
    finally:
        phases.remove()
    assert all(getattr(engine_module, name) is original for name, original in originals.items())
    assert phases.on_collection not in gc.callbacks


def test_apply_bench_reads_the_requests_from_the_cli_footer() -> None:
    footer_requests = load_bench("apply_bench").footer_requests
    printed = ("  created   KafkaTopic a.b  (x.yaml[0])\n"
               f"Apply to 127.0.0.1:1: 1 applied, 0 failed, 0 unchanged in 0.4s; requests: "
               f"{requests_text({'CreateTopics': 4, 'Metadata': 3, 'DescribeConfigs': 1})}\n")
    assert footer_requests(printed) == {"CreateTopics": 4, "Metadata": 3, "DescribeConfigs": 1}
    assert footer_requests("Nothing to do: every resource is as declared.\n") == {}


def test_suite_times_sums_a_junit_report_by_file(tmp_path: Path) -> None:
    report = tmp_path / "suite.xml"
    report.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" time="12.5">'
        '<testcase classname="tests.fleet.test_fleet_cli" name="a" time="4.0"/>'
        '<testcase classname="tests.fleet.test_fleet_cli" name="b" time="1.5"/>'
        '<testcase classname="tests.e2e.test_operator_e2e.TestStorm" name="c" time="6.25"/>'
        '</testsuite></testsuites>')
    wall, by_file = load_bench("suite_times").times(report)
    assert wall == 12.5
    assert by_file == {"tests/fleet/test_fleet_cli.py": 5.5, "tests/e2e/test_operator_e2e.py": 6.25}
