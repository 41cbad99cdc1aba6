"""Request sizing (pure): dedupe items and split them into record-bounded chunks.

KRaft rejects a request that would write more than 10,000 metadata records
(one per topic, one per partition, one per config are the big ones), so
large inputs are cut into several requests by estimated records, not by
item count. An item bigger than the budget travels alone: the broker then
answers it with its own error instead of the client hiding it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from .models import AlterConfigOp, NewPartitions, NewTopic

K = TypeVar("K")
V = TypeVar("V")


def dedupe(pairs: Iterable[tuple[K, V]]) -> dict[K, V]:
    """KIP-4 semantics for duplicates in one call: the last item for a key wins."""
    result: dict[K, V] = {}
    for key, value in pairs:
        result.pop(key, None)
        result[key] = value
    return result


def split_by_records(items: Mapping[K, V], cost: Callable[[V], int], budget: int) -> list[dict[K, V]]:
    """Greedy, order-preserving chunks whose summed cost stays within ``budget``."""
    chunks: list[dict[K, V]] = []
    current: dict[K, V] = {}
    used = 0
    for key, value in items.items():
        weight = max(1, cost(value))
        if current and used + weight > budget:
            chunks.append(current)
            current, used = {}, 0
        current[key] = value
        used += weight
    if current:
        chunks.append(current)
    return chunks


def topic_records(topic: NewTopic) -> int:
    """TopicRecord + one PartitionRecord per partition + one ConfigRecord per config."""
    return 1 + max(topic.partition_count, 1) + len(topic.configs)


def partition_records(request: NewPartitions) -> int:
    """Upper bound: the new partitions are at most the new total."""
    return max(request.total_count, 1)


def config_records(ops: tuple[AlterConfigOp, ...]) -> int:
    return max(len(ops), 1)


def one_record(_item: object) -> int:
    return 1
