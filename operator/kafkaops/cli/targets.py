"""Which cluster each resource goes to, and how to connect to it (plan, apply, export).

- With --bootstrap-server: every resource in PATH goes to that cluster, whatever its
  clusterRef says. A single KafkaCluster in PATH still supplies the deletion policy.
- Without it: each resource goes to the KafkaCluster its clusterRef names, which must be in
  PATH. Credentials: --command-config for every cluster, else the per-cluster file
  `<config dir>/<cluster name>.properties` when it exists (config dir: --config-dir,
  $KAFKAOPS_CONFIG_DIR, or ~/.config/kafkaops), else the KafkaCluster's own tls settings
  (system CA) and no SASL.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from kafkaops.frozen import frozen
from kafkaops.kafka import ClientSettings, SecuritySettings
from kafkaops.reconcile.desired import DesiredState, group_by_cluster
from kafkaops.reconcile.settings import EngineSettings
from kafkaops.resources.models import KafkaAcl, KafkaBrokerConfig, KafkaCluster, KafkaTopic, Resource
from kafkaops.resources.users import KafkaClientQuota, KafkaUser

CLUSTER_NOT_FOUND = "ClusterNotFound"
CREDENTIALS_MISSING = "CredentialsMissing"
DECLARED_TWICE = "DeclaredTwice"
CLIENT_CONFIG_INVALID = "ClientConfigInvalid"


class TargetError(ValueError):
    """The command cannot tell which cluster to talk to or how."""


@frozen
class Target:
    """One cluster to plan or apply against."""

    name: str
    settings: ClientSettings
    desired: DesiredState
    engine: EngineSettings = EngineSettings()  # the engine's part of the same overrides (wait_timeout...)


@frozen
class Unroutable:
    """A resource no cluster could be found or connected for."""

    resource: Resource
    reason: str
    message: str


def config_dir(option: str | None = None) -> Path:
    if option:
        return Path(option)
    env = os.environ.get("KAFKAOPS_CONFIG_DIR")
    return Path(env) if env else Path.home() / ".config" / "kafkaops"


def client_settings(bootstrap: str | list[str] | tuple[str, ...], command_config: str | None,
                    **overrides: object) -> ClientSettings:
    """Settings for --bootstrap-server and --command-config (a Kafka client.properties file)."""
    return ClientSettings.create(bootstrap, properties=command_config, **overrides)


def cluster_settings(cluster: KafkaCluster, command_config: str | None, directory: Path,
                     **overrides: object) -> ClientSettings:
    properties = command_config
    if properties is None and (candidate := directory / f"{cluster.name}.properties").is_file():
        properties = str(candidate)
    if properties is not None:
        return client_settings(cluster.spec.bootstrap_servers, properties, **overrides)
    if cluster.spec.sasl is not None:
        raise TargetError(
            f"KafkaCluster {cluster.name!r} uses SASL {cluster.spec.sasl.mechanism}: give its credentials with "
            f"--command-config FILE or in {directory / (cluster.name + '.properties')}"
        )
    security = SecuritySettings()
    tls = cluster.spec.tls
    if tls is not None and tls.enabled:
        security = SecuritySettings(protocol="SSL", ssl_check_hostname=tls.verify_hostname)
    settings = ClientSettings.create(cluster.spec.bootstrap_servers, security=security)
    return replace(settings, **overrides) if overrides else settings  # type: ignore[arg-type]


def _identity(resource: Resource) -> str | None:
    if isinstance(resource, KafkaTopic):
        return f"topic {resource.topic_name!r}"
    if isinstance(resource, KafkaAcl):
        return f"principal {resource.principal!r}"
    if isinstance(resource, KafkaBrokerConfig):
        return "the cluster-wide broker config" if resource.broker_id is None else f"broker {resource.broker_id}'s config"
    if isinstance(resource, KafkaUser):
        return f"KafkaUser {resource.principal!r}"
    if isinstance(resource, KafkaClientQuota):
        return f"quota entity {resource.entity_text}"
    return None


def split_clashes(resources: tuple[Resource, ...]) -> tuple[list[Resource], list[tuple[Resource, str, str]]]:
    """Resources that would meet on one cluster twice (validated per cluster, but --bootstrap-server
    sends every cluster's manifests to one): neither copy is applied, so no declaration silently wins."""
    seen: dict[str, list[Resource]] = {}
    for resource in resources:
        if (identity := _identity(resource)) is not None:
            seen.setdefault(identity, []).append(resource)
    clashing: list[tuple[Resource, str, str]] = []
    bad: set[int] = set()
    for identity, items in seen.items():
        if len(items) > 1:
            for item in items:
                others = ", ".join(str(o.source) for o in items if o is not item)
                clashing.append((item, identity, others))
                bad.add(id(item))
    return [r for r in resources if id(r) not in bad], clashing


def resolve_targets(
    resources: tuple[Resource, ...],
    bootstrap: str | None,
    command_config: str | None,
    config_directory: str | None = None,
    **overrides: object,
) -> tuple[list[Target], list[Unroutable]]:
    """The clusters to reconcile and the resources that cannot be routed (with why). `overrides`:
    settings by name, the client's and the engine's (`EngineSettings.split`)."""
    engine, overrides = EngineSettings.split(overrides)
    clusters = [r for r in resources if isinstance(r, KafkaCluster)]
    if bootstrap:
        policy_cluster = clusters[0] if len(clusters) == 1 else None
        kept, clashing = split_clashes(resources)
        desired = DesiredState.of(kept, policy_cluster)
        name = policy_cluster.name if policy_cluster else bootstrap
        unroutable = [Unroutable(r, DECLARED_TWICE, f"{what} is also declared by {other}; with --bootstrap-server every "
                                                    "resource goes to one cluster, so neither is applied")
                      for r, what, other in clashing]
        return [Target(name, client_settings(bootstrap, command_config, **overrides), desired, engine)], unroutable
    if not clusters:
        raise TargetError("no --bootstrap-server given and no KafkaCluster in the manifests: give "
                          "--bootstrap-server HOST:PORT, or include the KafkaCluster the clusterRefs name")
    groups = group_by_cluster(resources)
    directory = config_dir(config_directory)
    targets: list[Target] = []
    unroutable = [
        # Validation rejects a clusterRef to a name no KafkaCluster has; one left here names a
        # KafkaCluster that is itself invalid (reported with the validation errors).
        Unroutable(r, CLUSTER_NOT_FOUND, f"clusterRef {r.cluster_ref} names no valid KafkaCluster in the given "
                                         "manifests")
        for r in groups.unresolved
    ]
    for cluster, desired in groups.groups:
        try:
            settings = cluster_settings(cluster, command_config, directory, **overrides)
        except (TargetError, ValueError) as exc:  # ValueError: a bad <cluster>.properties fails its cluster only
            reason = CREDENTIALS_MISSING if isinstance(exc, TargetError) else CLIENT_CONFIG_INVALID
            unroutable.extend(Unroutable(r, reason, str(exc))
                              for r in (*desired.topics, *desired.acls, *desired.broker_configs, *desired.users,
                                        *desired.client_quotas))
            continue
        targets.append(Target(cluster.name, settings, desired, engine))
    return targets, unroutable
