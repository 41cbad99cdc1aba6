"""kopf wiring: every handler is a few lines handing the body to the Reconciler.

Importing this module registers the handlers with kopf's default registry (`kafkaops run` does).
Indexes (kept by kopf, complete before any handler runs):
- `*_claims`: claim key (topic / principal / broker on a cluster) -> who claims it, so a conflict
  is decided by the oldest resource, the same way after every restart (no flapping);
- `*_by_cluster`: cluster -> bodies, so the per-cluster resync reads all managed state in bulk.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import kopf

from kafkaops.k8s.context import Clusters, OperatorSettings
from kafkaops.k8s.kinds import (
    CONFIRM_DELETIONS,
    FINALIZER,
    GROUP,
    PLURALS,
    VERSION,
    Claim,
    claim_key,
    claim_of,
    cluster_of,
)
from kafkaops.k8s.metrics import Metrics
from kafkaops.k8s.reconciler import Reconciler, Result
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_TOPIC
from kafkaops.resources.models import ClusterRef

STORAGE_PREFIX = "kopf.kafkaops.io"  # kopf's own bookkeeping; user annotations stay kafkaops.io/*


@dataclass
class OperatorState:
    reconciler: Reconciler
    api: Any  # KubernetesApi (or a test double): patch_status for the resync


def _state(memo: kopf.Memo) -> OperatorState:
    return memo["kafkaops"]


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, logger: logging.Logger, **_: Any) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=STORAGE_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=STORAGE_PREFIX, key="last-handled-configuration")
    settings.posting.level = logging.WARNING  # our own Events mark transitions
    settings.networking.error_backoffs = [1, 2, 5, 10]
    if "kafkaops" not in memo:
        from kafkaops.k8s.api import KubernetesApi

        api = KubernetesApi()
        operator_settings: OperatorSettings = memo.get("operator_settings") or OperatorSettings()
        memo["kafkaops"] = OperatorState(Reconciler(Clusters(api, operator_settings), Metrics(),
                                                    status_writer=api.patch_status), api)
    state = _state(memo)
    port = state.reconciler.clusters.settings.metrics_port
    if port:
        state.reconciler.metrics.serve(port)
        logger.info("metrics on :%d/metrics", port)


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    await _state(memo).reconciler.clusters.close_all()


def _plain(body: Mapping[str, Any]) -> dict[str, Any]:
    """kopf's Body is a read-only view; validation (jsonschema) and the engine want plain dicts."""
    return copy.deepcopy(dict(body))


def _finish(result: Result, body: kopf.Body, patch: kopf.Patch) -> None:
    if result.status is not None:
        patch.status.update(result.status)
    if result.event is not None:
        kopf.event(body, type=result.event.type, reason=result.event.reason, message=result.event.message)
    if result.retry_after is not None:
        raise kopf.TemporaryError(result.message or "retrying", delay=result.retry_after)


def _claims(index: kopf.Index, body: Mapping[str, Any]) -> list[Claim]:
    key = claim_key(body)
    return list(index.get(key, ())) if key is not None else []


# --- indexes ---------------------------------------------------------------------------------------


def _claim_entry(body: kopf.Body) -> dict[Any, Claim] | None:
    key = claim_key(body)
    return {key: claim_of(body)} if key is not None else None


def _cluster_entry(body: kopf.Body) -> dict[Any, dict[str, Any]] | None:
    cluster = cluster_of(body)
    return {cluster: _plain(body)} if cluster is not None else None


@kopf.index(GROUP, VERSION, PLURALS[KAFKA_TOPIC])
def topic_claims(body: kopf.Body, **_: Any) -> dict[Any, Claim] | None:
    return _claim_entry(body)


@kopf.index(GROUP, VERSION, PLURALS[KAFKA_ACL])
def acl_claims(body: kopf.Body, **_: Any) -> dict[Any, Claim] | None:
    return _claim_entry(body)


@kopf.index(GROUP, VERSION, PLURALS[KAFKA_BROKER_CONFIG])
def broker_claims(body: kopf.Body, **_: Any) -> dict[Any, Claim] | None:
    return _claim_entry(body)


@kopf.index(GROUP, VERSION, PLURALS[KAFKA_TOPIC])
def topics_by_cluster(body: kopf.Body, **_: Any) -> dict[Any, dict[str, Any]] | None:
    return _cluster_entry(body)


@kopf.index(GROUP, VERSION, PLURALS[KAFKA_ACL])
def acls_by_cluster(body: kopf.Body, **_: Any) -> dict[Any, dict[str, Any]] | None:
    return _cluster_entry(body)


@kopf.index(GROUP, VERSION, PLURALS[KAFKA_BROKER_CONFIG])
def brokers_by_cluster(body: kopf.Body, **_: Any) -> dict[Any, dict[str, Any]] | None:
    return _cluster_entry(body)


# --- KafkaTopic, KafkaAcl, KafkaBrokerConfig --------------------------------------------------------


@kopf.on.resume(GROUP, VERSION, PLURALS[KAFKA_TOPIC])
@kopf.on.create(GROUP, VERSION, PLURALS[KAFKA_TOPIC])
@kopf.on.update(GROUP, VERSION, PLURALS[KAFKA_TOPIC])
async def topic_changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, topic_claims: kopf.Index, **_: Any) -> None:
    _finish(await _state(memo).reconciler.reconcile(_plain(body), _claims(topic_claims, body)), body, patch)


