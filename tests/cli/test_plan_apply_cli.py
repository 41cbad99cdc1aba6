"""`kafkaops plan` and `kafkaops apply` through click's CliRunner, against noida-db (a real
Kafka-protocol server) and, for ACLs and broker configs, the in-process fake cluster double.

Topics on the shared noida server start with the `unique` prefix; prune tests use a noida
server of their own (emptied before each test) so that pruning only ever sees their topics.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kafkaops.cli import plan_apply
from kafkaops.cli.main import cli
from kafkaops.cli.progress import PROGRESS_THRESHOLD
from kafkaops.kafka import AdminClient, ConfigResource, ConfigSource
from kafkaops.testing.fake_cluster import FakeClusterDouble
from kafkaops.testing.servers import ServerProcess, free_port, start_noida

from clirun import run_kafkaops, served_double

API = "kafkaops.io/v1alpha1"
MUTATING = {"CreateTopics", "IncrementalAlterConfigs", "CreatePartitions", "DeleteTopics", "CreateAcls", "DeleteAcls"}

pytestmark = pytest.mark.noida


# --- manifests -----------------------------------------------------------------------------------


def _doc(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": copy.deepcopy(spec)}


def kcluster(bootstrap: str, name: str = "main", **spec: Any) -> dict[str, Any]:
    return _doc("KafkaCluster", name, {"bootstrapServers": [bootstrap], **spec})


def topic(name: str, partitions: int = 1, config: dict[str, Any] | None = None, cluster: str = "main",
          **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"clusterRef": {"name": cluster}, "partitions": partitions, "replicationFactor": 1, **spec}
    if config:
        body["config"] = config
    return _doc("KafkaTopic", name, body)


def acl(name: str, principal: str, entries: list[dict[str, Any]], cluster: str = "main") -> dict[str, Any]:
    return _doc("KafkaAcl", name, {"clusterRef": {"name": cluster}, "principal": principal, "acls": entries})


def write(path: Path, *docs: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


# --- running and checking ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch .kafkaops/ in the working tree or ~/.config/kafkaops of whoever runs the tests."""
    state = tmp_path / "state" / "state.json"
    monkeypatch.setenv("KAFKAOPS_STATE", str(state))
    monkeypatch.setenv("KAFKAOPS_CONFIG_DIR", str(tmp_path / "config"))
    return state


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def plan(path: Path, bootstrap: str | None, *extra: str) -> Result:
    target = ["--bootstrap-server", bootstrap] if bootstrap else []
    return run("plan", "-f", str(path), *target, *extra)


def apply(path: Path, bootstrap: str | None, *extra: str, input: str | None = None) -> Result:
    target = ["--bootstrap-server", bootstrap] if bootstrap else []
    return run("apply", "-f", str(path), *target, *extra, input=input)


def as_json(result: Result) -> dict[str, Any]:
    return json.loads(result.stdout)


def resources(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for c in report["clusters"] for r in c["resources"]}


async def _read(bootstrap: str, names: list[str]) -> dict[str, tuple[int, dict[str, tuple[str | None, ConfigSource]]]]:
    async with AdminClient.connect(bootstrap) as admin:
        meta = await admin.metadata(names)
        present = [n for n in names if n in meta.topics]
        configs = await admin.describe_configs([ConfigResource.topic(n) for n in present]) if present else {}
        return {
            n: (len(meta.topics[n].partitions),
                {k: (e.value, e.source) for k, e in (configs[ConfigResource.topic(n)].value or {}).items()})
            for n in present
        }


def topics_in(bootstrap: str, *names: str) -> dict[str, tuple[int, dict[str, tuple[str | None, ConfigSource]]]]:
    """{existing topic: (partitions, {config key: (value, source)})} for the names given."""
    return asyncio.run(_read(bootstrap, list(names)))


def override(info: tuple[int, dict[str, tuple[str | None, ConfigSource]]], key: str) -> str | None:
    value, source = info[1][key]
    return value if source is ConfigSource.DYNAMIC_TOPIC_CONFIG else None


async def _all_topics(bootstrap: str) -> set[str]:
    async with AdminClient.connect(bootstrap) as admin:
        return set((await admin.metadata(None)).topics)


async def _delete_all(bootstrap: str) -> None:
    async with AdminClient.connect(bootstrap) as admin:
        names = [n for n, info in (await admin.metadata(None)).topics.items() if not info.internal]
        if names:
            await admin.delete_topics(names)
        for _ in range(100):
            meta = await admin.metadata(None)
            if not [n for n, info in meta.topics.items() if not info.internal]:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"topics still there: {sorted(meta.topics)}")


