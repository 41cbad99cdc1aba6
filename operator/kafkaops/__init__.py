"""kafkaops: a declarative GitOps reconciler for Apache Kafka."""

__version__ = "0.1.0"
