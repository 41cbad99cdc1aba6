"""A KafkaTopic's status fields read from Kafka: its id, partitions and replication factor."""

from __future__ import annotations

from typing import Any

from kafkaops.k8s.context import ClusterContext
from kafkaops.k8s.moves import THROTTLE_RECORD
from kafkaops.reconcile.outcome import Outcome
from kafkaops.resources.models import KafkaTopic


async def topic_fields(context: ClusterContext, model: KafkaTopic, outcome: Outcome,
                       fields: dict[str, Any]) -> dict[str, Any]:
    """The topic's id, partitions and replication factor for its status: from CreateTopics' answer
    when this run created it (v7+ answers carry the id), else read through Metadata."""
    assert context.engine is not None
    created = outcome.created
    if created is not None and created.topic_id is not None and created.partitions > 0 \
            and created.replication_factor > 0:
        found = {"topicId": str(created.topic_id), "partitions": created.partitions,
                 "replicationFactor": created.replication_factor}
    else:
        info = await context.engine.batcher.describe_topic(model.topic_name)
        if info.value is None:
            return fields
        found = {"topicId": str(info.value.topic_id) if info.value.topic_id else None,
                 "partitions": len(info.value.partitions), "replicationFactor": info.value.replication_factor}
    return {k: v for k, v in {**fields, **found}.items() if v is not None or k == THROTTLE_RECORD}
