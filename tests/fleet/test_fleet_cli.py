"""`kafkaops fleet plan` as a user runs it: arguments checked before Spark starts, a quiet console.

Everything here goes through the real entry point in a child process (`python -m kafkaops`, or the
installed `kafkaops` script); one run to compare with is made in this process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fleet_helpers import SnapTopic, topic, write_snapshot, write_yaml

from kafkaops.fleet import jvmconsole, preflight
from kafkaops.fleet.errors import FleetError, PolicyError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# Generous: the checks take milliseconds and the CLI starts in under a second; Spark's JVM alone
# takes 5-10 s here, which this bound would catch.
FAST = 5.0
SPARK_NOISE = ("WARNING: Using incubator modules", "log4j", "NativeCodeLoader", "Using Spark's default",
               "Setting default log level", "[Stage ", " WARN ", " INFO ")


def _kafkaops(*args: str, cwd: Path = ROOT) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "kafkaops", *args], capture_output=True, text=True, cwd=cwd,
                            timeout=600)
    return result, time.monotonic() - started


def _snapshots(root: Path) -> Path:
    write_snapshot(root, "dev", [SnapTopic("orders.events.v1", 6, 1)], brokers=(1, 2, 3))
    write_snapshot(root, "prod", [SnapTopic("payments.transactions.v1", 12, 3)], brokers=tuple(range(9)))
    return root


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    repo = write_yaml(tmp_path / "repo" / "topics.yaml", topic("orders.events.v1", cluster="dev")).parent
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\ntopics: {maxPartitions: 100}\n")
    return {"repo": repo, "snaps": _snapshots(tmp_path / "snaps"), "policy": policy, "out": tmp_path / "out",
            "tmp": tmp_path}


def _bad_arguments(i: dict[str, Path]) -> list[tuple[list[str], list[str]]]:
    """(arguments, the error lines expected) for each mistake a user makes."""
    tmp = i["tmp"]
    (tmp / "empty").mkdir()
    (tmp / "hidden" / ".git").mkdir(parents=True)
    (tmp / "hidden" / ".git" / "x.yaml").write_text("a: 1\n")
    (tmp / "nosnaps" / "dev").mkdir(parents=True)
    (tmp / "bad-policy.yaml").write_text("version: 1\ntopics: {maxPartitions: -1}\n")
    (tmp / "notes.txt").write_text("hello\n")
    ok = ["-f", str(i["repo"]), "--observed", str(i["snaps"]), "--output-dir", str(i["out"])]
    return [
        (["-f", str(tmp / "nope"), *ok[2:]], [f"Error: -f {tmp / 'nope'}: no such file or directory"]),
        (["-f", str(tmp / "empty"), *ok[2:]],
         [f"Error: -f {tmp / 'empty'}: no manifests under it (no *.yaml or *.yml files)"]),
        (["-f", str(tmp / "hidden"), *ok[2:]],
         [f"Error: -f {tmp / 'hidden'}: no manifests under it (no *.yaml or *.yml files)"]),
        (["-f", str(tmp / "notes.txt"), *ok[2:]],
         [f"Error: -f {tmp / 'notes.txt'}: not a manifest file (*.yaml or *.yml)"]),
        ([*ok[:2], "--observed", str(tmp / "missing"), *ok[4:]],
         [f"Error: --observed {tmp / 'missing'}: no such directory"]),
        ([*ok[:2], "--observed", str(tmp / "nosnaps"), *ok[4:]],
         [f"Error: --observed {tmp / 'nosnaps'}: no snapshots in it (expected {tmp / 'nosnaps' / '<cluster>' / 'header.json'}, "
          "as `kafkaops snapshot` writes them)"]),
        ([*ok, "--policy", str(tmp / "bad-policy.yaml")],
         [f"Error: {tmp / 'bad-policy.yaml'}: topics.maxPartitions: -1 is less than the minimum of 1"]),
        ([*ok, "--policy", str(tmp / "no-policy.yaml")], [f"Error: --policy {tmp / 'no-policy.yaml'}: no such file"]),
        ([*ok[:4], "--output-dir", str(tmp / "notes.txt")],
         [f"Error: --output-dir {tmp / 'notes.txt'}: exists and is not a directory"]),
        (["-f", str(tmp / "empty"), "--observed", str(tmp / "missing"), *ok[4:]],  # every mistake at once
         [f"Error: -f {tmp / 'empty'}: no manifests under it (no *.yaml or *.yml files)",
          f"Error: --observed {tmp / 'missing'}: no such directory"]),
    ]


def test_bad_arguments_fail_before_spark_starts(inputs):
    for args, expected in _bad_arguments(inputs):
        result, seconds = _kafkaops("fleet", "plan", *args)
        print(f"{seconds:.2f} s: {' '.join(args[-2:])}")
        assert result.returncode == 1, (args, result.stderr)
        assert result.stderr.splitlines() == expected, args
        assert result.stdout == ""
        assert seconds < FAST, (args, seconds)  # no JVM: Spark's start alone takes longer
        assert not inputs["out"].exists()


def test_old_spelling_of_output_dir_works_with_a_deprecation_warning(inputs):
    missing = inputs["tmp"] / "missing"
    result, _ = _kafkaops("fleet", "plan", "-f", str(inputs["repo"]), "--observed", str(missing),
                          "--out", str(inputs["out"]))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "kafkaops: --out is deprecated; use --output-dir (the old spelling still works for now)",
        f"Error: --observed {missing}: no such directory"]


def test_missing_required_options_are_usage_errors(inputs):
    result, _ = _kafkaops("fleet", "plan", "--observed", str(inputs["snaps"]), "--output-dir", str(inputs["out"]))
    assert result.returncode == 1 and "Missing option '-f'" in result.stderr  # usage errors exit 1 (README)
    result, _ = _kafkaops("fleet", "plan", "-f", str(inputs["repo"]), "--observed", str(inputs["snaps"]))
    assert result.returncode == 1 and "Missing option '--output-dir'" in result.stderr


def test_plan_task_topics_must_be_a_positive_number(inputs):
    result, _ = _kafkaops("fleet", "plan", "-f", str(inputs["repo"]), "--observed", str(inputs["snaps"]),
                          "--output-dir", str(inputs["out"]), "--plan-task-topics", "0")
    assert result.returncode == 1
    assert "Invalid value for '--plan-task-topics': 0 is not a positive number of topics" in result.stderr
    assert not inputs["out"].exists()


def test_preflight_answers_the_policy_and_the_input_size(inputs):
    checked = preflight.check([str(inputs["repo"])], str(inputs["snaps"]), str(inputs["policy"]), str(inputs["out"]))
    assert checked.policy is not None and checked.policy.thresholds == {"maxPartitions": 100}
    manifests = (inputs["repo"] / "topics.yaml").stat().st_size
    snapshots = sum(p.stat().st_size for p in inputs["snaps"].rglob("*") if p.is_file())
    assert checked.input_bytes == manifests + snapshots
    # file: URIs are local; other filesystems are left to Spark (their size is unknown)
    assert preflight.check([f"file:{inputs['repo']}"], str(inputs["snaps"]), None, "out").input_bytes is not None
    remote = preflight.check(["s3a://bucket/repo"], str(inputs["snaps"]), "hdfs:///policy.yaml", "s3a://bucket/out")
    assert remote.policy is None and remote.input_bytes is None


def test_preflight_skips_hidden_files_as_spark_does(tmp_path):
    write_yaml(tmp_path / "_drafts" / "a.yaml", topic("a"))
    write_yaml(tmp_path / ".b.yaml", topic("b"))
    with pytest.raises(FleetError, match="no manifests under it"):
        preflight.check_desired(str(tmp_path))
    size = write_yaml(tmp_path / "c.yml", topic("c")).stat().st_size
    assert preflight.check_desired(str(tmp_path)) == size
    with pytest.raises(PolicyError, match="p.yaml: not valid YAML at line 2, column 1"):
        (tmp_path / "p.yaml").write_text("version: [1\n")
        preflight.check_policy(str(tmp_path / "p.yaml"))


def test_console_noise_is_recognised():
    noise = ["WARNING: Using incubator modules: jdk.incubator.vector",
             "Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties",
             "26/01/02 10:00:00 WARN NativeCodeLoader: Unable to load native-hadoop library for your platform",
             "Setting default log level to \"WARN\".",
             "To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(newLevel).",
             "10:00:01 WARN SparkStringUtils: Truncated the string representation of a plan",
             "[Stage 3:>                                                          (0 + 2) / 2]", "   "]
    kept = ["10:00:02 ERROR Executor: Exception in task 0.0 in stage 3.0 (TID 7)",
            "Traceback (most recent call last):", "java.lang.OutOfMemoryError: Java heap space"]
    assert [line for line in noise + kept if not jvmconsole.is_noise(line)] == kept


def test_console_pump_drops_noise_unless_verbose(capfd):
    text = ("WARNING: Using incubator modules: jdk.incubator.vector\n"
            "[Stage 1:>   (0 + 1) / 1]\r[Stage 1:=====>   (1 + 0) / 1]\rERROR something broke\n")
    for verbose, expected in ((False, "ERROR something broke\n"),
                              (True, "WARNING: Using incubator modules: jdk.incubator.vector\n[Stage 1:>   (0 + 1) / 1]\n"
                                     "[Stage 1:=====>   (1 + 0) / 1]\nERROR something broke\n")):
        read_fd, write_fd = os.pipe()
        os.write(write_fd, text.encode())
        os.close(write_fd)
        jvmconsole._pump(read_fd, verbose)  # noqa: SLF001 - the thread's body, run inline
        assert capfd.readouterr().err == expected


@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                    reason="no Java runtime: `make setup` installs one (Spark needs it)")
def test_a_run_shows_progress_and_no_spark_noise(inputs):
    result, seconds = _kafkaops("fleet", "plan", "-f", str(EXAMPLES / "clusters"), "--observed", str(inputs["snaps"]),
                                "--output-dir", str(inputs["out"]), "--policy", str(EXAMPLES / "policy.yaml"))
    print(f"fleet plan of examples/clusters against two small snapshots: {seconds:.1f} s")
    assert result.returncode == 1, result.stderr  # examples/policy.yaml finds errors in these snapshots
    noisy = [line for line in result.stderr.splitlines() if any(n in line for n in SPARK_NOISE)]
    assert noisy == []
    lines = result.stderr.splitlines()
    assert lines[0] == "[1/9] session: starting Spark ..." and lines[-1].startswith("done in ")
    assert lines[1].startswith("[1/9] session: Spark ") and ", small-input settings - " in lines[1]  # 0.1 MB of input
    assert all(line.startswith(("[", "  problem: ", "done in ")) for line in lines), lines
    # the six plain topic files and five ACL files of examples/ read by the JVM reader, the five others in Python
    assert any(line.startswith("[2/9] desired: 29 documents in 16 files (11 read in the JVM), ") for line in lines), lines
    assert result.stdout.splitlines()[-1] == f"report: {inputs['out']}/report.html"
    assert (inputs["out"] / "report.html").exists()


@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                    reason="no Java runtime: `make setup` installs one (Spark needs it)")
def test_the_installed_command_splits_planning_and_plans_the_same(inputs, spark):
    """`kafkaops fleet plan --plan-task-topics 4`, typed as a user types it (the installed console
    script): examples/ declares 9 topics per cluster, none settled in these snapshots, so each
    cluster is planned in 3 tasks; the plan dataset is the one of a run without the option (run
    in this process, on the tests' shared Spark session: a JVM with the large-run settings, where
    the command's run of this small input had the small-input ones)."""
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from kafkaops.cli.main import cli

    command = Path(sys.executable).with_name("kafkaops")
    assert command.exists(), "the console script `pip install` writes"
    arguments = ["fleet", "plan", "-f", str(EXAMPLES / "clusters"), "--observed", str(inputs["snaps"]), "--output-dir"]
    # the two runs at once: each keeps a core busy only part of the time
    # the command's run also parses every manifest in Python (the JVM reader off), the in-process one does not
    with subprocess.Popen([str(command), *arguments, str(inputs["tmp"] / "split"), "--plan-task-topics", "4",
                           "--conf", "spark.kafkaops.fleet.jvmReader=false"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT) as split:
        whole = CliRunner().invoke(cli, [*arguments, str(inputs["tmp"] / "whole")], catch_exceptions=False)
        split_stderr = split.communicate(timeout=600)[1]
    plans = {}
    for name, code, stderr in (("split", split.returncode, split_stderr), ("whole", whole.exit_code, whole.stderr)):
        assert code == 2, stderr  # changes pending, no policy given
        stage = next(line for line in stderr.splitlines() if line.startswith("[4/9] plan: ") and " - " in line)
        assert ("; 2 large cluster(s) planned in 6 tasks (--plan-task-topics 4) - " in stage) == (name == "split"), stage
        plans[name] = sorted(map(repr, pq.read_table(inputs["tmp"] / name / "plan").to_pylist()))
    assert ", small-input settings - " in split_stderr and ", small-input settings - " not in whole.stderr
    assert " files (all parsed in Python), " in split_stderr and " files (11 read in the JVM), " in whole.stderr
    assert plans["split"] == plans["whole"] and len(plans["whole"]) >= 16


def test_the_old_desired_spelling_still_works_with_a_warning(tmp_path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "kafkaops", "fleet", "plan", "--desired", str(tmp_path / "none"),
                           "--observed", str(tmp_path), "--output-dir", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == ("kafkaops: --desired is deprecated; use -f/--filename "
                                           "(the old spelling still works for now)")
    assert f"-f {tmp_path / 'none'}: no such file or directory" in done.stderr
