"""The settings split: the engine's own (EngineSettings) and the admin client's (ClientSettings),
configured through one flat set of names by the CLI and the operator."""

from __future__ import annotations

import pytest

from kafkaops.cli.targets import resolve_targets
from kafkaops.kafka import ClientSettings
from kafkaops.reconcile.reassign import ReassignmentSettings
from kafkaops.reconcile.settings import EngineSettings
from kafkaops.resources import load_and_validate


def test_split_takes_the_engine_names_and_leaves_the_client_ones():
    engine, client = EngineSettings.split({"wait_timeout": 7.5, "wait_poll_min": 0.01, "linger": 0.02,
                                           "connect_timeout": 3.0})
    assert engine == EngineSettings(wait_timeout=7.5, wait_poll_min=0.01)
    assert client == {"linger": 0.02, "connect_timeout": 3.0}
    settings = ClientSettings.create("127.0.0.1:9092", **client)
    assert (settings.linger, settings.connect_timeout) == (0.02, 3.0)
    assert not hasattr(settings, "wait_timeout"), "the engine's settings are no longer the client's"


def test_reassignment_progress_is_polled_like_completion_unless_set():
    assert EngineSettings(wait_poll_max=0.5).reassignment_settings == ReassignmentSettings(poll_interval=0.5)
    fixed = ReassignmentSettings(max_partitions_moving=3)
    assert EngineSettings(reassignment=fixed).reassignment_settings is fixed


@pytest.mark.parametrize("values, field", [({"wait_timeout": 0}, "wait_timeout"),
                                           ({"wait_poll_min": 3.0}, "wait_poll_min"),
                                           ({"wait_poll_min": -1}, "wait_poll_min")])
def test_bad_values_are_refused_naming_the_setting(values, field):
    with pytest.raises(ValueError, match=field):
        EngineSettings(**values)


def test_the_cli_maps_its_overrides_onto_both(tmp_path):
    (tmp_path / "t.yaml").write_text("apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: t}\n"
                                     "spec: {clusterRef: {name: dev}, partitions: 1, replicationFactor: 1}\n")
    validated = load_and_validate((str(tmp_path),))
    assert validated.valid, validated.errors
    [target], _ = resolve_targets(validated.valid, "127.0.0.1:9092", None, wait_timeout=5.0, connect_timeout=2.0)
    assert target.engine.wait_timeout == 5.0 and target.settings.connect_timeout == 2.0
