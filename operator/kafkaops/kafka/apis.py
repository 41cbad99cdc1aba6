"""The Kafka APIs kafkaops speaks, with the version ranges it can encode.

Version choice (KIP-35): per broker, the highest version inside both the
broker's advertised range (ApiVersions) and ours. Our ranges are bounded by
what kio generates and what our request builders fill in.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from .errors import UnsupportedFeature


class Api(enum.IntEnum):
    METADATA = 3
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60

    @property
    def title(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))


# (min, max) versions kafkaops can encode and decode for each API.
CLIENT_RANGES: Mapping[Api, tuple[int, int]] = {
    Api.METADATA: (1, 12),
    Api.SASL_HANDSHAKE: (1, 1),
    Api.API_VERSIONS: (0, 3),
    Api.CREATE_TOPICS: (2, 7),
    Api.DELETE_TOPICS: (1, 6),
    Api.DESCRIBE_ACLS: (1, 3),
    Api.CREATE_ACLS: (1, 3),
    Api.DELETE_ACLS: (1, 3),
    Api.DESCRIBE_CONFIGS: (1, 4),
    Api.DESCRIBE_LOG_DIRS: (1, 4),
    Api.SASL_AUTHENTICATE: (0, 2),
    Api.CREATE_PARTITIONS: (0, 3),
    Api.ELECT_LEADERS: (0, 2),
    Api.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    Api.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    Api.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    Api.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    Api.ALTER_CLIENT_QUOTAS: (0, 1),
    Api.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    Api.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    Api.DESCRIBE_CLUSTER: (0, 1),
}

# APIs whose newer versions may answer THROTTLING_QUOTA_EXCEEDED (KIP-599).
THROTTLED_APIS = frozenset({Api.CREATE_TOPICS, Api.DELETE_TOPICS, Api.CREATE_PARTITIONS})


def choose_version(
    api: Api,
    broker_versions: Mapping[int, tuple[int, int]],
    broker_id: int | None = None,
) -> int:
    """Highest version both sides support, or UnsupportedFeature naming the ranges."""
    ours = CLIENT_RANGES[api]
    theirs = broker_versions.get(int(api))
    if theirs is None:
        raise UnsupportedFeature(api.title, int(api), broker_id, None, ours)
    low, high = max(ours[0], theirs[0]), min(ours[1], theirs[1])
    if low > high:
        raise UnsupportedFeature(api.title, int(api), broker_id, theirs, ours)
    return high
