"""wait: batched polling until each applied change is visible.

A new topic is complete when every partition has a leader; a partition
increase when the new count is visible; a deleted topic when Metadata no
longer knows it; a config change when DescribeConfigs reads back the values
set (and no override for the keys reset). Every round asks about all pending
resources at once: one Metadata request and one batched DescribeConfigs (via
the Batcher), never one request per resource. Rounds back off from
`wait_poll_min` to `wait_poll_max`; past `wait_timeout` what is still pending
fails with the retriable reason WaitTimeout ("may still happen"). The Metadata
that found a new or grown topic complete is kept for its resource's outcome (the
operator's status takes the topic id from it instead of asking again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TypeAlias

from kafkaops.frozen import frozen
from kafkaops.kafka import AlterOp, Batcher, ConfigEntry, ConfigResource, ConfigResourceType, ConfigSource, ItemResult, TopicInfo
from kafkaops.kafka.errors import ErrorCode, KafkaOpsError
from kafkaops.reconcile.actions import AlterConfigs, CreatePartitions, CreateTopic, DeleteTopic, Problem
from kafkaops.reconcile.apply import Applied
from kafkaops.reconcile.configs import is_sensitive, values_equal
from kafkaops.reconcile.settings import EngineSettings
from kafkaops.resources.documents import Source

WAIT_TIMEOUT = "WaitTimeout"


@frozen
class TopicReady:
    topic: str
    partitions: int | None = None

    def __str__(self) -> str:
        count = f" with {self.partitions} partitions" if self.partitions else ""
        return f"topic {self.topic!r}{count}, every partition led"


@frozen
class TopicGone:
    topic: str

    def __str__(self) -> str:
        return f"topic {self.topic!r} gone"


@frozen
class ConfigsMatch:
    resource: ConfigResource
    expected: Mapping[str, str | None]  # None: no override left (reset)

    def __str__(self) -> str:
        return f"configs of {self.resource.type.name.lower()} {self.resource.name or 'default'} read back: " + ", ".join(
            sorted(self.expected))


Expectation: TypeAlias = TopicReady | TopicGone | ConfigsMatch


@frozen
class Waited:
    """How a wait ended: a Problem for each source still pending at the deadline (None: complete),
    and for each source with a TopicReady, the topic as the poll that found it complete saw it."""

    problems: Mapping[Source, Problem | None]
    led: Mapping[Source, TopicInfo]


def override_source(resource: ConfigResource) -> ConfigSource:
    if resource.type is ConfigResourceType.TOPIC:
        return ConfigSource.DYNAMIC_TOPIC_CONFIG
    return ConfigSource.DYNAMIC_BROKER_CONFIG if resource.name else ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


def expectations(applied: Applied) -> tuple[Expectation, ...]:
    """What must be visible for the steps `applied` completed."""
    found: list[Expectation] = []
    for step in applied.done:
        match step:
            case CreateTopic(topic):
                count = topic.partition_count
                found.append(TopicReady(topic.name, count if count > 0 else None))
            case CreatePartitions(request):
                found.append(TopicReady(request.topic, request.total_count))
            case DeleteTopic(name):
                found.append(TopicGone(name))
            case AlterConfigs(resource, ops):
                expected = {op.name: (op.value if op.op is AlterOp.SET else None) for op in ops
                            if op.op in (AlterOp.SET, AlterOp.DELETE) and not is_sensitive(op.name)}
                if expected:
                    found.append(ConfigsMatch(resource, expected))
    return tuple(found)


def _satisfied(expectation: Expectation, topics: Mapping[str, ItemResult[TopicInfo]],
               configs: Mapping[ConfigResource, ItemResult[dict[str, ConfigEntry]]]) -> bool:
    match expectation:
        case TopicReady(name, partitions):
            info = topics[name].value
            return info is not None and info.all_led and (partitions is None or len(info.partitions) >= partitions)
        case TopicGone(name):
            error = topics[name].error
            return error is not None and error.code == ErrorCode.unknown_topic_or_partition
        case ConfigsMatch(resource, expected):
            entries = configs[resource].value
            if entries is None:
                return False
            source = override_source(resource)
            for key, value in expected.items():
                entry = entries.get(key)
                if value is None:
                    if entry is not None and entry.source is source:
                        return False
                elif entry is None or entry.source is not source or not values_equal(key, value, entry.value):
                    return False
            return True
    raise TypeError(expectation)


async def wait_for(
    batcher: Batcher, pending: Mapping[Source, tuple[Expectation, ...]], *, timeout: float | None = None,
    settings: EngineSettings = EngineSettings(),
) -> Waited:
    """Poll until every source's expectations hold; a Problem for those still pending at the deadline."""
    timeout = settings.wait_timeout if timeout is None else timeout
    remaining = {source: list(exps) for source, exps in pending.items() if exps}
    results: dict[Source, Problem | None] = {source: None for source in pending}
    led: dict[Source, TopicInfo] = {}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    delay = settings.wait_poll_min
    last_error = ""
    while remaining:
        topic_names = sorted({e.topic for exps in remaining.values() for e in exps if not isinstance(e, ConfigsMatch)})
        keys: dict[ConfigResource, set[str]] = {}
        for exps in remaining.values():
            for e in exps:
                if isinstance(e, ConfigsMatch):
                    keys.setdefault(e.resource, set()).update(e.expected)
        resources = list(keys)
        try:
            topic_results = await batcher.describe_topics(topic_names)
            config_results = await batcher.describe_configs_of((r, frozenset(keys[r])) for r in resources)
        except KafkaOpsError as exc:  # the cluster went away for a moment: keep polling until the deadline
            last_error = f" (last error: {exc})"
        else:
            topics = dict(zip(topic_names, topic_results))
            configs = dict(zip(resources, config_results))
            for source in list(remaining):
                left = []
                for e in remaining[source]:
                    if not _satisfied(e, topics, configs):
                        left.append(e)
                    elif isinstance(e, TopicReady):
                        led[source] = topics[e.topic].value  # type: ignore[assignment]  # satisfied: not None
                if left:
                    remaining[source] = left
                else:
                    del remaining[source]
        if not remaining:
            break
        if loop.time() >= deadline:
            for source, exps in remaining.items():
                results[source] = Problem(
                    WAIT_TIMEOUT,
                    f"applied, but not complete after {timeout:g}s: waiting for {'; '.join(map(str, exps))}{last_error}",
                    retriable=True,
                )
            break
        await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
        delay = min(delay * 2, settings.wait_poll_max)
    return Waited(results, led)
