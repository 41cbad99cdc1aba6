"""The snapshot rows of users and quotas: one row per SCRAM credential (user, mechanism,
iterations: Kafka describes nothing secret, and nothing else is written) and one per quota key of
each quota entity. What could not be read (a cluster without the APIs) is a note."""

from __future__ import annotations

from typing import Any

from kafkaops.kafka import ScramMechanism
from kafkaops.kafka.quotas import CLIENT_ID, IP, USER
from kafkaops.reconcile.observed import ObservedState

Row = dict[str, Any]


def principal_rows(cluster: str, observed: ObservedState) -> tuple[list[Row], list[Row], list[str]]:
    """(scram_credentials rows, client_quotas rows, notes)."""
    notes: list[str] = []
    credentials: list[Row] = []
    if observed.scram is None:
        notes.append(f"no SCRAM credentials: DescribeUserScramCredentials failed ({observed.scram_error}); "
                     "scram_credentials.parquet is empty")
    else:
        credentials = [{"cluster": cluster, "user": user, "mechanism": info.mechanism.sasl_name,
                        "iterations": info.iterations}
                       for user in sorted(observed.scram) for info in sorted(observed.scram[user])
                       if info.mechanism is not ScramMechanism.UNKNOWN]
    quotas: list[Row] = []
    if observed.quotas is None:
        notes.append(f"no client quotas: DescribeClientQuotas failed ({observed.quotas_error}); "
                     "client_quotas.parquet is empty")
    else:
        for entity in sorted(observed.quotas, key=str):
            parts = {t: entity.name(t) if entity.has(t) else None for t in (USER, CLIENT_ID, IP)}
            for key, value in sorted(observed.quotas[entity].items()):
                quotas.append({"cluster": cluster, "entity": str(entity), "user": parts[USER],
                               "client_id": parts[CLIENT_ID], "ip": parts[IP], "key": key, "value": float(value)})
    return credentials, quotas, notes
