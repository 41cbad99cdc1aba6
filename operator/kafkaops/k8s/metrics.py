"""Prometheus metrics of the operator (served on OperatorSettings.metrics_port, /metrics)."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server



class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.reconciles = Counter("kafkaops_reconciles_total", "Reconciles by kind and outcome",
                                  ["kind", "outcome", "reason"], registry=r)
        self.duration = Histogram("kafkaops_reconcile_duration_seconds", "Time of one resource's reconcile",
                                  ["kind"], registry=r)
        self.requests = Counter("kafkaops_admin_requests_total", "Admin requests sent, by API",
                                ["cluster", "api"], registry=r)
        self.batch_items = Histogram("kafkaops_batch_items", "Items per batched admin request, by Batcher lane",
                                     ["cluster", "lane"], buckets=(1, 2, 5, 10, 50, 100, 500, 1000, 5000, 10000), registry=r)
        self.queue_depth = Gauge("kafkaops_batcher_queue_depth", "Items waiting in a cluster's Batcher",
                                 ["cluster"], registry=r)
        self.resync = Histogram("kafkaops_resync_duration_seconds", "Time of one cluster resync", ["cluster"],
                                registry=r)
        self.drifted = Counter("kafkaops_drift_restored_total", "Resources whose drift a resync restored",
                               ["cluster", "kind"], registry=r)
        self._lane_batches: dict[tuple[str, str], int] = {}
        self._requests_seen: dict[tuple[str, str], int] = {}

    def serve(self, port: int) -> None:
        start_http_server(port, registry=self.registry)

    def record(self, kind: str, outcome: str, reason: str, seconds: float) -> None:
        self.reconciles.labels(kind, outcome, reason).inc()
        self.duration.labels(kind).observe(seconds)

    def record_requests(self, cluster: str, sent: Mapping[str, int]) -> None:
        """Count the admin client's requests from its running totals (a Report's counts would count
        the requests of concurrent reconciles once per reconcile)."""
        for api, total in sent.items():
            seen = self._requests_seen.get((cluster, api), 0)
            if total > seen:
                self.requests.labels(cluster, api).inc(total - seen)
                self._requests_seen[(cluster, api)] = total

    def record_batcher(self, cluster: str, stats: Mapping[str, object], depth: int) -> None:
        """Observe each lane's new batches since the last call (their mean size), and the queue depth."""
        self.queue_depth.labels(cluster).set(depth)
        for lane, lane_stats in stats.items():
            batches = getattr(lane_stats, "batches", 0)
            items = getattr(lane_stats, "items", 0)
            seen = self._lane_batches.get((cluster, lane), 0)
            if batches > seen:
                self.batch_items.labels(cluster, lane).observe(items / max(batches, 1))
                self._lane_batches[(cluster, lane)] = batches
