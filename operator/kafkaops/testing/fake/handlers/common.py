"""Helpers shared by the request handlers of the fake cluster test double:
building responses for the request's version, and Kafka's validation of
topic names and manual replica assignments (with Kafka's messages)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from kafkaops.kafka.wire import build, response_class

from ..context import ItemError, RequestContext
from ..state import ClusterStateDouble

MAX_TOPIC_NAME = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
ZERO_UUID = uuid.UUID(int=0)


def respond(ctx: RequestContext, mapping: Mapping[str, Any]) -> Any:
    """The response entity of the request's API at the request's version."""
    return build(response_class(ctx.api_key, ctx.version), mapping)


def invalid_request(message: str) -> ItemError:
    return ItemError(ErrorCode.invalid_request, message)


def unknown_topic(name: str | None) -> ItemError:
    return ItemError(ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")


def topic_name_error(name: str | None) -> ItemError | None:
    """Kafka's Topic.validate as an INVALID_TOPIC_EXCEPTION, or None for a legal name."""
    message = None
    if not name:
        message = "Topic name is illegal, it can't be empty"
    elif name in (".", ".."):
        message = 'Topic name cannot be "." or ".."'
    elif len(name) > MAX_TOPIC_NAME:
        message = f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters, topic name: {name}"
    elif not _LEGAL.match(name):
        message = (
            f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return ItemError(ErrorCode.invalid_topic_exception, message) if message else None


def _bad_assignment(message: str) -> ItemError:
    return ItemError(ErrorCode.invalid_replica_assignment, message)


def replicas_error(state: ClusterStateDouble, partition: int, replicas: Sequence[int]) -> ItemError | None:
    """Validate one partition's manual replica list (CreateTopics, CreatePartitions, reassignment)."""
    if not replicas:
        return _bad_assignment("The manual partition assignment includes an empty replica list.")
    seen: set[int] = set()
    for broker in replicas:
        if broker in seen:
            return _bad_assignment(f"The manual partition assignment includes the broker {broker} more than once.")
        seen.add(broker)
        if broker not in state.brokers:
            return _bad_assignment(
                f"The manual partition assignment includes broker {broker}, but no such broker is registered."
            )
    if not any(state.is_alive(b) for b in replicas):
        return _bad_assignment(
            f"All brokers specified in the manual partition assignment for partition {partition} "
            "are fenced or in controlled shutdown."
        )
    return None


def assignment_error(
    state: ClusterStateDouble, assignments: Sequence[Sequence[int]], first_partition: int, replication_factor: int | None
) -> ItemError | None:
    """Validate replica lists for consecutive partitions with one replication factor."""
    for offset, replicas in enumerate(assignments):
        error = replicas_error(state, first_partition + offset, replicas)
        if error is not None:
            return error
        if replication_factor is not None and len(replicas) != replication_factor:
            return _bad_assignment(
                f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but "
                f"this is not consistent with previous partitions, which have {replication_factor} replica(s)."
            )
        replication_factor = len(replicas)
    return None


def replication_error(replication_factor: int, live: int) -> ItemError | None:
    if replication_factor > live:
        return ItemError(
            ErrorCode.invalid_replication_factor,
            f"Replication factor: {replication_factor} larger than available brokers: {live}.",
        )
    return None


def has_id(topic_id: uuid.UUID | None) -> bool:
    return topic_id is not None and topic_id != ZERO_UUID
