"""The Kafka admin client of kafkaops (asyncio, on kio's message types).

    from kafkaops.kafka import AdminClient, NewTopic
    async with AdminClient.connect("127.0.0.1:9092") as admin:
        results = await admin.create_topics([NewTopic("orders", partitions=3, replication_factor=1)])
        assert results["orders"].error is None
"""

from .admin import AdminClient
from .apis import Api
from .batcher import Batcher
from .errors import (
    AuthenticationFailed,
    BrokerUnreachable,
    ClusterUnreachable,
    KafkaConnectionError,
    KafkaError,
    KafkaOpsError,
    KafkaRequestError,
    RequestTimedOut,
    UnsupportedFeature,
)
from .models import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermission,
    AlterConfigOp,
    AlterOp,
    BrokerInfo,
    ClusterDescription,
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    CreatedTopic,
    ItemResult,
    LogDir,
    NewPartitions,
    NewTopic,
    PartitionInfo,
    PatternType,
    QuotaAlteration,
    QuotaEntity,
    QuotaFilter,
    QuotaFilterComponent,
    QuotaMatch,
    Reassignment,
    ResourceType,
    Results,
    ScramCredentialInfo,
    ScramDeletion,
    ScramMechanism,
    ScramUpsertion,
    TopicInfo,
    TopicPartition,
)
from .scram import scram_upsertion
from .security import SecuritySettings
from .settings import ClientSettings

__all__ = [name for name in dir() if not name.startswith("_")]
