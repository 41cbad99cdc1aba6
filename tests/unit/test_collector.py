"""The collector policy of the operator and the CLI (cli/collector.py): a storm of
short-lived-but-promoted objects (kopf's queued events) triggers far fewer full collections, and
cyclic garbage is still collected. tests/conftest.py puts the interpreter's policy back after each."""

from __future__ import annotations

import gc
import weakref
from collections import deque

from kafkaops.cli import collector


def full_collections_during_a_storm(events: int = 150_000, in_flight: int = 8_000) -> int:
    """Each event leaves a little state behind (the heap grows, as the operator's does with every
    new object) and a body that lives while `in_flight` newer ones arrive (long enough to be
    promoted), as kopf's backlog of watch events does; how many full collections ran meanwhile."""
    full = 0

    def count(phase: str, info: dict) -> None:
        nonlocal full
        if phase == "start" and info["generation"] == 2:
            full += 1

    queue: deque[dict] = deque()
    state: list[dict] = []
    gc.callbacks.append(count)
    try:
        for i in range(events):
            state.append({"uid": [i]})
            queue.append({"metadata": {"name": f"t{i}", "labels": [i]}, "spec": {"partitions": [i]}})
            if len(queue) > in_flight:
                queue.popleft()
    finally:
        gc.callbacks.remove(count)
    return full


def test_a_storm_runs_far_fewer_full_collections() -> None:
    gc.set_threshold(700, 10, 10)  # CPython's defaults
    gc.collect()
    gc.freeze()  # the test process's own heap stays out of both measurements
    gc.collect()
    before = full_collections_during_a_storm()
    assert collector.tune() == (700, 10, collector.FULL_EVERY)
    assert gc.get_freeze_count() > 0, "what was loaded at start is frozen out of collections"
    after = full_collections_during_a_storm()
    assert before >= 3, f"the storm should trigger full collections with the defaults ({before})"
    assert after * 3 <= before, f"{after} full collections with the policy, {before} without"


def test_cyclic_garbage_is_still_collected() -> None:
    collector.tune()

    class Node:
        pass

    first = Node()
    first.cycle = first  # type: ignore[attr-defined]
    gone = weakref.ref(first)
    del first
    kept = [{"n": [i]} for i in range(20_000)]  # allocations, as a running operator makes them
    assert len(kept) == 20_000
    assert gone() is None, "a cycle made after tune() is freed by the young collections"


def young_collections_during(work) -> int:
    """How many collections the interpreter started by itself (not gc.collect) while `work` ran."""
    started = 0

    def count(phase: str, info: dict) -> None:
        nonlocal started
        if phase == "start" and info["generation"] < 2:
            started += 1

    gc.callbacks.append(count)
    try:
        work()
    finally:
        gc.callbacks.remove(count)
    return started


def allocate() -> list[dict]:
    return [{"n": [i]} for i in range(50_000)]  # what a plan of thousands of resources allocates


def test_paused_runs_no_collection_and_loses_no_cycle() -> None:
    class Node:
        pass

    assert young_collections_during(allocate) > 10  # the interpreter's own policy: many
    with collector.paused():
        assert not gc.isenabled()
        assert young_collections_during(allocate) == 0
        first = Node()
        first.cycle = first  # type: ignore[attr-defined]
        gone = weakref.ref(first)
        del first
    assert gc.isenabled()
    young_collections_during(allocate)  # the collector is back: the cycle goes with the young garbage
    assert gone() is None


def test_paused_is_bounded_in_time() -> None:
    import time

    with collector.paused(at_most=0.05):
        assert not gc.isenabled()
        deadline = time.monotonic() + 5
        while not gc.isenabled() and time.monotonic() < deadline:  # a run still going past its bound
            time.sleep(0.01)
        assert gc.isenabled(), "the collector is back on once the bound has passed"
    assert gc.isenabled()


def test_paused_leaves_a_collector_switched_off_by_the_caller_off() -> None:
    import time

    gc.disable()
    try:
        with collector.paused(at_most=0.01):
            time.sleep(0.1)
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_commands_load_with_the_collector_paused(tmp_path, monkeypatch) -> None:
    """`kafkaops validate` and `plan` load their manifests with no collection started by the
    interpreter, where loading the same manifests otherwise runs dozens."""
    from click.testing import CliRunner

    from kafkaops.cli import plan_apply, validate
    from kafkaops.cli.main import cli
    from kafkaops.resources import load_and_validate

    for i in range(10):
        docs = [f"""apiVersion: kafkaops.io/v1alpha1
kind: KafkaTopic
metadata: {{name: t{i}-{j}}}
spec: {{clusterRef: {{name: dev}}, partitions: 3, replicationFactor: 1, config: {{retention.ms: "{j}"}}}}
""" for j in range(100)]
        (tmp_path / f"f{i}.yaml").write_text("---\n".join(docs))
    assert young_collections_during(lambda: load_and_validate([tmp_path])) > 10

    during_load: list[int] = []

    def counted(paths):  # the real loading, with the collections it saw counted
        loaded: list = []
        during_load.append(young_collections_during(lambda: loaded.append(load_and_validate(paths))))
        return loaded[0]

    monkeypatch.setattr(validate, "load_and_validate", counted)
    monkeypatch.setattr(plan_apply, "load_and_validate", counted)
    for args in (["validate", str(tmp_path)], ["plan", "-f", str(tmp_path), "--bootstrap-server", "127.0.0.1:1"]):
        result = CliRunner().invoke(cli, args)
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert during_load == [0, 0]
