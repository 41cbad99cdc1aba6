"""resources/kinds.py's KINDS is the one table of the kinds' names: the CRD files in crds/ (as
written, not regenerated), the operator's RBAC and the operator's watches agree with it."""

from __future__ import annotations

from pathlib import Path

import yaml

from kafkaops.k8s import kinds as k8s_kinds
from kafkaops.resources.kinds import API_GROUP, API_VERSION, CATEGORY, KINDS, PLURALS

REPO = Path(__file__).resolve().parents[2]


def test_crd_files_agree_with_the_kinds_table() -> None:
    crds = {p.name: yaml.safe_load(p.read_text("utf-8")) for p in sorted((REPO / "crds").glob("*.yaml"))}
    assert sorted(crds) == sorted(f"{info.crd_name}.yaml" for info in KINDS.values())
    for info in KINDS.values():
        crd = crds[f"{info.crd_name}.yaml"]
        names = crd["spec"]["names"]
        assert crd["metadata"]["name"] == info.crd_name and crd["spec"]["group"] == API_GROUP
        assert (names["kind"], names["plural"], names["singular"]) == (info.kind, info.plural, info.singular)
        assert tuple(names["shortNames"]) == info.short_names and names["categories"] == [CATEGORY]
        assert [v["name"] for v in crd["spec"]["versions"]] == [API_VERSION]


def test_rbac_manifests_name_every_plural_of_the_table() -> None:
    plurals = sorted(PLURALS.values())
    for path in (REPO / "manifests" / "rbac.yaml", REPO / "manifests" / "components" / "namespaced" / "rbac.yaml"):
        rules = [rule for doc in yaml.safe_load_all(path.read_text("utf-8")) if doc
                 for rule in doc.get("rules", ()) if API_GROUP in rule.get("apiGroups", ())]
        named = [resource for rule in rules for resource in rule["resources"]]
        assert sorted(r for r in named if "/" not in r) == plurals, path
        assert sorted(r.removesuffix("/status") for r in named if r.endswith("/status")) == plurals, path


def test_the_operator_reads_its_plurals_from_the_table() -> None:
    assert k8s_kinds.PLURALS is PLURALS and k8s_kinds.CLUSTER_PLURAL == KINDS["KafkaCluster"].plural
    assert (k8s_kinds.GROUP, k8s_kinds.VERSION) == (API_GROUP, API_VERSION)
