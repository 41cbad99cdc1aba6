"""kopf wiring: every handler is a few lines handing the body to the Reconciler.

Importing this module registers the handlers with kopf's default registry (`kafkaops run` does).
Indexes (kept by kopf, complete before any handler runs), one per kind with two kinds of key:
- ("claim", claim key) (topic / principal / broker on a cluster) -> who claims it, so a conflict
  is decided by the oldest resource, the same way after every restart (no flapping);
- ("cluster", cluster) -> bodies, so the per-cluster resync reads all managed state in bulk;
- `cluster_objects`: the KafkaClusters, so a resource knows whether its cluster exists before the
  KafkaCluster's own handler has run (start-up order does not matter).
The Reconciler reads them through an `IndexCatalog`.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kopf

from kafkaops.k8s import kopf_patches
from kafkaops.k8s.catalog import CLAIM, CLUSTER, IndexCatalog, index_copy
from kafkaops.k8s.context import Clusters, OperatorSettings
from kafkaops.k8s.diffbase import StatusDiffBase
from kafkaops.k8s.elections import maybe_elect_leaders
from kafkaops.k8s.kinds import (
    CLUSTER_PLURAL,
    CONFIRM_DELETIONS,
    FINALIZER,
    GROUP,
    PLURALS,
    STORAGE_PREFIX,
    VERSION,
    claim_key,
    claim_of,
    cluster_of,
)
from kafkaops.k8s.metrics import Metrics
from kafkaops.k8s.reconciler import Reconciler, Result
from kafkaops.k8s.status import EventNote
from kafkaops.k8s.principals import release_user_secret
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_CLIENT_QUOTA, KAFKA_TOPIC, KAFKA_USER

kopf_patches.apply()  # index pre-population without a thundering herd (see kopf_patches.py)

PICKED_UP = f"{STORAGE_PREFIX}/picked-up"  # sharded mode: a new owner's touch (outside kopf's diff)
WORKER_IDLE_WITH_LIMIT = 0.2  # seconds (kopf's default, 5, with no limit)


@dataclass
class OperatorState:
    reconciler: Reconciler
    catalog: IndexCatalog
    sharder: Any = None  # sharded mode: the Sharder (k8s/shards.py)


def _start_sharding(api: Any, state: OperatorState, operator_settings: OperatorSettings) -> Any:
    """Sharded mode: this replica's Leases decide which KafkaClusters it works on; kopf processes
    only their objects (kopf_sharding.py)."""
    import datetime

    from kafkaops.k8s import kopf_sharding
    from kafkaops.k8s.rest import ThreadRest
    from kafkaops.k8s.shards import LeaseApi, Sharder, ShardSettings, replica_identity

    identity = replica_identity()
    sharder = Sharder(LeaseApi(ThreadRest(api.rest.settings)),  # its own loop, in a thread: its own session
                      ShardSettings(identity, operator_settings.lease_namespace, operator_settings.lease_duration),
                      state.catalog.cluster_keys)

    async def touch(plural: str, namespace: str, name: str) -> None:
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        await api.annotate(plural, namespace, name, {PICKED_UP: f"{identity} {stamp}"})

    reconciler = state.reconciler
    reconciler.owner, reconciler.toucher, reconciler.guard = sharder, touch, api.guard
    sharder.on_gained, sharder.on_lost = reconciler.pick_up, reconciler.drop
    kopf_sharding.install(sharder)  # which also starts the sharder, from kopf's first object
    logging.getLogger("kafkaops.operator").info(
        "sharding by KafkaCluster with Leases in namespace %s as %s (lease %gs)", operator_settings.lease_namespace,
        identity, operator_settings.lease_duration)
    return sharder


def _state(memo: kopf.Memo, kwargs: Mapping[str, Any] | None = None) -> OperatorState:
    state: OperatorState = memo["kafkaops"]
    if kwargs is not None:
        state.catalog.bind(kwargs)  # kopf passes its indexes to every handler: the catalog reads them
    return state


def _post(body: Mapping[str, Any], note: EventNote) -> None:
    kopf.event(dict(body), type=note.type, reason=note.reason, message=note.message)


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, logger: logging.Logger, **kwargs: Any) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=STORAGE_PREFIX)
    settings.persistence.diffbase_storage = StatusDiffBase()  # one PATCH per change, not two (k8s/diffbase.py)
    settings.posting.level = logging.WARNING  # our own Events mark transitions
    settings.networking.error_backoffs = [1, 2, 5, 10]
    operator_settings: OperatorSettings = memo.get("operator_settings") or OperatorSettings()
    settings.peering.lifetime = int(operator_settings.peering_lifetime)
    if operator_settings.worker_limit:
        # a worker idles 5 s after its object's last event before it exits, holding its slot: with
        # a limit the slot goes to the next object after 0.2 s (kopf still holds it while the echo of
        # its own PATCH is due). 10,000 at once with a limit of 500: 67.6 s with 1 s, 58.2 s with 0.2
        settings.queueing.worker_limit = operator_settings.worker_limit
        settings.queueing.idle_timeout = WORKER_IDLE_WITH_LIMIT
    if "kafkaops" not in memo:
        from kafkaops.k8s.api import KubernetesApi
        from kafkaops.k8s.rest import Rest

        api = KubernetesApi(Rest(settings))  # kopf's own client and login (k8s/rest.py)
        catalog = IndexCatalog()
        memo["kafkaops"] = OperatorState(Reconciler(Clusters(api, operator_settings), catalog, Metrics(),
                                                    status_writer=api.patch_status, event_poster=_post,
                                                    annotator=api.annotate), catalog)
        if operator_settings.sharding == "leases":
            memo["kafkaops"].sharder = _start_sharding(api, memo["kafkaops"], operator_settings)
    state = _state(memo, kwargs)  # kopf passes its (still filling) indexes to startup handlers too
    port = state.reconciler.clusters.settings.metrics_port
    if port:
        state.reconciler.metrics.serve(port)
        logger.info("metrics on :%d/metrics", port)


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    state = _state(memo)
    if state.sharder is not None:
        await state.sharder.stop()  # the work stops, the Leases are released: others take over at once
    await state.reconciler.close()


def _plain(body: Mapping[str, Any]) -> dict[str, Any]:
    """kopf's Body is a read-only view; validation (jsonschema) and the engine want plain dicts."""
    return copy.deepcopy(dict(body))


