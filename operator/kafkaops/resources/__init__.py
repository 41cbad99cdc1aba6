"""The desired state: JSON Schemas, frozen models, YAML loading, validation and CRD generation.

    result = load_and_validate(["examples/clusters/dev"])
    for resource in result.valid: ...          # apply these
    for source, issues in result.invalid.items(): ...   # skip these, report why

No Kafka connection anywhere in this package. See README.md beside this file.
"""

from kafkaops.resources.acl import AclBinding, AclOperation, AclPermission, PatternType, ResourceType
from kafkaops.resources.documents import Document, ResourceRef, Source
from kafkaops.resources.issues import Severity, ValidationIssue
from kafkaops.resources.kinds import (
    API_GROUP,
    API_VERSION,
    GROUP_VERSION,
    KAFKA_ACL,
    KAFKA_BROKER_CONFIG,
    KAFKA_CLIENT_QUOTA,
    KAFKA_CLUSTER,
    KAFKA_TOPIC,
    KAFKA_USER,
    KINDS,
)
from kafkaops.resources.loader import LoadNote, LoadResult, document_from_custom_resource, load_paths, load_text
from kafkaops.resources.models import (
    AclEntry,
    AllowedNamespace,
    ClusterRef,
    DeletionPolicy,
    FrozenDict,
    KafkaAcl,
    KafkaBrokerConfig,
    KafkaCluster,
    KafkaClusterSpec,
    KafkaTopic,
    Resource,
    SaslMechanism,
    SaslSpec,
    TlsSpec,
    TopicDeletion,
    build_resource,
)
from kafkaops.resources.topic_configs import TOPIC_CONFIGS, topic_config_default, topic_config_defaults
from kafkaops.resources.users import KafkaClientQuota, KafkaUser, PasswordSecretRef, ScramAuthentication, ScramType
from kafkaops.resources.validation import (
    CheckedResource,
    InvalidResourceError,
    ValidatedSet,
    check_custom_resource,
    from_custom_resource,
    load_and_validate,
    validate_documents,
    validate_load,
    validate_set,
)

__all__ = [
    "API_GROUP", "API_VERSION", "GROUP_VERSION", "KAFKA_ACL", "KAFKA_BROKER_CONFIG", "KAFKA_CLUSTER", "KAFKA_TOPIC",
    "KAFKA_CLIENT_QUOTA", "KAFKA_USER", "KINDS", "TOPIC_CONFIGS",
    "AclBinding", "AclEntry", "AclOperation", "AclPermission", "AllowedNamespace", "CheckedResource", "ClusterRef",
    "DeletionPolicy", "Document", "FrozenDict", "InvalidResourceError", "KafkaAcl", "KafkaBrokerConfig",
    "KafkaCluster", "KafkaClusterSpec", "KafkaTopic", "LoadNote", "LoadResult", "PatternType", "Resource",
    "ResourceRef", "ResourceType", "SaslMechanism", "SaslSpec", "Severity", "Source", "TlsSpec", "TopicDeletion",
    "ValidatedSet", "ValidationIssue", "KafkaClientQuota", "KafkaUser", "PasswordSecretRef", "ScramAuthentication",
    "ScramType",
    "build_resource", "check_custom_resource", "document_from_custom_resource", "from_custom_resource",
    "load_and_validate", "load_paths", "load_text", "topic_config_default", "topic_config_defaults",
    "validate_documents", "validate_load", "validate_set",
]
