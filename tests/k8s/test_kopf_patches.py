"""kopf's index pre-population waits: with the patch, N waiters cost O(N) checks, not O(N^2); kopf's
per-event bodies and patches are freed by reference counting, not left to the cyclic collector."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import kopf
import kopf._cogs.clients.errors

from kopf._cogs.aiokits import aiotasks
from kopf._cogs.aiokits.aiotoggles import ToggleSet
from garbage_helpers import cyclic_garbage
from kopf._cogs.structs import bodies, dicts, patches, references
from kopf._core.actions import application

from kafkaops.k8s import kopf_patches


async def checks_while_depleting(count: int) -> tuple[int, int]:
    toggles = ToggleSet(all)
    calls = 0
    original = toggles.is_on

    def counting_is_on() -> bool:
        nonlocal calls
        calls += 1
        return original()

    toggles.is_on = counting_is_on  # type: ignore[method-assign]
    items = [await toggles.make_toggle(False, name=str(i)) for i in range(count)]
    finished = 0

    async def worker() -> None:
        nonlocal finished
        await toggles.wait_for(True)
        finished += 1

    waiters = [asyncio.create_task(worker()) for _ in range(count)]
    await asyncio.sleep(0)
    for toggle in items:
        await toggles.drop_toggle(toggle)
        await asyncio.sleep(0)
    await asyncio.wait_for(asyncio.gather(*waiters), 10)
    return calls, finished


async def test_waiters_on_a_toggle_set_share_one_watcher() -> None:
    kopf_patches.apply()
    assert kopf_patches.applied()
    calls, finished = await checks_while_depleting(400)
    assert finished == 400, "every waiter is released once the set is on"
    assert calls < 4 * 400, f"{calls} checks for 400 waiters: the thundering herd is back"


async def test_a_set_already_on_returns_at_once() -> None:
    kopf_patches.apply()
    toggles = ToggleSet(all)
    await asyncio.wait_for(toggles.wait_for(True), 1)


async def index_then_handle(limit: int, objects: int) -> list[str]:
    """What kopf's workers do at a start with a worker limit: each object's worker (kopf's Scheduler,
    `limit` at once) indexes its object, drops its toggle, waits until every object is indexed,
    then handles its object and ends. Returns the objects handled, in order."""
    indexed = ToggleSet(all)
    toggles = [await indexed.make_toggle(False, name=f"object {i}") for i in range(objects)]
    handled: list[str] = []

    async def worker(i: int) -> None:
        await indexed.drop_toggle(toggles[i])
        await indexed.wait_for(True)
        await asyncio.sleep(0.01)  # the handler
        handled.append(f"object {i}")

    scheduler = aiotasks.Scheduler(limit=limit)
    try:
        for i in range(objects):
            await scheduler.spawn(worker(i), name=f"worker {i}")
        await asyncio.wait_for(scheduler.wait(), 5)
    finally:
        await scheduler.close()
    return handled


async def test_workers_waiting_for_the_indexes_give_their_slot_up() -> None:
    """kopf 1.45.2 deadlocks when a kind has more objects than the worker limit at a start: the
    first `limit` workers index and wait for the rest, which never get a slot (kopf issue #1243;
    seen here as an operator restarted with 20 KafkaTopics and a limit of 5 handling nothing)."""
    kopf_patches.apply()
    handled = await index_then_handle(limit=2, objects=12)
    assert sorted(handled) == sorted(f"object {i}" for i in range(12))


async def run_kopf_apply(settings: kopf.OperatorSettings, patch_and_check_double: Any, *, patch: dict | None = None,
                         delays: list[float], wait: float) -> tuple[float, BaseException | None]:
    """kopf's apply() of `patch` for one KafkaTopic, with application.patch_and_check replaced by the
    double: how long it held its caller and what it raised; then `wait` seconds for the tasks it left."""
    kopf_patches.apply()
    body = bodies.Body({"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic",
                        "metadata": {"name": "t", "namespace": "kafka", "uid": "u-1"}})
    resource = references.Resource("kafkaops.io", "v1alpha1", "kafkatopics", namespaced=True)
    original, application.patch_and_check = application.patch_and_check, patch_and_check_double
    raised: BaseException | None = None
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            await application.apply(settings=settings, resource=resource, body=body, patch=patches.Patch(patch or {}),
                                    delays=delays, logger=logging.getLogger("test"), stream_pressure=asyncio.Event())
        except Exception as exc:  # noqa: BLE001 - returned to the test
            raised = exc
        held = loop.time() - started
        await asyncio.sleep(wait)
    finally:
        application.patch_and_check = original
    return held, raised


async def apply_with_a_delay(worker_limit: int, delay: float) -> tuple[float, list[dict]]:
    """kopf's apply() after a handler asked for `delay` and had nothing to patch: how long the worker
    was held, and the touches sent."""
    settings = kopf.OperatorSettings()
    settings.queueing.worker_limit = worker_limit
    touched: list[dict] = []

    async def patch_and_check_double(*, patch: patches.Patch, **_: Any) -> tuple[None, None]:
        if patch:  # kopf's apply() also "applies" the empty patch first
            touched.append(dict(patch))
        return None, None

    held, raised = await run_kopf_apply(settings, patch_and_check_double, delays=[delay], wait=delay + 0.2)
    assert raised is None
    return held, touched


async def test_a_retry_delay_with_a_worker_limit_is_slept_outside_the_worker() -> None:
    """kopf slept through a retry delay inside the worker, which then never idled and never gave its
    slot up: with the limit's worth of objects retrying, no other object was handled."""
    held, touched = await apply_with_a_delay(worker_limit=5, delay=0.5)
    assert held < 0.1, f"the worker was held {held:.2f}s"
    assert len(touched) == 1 and "metadata" in touched[0], "the object is touched after the delay, as kopf does"
    held, touched = await apply_with_a_delay(worker_limit=0, delay=0.3)  # no limit: kopf's own sleep
    assert held >= 0.3 and len(touched) == 1