def _finish(result: Result, body: kopf.Body, patch: kopf.Patch, logger: logging.Logger) -> None:
    if result.status is not None:
        patch.status.update(result.status)
    if result.event is not None:
        kopf.event(body, type=result.event.type, reason=result.event.reason, message=result.event.message)
        if result.event.type == "Warning":
            logger.warning("%s: %s", result.event.reason, result.event.message)
    if result.retry_after is not None:
        raise kopf.TemporaryError(result.message or "retrying", delay=result.retry_after)


# --- indexes (kopf fills them from the API before any handler runs) --------------------------------
# async: kopf runs a sync handler in its thread pool (a thread hop, a shielded task), which cost
# more than the index entry itself; 14 % of the operator's samples at 2,000 KafkaTopics (py-spy)


def _entries(body: kopf.Body) -> dict[Any, Any] | None:
    """One index per kind, two kinds of key (one index function per object keeps kopf's per-object
    cost down): ("claim", claim key) -> who claims it; ("cluster", cluster key) -> the body."""
    entries: dict[Any, Any] = {}
    if (claim := claim_key(body)) is not None:
        entries[(CLAIM, claim)] = claim_of(body)
    if (cluster := cluster_of(body)) is not None:
        entries[(CLUSTER, cluster)] = index_copy(body)
    return entries or None


@kopf.index(GROUP, VERSION, CLUSTER_PLURAL)
async def cluster_objects(body: kopf.Body, **_: Any) -> dict[Any, dict[str, Any]]:
    return {(body.metadata.namespace, body.metadata.name): index_copy(body)}


@kopf.index(GROUP, VERSION, PLURALS[KAFKA_TOPIC])
async def topic_index(body: kopf.Body, **_: Any) -> dict[Any, Any] | None:
    return _entries(body)


@kopf.index(GROUP, VERSION, PLURALS[KAFKA_ACL])
async def acl_index(body: kopf.Body, **_: Any) -> dict[Any, Any] | None:
    return _entries(body)


@kopf.index(GROUP, VERSION, PLURALS[KAFKA_BROKER_CONFIG])
async def broker_config_index(body: kopf.Body, **_: Any) -> dict[Any, Any] | None:
    return _entries(body)


