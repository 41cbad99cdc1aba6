"""Request handlers of the fake cluster test double, by API key.

A handler takes the request context and the decoded kio request body and
returns a kio response entity for the request's version. ``count_items``
gives the number of items a request carries, for the double's request log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkaops.frozen import frozen

from ..context import RequestContext
from .acls import handle_create_acls, handle_delete_acls, handle_describe_acls
from .cluster import handle_describe_cluster, handle_metadata
from .configs import handle_describe_configs, handle_incremental_alter_configs
from .principals import (
    handle_alter_client_quotas,
    handle_alter_user_scram_credentials,
    handle_describe_client_quotas,
    handle_describe_user_scram_credentials,
)
from .replicas import (
    handle_alter_partition_reassignments,
    handle_describe_log_dirs,
    handle_elect_leaders,
    handle_list_partition_reassignments,
)
from .topics import handle_create_partitions, handle_create_topics, handle_delete_topics

Handler = Callable[[RequestContext, Any], Any]


@frozen
class ApiHandler:
    """How the double serves one API."""

    handle: Handler
    count_items: Callable[[Any, int], int]


def _len(attr: str) -> Callable[[Any, int], int]:
    def count(body: Any, version: int) -> int:
        value = getattr(body, attr, None)
        return len(value) if value is not None else 0

    return count


def _nested(attr: str, inner: str) -> Callable[[Any, int], int]:
    def count(body: Any, version: int) -> int:
        value = getattr(body, attr, None)
        return sum(len(getattr(v, inner)) for v in value) if value is not None else 0

    return count


def _delete_topics(body: Any, version: int) -> int:
    return len(body.topics) if version >= 6 else len(body.topic_names)


def _one(body: Any, version: int) -> int:
    return 1


def _scram_alterations(body: Any, version: int) -> int:
    return len(body.deletions) + len(body.upsertions)


HANDLERS: dict[int, ApiHandler] = {
    3: ApiHandler(handle_metadata, _len("topics")),
    19: ApiHandler(handle_create_topics, _len("topics")),
    20: ApiHandler(handle_delete_topics, _delete_topics),
    29: ApiHandler(handle_describe_acls, _one),
    30: ApiHandler(handle_create_acls, _len("creations")),
    31: ApiHandler(handle_delete_acls, _len("filters")),
    32: ApiHandler(handle_describe_configs, _len("resources")),
    35: ApiHandler(handle_describe_log_dirs, _len("topics")),
    37: ApiHandler(handle_create_partitions, _len("topics")),
    43: ApiHandler(handle_elect_leaders, _nested("topic_partitions", "partitions")),
    44: ApiHandler(handle_incremental_alter_configs, _len("resources")),
    45: ApiHandler(handle_alter_partition_reassignments, _nested("topics", "partitions")),
    46: ApiHandler(handle_list_partition_reassignments, _len("topics")),
    48: ApiHandler(handle_describe_client_quotas, _one),
    49: ApiHandler(handle_alter_client_quotas, _len("entries")),
    50: ApiHandler(handle_describe_user_scram_credentials, _one),
    51: ApiHandler(handle_alter_user_scram_credentials, _scram_alterations),
    60: ApiHandler(handle_describe_cluster, _one),
}

__all__ = ["HANDLERS", "ApiHandler", "Handler"]