@kopf.on.resume(GROUP, VERSION, PLURALS[KAFKA_ACL])
@kopf.on.create(GROUP, VERSION, PLURALS[KAFKA_ACL])
@kopf.on.update(GROUP, VERSION, PLURALS[KAFKA_ACL])
async def acl_changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, acl_claims: kopf.Index, **_: Any) -> None:
    _finish(await _state(memo).reconciler.reconcile(_plain(body), _claims(acl_claims, body)), body, patch)


@kopf.on.resume(GROUP, VERSION, PLURALS[KAFKA_BROKER_CONFIG])
@kopf.on.create(GROUP, VERSION, PLURALS[KAFKA_BROKER_CONFIG])
@kopf.on.update(GROUP, VERSION, PLURALS[KAFKA_BROKER_CONFIG])
async def broker_config_changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, broker_claims: kopf.Index,
                                **_: Any) -> None:
    _finish(await _state(memo).reconciler.reconcile(_plain(body), _claims(broker_claims, body)), body, patch)


async def _removed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, claims: list[Claim]) -> None:
    result = await _state(memo).reconciler.remove(_plain(body), claims)
    if result.release:
        if result.event is not None:
            kopf.event(body, type=result.event.type, reason=result.event.reason, message=result.event.message)
        return
    _finish(Result(result.status, result.event, result.retry_after or 15.0, message=result.message), body, patch)


@kopf.on.delete(GROUP, VERSION, PLURALS[KAFKA_TOPIC])
async def topic_deleted(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, topic_claims: kopf.Index, **_: Any) -> None:
    await _removed(body, patch, memo, _claims(topic_claims, body))


@kopf.on.delete(GROUP, VERSION, PLURALS[KAFKA_ACL])
async def acl_deleted(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, acl_claims: kopf.Index, **_: Any) -> None:
    await _removed(body, patch, memo, _claims(acl_claims, body))


@kopf.on.delete(GROUP, VERSION, PLURALS[KAFKA_BROKER_CONFIG])
async def broker_config_deleted(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, broker_claims: kopf.Index,
                                **_: Any) -> None:
    await _removed(body, patch, memo, _claims(broker_claims, body))


# --- KafkaCluster ----------------------------------------------------------------------------------------


@kopf.on.resume(GROUP, VERSION, "kafkaclusters")
@kopf.on.create(GROUP, VERSION, "kafkaclusters")
@kopf.on.update(GROUP, VERSION, "kafkaclusters", field="spec")
async def cluster_changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    _finish(await _state(memo).reconciler.cluster_changed(_plain(body)), body, patch)


@kopf.on.field(GROUP, VERSION, "kafkaclusters", field=("metadata", "annotations", CONFIRM_DELETIONS))
async def deletions_confirmed(body: kopf.Body, new: Any, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    if str(new).lower() == "true" and _state(memo).reconciler.confirm_deletions(body):
        patch.metadata.annotations[CONFIRM_DELETIONS] = None
        kopf.event(body, type="Normal", reason="DeletionsConfirmed",
                   message="a person confirmed the pending topic deletions over the cap")


@kopf.on.delete(GROUP, VERSION, "kafkaclusters", optional=True)
async def cluster_deleted(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    await _state(memo).reconciler.cluster_deleted(body)


@kopf.daemon(GROUP, VERSION, "kafkaclusters", cancellation_timeout=5.0)
async def resync(stopped: kopf.DaemonStopped, body: kopf.Body, memo: kopf.Memo, logger: logging.Logger,
                 topics_by_cluster: kopf.Index, acls_by_cluster: kopf.Index, brokers_by_cluster: kopf.Index,
                 topic_claims: kopf.Index, acl_claims: kopf.Index, broker_claims: kopf.Index, **_: Any) -> None:
    """Every resyncInterval: one bulk read of the cluster's managed state; drift restored and reported."""
    state = _state(memo)
    namespace, name = body.metadata.namespace, body.metadata.name
    key = (namespace, name)
    while not stopped:
        context = state.reconciler.clusters.get(ClusterRef(name, namespace))
        # no context yet (the create handler is still connecting): look again soon
        interval = context.model.spec.resync_interval_seconds if context is not None else 1.0
        await stopped.wait(interval)
        if stopped or context is None:
            continue
        bodies = [*topics_by_cluster.get(key, ()), *acls_by_cluster.get(key, ()), *brokers_by_cluster.get(key, ())]
        claims: dict[Any, Iterable[Claim]] = {}
        for item in bodies:
            claim = claim_key(item)
            index = {KAFKA_TOPIC: topic_claims, KAFKA_ACL: acl_claims}.get(item.get("kind"), broker_claims)
            if claim is not None:
                claims[claim] = list(index.get(claim, ()))
        try:
            changed = await state.reconciler.resync(context, bodies, claims)
        except Exception:  # a resync must never kill the daemon; the next round tries again
            logger.exception("resync of KafkaCluster %s failed", name)
            continue
        try:
            note = await state.reconciler.maybe_elect_leaders(context)
        except Exception:
            logger.exception("preferred leader election on KafkaCluster %s failed", name)
            note = None
        if note is not None:
            kopf.event(body, type=note.type, reason=note.reason, message=note.message)
        for item, result in changed:
            metadata = item.get("metadata") or {}
            plural = PLURALS.get(item.get("kind", ""), "")
            if result.status is not None:
                await state.api.patch_status(plural, metadata.get("namespace"), metadata.get("name"), result.status)
            if result.event is not None:
                kopf.event(item, type=result.event.type, reason=result.event.reason, message=result.event.message)