async def apply_refused(failures: int, *, worker_limit: int = 0, patch: dict | None = None,
                        delays: list[float] | None = None) -> tuple[list[str], list[dict]]:
    """kopf's apply() whose PATCH meets `failures` 409s in a row: what each PATCH was (refused or
    accepted, after "raised" when apply() raised) and the accepted ones' content."""
    settings = kopf.OperatorSettings()
    settings.queueing.worker_limit = worker_limit
    settings.queueing.error_delays = (0.05, 0.05, 0.1, 0.1)
    answers: list[str] = []
    accepted: list[dict] = []

    async def patch_and_check_double(*, patch: patches.Patch, **_: Any) -> tuple[None, None]:
        if not patch:  # kopf's apply() also "applies" the empty patch first
            return None, None
        if answers.count("409") < failures:
            answers.append("409")
            raise kopf._cogs.clients.errors.APIConflictError({"message": "Conflict", "code": 409}, status=409, headers={})
        answers.append("ok")
        accepted.append(dict(patch))
        return None, None

    _, raised = await run_kopf_apply(settings, patch_and_check_double, patch=patch, delays=delays or [], wait=0.6)
    if raised is not None:
        assert isinstance(raised, kopf._cogs.clients.errors.APIConflictError), raised
        answers.insert(0, "raised")
    return answers, accepted


async def test_a_refused_patch_is_followed_by_touches_until_one_is_accepted() -> None:
    """kopf waited for the object's next event after its PATCH failed (409): a KafkaTopic being deleted
    in a Namespace being deleted got none, and kept its finalizer (soak seed 50248)."""
    answers, accepted = await apply_refused(3, patch={"metadata": {"annotations": {"kopf.zalando.org/x": "retry"}}})
    assert answers == ["raised", "409", "409", "409", "ok"], answers  # kopf still sees the error, as before
    assert len(accepted) == 1 and "metadata" in accepted[0]  # one touch accepted: its echo is the next event
    answers, accepted = await apply_refused(0, patch={"metadata": {"annotations": {"kopf.zalando.org/x": "done"}}})
    assert answers == ["ok"] and len(accepted) == 1  # an accepted patch: no touch


