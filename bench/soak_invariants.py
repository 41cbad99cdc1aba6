"""The soak's end-of-run invariants: pure functions of what the API and the fake cluster hold.

Inputs are read independently of the operator: the API objects (the harness's own HTTP reads of
the emulator) and `GET /state` of the fake cluster's control endpoint. `Expectation` is what
the harness itself did (which resources it deleted, under which policy, which it released).
Each check returns a list of `Divergence`s; empty means the invariant holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

THROTTLE_TOPIC_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
THROTTLE_BROKER_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                        "replica.alter.log.dirs.io.max.bytes.per.second")


@dataclass(frozen=True, slots=True)
class Divergence:
    invariant: str
    resource: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.invariant}] {self.resource}: {self.detail}"


@dataclass(slots=True)
class Expectation:
    """What the harness did, so the end state can be judged: topics whose resource was deleted
    (and whether Kafka should keep them), principals whose KafkaAcl was deleted, config keys a
    topic's spec ever held, resources the harness released with managed=false."""

    deleted_topics: dict[str, bool] = field(default_factory=dict)  # topic name -> kept in Kafka
    deleted_principals: set[str] = field(default_factory=set)
    ever_configured: dict[str, set[str]] = field(default_factory=dict)  # topic -> keys
    deleted_namespaces: set[str] = field(default_factory=set)
    broker_keys_ever: set[str] = field(default_factory=set)


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any]:
    for item in (obj.get("status") or {}).get("conditions") or ():
        if item.get("type") == type_:
            return item
    return {}


def key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{obj.get('kind', '?')} {meta.get('namespace')}/{meta['name']}"


def check_settled(objects: Iterable[Mapping[str, Any]]) -> list[Divergence]:
    """Every live resource Ready at its generation; none Reconciling or Stalled."""
    found = []
    for obj in objects:
        if obj["metadata"].get("deletionTimestamp"):
            found.append(Divergence("no-wedged-deletion", key(obj),
                                    f"still present with finalizers {obj['metadata'].get('finalizers')}"))
            continue
        ready = condition(obj, "Ready")
        observed = (obj.get("status") or {}).get("observedGeneration")
        if ready.get("status") != "True" or observed != obj["metadata"].get("generation"):
            found.append(Divergence("ready-at-generation", key(obj),
                                    f"Ready={ready.get('status')} reason={ready.get('reason')} "
                                    f"message={str(ready.get('message'))[:160]!r} observedGeneration={observed} "
                                    f"generation={obj['metadata'].get('generation')}"))
    return found


def topic_name(obj: Mapping[str, Any]) -> str:
    return obj["spec"].get("topicName") or obj["metadata"]["name"]


def check_topics(topics: Iterable[Mapping[str, Any]], kafka: Mapping[str, Any], expect: Expectation) -> list[Divergence]:
    """Kafka holds exactly the live topics' partitions, replicas and owned configs; deleted
    Delete-policy topics are gone, Retain ones stay; nothing else exists; nothing created twice."""
    found = []
    held = kafka["topics"]
    live = {topic_name(t): t for t in topics}
    for name, obj in live.items():
        actual = held.get(name)
        if actual is None:
            found.append(Divergence("kafka-matches-spec", key(obj), "topic missing in Kafka"))
            continue
        spec = obj["spec"]
        replicas = actual["replicas"]
        if len(replicas) != spec.get("partitions", 1):
            found.append(Divergence("kafka-matches-spec", key(obj),
                                    f"partitions {len(replicas)} in Kafka, {spec.get('partitions')} declared"))
        rfs = sorted({len(r) for r in replicas})
        if rfs != [spec.get("replicationFactor", 1)]:
            found.append(Divergence("kafka-matches-spec", key(obj),
                                    f"replication factor {rfs} in Kafka, {spec.get('replicationFactor')} declared"))
        declared = {k: str(v) for k, v in (spec.get("config") or {}).items()}
        owned = expect.ever_configured.get(name, set()) | set(declared)
        configs = {k: v for k, v in actual["configs"].items() if k in owned}
        if configs != declared:
            found.append(Divergence("kafka-matches-spec", key(obj), f"owned configs {configs} in Kafka, {declared} declared"))
        throttles = {k: v for k, v in actual["configs"].items() if k in THROTTLE_TOPIC_KEYS}
        if throttles:
            found.append(Divergence("throttles-removed", key(obj), f"throttle configs left: {throttles}"))
    for name, kept in expect.deleted_topics.items():
        if name in live:
            continue
        if kept and name not in held and kafka.get("deleted", {}).get(name, 0):
            # (never created - the create was still in flight when it was released - is not a deletion)
            found.append(Divergence("retain-keeps-topic", f"topic {name}",
                                    "deleted in Kafka (DeleteTopics) under Retain/unmanaged"))
        if not kept and name in held:
            found.append(Divergence("delete-removes-topic", f"topic {name}", "deleted under Delete, still in Kafka"))
    extra = sorted(set(held) - set(live) - set(expect.deleted_topics))
    for name in extra:
        found.append(Divergence("no-unexpected-topics", f"topic {name}", "in Kafka but declared by no resource"))
    for name, times in sorted(kafka.get("created", {}).items()):
        if times > 1:
            found.append(Divergence("created-once", f"topic {name}",
                                    f"created {times} times (TOPIC_ALREADY_EXISTS answered "
                                    f"{kafka.get('already_exists', {}).get(name, 0)} times)"))
    return found


