"""The API versions the fake cluster test double serves (KIP-35 ApiVersions).

These are the ranges the double's handlers answer, not the client's table:
the double advertises what it does, and the client must cope.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
SASL_APIS = frozenset({SASL_HANDSHAKE, SASL_AUTHENTICATE})
ACL_APIS = frozenset({29, 30, 31})

SUPPORTED_VERSIONS: Mapping[int, tuple[int, int]] = {
    3: (1, 12),  # Metadata
    17: (1, 1),  # SaslHandshake (only with SASL configured)
    18: (0, 3),  # ApiVersions
    19: (2, 7),  # CreateTopics
    20: (1, 6),  # DeleteTopics
    29: (1, 3),  # DescribeAcls
    30: (1, 3),  # CreateAcls
    31: (1, 3),  # DeleteAcls
    32: (1, 4),  # DescribeConfigs
    35: (1, 4),  # DescribeLogDirs
    36: (0, 2),  # SaslAuthenticate (only with SASL configured)
    37: (0, 3),  # CreatePartitions
    43: (0, 2),  # ElectLeaders
    44: (0, 1),  # IncrementalAlterConfigs
    45: (0, 0),  # AlterPartitionReassignments
    46: (0, 0),  # ListPartitionReassignments
    48: (0, 1),  # DescribeClientQuotas
    49: (0, 1),  # AlterClientQuotas
    50: (0, 0),  # DescribeUserScramCredentials
    51: (0, 0),  # AlterUserScramCredentials
    60: (0, 1),  # DescribeCluster
}


def advertised_versions(
    disabled: Set[int], caps: Mapping[int, int], sasl: bool
) -> dict[int, tuple[int, int]]:
    """The ranges one broker advertises: supported, minus disabled/SASL, capped (cap < min drops it)."""
    result: dict[int, tuple[int, int]] = {}
    for api_key, (low, high) in SUPPORTED_VERSIONS.items():
        if api_key in disabled and api_key != API_VERSIONS:
            continue
        if api_key in SASL_APIS and not sasl:
            continue
        high = min(high, caps.get(api_key, high))
        if high >= low:
            result[api_key] = (low, high)
    return result
