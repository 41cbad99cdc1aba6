"""apply_plans submits one-step resources (one CreateTopic, one AlterConfigs) to the Batcher at
once; each ends exactly as `apply_resource` ends it, on a fake cluster double, failures included."""

from __future__ import annotations

import asyncio

from kafkaops.kafka import AdminClient, Batcher, NewTopic
from kafkaops.reconcile import Engine, RunOptions
from kafkaops.reconcile.settings import EngineSettings
from kafkaops.reconcile.actions import AlterConfigs, CreatePartitions, CreateTopic
from kafkaops.reconcile.apply import INTERRUPTED, apply_plans, apply_resource
from kafkaops.testing.fake_cluster import FakeClusterDouble

from engine_helpers import desired, topic

MUTATING = {"CreateTopics", "CreatePartitions", "IncrementalAlterConfigs"}


async def scenario(bulk: bool, stop: asyncio.Event | None = None):
    """Plan 20 new topics, one config change, one to be deleted behind our back, one created behind
    our back, and one partition increase + config change; then apply by either path."""
    async with FakeClusterDouble(brokers=3, tick_interval=None) as cluster:
        async with AdminClient.connect(cluster.bootstrap, linger=0.01) as admin:
            await admin.create_topics([NewTopic("alter", 1, 1, {}), NewTopic("gone", 1, 1, {}),
                                       NewTopic("grow", 1, 1, {})])
            want = desired(*(topic(f"new-{i}", 2, 1) for i in range(20)),
                           topic("alter", 1, 1, {"retention.ms": 3600000}),
                           topic("gone", 1, 1, {"retention.ms": 3600000}),
                           topic("late", 1, 1),
                           topic("grow", 2, 1, {"retention.ms": 3600000}))
            batcher = Batcher(admin, linger=0.0)
            engine = Engine(batcher, cluster="dev", settings=EngineSettings(wait_poll_min=0.01))
            planned = await engine.plan(want, RunOptions(all_topics=False))
            await admin.delete_topics(["gone"])
            await admin.create_topics([NewTopic("late", 1, 1, {})])
            before = dict(admin.requests_by_api)
            done: list[str] = []
            if bulk:
                applied = await apply_plans(batcher, planned.plan.pending, progress=lambda p: done.append(p.name),
                                            stop=stop)
            else:
                applied = list(await asyncio.gather(*(apply_resource(batcher, p, False, stop)
                                                      for p in planned.plan.pending)))
            sent = {api: n - before.get(api, 0) for api, n in admin.requests_by_api.items()
                    if api in MUTATING and n != before.get(api, 0)}
            return planned.plan.pending, applied, sent, done


def summary(applied) -> list[tuple]:
    return [(a.plan.name, a.done, a.problem, a.notes, a.deferred) for a in applied]


async def test_one_step_resources_end_as_apply_resource_ends_them() -> None:
    pending, bulk, sent, progressed = await scenario(bulk=True)
    _, reference, reference_sent, _ = await scenario(bulk=False)
    assert summary(bulk) == summary(reference)
    assert [a.plan for a in bulk] == list(pending)  # the plans' order
    assert sorted(progressed) == sorted(p.name for p in pending)
    outcome = {a.plan.name: a for a in bulk}
    assert isinstance(outcome["new-0"].done[0], CreateTopic) and outcome["new-0"].problem is None
    assert isinstance(outcome["alter"].done[0], AlterConfigs) and outcome["alter"].problem is None
    assert outcome["late"].problem.reason == "TOPIC_ALREADY_EXISTS"
    assert outcome["gone"].problem.reason == "UNKNOWN_TOPIC_OR_PARTITION"
    assert "IncrementalAlterConfigs(topic gone: SET retention.ms) failed" in outcome["gone"].problem.message
    assert [type(s) for s in outcome["grow"].done] == [CreatePartitions, AlterConfigs]  # the per-resource path
    assert sent["CreateTopics"] == 1 and sent == reference_sent, (sent, reference_sent)


async def test_a_stopped_run_sends_no_one_step_resource() -> None:
    stop = asyncio.Event()
    stop.set()
    pending, bulk, sent, progressed = await scenario(bulk=True, stop=stop)
    _, reference, _, _ = await scenario(bulk=False, stop=stop)
    assert summary(bulk) == summary(reference)
    assert sent == {} and len(progressed) == len(pending)
    assert all(a.problem.reason == INTERRUPTED and not a.done for a in bulk)