def acl_count(spec: Mapping[str, Any]) -> int:
    bindings = set()
    for entry in spec.get("acls") or ():
        resource = entry["resource"]
        for operation in entry["operations"]:
            bindings.add((resource["type"], resource["name"], resource.get("patternType", "Literal"), operation,
                          entry.get("host", "*"), entry.get("permission", "Allow")))
    return len(bindings)


def check_acls(acls: Iterable[Mapping[str, Any]], kafka: Mapping[str, Any], expect: Expectation) -> list[Divergence]:
    """Each live KafkaAcl's principal holds exactly its bindings; deleted principals hold none."""
    found = []
    held: dict[str, int] = {}
    for binding in kafka["acls"]:
        held[binding["principal"]] = held.get(binding["principal"], 0) + 1
    live = {}
    for obj in acls:
        principal = obj["spec"]["principal"]
        live[principal] = obj
        want = acl_count(obj["spec"])
        if held.get(principal, 0) != want:
            found.append(Divergence("kafka-matches-spec", key(obj),
                                    f"{held.get(principal, 0)} bindings in Kafka for {principal}, {want} declared"))
    for principal in sorted(expect.deleted_principals - set(live)):
        if held.get(principal):
            found.append(Divergence("delete-removes-acls", f"principal {principal}",
                                    f"{held[principal]} bindings left after its KafkaAcl was deleted"))
    return found


def check_broker_configs(configs: Iterable[Mapping[str, Any]], kafka: Mapping[str, Any],
                         expect: Expectation) -> list[Divergence]:
    """Cluster-wide broker defaults hold what the live KafkaBrokerConfigs declare; no throttle rates left."""
    found = []
    defaults = kafka["default_broker_configs"]
    declared: dict[str, str] = {}
    for obj in configs:
        declared.update({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in obj["spec"]["config"].items()})
    owned = {k: v for k, v in defaults.items() if k in expect.broker_keys_ever | set(declared)}
    if owned != declared:
        found.append(Divergence("kafka-matches-spec", "broker defaults", f"{owned} in Kafka, {declared} declared"))
    for broker, values in sorted(kafka["broker_configs"].items()):
        left = {k: v for k, v in values.items() if k in THROTTLE_BROKER_KEYS}
        if left:
            found.append(Divergence("throttles-removed", f"broker {broker}", f"throttle rates left: {left}"))
    if kafka["reassignments"]:
        found.append(Divergence("moves-finished", "cluster", f"reassignments in flight: {kafka['reassignments'][:5]}"))
    return found


def check_secrets(texts: Mapping[str, str], secrets: Iterable[str]) -> list[Divergence]:
    """No secret value in any log, Event or status text."""
    return [Divergence("no-secret-leaked", where, "contains a secret value")
            for where, text in texts.items() for secret in secrets if secret and secret in text]


def check_deletion_cap(deletions: Iterable[tuple[float, str]], topics: set[str], cap: int, window: float,
                       until: float) -> list[Divergence]:
    """At most `cap` deletions of `topics` (one KafkaCluster's) in Kafka within any `window`
    seconds before `until` (the moment a person confirmed more), in Kafka's own deletion times."""
    times = sorted(at for at, name in deletions if name in topics and at < until)
    found = []
    for index, at in enumerate(times):
        within = [t for t in times[index:] if t - at < window]
        if len(within) > cap:
            found.append(Divergence("deletion-cap", "KafkaCluster", f"{len(within)} topic deletions within {window:g}s "
                                                                  f"(cap {cap}) from t={at:.1f}"))
            break
    return found


def check_growth(samples: list[tuple[float, int, int]], warmup_s: float, limit: float = 0.10) -> list[Divergence]:
    """RSS and open fds of the last operator process: at most `limit` growth after warm-up
    (samples: (seconds since that process started, RSS bytes, fds))."""
    after = [s for s in samples if s[0] >= warmup_s]
    if len(after) < 3:
        return []
    found = []
    for index, what in ((1, "RSS"), (2, "open fds")):
        base, last = after[0][index], max(s[index] for s in after[-3:])
        if base and (last - base) / base > limit:
            found.append(Divergence("flat-resources", "operator", f"{what} grew from {base} to {last} after warm-up"))
    return found