@kopf.index(GROUP, VERSION, PLURALS[KAFKA_USER])
async def user_index(body: kopf.Body, **_: Any) -> dict[Any, Any] | None:
    return _entries(body)


@kopf.index(GROUP, VERSION, PLURALS[KAFKA_CLIENT_QUOTA])
async def client_quota_index(body: kopf.Body, **_: Any) -> dict[Any, Any] | None:
    return _entries(body)


# --- KafkaTopic, KafkaAcl, KafkaBrokerConfig, KafkaUser, KafkaClientQuota ----------------------------


async def _changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger, reason: Any,
                   kwargs: Mapping[str, Any]) -> None:
    reconciler = _state(memo, kwargs).reconciler
    result = await reconciler.reconcile(_plain(body), resuming=reason == "resume")
    _finish(result, body, patch, logger)


@kopf.on.resume(GROUP, VERSION, PLURALS[KAFKA_TOPIC])
@kopf.on.create(GROUP, VERSION, PLURALS[KAFKA_TOPIC])
@kopf.on.update(GROUP, VERSION, PLURALS[KAFKA_TOPIC])
async def topic_changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger, reason: Any,
                        **kwargs: Any) -> None:
    await _changed(body, patch, memo, logger, reason, kwargs)


@kopf.on.resume(GROUP, VERSION, PLURALS[KAFKA_ACL])
@kopf.on.create(GROUP, VERSION, PLURALS[KAFKA_ACL])
@kopf.on.update(GROUP, VERSION, PLURALS[KAFKA_ACL])
async def acl_changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger, reason: Any,
                      **kwargs: Any) -> None:
    await _changed(body, patch, memo, logger, reason, kwargs)


@kopf.on.resume(GROUP, VERSION, PLURALS[KAFKA_BROKER_CONFIG])
@kopf.on.create(GROUP, VERSION, PLURALS[KAFKA_BROKER_CONFIG])
@kopf.on.update(GROUP, VERSION, PLURALS[KAFKA_BROKER_CONFIG])
async def broker_config_changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger,
                                reason: Any, **kwargs: Any) -> None:
    await _changed(body, patch, memo, logger, reason, kwargs)


@kopf.on.resume(GROUP, VERSION, PLURALS[KAFKA_USER])
@kopf.on.create(GROUP, VERSION, PLURALS[KAFKA_USER])
@kopf.on.update(GROUP, VERSION, PLURALS[KAFKA_USER])
async def user_changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger, reason: Any,
                       **kwargs: Any) -> None:
    await _changed(body, patch, memo, logger, reason, kwargs)


@kopf.on.resume(GROUP, VERSION, PLURALS[KAFKA_CLIENT_QUOTA])
@kopf.on.create(GROUP, VERSION, PLURALS[KAFKA_CLIENT_QUOTA])
@kopf.on.update(GROUP, VERSION, PLURALS[KAFKA_CLIENT_QUOTA])
async def client_quota_changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger,
                               reason: Any, **kwargs: Any) -> None:
    await _changed(body, patch, memo, logger, reason, kwargs)


class DeletionWaits(kopf.TemporaryError):
    """The deletion waits (cluster not connected, deletion cap): the finalizer stays."""


async def _removed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger,
                   kwargs: Mapping[str, Any]) -> None:
    reconciler = _state(memo, kwargs).reconciler
    result = await reconciler.remove(_plain(body))
    if result.release:
        if body.get("kind") == KAFKA_USER and (cluster := cluster_of(body)) is not None:
            await release_user_secret(reconciler.clusters.reader, body, reconciler.catalog.resources(cluster),
                                      keep=reconciler.clusters.secrets_in_use(body.get("metadata", {}).get("namespace")))
        if result.event is not None:
            kopf.event(body, type=result.event.type, reason=result.event.reason, message=result.event.message)
        return
    _finish(Result(result.status, result.event, message=result.message), body, patch, logger)
    raise DeletionWaits(result.message or "deletion waits", delay=result.retry_after or 15.0)


@kopf.on.delete(GROUP, VERSION, PLURALS[KAFKA_TOPIC])
async def topic_deleted(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger,
                        **kwargs: Any) -> None:
    await _removed(body, patch, memo, logger, kwargs)


@kopf.on.delete(GROUP, VERSION, PLURALS[KAFKA_ACL])
async def acl_deleted(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger,
                      **kwargs: Any) -> None:
    await _removed(body, patch, memo, logger, kwargs)


