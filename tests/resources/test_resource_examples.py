"""The examples/ GitOps repository passes validation."""

from __future__ import annotations

from pathlib import Path

from kafkaops.resources import KafkaAcl, KafkaBrokerConfig, KafkaTopic, load_and_validate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_examples_validate_without_errors_or_warnings() -> None:
    result = load_and_validate([EXAMPLES])
    assert result.errors == (), [str(e) for e in result.errors]
    assert result.warnings == (), [str(w) for w in result.warnings]
    # the one document that is not a resource: the fleet's policy file, skipped with a note
    assert [(Path(n.file).name, n.message.split(":")[0]) for n in result.notes] == [("policy.yaml", "skipped")]
    assert len(result.valid) == result.documents


def test_examples_cover_two_clusters_and_three_teams() -> None:
    for name in ("dev", "prod"):
        result = load_and_validate([EXAMPLES / "clusters" / name])
        assert result.ok
        assert [c.name for c in result.clusters()] == [name]
        topics = [r.topic_name for r in result.valid if isinstance(r, KafkaTopic)]
        for team in ("orders.", "payments.", "analytics."):
            assert sum(t.startswith(team) for t in topics) >= 3
        assert len([r for r in result.valid if isinstance(r, KafkaAcl)]) == 3
        assert any(isinstance(r, KafkaBrokerConfig) for r in result.valid)
    assert (EXAMPLES / "README.md").is_file()


def test_dev_cluster_is_local() -> None:
    (dev,) = load_and_validate([EXAMPLES / "clusters" / "dev" / "cluster.yaml"]).clusters()
    assert dev.spec.bootstrap_servers == ("127.0.0.1:19092",)
