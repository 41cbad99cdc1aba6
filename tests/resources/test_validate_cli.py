"""`kafkaops validate` and `kafkaops crds` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner
from resource_helpers import cluster, dump, topic

from kafkaops.cli.main import cli
from kafkaops.resources.crds import render_crds

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_valid_examples_exit_0_with_a_summary() -> None:
    code, out = run("validate", str(REPO / "examples"))
    assert code == 0, out
    assert out.strip().splitlines()[-1] == "34 resources in 19 files: 34 valid, 0 invalid; 0 errors, 0 warnings; 1 document skipped"


def test_errors_exit_1_one_line_per_issue(tmp_path: Path) -> None:
    path = tmp_path / "orders.yaml"
    path.write_text(dump(cluster(), topic("orders", partitions=0, config={"retention.msec": 1})))
    code, out = run("validate", str(path))
    assert code == 1
    lines = out.strip().splitlines()
    # file:line:column of the field (line 16 `  partitions: 0`, line 19 `    retention.msec: 1`)
    assert lines[0] == f"{path}:16:3: [1] KafkaTopic/orders: spec.partitions: 0 partitions: a topic needs at least " \
                       "1 (InvalidPartitionCount)"
    assert lines[1].startswith(f"{path}:19:5: [1] KafkaTopic/orders: spec.config.retention.msec: 'retention.msec' is "
                               "not a Kafka topic config; did you mean retention.ms? (UnknownConfigKey)")
    assert lines[-1] == "2 resources in 1 file: 1 valid, 1 invalid; 2 errors, 0 warnings"


def test_json_output(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(dump(topic("orders", replicationFactor=40000), topic("fine", topicName="__fine")))
    code, out = run("validate", "--output", "json", str(path))
    assert code == 1
    report = json.loads(out)
    assert report["valid"] is False and report["resources"] == 2 and report["validResources"] == 1
    (error,) = report["errors"]
    assert {k: error[k] for k in ("file", "index", "kind", "name", "path", "rule", "severity")} == {
        "file": str(path), "index": 0, "kind": "KafkaTopic", "name": "orders", "path": "spec.replicationFactor",
        "rule": "InvalidReplicationFactor", "severity": "error"}
    assert error["line"] == 9 and "32767" in error["reason"]
    assert [w["rule"] for w in report["warnings"]] == ["ReservedTopicName"]


def test_warnings_alone_exit_0_unless_strict(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(dump(topic("t", topicName="__t")))
    code, out = run("validate", str(path))
    assert code == 0 and out.splitlines()[0] == f"{path}:10:3: [0] KafkaTopic/t: spec.topicName: '__t': names " \
        "starting with '__' are for Kafka's internal topics (ReservedTopicName)"
    code, out = run("validate", "-o", "json", str(path))
    assert code == 0 and json.loads(out)["valid"] is True
    assert run("validate", "--strict", str(path))[0] == 1


def test_skipped_documents_and_syntax_errors(tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    (tmp_path / "bad.yml").write_text("a: [\n")
    code, out = run("validate", "-v", str(tmp_path))
    assert code == 1
    assert f"{tmp_path / 'bad.yml'}:2:1: [0]: YAML syntax error at line 2" in out
    assert f"note: {tmp_path / 'cm.yaml'}[0]: skipped: v1/ConfigMap is not a kafkaops.io resource" in out
    assert out.strip().endswith("1 document skipped")


def test_github_annotations(tmp_path: Path) -> None:
    path = tmp_path / "orders.yaml"
    path.write_text(dump(cluster(), topic("orders", partitions=0, config={"retention.msec": 1}), topic("t", topicName="__t")))
    code, out = run("validate", "-o", "github", str(path))
    assert code == 1
    lines = out.strip().splitlines()
    assert lines[0] == (f"::error file={path},line=16,col=3,title=InvalidPartitionCount::KafkaTopic/orders: "
                        "spec.partitions: 0 partitions: a topic needs at least 1")
    assert lines[1].startswith(f"::error file={path},line=19,col=5,title=UnknownConfigKey::KafkaTopic/orders: ")
    assert lines[2].startswith(f"::warning file={path},line=30,col=3,title=ReservedTopicName::KafkaTopic/t: "
                               "spec.topicName: '__t'")
    assert lines[3] == "3 resources in 1 file: 2 valid, 1 invalid; 2 errors, 1 warning"


def test_json_issues_carry_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(dump(topic("orders", replicationFactor=40000)))
    (error,) = json.loads(run("validate", "-o", "json", str(path))[1])["errors"]
    assert (error["line"], error["column"]) == (9, 3)


def test_usage_errors_exit_1(tmp_path: Path) -> None:
    # kafkaops maps click's usage errors (2) to 1: 2 only ever means "changes pending" (plan)
    assert run("validate")[0] == 1
    assert run("validate", str(tmp_path / "missing"))[0] == 1
    assert run("validate", "-o", "xml", str(tmp_path))[0] == 1


def test_crds_prints_every_crd() -> None:
    code, out = run("crds")
    assert code == 0 and out == render_crds()
    kinds = [d["spec"]["names"]["kind"] for d in yaml.safe_load_all(out)]
    assert kinds == ["KafkaCluster", "KafkaTopic", "KafkaAcl", "KafkaBrokerConfig", "KafkaUser", "KafkaClientQuota"]


def test_crds_output_dir_and_check(tmp_path: Path) -> None:
    out_dir = tmp_path / "crds"
    code, out = run("crds", "--output-dir", str(out_dir))
    assert code == 0 and out.count("wrote ") == 6
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(p.name for p in (REPO / "crds").iterdir())
    assert run("crds", "--check", str(out_dir))[0] == 0
    target = out_dir / "kafkatopics.kafkaops.io.yaml"
    target.write_text(target.read_text() + "# edited\n")
    code, out = run("crds", "--check", str(out_dir))
    assert code == 1 and "kafkatopics.kafkaops.io.yaml: differs" in out