@kopf.on.delete(GROUP, VERSION, PLURALS[KAFKA_BROKER_CONFIG])
async def broker_config_deleted(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger,
                                **kwargs: Any) -> None:
    await _removed(body, patch, memo, logger, kwargs)


@kopf.on.delete(GROUP, VERSION, PLURALS[KAFKA_USER])
async def user_deleted(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger,
                       **kwargs: Any) -> None:
    await _removed(body, patch, memo, logger, kwargs)


@kopf.on.delete(GROUP, VERSION, PLURALS[KAFKA_CLIENT_QUOTA])
async def client_quota_deleted(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger,
                               **kwargs: Any) -> None:
    await _removed(body, patch, memo, logger, kwargs)


# --- KafkaCluster ----------------------------------------------------------------------------------------


@kopf.on.resume(GROUP, VERSION, CLUSTER_PLURAL)
@kopf.on.create(GROUP, VERSION, CLUSTER_PLURAL)
@kopf.on.update(GROUP, VERSION, CLUSTER_PLURAL, field="spec")
async def cluster_changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger,
                          **kwargs: Any) -> None:
    _finish(await _state(memo, kwargs).reconciler.cluster_changed(_plain(body)), body, patch, logger)


@kopf.on.field(GROUP, VERSION, CLUSTER_PLURAL, field=("metadata", "annotations", CONFIRM_DELETIONS))
async def deletions_confirmed(body: kopf.Body, new: Any, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    if str(new).lower() == "true" and _state(memo).reconciler.confirm_deletions(body):
        patch.metadata.annotations[CONFIRM_DELETIONS] = None
        kopf.event(body, type="Normal", reason="DeletionsConfirmed",
                   message="a person confirmed the pending topic deletions over the cap")


@kopf.on.delete(GROUP, VERSION, CLUSTER_PLURAL)
async def cluster_deleted(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger,
                          **kwargs: Any) -> None:
    result = await _state(memo, kwargs).reconciler.cluster_deleted(_plain(body))
    if not result.release:
        _finish(Result(result.status, result.event, message=result.message), body, patch, logger)
        raise DeletionWaits(result.message, delay=result.retry_after or 2.0)


@kopf.daemon(GROUP, VERSION, CLUSTER_PLURAL, cancellation_timeout=5.0)
async def resync(stopped: kopf.DaemonStopped, body: kopf.Body, memo: kopf.Memo, logger: logging.Logger,
                 **kwargs: Any) -> None:
    """Once the cluster connects, then every resyncInterval: one bulk read of the cluster's managed
    state; drift restored and reported. The first round after a start compares every resource the
    resume handlers left alone because their status said they were settled."""
    state = _state(memo, kwargs)
    key = (body.metadata.namespace, body.metadata.name)
    while not stopped:
        if not state.reconciler.owner.owns(key):  # sharded: another replica's now (or again ours later)
            if state.catalog.cluster(key) is None:
                return  # deleted while another replica owned it: kopf here never saw the deletion
            await stopped.wait(1.0)
            continue
        context = state.reconciler.clusters.get(key)
        if context is None or not context.ready:
            await stopped.wait(0.5)  # an in-memory look, no request: the context connects on its own
            continue
        if context.resynced:
            # until the interval is over, or the context was replaced (a spec change, or a sharded
            # replica that lost and regained the cluster: the new context's first resync is due now)
            deadline = time.monotonic() + context.model.spec.resync_interval_seconds
            while not stopped and context.ready and state.reconciler.clusters.get(key) is context \
                    and (left := deadline - time.monotonic()) > 0:
                await stopped.wait(min(left, 1.0))
            if stopped or not context.ready or state.reconciler.clusters.get(key) is not context:
                continue
        try:
            await state.reconciler.resync_cluster(context)
        except Exception:  # a resync must never kill the daemon; the next round tries again
            context.resynced = True
            logger.exception("resync of KafkaCluster %s failed", body.metadata.name)
            continue
        try:
            note = await maybe_elect_leaders(context)
        except Exception:
            logger.exception("preferred leader election on KafkaCluster %s failed", body.metadata.name)
            note = None
        if note is not None:
            kopf.event(body, type=note.type, reason=note.reason, message=note.message)
