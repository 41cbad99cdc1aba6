"""The Kubernetes operator (kopf): KafkaCluster, KafkaTopic, KafkaAcl, KafkaBrokerConfig.

Front end only: it turns watch events into engine calls (kafkaops.reconcile) and outcomes into
kstatus status. See README.md beside this file.
"""