async def test_a_refused_touch_after_a_delay_is_touched_again() -> None:
    answers, accepted = await apply_refused(2, worker_limit=5, delays=[0.05])
    assert answers == ["409", "409", "ok"] and len(accepted) == 1, answers


# --- bodies and patches without reference cycles -------------------------------------------------

def a_raw_body(name: str) -> dict:
    return {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic",
            "metadata": {"name": name, "namespace": "kafka", "uid": f"uid-{name}", "labels": {"team": "a"},
                         "annotations": {"note": "x"}},
            "spec": {"partitions": 3}, "status": {"phase": "Ready"}}


def test_an_events_body_and_patch_are_freed_by_reference_counting() -> None:
    kopf_patches.apply()
    assert kopf_patches.applied()
    gc.collect()
    gc.disable()
    try:
        for i in range(50):  # what kopf does per watch event, and what handlers touch
            body = bodies.Body(a_raw_body(f"t{i}"))
            patch = patches.Patch(body=body)
            assert (body.meta.name, body.metadata.labels["team"], body.spec["partitions"]) == (f"t{i}", "a", 3)
            assert body.meta.annotations["note"] == "x" and body.status["phase"] == "Ready"
            patch.status["phase"] = "Reconciling"
            patch.meta.labels["done"] = "yes"
            patch.metadata.annotations["note"] = None
            patch.spec["partitions"] = 6
            del body, patch
        kinds = (bodies.Body, bodies.Meta, bodies.Spec, bodies.Status, patches.Patch, patches.MetaPatch, dicts.MappingView)
        assert cyclic_garbage(kinds) == 0, "kopf's bodies or patches are reference cycles again"
    finally:
        gc.enable()


def test_views_stay_live_and_patches_write_where_kopf_wrote() -> None:
    kopf_patches.apply()
    body = bodies.Body(a_raw_body("one"))
    meta, spec, labels = body.meta, body.spec, body.meta.labels
    assert body.meta is meta, "a body keeps its views"
    body._replace_with(a_raw_body("two") | {"spec": {"partitions": 9}})  # a daemon's live body
    assert (meta.name, spec["partitions"], dict(labels)) == ("two", 9, {"team": "a"})
    assert body["metadata"]["uid"] == "uid-two" and dict(body) == body._src
    other = bodies.Body({})
    other._replace_from(body)
    assert other.meta.name == "two" and other.spec == {"partitions": 9}
    assert dict(bodies.Body({}).spec) == {} and dict(bodies.Body({}).meta.labels) == {}

    patch = patches.Patch(body=body)
    patch.meta.labels["done"] = "yes"
    patch.meta.annotations["note"] = None
    patch.status["phase"] = "Reconciling"
    patch.spec["partitions"] = 12
    assert dict(patch) == {"metadata": {"labels": {"done": "yes"}, "annotations": {"note": None}},
                           "status": {"phase": "Reconciling"}, "spec": {"partitions": 12}}
    del patch.meta.labels["done"]
    assert patch["metadata"]["labels"] == {}
    assert patch.as_json_patch() == [  # what kopf 1.45.2 makes of it without the patch
        {"op": "remove", "path": "/metadata/annotations"},
        {"op": "replace", "path": "/spec/partitions", "value": 12},
        {"op": "replace", "path": "/status/phase", "value": "Reconciling"},
    ]
    copied = patches.Patch(patch, fns=[lambda raw: raw])
    assert dict(copied) == dict(patch) and len(copied.fns) == 1 and bool(copied)
    assert not patches.Patch() and patches.Patch().meta.labels.get("x") is None


def test_a_body_made_before_the_patch_still_reads_and_replaces() -> None:
    kopf_patches.apply()
    old = bodies.Body.__new__(bodies.Body)  # as kopf's own __init__ left one: `_src` in its __dict__
    old.__dict__.update(_src=a_raw_body("early"), _path=())
    assert old["metadata"]["name"] == "early" and dict(old)["spec"] == {"partitions": 3}
    old._replace_with(a_raw_body("later"))
    assert old["metadata"]["name"] == "later" and "_root" not in old.__dict__


