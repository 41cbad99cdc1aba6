"""`kafkaops plan / apply / export` with KafkaUser and KafkaClientQuota, as a user runs them (a
subprocess) against the fake cluster double: passwords from --secrets-dir files and
KAFKAOPS_SECRET_* variables, never shown; plan, apply, plan again (nothing to do), a rotation;
export writes users and quotas with a password placeholder, and planning the export changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kafkaops.kafka.apis import Api

from clirun import run_kafkaops, served_double

API = "kafkaops.io/v1alpha1"
ALICE_PW, BOB_PW, ROTATED = "alice-Pa55-7731", "bob-Pa55-1209", "alice-R0tated-5521"
SECRETS = (ALICE_PW, BOB_PW, ROTATED)


def doc(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def manifests(bootstrap: str, *extra: dict[str, Any]) -> list[dict[str, Any]]:
    ref = {"name": "main"}
    return [
        doc("KafkaCluster", "main", {"bootstrapServers": [bootstrap]}),
        doc("KafkaUser", "alice", {"clusterRef": ref, "authentication": {
            "type": "scram-sha-512", "passwordSecretRef": {"name": "alice-pw"}},
            "quotas": {"producer_byte_rate": 1048576},
            "acls": [{"resource": {"type": "Topic", "name": "orders"}, "operations": ["Read"]}]}),
        doc("KafkaUser", "bob", {"clusterRef": ref, "authentication": {
            "type": "scram-sha-256", "passwordSecretRef": {"name": "bob-creds", "key": "pw"}}}),
        doc("KafkaClientQuota", "apps", {"clusterRef": ref, "entity": {"clientIdDefault": True},
                                         "quotas": {"consumer_byte_rate": 4096, "request_percentage": 12.5}}),
        *extra,
    ]


def write(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def secrets_dir(tmp: Path, alice: str) -> Path:
    folder = tmp / "secrets" / "alice-pw"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "password").write_text(alice + "\n")
    return tmp / "secrets"


def no_secret_in(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def test_plan_apply_rotate_export_round_trip(tmp_path: Path) -> None:  # noqa: PLR0915
    env = {"KAFKAOPS_SECRET_BOB_CREDS_PW": BOB_PW}
    with served_double() as cluster:
        bootstrap = cluster.bootstrap
        files = write(tmp_path / "repo" / "users.yaml", manifests(bootstrap))
        secrets = str(secrets_dir(tmp_path, ALICE_PW))

        planned = run_kafkaops("plan", "-f", str(files), "--secrets-dir", secrets, tmp=tmp_path, env=env)
        assert planned.code == 2, planned
        assert "User:alice" in planned.stdout and "credential.SCRAM-SHA-512" in planned.stdout, planned
        assert "client-id=<default>" in planned.stdout
        assert cluster.count(Api.ALTER_CLIENT_QUOTAS) == 1  # plan asked the broker (validate-only)
        assert cluster.state.principals.quotas == {} and cluster.state.principals.scram == {}

        applied = run_kafkaops("apply", "-f", str(files), "--secrets-dir", secrets, "--yes", tmp=tmp_path, env=env)
        assert applied.code == 0, applied
        assert set(cluster.state.principals.scram) == {"alice", "bob"}
        assert cluster.state.principals.quotas[(("client-id", None),)] == {"consumer_byte_rate": 4096.0,
                                                                            "request_percentage": 12.5}

        again = run_kafkaops("plan", "-f", str(files), "--secrets-dir", secrets, tmp=tmp_path, env=env)
        assert again.code == 0, again

        rotated = str(secrets_dir(tmp_path, ROTATED))
        as_json = run_kafkaops("plan", "-f", str(files), "--secrets-dir", rotated, "-o", "json", tmp=tmp_path, env=env)
        assert as_json.code == 2 and '"credential.SCRAM-SHA-512.password"' in as_json.stdout, as_json
        cluster.clear_requests()
        rotation = run_kafkaops("apply", "-f", str(files), "--secrets-dir", rotated, "--yes", tmp=tmp_path, env=env)
        assert rotation.code == 0, rotation
        assert "credential.SCRAM-SHA-512.password" in rotation.stdout
        assert cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS) == 1

        exported = run_kafkaops("export", "--bootstrap-server", bootstrap, "--cluster", "main", "--output-dir",
                                str(tmp_path / "export"), tmp=tmp_path)
        assert exported.code == 0, exported
        assert "2 users, 1 quota entity" in exported.stderr, exported
        users_yaml = (tmp_path / "export" / "users.yaml").read_text()
        assert "# placeholder: create this Secret" in users_yaml
        users = {d["metadata"]["name"]: d for d in yaml.safe_load_all(users_yaml) if d}
        assert users["alice"]["spec"]["authentication"] == {"type": "scram-sha-512", "passwordSecretRef": {
            "name": "alice-password", "key": "password"}}
        assert users["alice"]["spec"]["quotas"] == {"producer_byte_rate": 1048576}
        assert users["bob"]["spec"]["authentication"]["type"] == "scram-sha-256"
        quotas = [d for d in yaml.safe_load_all((tmp_path / "export" / "quotas.yaml").read_text()) if d]
        assert [q["spec"]["entity"] for q in quotas] == [{"clientIdDefault": True}]

        round_trip = run_kafkaops("plan", "-f", str(tmp_path / "export"), "--no-state", tmp=tmp_path)
        assert round_trip.code == 0, round_trip
        state = (tmp_path / "state.json").read_text()
    everything = [r.stdout + r.stderr for r in (planned, applied, again, as_json, rotation, exported, round_trip)]
    no_secret_in(*everything, users_yaml, state)


def test_a_password_found_nowhere_is_a_problem_only_for_a_new_credential(tmp_path: Path) -> None:
    generated = doc("KafkaUser", "gen", {"clusterRef": {"name": "main"}, "authentication": {"type": "scram-sha-256"}})
    with served_double() as cluster:
        files = write(tmp_path / "repo" / "users.yaml", manifests(cluster.bootstrap, generated))
        ran = run_kafkaops("plan", "-f", str(files), tmp=tmp_path)
    assert ran.code == 1, ran
    assert "PasswordUnavailable" in ran.stdout and "generated by the operator into Secret 'gen'" in ran.stdout


def test_clusters_without_the_apis_say_which_api_and_plan_the_rest(tmp_path: Path) -> None:
    disabled = [int(Api.DESCRIBE_USER_SCRAM_CREDENTIALS), int(Api.ALTER_USER_SCRAM_CREDENTIALS),
                int(Api.DESCRIBE_CLIENT_QUOTAS), int(Api.ALTER_CLIENT_QUOTAS)]
    with served_double(disabled_apis=disabled) as cluster:
        topic = doc("KafkaTopic", "orders", {"clusterRef": {"name": "main"}, "partitions": 1, "replicationFactor": 1})
        files = write(tmp_path / "repo" / "users.yaml", manifests(cluster.bootstrap, topic))
        ran = run_kafkaops("plan", "-f", str(files), tmp=tmp_path, env={"KAFKAOPS_SECRET_ALICE_PW_PASSWORD": ALICE_PW})
    assert ran.code == 1, ran
    assert "UnsupportedFeature" in ran.stdout and "DescribeUserScramCredentials (API key 50)" in ran.stdout, ran
    assert "orders" in ran.stdout
    no_secret_in(ran.stdout, ran.stderr)


def test_env_names_and_file_reading() -> None:
    from kafkaops.cli.passwords import env_name, read_password

    assert env_name("orders-app.creds", "password") == "KAFKAOPS_SECRET_ORDERS_APP_CREDS_PASSWORD"
    assert read_password("s", "k", None, {"KAFKAOPS_SECRET_S_K": "x"}).reveal() == "x"
    assert read_password("s", "k", None, {}) is None


def test_passwords_read_are_scrubbed_from_log_records(tmp_path: Path) -> None:
    import logging

    from kafkaops.cli.passwords import read_passwords
    from kafkaops.kafka.security.redaction import install_redaction
    from kafkaops.resources import KafkaUser, load_text, validate_load

    text = yaml.safe_dump_all(manifests("127.0.0.1:9092"), sort_keys=False)
    users = [r for r in validate_load(load_text(text)).valid if isinstance(r, KafkaUser)]
    found = read_passwords(users, secrets_dir(tmp_path, "scrub-Me-4410"), {})
    assert [u for u in found] == ["alice"] and repr(found["alice"]) == "Secret('***')"
    before = logging.getLogRecordFactory()
    install_redaction()
    try:
        record = logging.getLogRecordFactory()("t", logging.INFO, __file__, 1, "oops %s", ("scrub-Me-4410",), None)
        assert record.getMessage() == "oops ***"
    finally:
        logging.setLogRecordFactory(before)