# --- servers ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def own_noida() -> Iterator[ServerProcess]:
    server = start_noida()
    yield server
    server.stop()


@pytest.fixture
def empty_noida(own_noida: ServerProcess) -> ServerProcess:
    """This module's own noida server, with no topic left by an earlier test."""
    asyncio.run(_delete_all(own_noida.bootstrap))
    return own_noida


def fake_cluster(**options: Any) -> contextlib.AbstractContextManager[FakeClusterDouble]:
    """The fake cluster double served from a thread of its own (CliRunner runs asyncio.run itself)."""
    return served_double(**{"brokers": 3, **options})


# --- plan / apply basics ------------------------------------------------------------------------------------


def test_plan_apply_replan_reapply(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    path = write(tmp_path / "topics.yaml", topic(f"{unique}.a", 3, {"retention.ms": 60000}), topic(f"{unique}.b"))

    planned = plan(path, noida.bootstrap)
    assert planned.exit_code == 2, planned.output
    assert f"+ KafkaTopic {unique}.a  (create; {path}[0])" in planned.stdout
    assert f"+ KafkaTopic {unique}.b  (create; {path}[1])" in planned.stdout
    assert "partitions: + 3" in planned.stdout and "config.retention.ms: + 60000" in planned.stdout
    assert "2 to create, 0 to update, 0 to delete, 0 problems" in planned.stdout
    assert not topics_in(noida.bootstrap, f"{unique}.a", f"{unique}.b"), "plan changed the cluster"

    applied = apply(path, noida.bootstrap, "--yes")
    assert applied.exit_code == 0, applied.output
    assert f"created   KafkaTopic {unique}.a" in applied.stdout
    assert "2 applied, 0 failed, 0 unchanged" in applied.stdout
    found = topics_in(noida.bootstrap, f"{unique}.a", f"{unique}.b")
    assert found[f"{unique}.a"][0] == 3 and found[f"{unique}.b"][0] == 1
    assert override(found[f"{unique}.a"], "retention.ms") == "60000"

    again = plan(path, noida.bootstrap)
    assert again.exit_code == 0, again.output
    assert "no changes (2 resources up to date)" in again.stdout

    reapplied = apply(path, noida.bootstrap, "--output", "json")  # nothing to do: no --yes needed
    assert reapplied.exit_code == 0, reapplied.output
    report = as_json(reapplied)
    (cluster,) = report["clusters"]
    assert not MUTATING & set(cluster["requests"]), cluster["requests"]
    assert {r["state"] for r in cluster["resources"]} == {"unchanged"}


def test_config_change_shows_old_and_new(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    name = f"{unique}.cfg"
    path = write(tmp_path / "t.yaml", topic(name, 1, {"retention.ms": 60000}))
    assert apply(path, noida.bootstrap, "-y").exit_code == 0
    write(path, topic(name, 2, {"retention.ms": 120000}))

    planned = plan(path, noida.bootstrap)
    assert planned.exit_code == 2, planned.output
    assert f"~ KafkaTopic {name}  (partition-increase; {path}[0])" in planned.stdout
    assert "config.retention.ms: 60000 -> 120000" in planned.stdout
    assert "partitions: 1 -> 2" in planned.stdout

    applied = apply(path, noida.bootstrap, "-y")
    assert applied.exit_code == 0, applied.output
    assert f"updated   KafkaTopic {name}" in applied.stdout
    info = topics_in(noida.bootstrap, name)[name]
    assert info[0] == 2 and override(info, "retention.ms") == "120000"


def test_partition_decrease_fails_and_changes_nothing(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    name, other = f"{unique}.shrink", f"{unique}.other"
    path = write(tmp_path / "t.yaml", topic(name, 3, {"retention.ms": 60000}))
    assert apply(path, noida.bootstrap, "-y").exit_code == 0
    write(path, topic(name, 1, {"retention.ms": 120000}), topic(other))

    planned = plan(path, noida.bootstrap)
    assert planned.exit_code == 1
    assert f"! KafkaTopic {name}" in planned.stdout and "PartitionDecrease" in planned.stdout

    applied = apply(path, noida.bootstrap, "-y", "-o", "json")
    assert applied.exit_code == 1
    found = resources(as_json(applied))
    assert found[name]["state"] == "failed" and found[name]["problem"]["reason"] == "PartitionDecrease"
    assert found[other]["state"] == "applied"
    info = topics_in(noida.bootstrap, name)[name]
    assert info[0] == 3 and override(info, "retention.ms") == "60000", "a refused resource was partly changed"


def test_invalid_manifest_does_not_stop_the_valid_ones(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    good = write(tmp_path / "repo" / "good.yaml", topic(f"{unique}.good"))
    bad = write(tmp_path / "repo" / "team" / "bad.yaml", topic(f"{unique}.fine"),
                topic(f"{unique}.bad", 1, {"retention.msec": 5}),
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unrelated"}})
    repo = tmp_path / "repo"

    planned = plan(repo, noida.bootstrap)
    assert planned.exit_code == 1, planned.output
    assert f"{bad}:21:5: [1] KafkaTopic/{unique}.bad: spec.config.retention.msec:" in planned.stdout
    assert "(UnknownConfigKey)" in planned.stdout
    assert f"note: {bad}[2]: skipped" in planned.stdout
    assert f"+ KafkaTopic {unique}.good  (create; {good}[0])" in planned.stdout
    assert f"+ KafkaTopic {unique}.fine" in planned.stdout
    assert "Errors: 1 invalid manifest skipped" in planned.stdout

    applied = apply(repo, noida.bootstrap, "--yes")
    assert applied.exit_code == 1, applied.output
    assert set(topics_in(noida.bootstrap, f"{unique}.good", f"{unique}.fine", f"{unique}.bad")) == {
        f"{unique}.good", f"{unique}.fine"}

    report = as_json(plan(repo, noida.bootstrap, "-o", "json"))
    (invalid,) = report["invalid"]
    assert (invalid["file"], invalid["index"], invalid["name"]) == (str(bad), 1, f"{unique}.bad")
    assert [(i["path"], i["rule"]) for i in invalid["issues"]] == [("spec.config.retention.msec", "UnknownConfigKey")]
    assert report["skipped"][0]["index"] == 2


def test_apply_without_yes_on_a_pipe_changes_nothing(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", topic(f"{unique}.ask"))
    result = apply(path, noida.bootstrap, input="y\n")
    assert result.exit_code == 1
    assert "pass --yes" in result.stderr
    assert f"+ KafkaTopic {unique}.ask" in result.stdout  # the plan is still shown
    assert not topics_in(noida.bootstrap, f"{unique}.ask")


def test_apply_asks_on_a_terminal(noida: ServerProcess, unique: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_apply, "stdin_is_interactive", lambda: True)
    path = write(tmp_path / "t.yaml", topic(f"{unique}.asked"))

    declined = apply(path, noida.bootstrap, input="n\n")
    assert declined.exit_code == 1 and "Apply cancelled" in declined.stderr
    assert "Apply these changes to" in declined.stderr
    end_of_input = apply(path, noida.bootstrap, input="")
    assert end_of_input.exit_code == 1 and "Apply cancelled" in end_of_input.stderr
    assert not topics_in(noida.bootstrap, f"{unique}.asked")

    accepted = apply(path, noida.bootstrap, "-o", "json", input="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert f"+ KafkaTopic {unique}.asked" in accepted.stderr  # with JSON on stdout, the plan is shown on stderr
    assert as_json(accepted)["applied"] is True
    assert topics_in(noida.bootstrap, f"{unique}.asked")


def test_validate_only_changes_nothing(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    name = f"{unique}.existing"
    path = write(tmp_path / "t.yaml", topic(name, 1, {"retention.ms": 60000}))
    assert apply(path, noida.bootstrap, "-y").exit_code == 0
    write(path, topic(name, 1, {"retention.ms": 120000}), topic(f"{unique}.new", 2))

    result = apply(path, noida.bootstrap, "--yes", "--validate-only")
    assert result.exit_code == 0, result.output
    assert "--validate-only: nothing was changed in Kafka." in result.stdout
    assert f"validated KafkaTopic {unique}.new" in result.stdout
    found = topics_in(noida.bootstrap, name, f"{unique}.new")
    assert set(found) == {name} and override(found[name], "retention.ms") == "60000"


def test_json_output_has_the_documented_keys(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", topic(f"{unique}.j", 2, {"retention.ms": 60000}))
    planned = as_json(plan(path, noida.bootstrap, "--output", "json"))
    assert set(planned) >= {"command", "exitCode", "ok", "clusters", "unroutable", "invalid", "warnings", "skipped",
                            "notes"}
    assert planned["command"] == "plan" and planned["exitCode"] == 2 and planned["ok"] is True
    (cluster,) = planned["clusters"]
    assert set(cluster) >= {"name", "bootstrap", "clusterId", "error", "counts", "states", "notes", "requests",
                            "seconds", "resources"}
    assert cluster["counts"]["create"] == 1 and cluster["states"] is None
    (resource,) = cluster["resources"]
    assert resource["kind"] == "KafkaTopic" and resource["action"] == "create" and resource["state"] is None
    assert resource["source"] == {"file": str(path), "index": 0, "kind": "KafkaTopic", "namespace": None,
                                  "name": f"{unique}.j"}
    assert {"field": "partitions", "old": None, "new": "2"} in resource["changes"]
    assert resource["problem"] is None

    applied = as_json(apply(path, noida.bootstrap, "--yes", "--output", "json"))
    assert applied["command"] == "apply" and applied["exitCode"] == 0
    assert applied["applied"] is True and applied["validateOnly"] is False
    (cluster,) = applied["clusters"]
    assert cluster["states"] == {"applied": 1} and cluster["requests"]["CreateTopics"] == 1
    assert cluster["resources"][0]["state"] == "applied" and isinstance(cluster["seconds"], float)


def test_a_long_plan_is_printed_whole_across_writes(noida: ServerProcess, unique: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # the text goes out a chunk of lines per write (plan_apply.emit): with chunks of 7 lines the
    # plan of 12 topics crosses many chunk boundaries, and must print the same as in one write
    path = write(tmp_path / "long.yaml", *(topic(f"{unique}.long{i:02}", 2, {"retention.ms": 60000 + i})
                                           for i in range(12)))
    whole = plan(path, noida.bootstrap)
    monkeypatch.setattr(plan_apply, "EMIT_CHUNK", 7)
    chunked = plan(path, noida.bootstrap)
    assert chunked.exit_code == whole.exit_code == 2, chunked.output
    assert len(whole.stdout.splitlines()) > 7 * 6  # 50 lines: eight writes
    assert chunked.stdout == whole.stdout
    heads = [line for line in chunked.stdout.splitlines() if "+ KafkaTopic" in line]
    assert heads == [f"  + KafkaTopic {unique}.long{i:02}  (create; {path}[{i}])" for i in range(12)]
    assert "12 to create, 0 to update, 0 to delete, 0 problems" in chunked.stdout


def test_the_command_prints_a_plan_longer_than_one_write_as_one_write_would(
        noida: ServerProcess, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the real `kafkaops plan` writing to a pipe: 600 new topics are ~2,400 lines, two writes of
    # plan_apply.EMIT_CHUNK (2,000) lines; what arrives is what click's runner collects in-process
    # when the whole text goes out in one write
    path = write(tmp_path / "many.yaml", *(topic(f"{unique}.w{i:03}", 2, {"retention.ms": 60000 + i})
                                           for i in range(600)))
    ran = run_kafkaops("plan", "-f", str(path), "--bootstrap-server", noida.bootstrap, tmp=tmp_path)
    assert ran.code == 2, ran
    assert len(ran.lines) > plan_apply.EMIT_CHUNK
    monkeypatch.setattr(plan_apply, "EMIT_CHUNK", 10**9)
    assert ran.stdout == plan(path, noida.bootstrap).stdout
    heads = [line for line in ran.lines if "+ KafkaTopic" in line]
    assert heads == [f"  + KafkaTopic {unique}.w{i:03}  (create; {path}[{i}])" for i in range(600)]


def test_progress_lines_when_not_on_a_terminal(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    path = write(tmp_path / "many.yaml", *(topic(f"{unique}.p{i:02}") for i in range(PROGRESS_THRESHOLD + 5)))
    result = apply(path, noida.bootstrap, "--yes")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("progress:")]
    assert "progress: 25/25 resources sent (100%)" in lines and len(lines) <= 11


# --- clusters ------------------------------------------------------------------------------------------------


def test_clusters_from_kafkacluster_manifests(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    repo = tmp_path / "clusters"
    write(repo / "dev" / "cluster.yaml", kcluster(noida.bootstrap, "dev"))
    write(repo / "dev" / "topics.yaml", topic(f"{unique}.routed", cluster="dev"))

    planned = plan(repo, None)
    assert planned.exit_code == 2, planned.output
    assert f"Cluster dev ({noida.bootstrap}, cluster id" in planned.stdout
    assert "Plan for dev: 1 to create" in planned.stdout

    assert apply(repo, None, "--yes").exit_code == 0
    assert topics_in(noida.bootstrap, f"{unique}.routed")


def test_bootstrap_server_overrides_cluster_refs(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", kcluster("127.0.0.1:1", "far-away"), topic(f"{unique}.here", cluster="far-away"))
    result = apply(path, noida.bootstrap, "--yes")
    assert result.exit_code == 0, result.output
    assert topics_in(noida.bootstrap, f"{unique}.here")


def test_unknown_cluster_ref_fails_only_that_resource(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(repo / "cluster.yaml", kcluster(noida.bootstrap, "dev"))
    write(repo / "topics.yaml", topic(f"{unique}.ok", cluster="dev"), topic(f"{unique}.lost", cluster="nowhere"))

    result = apply(repo, None, "--yes", "-o", "json")
    assert result.exit_code == 1
    report = as_json(result)
    (invalid,) = report["invalid"]
    assert invalid["name"] == f"{unique}.lost" and invalid["issues"][0]["rule"] == "UnknownClusterRef"
    assert resources(report)[f"{unique}.ok"]["state"] == "applied"
    assert set(topics_in(noida.bootstrap, f"{unique}.ok", f"{unique}.lost")) == {f"{unique}.ok"}


def test_cluster_ref_to_an_invalid_cluster_is_cluster_not_found(noida: ServerProcess, unique: str,
                                                                 tmp_path: Path) -> None:
    # The named KafkaCluster exists but is invalid: the topic passes validation, no cluster takes it.
    path = write(tmp_path / "t.yaml", kcluster(noida.bootstrap, "dev"),
                 kcluster("not-a-host-port", "broken"),
                 topic(f"{unique}.ok", cluster="dev"), topic(f"{unique}.orphan", cluster="broken"))
    text = apply(path, None, "--yes")
    assert text.exit_code == 1
    assert f"! KafkaTopic {unique}.orphan" in text.stdout and "ClusterNotFound" in text.stdout
    report = as_json(plan(path, None, "-o", "json"))
    (item,) = report["unroutable"]
    assert (item["name"], item["reason"]) == (f"{unique}.orphan", "ClusterNotFound")
    assert set(topics_in(noida.bootstrap, f"{unique}.ok", f"{unique}.orphan")) == {f"{unique}.ok"}


def test_unreachable_cluster_fails_its_resources_only(noida: ServerProcess, unique: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # The CLI gives up on a dead cluster after its retry budget (--retry-budget, 1 s by default).
    dead = f"127.0.0.1:{free_port()}"
    path = write(tmp_path / "t.yaml", kcluster(noida.bootstrap, "up"), kcluster(dead, "down"),
                 topic(f"{unique}.up", cluster="up"), topic(f"{unique}.down", cluster="down"))
    result = apply(path, None, "--yes", "-o", "json")
    assert result.exit_code == 1
    clusters = {c["name"]: c for c in as_json(result)["clusters"]}
    assert clusters["down"]["error"]["reason"] == "ClusterUnreachable"
    assert dead in clusters["down"]["error"]["message"]
    assert [r["state"] for r in clusters["down"]["resources"]] == ["failed"]
    assert clusters["up"]["error"] is None and clusters["up"]["resources"][0]["state"] == "applied"
    assert topics_in(noida.bootstrap, f"{unique}.up")

    text = plan(path, None)
    assert text.exit_code == 1
    assert f"Cluster down ({dead}): ClusterUnreachable: {dead}: connection refused" in text.stdout
    assert "1 resource not checked: " in text.stdout


def test_sasl_cluster_without_credentials_and_passwords_never_shown(noida: ServerProcess, unique: str,
                                                                    tmp_path: Path) -> None:
    secret = "s3cr3t-Pa55word"
    path = write(tmp_path / "t.yaml", kcluster(noida.bootstrap, "secure", sasl={"mechanism": "SCRAM-SHA-512"}),
                 topic(f"{unique}.s", cluster="secure"))
    missing = plan(path, None)
    assert missing.exit_code == 1
    assert "CredentialsMissing" in missing.stdout and "secure.properties" in missing.stdout

    props = tmp_path / "config" / "secure.properties"  # the per-cluster file in $KAFKAOPS_CONFIG_DIR
    props.parent.mkdir(parents=True)
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                     f"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                     f'username="admin" password="{secret}";\n')
    for result in (plan(path, None), plan(path, None, "-o", "json"), apply(path, None, "--yes"),
                   plan(path, noida.bootstrap, "--command-config", str(props))):
        assert result.exit_code == 1  # noida has no SASL: the cluster fails, its topic is not created
        assert "CredentialsMissing" not in result.output
        assert secret not in result.output
    assert not topics_in(noida.bootstrap, f"{unique}.s")


def test_bad_per_cluster_properties_fail_that_cluster_only(noida: ServerProcess, unique: str,
                                                          tmp_path: Path) -> None:
    props = tmp_path / "config" / "bad.properties"
    props.parent.mkdir(parents=True)
    props.write_text("security.protocol=CARRIER_PIGEON\n")
    path = write(tmp_path / "t.yaml", kcluster(noida.bootstrap, "good"), kcluster(noida.bootstrap, "bad"),
                 topic(f"{unique}.g", cluster="good"), topic(f"{unique}.b", cluster="bad"))
    result = apply(path, None, "--yes", "-o", "json")
    assert result.exit_code == 1
    report = as_json(result)
    assert [(u["name"], u["reason"], u["state"]) for u in report["unroutable"]] == [
        (f"{unique}.b", "ClientConfigInvalid", "failed")]
    assert "bad.properties" in report["unroutable"][0]["message"]
    assert set(topics_in(noida.bootstrap, f"{unique}.g", f"{unique}.b")) == {f"{unique}.g"}


def test_no_cluster_at_all_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", topic("orphan"))
    result = plan(path, None)
    assert result.exit_code == 1
    assert "no --bootstrap-server given and no KafkaCluster" in result.stderr


# --- ownership state --------------------------------------------------------------------------------------------


def test_removed_key_reset_only_when_the_state_says_kafkaops_set_it(noida: ServerProcess, unique: str,
                                                                    tmp_path: Path) -> None:
    name = f"{unique}.own"
    state = tmp_path / "mine.json"
    path = write(tmp_path / "t.yaml", topic(name, 1, {"retention.ms": 60000, "cleanup.policy": "compact"}))
    assert apply(path, noida.bootstrap, "-y", "--state", str(state)).exit_code == 0
    assert state.exists()
    write(path, topic(name, 1, {"cleanup.policy": "compact"}))

    without = plan(path, noida.bootstrap, "--no-state")
    assert without.exit_code == 0 and "no changes" in without.stdout, without.output
    assert apply(path, noida.bootstrap, "-y", "--no-state").exit_code == 0
    assert override(topics_in(noida.bootstrap, name)[name], "retention.ms") == "60000"

    other_state = plan(path, noida.bootstrap, "--state", str(tmp_path / "other.json"))
    assert "no changes" in other_state.stdout, other_state.output

    with_state = plan(path, noida.bootstrap, "--state", str(state))
    assert with_state.exit_code == 2, with_state.output
    assert "config.retention.ms: - 60000" in with_state.stdout
    assert apply(path, noida.bootstrap, "-y", "--state", str(state)).exit_code == 0
    info = topics_in(noida.bootstrap, name)[name]
    assert override(info, "retention.ms") is None and override(info, "cleanup.policy") == "compact"
    assert "retention.ms" not in json.dumps(json.loads(state.read_text()))


def test_state_from_the_environment(noida: ServerProcess, unique: str, tmp_path: Path, isolated_state: Path) -> None:
    path = write(tmp_path / "t.yaml", topic(f"{unique}.env", 1, {"retention.ms": 60000}))
    plan(path, noida.bootstrap)
    assert not isolated_state.exists(), "plan wrote the state file"
    assert apply(path, noida.bootstrap, "-y").exit_code == 0
    assert f"topic/{unique}.env" in isolated_state.read_text()


def test_state_file_that_cannot_be_written_is_reported(noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    path = write(tmp_path / "t.yaml", topic(f"{unique}.nostate", 1, {"retention.ms": 60000}))
    result = apply(path, noida.bootstrap, "-y", "--state", str(tmp_path / "a-file" / "state.json"))
    assert result.exit_code == 0, result.output  # the topic was created: that outcome stands
    assert "note: the state file was not updated" in result.stdout
    assert topics_in(noida.bootstrap, f"{unique}.nostate")


def test_unreadable_state_file_stops_before_connecting(tmp_path: Path) -> None:
    state = tmp_path / "bad.json"
    state.write_text("{not json")
    path = write(tmp_path / "t.yaml", topic("x"))
    result = plan(path, "127.0.0.1:1", "--state", str(state))
    assert result.exit_code == 1 and "state file" in result.stderr


# --- prune ------------------------------------------------------------------------------------------------------


def _prune_repo(tmp_path: Path, bootstrap: str, declared: list[str], **deletion: Any) -> Path:
    spec = {"topicDeletion": deletion} if deletion else {}
    write(tmp_path / "repo" / "cluster.yaml", kcluster(bootstrap, "solo", **spec))
    write(tmp_path / "repo" / "topics.yaml", *(topic(n, cluster="solo") for n in declared))
    return tmp_path / "repo"


def _seed(bootstrap: str, tmp_path: Path, names: list[str]) -> None:
    seed = write(tmp_path / "seed.yaml", *(topic(n) for n in names))
    assert apply(seed, bootstrap, "-y", "--no-state").exit_code == 0


def test_prune_with_retain_policy_deletes_nothing(empty_noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    _seed(empty_noida.bootstrap, tmp_path, [f"{unique}.keep", f"{unique}.extra"])
    repo = _prune_repo(tmp_path, empty_noida.bootstrap, [f"{unique}.keep"])  # policy: Retain (the default)

    result = apply(repo, None, "--prune", "--yes")
    assert result.exit_code == 0, result.output
    assert "1 undeclared topic(s) kept because the cluster's topicDeletion.policy is Retain" in result.stdout
    assert f"{unique}.extra" in asyncio.run(_all_topics(empty_noida.bootstrap))


def test_prune_over_the_cap_deletes_nothing(empty_noida: ServerProcess, unique: str, tmp_path: Path) -> None:
    extra = [f"{unique}.x{i}" for i in range(3)]
    _seed(empty_noida.bootstrap, tmp_path, [f"{unique}.keep", *extra])
    repo = _prune_repo(tmp_path, empty_noida.bootstrap, [f"{unique}.keep"], policy="Delete", maxDeletionsPerReconcile=2)

    planned = plan(repo, None, "--prune")
    assert planned.exit_code == 1
    assert "DeletionCapExceeded" in planned.stdout and "nothing was deleted" in planned.stdout

    result = apply(repo, None, "--prune", "--yes", "-o", "json")
    assert result.exit_code == 1
    found = resources(as_json(result))
    assert {found[n]["problem"]["reason"] for n in extra} == {"DeletionCapExceeded"}
    assert set(extra) <= asyncio.run(_all_topics(empty_noida.bootstrap))


def test_prune_under_the_cap_deletes_undeclared_topics(empty_noida: ServerProcess, unique: str,
                                                       tmp_path: Path) -> None:
    _seed(empty_noida.bootstrap, tmp_path, [f"{unique}.keep", f"{unique}.gone"])
    repo = _prune_repo(tmp_path, empty_noida.bootstrap, [f"{unique}.keep"], policy="Delete", maxDeletionsPerReconcile=2)

    without = apply(repo, None, "--yes")
    assert without.exit_code == 0 and "1 topic(s) in the cluster are not declared and are kept" in without.stdout
    assert f"{unique}.gone" in asyncio.run(_all_topics(empty_noida.bootstrap))

    planned = plan(repo, None, "--prune")
    assert planned.exit_code == 2
    assert f"- KafkaTopic {unique}.gone  (delete; not declared)" in planned.stdout

    result = apply(repo, None, "--prune", "--yes")
    assert result.exit_code == 0, result.output
    assert f"deleted   KafkaTopic {unique}.gone" in result.stdout
    remaining = asyncio.run(_all_topics(empty_noida.bootstrap))
    assert f"{unique}.gone" not in remaining and f"{unique}.keep" in remaining


# --- the fake cluster double: ACLs and broker configs ---------------------------------------------------------


def _bindings(double: FakeClusterDouble, principal: str) -> set[tuple[str, int]]:
    return {(b.resource_name, int(b.operation)) for b in double.acls if b.principal == principal}


def test_acls_created_then_a_removed_binding_deleted(tmp_path: Path) -> None:
    principal = "User:orders-service"
    read_write = [{"resource": {"type": "Topic", "name": "orders."}, "operations": ["Read", "Write"]}]
    group = [{"resource": {"type": "Group", "name": "orders-"}, "operations": ["Read"]}]
    with fake_cluster() as double:
        path = write(tmp_path / "acl.yaml", acl("orders", principal, read_write + group))
        planned = plan(path, double.bootstrap)
        assert planned.exit_code == 2, planned.output
        assert f"+ KafkaAcl {principal}  (create;" in planned.stdout

        created = apply(path, double.bootstrap, "-y")
        assert created.exit_code == 0, created.output
        assert len(_bindings(double, principal)) == 3

        write(path, acl("orders", principal, read_write))
        planned = plan(path, double.bootstrap)
        assert planned.exit_code == 2 and "acl: - " in planned.stdout and "Group" in planned.stdout
        removed = apply(path, double.bootstrap, "-y", "-o", "json")
        assert removed.exit_code == 0, removed.output
        assert as_json(removed)["clusters"][0]["requests"].get("DeleteAcls") == 1
        assert {name for name, _ in _bindings(double, principal)} == {"orders."}
        assert plan(path, double.bootstrap).exit_code == 0


def test_broker_config_with_a_short_timeout(tmp_path: Path) -> None:
    with fake_cluster() as double:
        path = write(tmp_path / "b.yaml", _doc("KafkaBrokerConfig", "defaults",
                                               {"clusterRef": {"name": "main"}, "config": {"log.cleaner.threads": 2}}))
        result = apply(path, double.bootstrap, "-y", "--timeout", "5")
        assert result.exit_code == 0, result.output
        assert "updated   KafkaBrokerConfig brokers/default" in result.stdout
        assert plan(path, double.bootstrap).exit_code == 0


def test_bootstrap_override_refuses_one_topic_declared_for_two_clusters() -> None:
    """Validation checks duplicates per cluster; --bootstrap-server sends both clusters' manifests to
    one cluster, where the two declarations would meet: neither is applied, both are named."""
    from kafkaops.cli.targets import DECLARED_TWICE, resolve_targets
    from kafkaops.resources import load_text, validate_load

    text = "\n---\n".join([
        "apiVersion: kafkaops.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: a}\nspec: {bootstrapServers: ['h:1']}",
        "apiVersion: kafkaops.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: b}\nspec: {bootstrapServers: ['h:2']}",
        "apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: t}\nspec: {clusterRef: {name: a}, partitions: 1}",
        "apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: t}\nspec: {clusterRef: {name: b}, partitions: 9}",
        "apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: u}\nspec: {clusterRef: {name: a}, partitions: 1}",
    ])
    validated = validate_load(load_text(text, "two.yaml"))
    assert validated.ok, [str(e) for e in validated.errors]
    targets, unroutable = resolve_targets(validated.valid, "127.0.0.1:9092", None)
    assert [t.topic_name for t in targets[0].desired.topics] == ["u"]
    assert sorted((u.reason, u.resource.topic_name) for u in unroutable) == [(DECLARED_TWICE, "t"), (DECLARED_TWICE, "t")]


def test_replication_factor_change_through_apply_reports_progress_lines(tmp_path: Path) -> None:
    """Not a terminal (CI logs): progress as "moving (...): N/M partitions (P%)" lines on stderr."""
    with fake_cluster(tick_interval=0.02, racks=["a", "b", "c"]) as double:
        path = write(tmp_path / "t.yaml", topic("grow", 6))
        assert apply(path, double.bootstrap, "-y").exit_code == 0
        write(path, topic("grow", 6, replicationFactor=3))
        planned = plan(path, double.bootstrap)
        assert planned.exit_code == 2 and "replicationFactor: 1 -> 3" in planned.stdout
        assert "replica-change" in planned.stdout and "replicaAssignment:" in planned.stdout
        moved = apply(path, double.bootstrap, "-y")
        assert moved.exit_code == 0, moved.output
        assert "): 6/6 partitions moved (100%)" in moved.stderr and "moving (" in moved.stderr
        info = asyncio.run(_describe(double.bootstrap, "grow"))
        assert all(len(set(replicas)) == 3 for replicas in info)
        assert plan(path, double.bootstrap).exit_code == 0


async def _describe(bootstrap: str, name: str) -> list[tuple[int, ...]]:
    async with AdminClient.connect(bootstrap) as admin:
        return [p.replicas for p in (await admin.describe_topics([name]))[name].value.partitions]


def test_the_kafkaops_binary_waits_for_new_topics_with_one_metadata_for_every_topic(tmp_path: Path) -> None:
    """`kafkaops apply` of new topics, as a user runs it: its read lists every topic, and its wait asks
    for every topic too (they are most of the cluster) instead of naming each (docs/architecture.md,
    "Naming topics, or asking for every topic"); every topic is created and found complete."""
    names = [f"orders.part{i}" for i in range(30)]
    docs = [{"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic", "metadata": {"name": name},
             "spec": {"clusterRef": {"name": "dev"}, "partitions": 2, "replicationFactor": 1}} for name in names]
    (tmp_path / "topics.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    with served_double() as cluster:
        ran = run_kafkaops("apply", "-f", str(tmp_path / "topics.yaml"), "--bootstrap-server", cluster.bootstrap,
                           "--yes", tmp=tmp_path)
        named = [r.items for r in cluster.requests if r.api_key == 3]
    assert ran.code == 0, ran.stdout + ran.stderr
    assert sum(f"created   KafkaTopic {name} " in ran.stdout for name in names) == len(names), ran.stdout
    assert named and set(named) == {0}, f"Metadata requests naming topics: {named}"  # the old wait named all 30
