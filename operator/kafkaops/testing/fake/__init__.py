"""A fake multi-broker Kafka cluster: a TEST DOUBLE for the admin client.

Import from ``kafkaops.testing.fake_cluster`` (the public import point).
Modules: ``state`` (shared cluster state), ``catalog`` (configs), ``acls``
(authorizer), ``placement`` (replica placement), ``faults`` (injectable
faults), ``handlers`` (one module per API family), ``server`` (listeners).
"""

from .acls import AclBinding, AclBindingFilter, AclOperation, AclPermission, PatternType, ResourceType
from .catalog import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigSource, ConfigType
from .faults import WRITE_APIS, FaultDouble, FaultKind
from .server import FakeClusterDouble, RequestRecord
from .state import LOG_DIR, MIB, ClusterStateDouble, PartitionDouble, ReassignmentDouble, TopicDouble
from .versions import SUPPORTED_VERSIONS

__all__ = [
    "BROKER_CONFIGS",
    "LOG_DIR",
    "MIB",
    "SUPPORTED_VERSIONS",
    "TOPIC_CONFIGS",
    "WRITE_APIS",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermission",
    "ClusterStateDouble",
    "ConfigSource",
    "ConfigType",
    "FakeClusterDouble",
    "FaultDouble",
    "FaultKind",
    "PartitionDouble",
    "PatternType",
    "ReassignmentDouble",
    "RequestRecord",
    "ResourceType",
    "TopicDouble",
]