# --- the per-object backlog -----------------------------------------------------------------------

async def test_a_backlog_is_fifo_and_a_get_waits_for_a_put() -> None:
    backlog = kopf_patches.Backlog()
    assert backlog.empty() and backlog.qsize() == 0
    getting = asyncio.create_task(backlog.get())
    await asyncio.sleep(0)
    assert not getting.done()
    await backlog.put("first")
    await backlog.put("second")
    assert await asyncio.wait_for(getting, 1) == "first"
    assert backlog.qsize() == 1 and await backlog.get() == "second" and backlog.empty()


async def test_queued_watch_events_share_their_keys_and_keep_their_content() -> None:
    import json

    def parsed(name: str) -> dict:  # each event parsed apart, as kopf's watch stream does
        return json.loads(json.dumps({"type": "ADDED", "object": {
            "metadata": {"name": name, "finalizers": ["kafkaops.io/finalizer"]},
            "spec": {"config": {"retention.ms": "1"}, "partitions": 3}}}))

    first, second = parsed("a"), parsed("b")
    assert next(iter(first["object"]["metadata"])) is not next(iter(second["object"]["metadata"]))
    backlog = kopf_patches.Backlog()
    await backlog.put(first)
    await backlog.put(second)
    await backlog.put(marker := object())  # kopf's end-of-stream marker passes as it is
    got_first, got_second = await backlog.get(), await backlog.get()
    assert got_first == parsed("a") and got_second == parsed("b") and await backlog.get() is marker
    key = lambda event, *path: next(k for k in _dig(event, path[:-1]) if k == path[-1])  # noqa: E731
    assert key(got_first, "object", "metadata", "name") is key(got_second, "object", "metadata", "name")
    assert key(got_first, "object", "spec", "config", "retention.ms") is \
        key(got_second, "object", "spec", "config", "retention.ms")


def _dig(value: dict, path: tuple[str, ...]) -> dict:
    for step in path:
        value = value[step]
    return value


async def test_a_get_timed_out_takes_nothing() -> None:
    backlog = kopf_patches.Backlog()
    try:
        await asyncio.wait_for(backlog.get(), 0.01)
        raise AssertionError("an empty backlog answered")
    except TimeoutError:
        pass
    backlog.put_nowait("later")
    assert await asyncio.wait_for(backlog.get(), 1) == "later"

    # the put lands while the reader is being cancelled: the event stays for the next get
    getting = asyncio.create_task(backlog.get())
    await asyncio.sleep(0)
    backlog.put_nowait("raced")
    getting.cancel()
    await asyncio.gather(getting, return_exceptions=True)
    assert backlog.qsize() == 1 and await backlog.get() == "raced"


async def test_kopfs_worker_drains_a_patched_stream_in_order_and_exits_when_idle() -> None:
    """kopf's own per-object worker, unmodified, over the stream its watcher now makes."""
    import kopf
    from kopf._core.reactor import queueing

    kopf_patches.apply()
    stream = queueing.Stream(backlog=asyncio.Queue(), pressure=asyncio.Event())
    assert isinstance(stream.backlog, kopf_patches.Backlog) and isinstance(stream.pressure, kopf_patches.Pressure)
    seen: list[str] = []

    async def processor(*, raw_event, stream_pressure, **_: object) -> None:
        seen.append(raw_event["object"]["metadata"]["name"])
        await asyncio.sleep(0)

    settings = kopf.OperatorSettings()
    settings.queueing.idle_timeout = 0.05
    key = ("resource", "uid-1")
    streams = {key: stream}
    for name in ("a", "b", "c"):
        await stream.backlog.put({"type": "MODIFIED", "object": {"metadata": {"name": name}}})
    await asyncio.wait_for(queueing.worker(signaller=asyncio.Condition(), resource_indexed=None, operator_indexed=None,
                                           processor=processor, settings=settings, streams=streams, key=key), 5)
    assert seen == ["a", "b", "c"]
    assert key not in streams, "an idle worker exits and forgets its stream"


