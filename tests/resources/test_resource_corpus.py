"""The bad-input corpus: every invalid manifest fails with its expected field path and rule;
every valid one passes; all of them together split cleanly into valid and invalid."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from kafkaops.resources import load_and_validate

CORPUS = Path(__file__).parent / "corpus"
CLUSTER = CORPUS / "cluster.yaml"
INVALID = sorted((CORPUS / "invalid").glob("*.yaml"))
VALID = sorted((CORPUS / "valid").glob("*.yaml"))
EXPECT = re.compile(r"^# expect: (?P<path>\S+) (?P<rule>[A-Z][A-Za-z0-9]+)$", re.M)


def expectation(path: Path) -> tuple[str, str]:
    match = EXPECT.search(path.read_text())
    assert match, f"{path.name} has no '# expect: <field path> <Rule>' header"
    return match["path"], match["rule"]


def test_corpus_is_large_enough() -> None:
    assert len(INVALID) >= 40
    assert len(VALID) >= 10


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_invalid_manifest_fails_with_its_field_path(path: Path) -> None:
    field, rule = expectation(path)
    result = load_and_validate([CLUSTER, path])
    errors = [e for e in result.errors if e.file == str(path)]
    assert (field, rule) in {(e.path, e.rule) for e in errors}, [str(e) for e in result.issues]
    assert all(e.file == str(path) for e in result.errors), "the corpus cluster must stay valid"
    assert [r.name for r in result.valid] == ["corpus"]
    assert not result.ok


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_invalid_manifest_is_one_self_contained_resource(path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert len(docs) == 1
    spec = docs[0].get("spec") or {}
    if docs[0]["kind"] != "KafkaCluster" and "clusterRef" in spec:
        assert spec["clusterRef"] == {"name": "corpus"}


@pytest.mark.parametrize("path", VALID, ids=[p.stem for p in VALID])
def test_valid_manifest_passes(path: Path) -> None:
    result = load_and_validate([CLUSTER, path])
    assert result.errors == (), [str(e) for e in result.errors]
    assert len(result.valid) == 2


def test_whole_corpus_at_once_keeps_valid_resources_valid() -> None:
    """One bad item never stops the others: validated together, each file keeps its own verdict."""
    result = load_and_validate([CORPUS])
    valid_files = {r.source.file for r in result.valid}
    assert valid_files == {str(CLUSTER), *(str(p) for p in VALID)}
    invalid_files = {e.file for e in result.errors}
    assert invalid_files == {str(p) for p in INVALID}
    assert len(result.errors) == len(INVALID), "no error from one corpus file may leak onto another"
