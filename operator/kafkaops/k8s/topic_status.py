"""A KafkaTopic's status fields read from Kafka: its id, partitions and replication factor."""

from __future__ import annotations

from typing import Any

from kafkaops.k8s.context import ClusterContext
from kafkaops.k8s.moves import THROTTLE_RECORD
from kafkaops.reconcile.observed import ObservedTopic
from kafkaops.reconcile.outcome import Outcome
from kafkaops.resources.models import KafkaTopic


async def topic_fields(context: ClusterContext, model: KafkaTopic, outcome: Outcome,
                       fields: dict[str, Any], observed: ObservedTopic | None = None) -> dict[str, Any]:
    """The topic's id, partitions and replication factor for its status, from what this run has
    already read whenever it can: CreateTopics' answer when the run created the topic (v7+
    answers carry the id); the Metadata that found a created or grown topic complete; `observed`,
    the read the run planned from, when it changed neither the topic's partitions nor its
    replicas. Else one Metadata (shared with a window's other topics)."""
    assert context.engine is not None
    created, led = outcome.created, outcome.led
    if created is not None and created.topic_id is not None and created.partitions > 0 \
            and created.replication_factor > 0:
        found = _shape(created.topic_id, created.partitions, created.replication_factor)
    elif led is not None:
        found = _shape(led.topic_id, len(led.partitions), led.replication_factor)
    elif observed is not None and not outcome.reshaped:
        found = _shape(observed.topic_id, observed.partitions, observed.replication_factor)
    else:
        info = (await context.engine.batcher.describe_topic(model.topic_name)).value
        if info is None:
            return fields
        found = _shape(info.topic_id, len(info.partitions), info.replication_factor)
    return {k: v for k, v in {**fields, **found}.items() if v is not None or k == THROTTLE_RECORD}


def _shape(topic_id: object, partitions: int, replication_factor: int) -> dict[str, Any]:
    return {"topicId": str(topic_id) if topic_id else None, "partitions": partitions,
            "replicationFactor": replication_factor}