def bytes_per(make) -> float:
    """What one object made by `make` holds, by tracemalloc, over 2,000 kept alive."""
    import tracemalloc

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [make() for _ in range(2000)]
        return (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()


def test_a_backlog_and_a_pressure_are_a_fraction_of_an_asyncio_queue_and_event() -> None:
    queue, light = bytes_per(asyncio.Queue), bytes_per(kopf_patches.Backlog)
    assert light * 10 < queue, f"a backlog takes {light:.0f} bytes, an asyncio.Queue {queue:.0f}"
    event, pressure = bytes_per(asyncio.Event), bytes_per(kopf_patches.Pressure)
    assert pressure * 4 < event, f"a pressure takes {pressure:.0f} bytes, an asyncio.Event {event:.0f}"


async def test_pressure_wakes_every_sleeper_as_an_event_does() -> None:
    from kopf._cogs.aiokits import aiotime

    pressure = kopf_patches.Pressure()
    assert not pressure.is_set()
    assert await aiotime.sleep(0.01, wakeup=pressure) is None, "nothing set: the sleep is not interrupted"
    sleepers = [asyncio.create_task(aiotime.sleep(5, wakeup=pressure)) for _ in range(3)]
    await asyncio.sleep(0.01)
    pressure.set()
    unslept = await asyncio.wait_for(asyncio.gather(*sleepers), 1)
    assert all(left is not None and left > 4 for left in unslept), unslept
    assert pressure.is_set() and await asyncio.wait_for(pressure.wait(), 1) is True
    pressure.clear()
    assert not pressure.is_set() and pressure._waiters is None  # noqa: SLF001 - no waiter left behind


def test_objects_share_one_empty_read_only_daemons_memory() -> None:
    import pytest
    from kopf._core.engines import daemons
    from kopf._core.reactor import inventory

    first, second = inventory.ResourceMemory(), inventory.ResourceMemory()
    assert first.daemons_memory is second.daemons_memory is kopf_patches.NO_DAEMONS
    shared = kopf_patches.NO_DAEMONS
    assert shared.live_fresh_body is None and not shared.running_daemons and not shared.forever_stopped
    with pytest.raises(AttributeError):
        shared.live_fresh_body = "a body"  # would reach every object
    with pytest.raises(AttributeError):
        shared.forever_stopped.add("handler")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        shared.running_daemons["handler"] = "daemon"  # type: ignore[index]

    own = bytes_per(lambda: inventory.ResourceMemory(daemons_memory=daemons.DaemonsMemory(idle_reset_time=0.0)))
    light = bytes_per(inventory.ResourceMemory)
    assert own - light > 300, f"a memory with its own DaemonsMemory {own:.0f} bytes, sharing {light:.0f}"


async def test_a_spawning_cause_gives_the_object_its_own_daemons_memory() -> None:
    import logging

    import kopf
    from kopf._cogs.structs import ephemera, references
    from kopf._core.intents import causes, registries
    from kopf._core.reactor import inventory, processing

    memory = inventory.ResourceMemory()
    resource = references.Resource(group="kafkaops.io", version="v1alpha1", plural="kafkaclusters", namespaced=True)
    body = bodies.Body({"metadata": {"name": "main", "namespace": "kafka", "uid": "u1"}, "spec": {}})
    cause = causes.SpawningCause(logger=logging.getLogger("test"), indices={}, memo=ephemera.Memo(), resource=resource,
                                 patch=patches.Patch(), body=body, reset=True)
    # kopf's own process_spawning_cause, as its event processing calls it (a module global)
    await processing.process_spawning_cause(registry=registries.OperatorRegistry(), settings=kopf.OperatorSettings(),
                                            memory=memory, cause=cause, operator_paused=None)
    assert memory.daemons_memory is not kopf_patches.NO_DAEMONS
    assert memory.daemons_memory.live_fresh_body is body and memory.daemons_memory.idle_reset_time > 0
    assert kopf_patches.NO_DAEMONS.live_fresh_body is None
