"""A seeded chaos soak: the operator against the API emulator and the fake Kafka cluster, each a
separate process, with a random but reproducible workload and faults on both sides, then a
bounded quiet period and the invariants of bench/soak_invariants.py.

    .venv/bin/python bench/soak.py --duration 120 --seed 16 [--mode zk] [--replicas 2]
    make soak DURATION=3600 SEED=16

The seed decides every step (workload and faults); a failure prints the seed, the last steps
and the diverging resources, so `--seed` replays the same scenario. docs/reliability.md lists
the fault kinds and how to run one by hand.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import soak_invariants as inv  # noqa: E402

from kafkaops.testing.stack import ChildProcess, start_dev_cluster, start_emulator, start_operator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
API = "kafkaops.io/v1alpha1"
NS, SIDE_NS = "soak", "soak-side"
PLURALS = {"KafkaTopic": "kafkatopics", "KafkaAcl": "kafkaacls", "KafkaBrokerConfig": "kafkabrokerconfigs",
           "KafkaCluster": "kafkaclusters"}
KAFKA_FAULTS = ("not_controller_storm", "controller_move", "throttled", "timed_out_after_apply",
                "drop_connection", "broker_restart")
API_FAULTS = ("api_409", "api_429", "api_500", "watch_cut", "watch_gone", "slow_api")
WORKLOAD = ("create", "partitions", "config", "rf", "acl", "pause", "delete", "unmanage", "broker_config",
            "rotate_password")
WEIGHTS = (4, 2, 3, 1, 2, 1, 2, 1, 1, 1)
USER, SECRET = "soak", "kafka-credentials"  # the SASL user the operator logs in as, and its Secret
CAP, WINDOW = 4, 30.0  # main cluster: at most 4 topic deletions within 30 s (kafkaops run --deletion-window)
PROCESS_FAULTS = ("operator_kill", "kill_during_reassignment", "kill_during_finalizers")


class Http:
    """JSON over HTTP with retries on what the soak injects (409 on writes is re-read by callers)."""

    def __init__(self, base: str) -> None:
        self.base = base

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
             ok_missing: bool = False, attempts: int = 30) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(attempts):
            request = urllib.request.Request(self.base + path, data=data, method=method,
                                             headers={"Content-Type": content_type})
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return json.loads(response.read() or b"{}")
            except urllib.error.HTTPError as exc:
                if exc.code == 404 and ok_missing:
                    return None
                if exc.code in (429, 500, 503) or (exc.code == 409 and b"injected" in exc.read()):
                    time.sleep(min(0.1 * (attempt + 1), 1.0))
                    continue
                raise RuntimeError(f"{method} {path}: HTTP {exc.code}") from exc
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise RuntimeError(f"{method} {path}: still failing after {attempts} attempts")


def path(plural: str, namespace: str, name: str = "") -> str:
    return f"/apis/kafkaops.io/v1alpha1/namespaces/{namespace}/{plural}" + (f"/{name}" if name else "")


@dataclass
class Soak:
    seed: int
    duration: float
    mode: str = "kraft"
    replicas: int = 1
    quiet_timeout: float = 90.0
    verbose: bool = False
    without: frozenset[str] = frozenset()  # workload steps and fault kinds left out
    rng: random.Random = field(init=False)
    steps: list[str] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    expect: inv.Expectation = field(default_factory=inv.Expectation)
    samples: list[tuple[float, int, int]] = field(default_factory=list)
    topics: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (ns, name) -> spec
    acls: dict[str, dict[str, Any]] = field(default_factory=dict)
    paused: set[tuple[str, str]] = field(default_factory=set)
    counter: int = 0
    passwords: list[str] = field(default_factory=list)  # every password the soak ever set
    main_topics: set[str] = field(default_factory=set)  # topics of the main cluster (the deletion cap)
    confirmed_at: float = float("inf")  # when the soak confirmed deletions over the cap (wall clock)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    # -- processes ------------------------------------------------------------------------------
    def start(self) -> None:
        self.api = start_emulator(ROOT / "crds", namespaces=[NS, SIDE_NS], control=True)
        extra = ("--mode", self.mode, "--tick-interval", "0.05", "--control-port", "0")
        self.passwords.append(self._new_password())
        # SASL on every listener; the password stays out of the command line (and of `ps`)
        self.kafka = start_dev_cluster(*extra, env={"KAFKAOPS_DEV_SASL_USERS": f"{USER}:{self.passwords[-1]}"})
        self.kube = Http(self.api.url)
        self.kafka_control = Http(self.kafka.control_url)
        self.api_control = Http(self.api.control_url)
        self.operators: list[ChildProcess | None] = []
        self.operator_started: list[float] = []
        if self.replicas > 1:
            self.kube.call("POST", "/apis/kopf.dev/v1/clusterkopfpeerings",
                           {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "kafkaops"}})
        for index in range(self.replicas):
            self.operators.append(self._operator(index))
            self.operator_started.append(time.monotonic())

    def _operator(self, index: int) -> ChildProcess:
        log = self.api.directory / f"operator-{index}.log"
        window = ("--deletion-window", str(WINDOW))
        if self.replicas > 1:
            return start_operator(self.api.kubeconfig, *window, log_path=log, peering="kafkaops", priority=100 - index)
        return start_operator(self.api.kubeconfig, *window, log_path=log)

    def _new_password(self) -> str:
        return f"soak-pw-{self.rng.getrandbits(64):016x}"

    def stop(self, keep: bool = False) -> None:
        for operator in getattr(self, "operators", []):
            if operator is not None:  # its logs are in the emulator's directory; its own is empty
                operator.stop()
        for child in (getattr(self, "kafka", None), getattr(self, "api", None)):
            if child is not None:
                child.stop(remove=not keep)

    # -- the scenario ---------------------------------------------------------------------------
    def setup(self) -> None:
        for namespace, name in ((NS, "main"), (SIDE_NS, "side")):
            self.step(f"create Secret {namespace}/{SECRET}")
            self.kube.call("POST", f"/api/v1/namespaces/{namespace}/secrets", {
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET, "namespace": namespace},
                "data": self._secret_data(self.passwords[-1])})
            self._create("KafkaCluster", namespace, name, {
                "bootstrapServers": self.kafka.url.split(","), "resyncInterval": "10s",
                "sasl": {"mechanism": "SCRAM-SHA-512", "credentialsSecretRef": {"name": SECRET}},
                "topicDeletion": {"policy": "Delete", "maxDeletionsPerReconcile": CAP if namespace == NS else 1000}})
        self._create("KafkaBrokerConfig", NS, "defaults", {"clusterRef": {"name": "main"},
                                                             "config": {"log.cleaner.threads": 1}})
        self.expect.broker_keys_ever.add("log.cleaner.threads")
        for _ in range(6):
            self.create_topic(NS)
        for _ in range(3):
            self.create_topic(SIDE_NS)
        for _ in range(2):
            self.edit_acl()

    def run(self) -> list[inv.Divergence]:
        self.start()
        try:
            self.setup()
            deadline = time.monotonic() + self.duration
            namespace_deleted = False
            while time.monotonic() < deadline:
                self.sample()
                if not namespace_deleted and "delete_namespace" not in self.without \
                        and time.monotonic() > deadline - self.duration / 2:
                    self.delete_namespace(SIDE_NS)
                    namespace_deleted = True
                if self.rng.random() < 0.35:
                    self.fault()
                else:
                    self.workload()
                time.sleep(self.rng.uniform(0.2, 1.0))
            return self.quiet()
        finally:
            self.sample()

    def step(self, text: str) -> None:
        self.steps.append(f"{len(self.steps):4d} t={time.monotonic():.1f} {text}")
        if self.verbose:
            print(self.steps[-1], flush=True)

    # -- workload -------------------------------------------------------------------------------
    def workload(self) -> None:
        live = sorted(self.topics)
        choice = self.rng.choices(WORKLOAD, weights=WEIGHTS)[0]
        if choice in self.without:
            choice = "create"
        if choice == "rotate_password":
            self.rotate_password()
            return
        if choice == "create" or not live:
            self.create_topic(self.rng.choice([NS, NS, NS, SIDE_NS]) if SIDE_NS not in self.expect.deleted_namespaces
                              else NS)
            return
        ns, name = self.rng.choice(live)
        spec = self.topics[(ns, name)]
        if choice == "partitions":
            spec["partitions"] += 1
            self._patch("KafkaTopic", ns, name, {"spec": {"partitions": spec["partitions"]}}, "partitions up")
        elif choice == "config":
            config = spec.setdefault("config", {})
            if config and self.rng.random() < 0.3:
                gone = self.rng.choice(sorted(config))
                config.pop(gone)
                self._patch("KafkaTopic", ns, name, {"spec": {"config": {gone: None}}}, f"config -{gone}")
            else:
                key_ = self.rng.choice(["retention.ms", "segment.bytes", "cleanup.policy"])
                value = {"retention.ms": str(self.rng.randrange(60_000, 10**8)),
                         "segment.bytes": str(self.rng.randrange(2**20, 2**30)),
                         "cleanup.policy": self.rng.choice(["delete", "compact"])}[key_]
                config[key_] = value
                self.expect.ever_configured.setdefault(name, set()).add(key_)
                self._patch("KafkaTopic", ns, name, {"spec": {"config": {key_: value}}}, f"config {key_}={value}")
        elif choice == "rf":
            spec["replicationFactor"] = self.rng.choice([r for r in (1, 2, 3) if r != spec["replicationFactor"]])
            self._patch("KafkaTopic", ns, name, {"spec": {"replicationFactor": spec["replicationFactor"]}}, "rf")
        elif choice == "acl":
            self.edit_acl()
        elif choice == "pause":
            paused = (ns, name) in self.paused
            self.paused.symmetric_difference_update({(ns, name)})
            self._patch("KafkaTopic", ns, name,
                        {"metadata": {"annotations": {"kafkaops.io/paused": None if paused else "true"}}},
                        "unpause" if paused else "pause")
        elif choice == "delete":
            self.delete_topic(ns, name)
        elif choice == "unmanage":
            self._patch("KafkaTopic", ns, name, {"metadata": {"annotations": {"kafkaops.io/managed": "false"}}},
                        "unmanage")
            self.delete_topic(ns, name, kept=True)
        elif choice == "broker_config":
            threads = self.rng.randrange(1, 4)
            self._patch("KafkaBrokerConfig", NS, "defaults", {"spec": {"config": {"log.cleaner.threads": threads}}},
                        f"log.cleaner.threads={threads}")

    def rotate_password(self) -> None:
        """A new password for the operator's user: the broker and the Secrets change in a random
        order, a moment apart (new logins with the old password fail once the broker changed)."""
        password = self._new_password()
        self.passwords.append(password)
        broker_first = self.rng.random() < 0.5
        self.step(f"rotate the password of {USER} ({'broker' if broker_first else 'Secrets'} first)")
        if broker_first:
            self.kafka_control.call("PUT", f"/users/{USER}", {"password": password})
        time.sleep(self.rng.uniform(0.0, 2.0))
        for namespace in (NS, SIDE_NS):  # also in a namespace being deleted: its Secret stays while in use
            self.kube.call("PATCH", f"/api/v1/namespaces/{namespace}/secrets/{SECRET}",
                           {"data": self._secret_data(password)}, content_type="application/merge-patch+json",
                           ok_missing=True)
        if not broker_first:
            time.sleep(self.rng.uniform(0.0, 2.0))
            self.kafka_control.call("PUT", f"/users/{USER}", {"password": password})

    @staticmethod
    def _secret_data(password: str) -> dict[str, str]:
        return {"username": base64.b64encode(USER.encode()).decode(),
                "password": base64.b64encode(password.encode()).decode()}

    def create_topic(self, ns: str) -> None:
        self.counter += 1
        name = f"t{self.seed % 1000}-{self.counter:04d}"
        policy = self.rng.choice(["Delete", "Retain"])
        spec = {"clusterRef": {"name": "main" if ns == NS else "side"}, "partitions": self.rng.randrange(1, 4),
                "replicationFactor": self.rng.randrange(1, 4), "deletionPolicy": policy,
                "config": {"retention.ms": str(self.rng.randrange(60_000, 10**8))}}
        self.topics[(ns, name)] = spec
        if ns == NS:
            self.main_topics.add(name)
        self.expect.ever_configured.setdefault(name, set()).add("retention.ms")
        self._create("KafkaTopic", ns, name, spec)

    def delete_topic(self, ns: str, name: str, kept: bool | None = None) -> None:
        spec = self.topics.pop((ns, name))
        if (ns, name) in self.paused:  # a paused resource is not reconciled; unpause first
            self.paused.discard((ns, name))
            self._patch("KafkaTopic", ns, name, {"metadata": {"annotations": {"kafkaops.io/paused": None}}}, "unpause")
        self.expect.deleted_topics[name] = spec["deletionPolicy"] == "Retain" if kept is None else kept
        self.step(f"delete KafkaTopic {ns}/{name} ({'kept' if self.expect.deleted_topics[name] else 'Delete'})")
        self.kube.call("DELETE", path("kafkatopics", ns, name), ok_missing=True)

    def edit_acl(self) -> None:
        if self.acls and self.rng.random() < 0.25:
            name = self.rng.choice(sorted(self.acls))
            principal = self.acls.pop(name)["principal"]
            self.expect.deleted_principals.add(principal)
            self.step(f"delete KafkaAcl {name}")
            self.kube.call("DELETE", path("kafkaacls", NS, name), ok_missing=True)
            return
        if not self.acls or self.rng.random() < 0.5:
            self.counter += 1
            name = f"app-{self.counter:04d}"
            self.acls[name] = {"clusterRef": {"name": "main"}, "principal": f"User:{name}", "acls": []}
            self.acls[name]["acls"] = self._bindings(name)
            self._create("KafkaAcl", NS, name, self.acls[name])
            return
        name = self.rng.choice(sorted(self.acls))
        self.acls[name]["acls"] = self._bindings(name)
        self._patch("KafkaAcl", NS, name, {"spec": {"acls": self.acls[name]["acls"]}}, "acls")

    def _bindings(self, name: str) -> list[dict[str, Any]]:
        ops = ["Read", "Write", "Describe", "Create"]
        return [{"resource": {"type": "Topic", "name": f"{name}.", "patternType": "Prefixed"},
                 "operations": sorted(self.rng.sample(ops, self.rng.randrange(1, 4)))},
                {"resource": {"type": "Group", "name": name}, "operations": ["Read"]}][: self.rng.randrange(1, 3)]

    def delete_namespace(self, ns: str) -> None:
        for (topic_ns, name), spec in list(self.topics.items()):
            if topic_ns == ns:
                self.topics.pop((topic_ns, name))
                # a paused resource is released without touching Kafka, whatever its policy
                paused = (topic_ns, name) in self.paused
                self.paused.discard((topic_ns, name))
                self.expect.deleted_topics[name] = spec["deletionPolicy"] == "Retain" or paused
        self.expect.deleted_namespaces.add(ns)
        self.step(f"delete Namespace {ns}")
        self.kube.call("DELETE", f"/api/v1/namespaces/{ns}", ok_missing=True)

    def _create(self, kind: str, ns: str, name: str, spec: dict[str, Any]) -> None:
        self.step(f"create {kind} {ns}/{name} {json.dumps(spec.get('partitions', ''))}")
        body = {"apiVersion": API, "kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": spec}
        try:
            self.kube.call("POST", path(PLURALS[kind], ns), body)
        except RuntimeError as exc:
            if "409" not in str(exc):  # created by an earlier attempt whose answer was lost
                raise

    def _patch(self, kind: str, ns: str, name: str, patch: dict[str, Any], what: str) -> None:
        self.step(f"patch {kind} {ns}/{name}: {what}")
        self.kube.call("PATCH", path(PLURALS[kind], ns, name), patch, content_type="application/merge-patch+json")

    # -- faults ---------------------------------------------------------------------------------
    def fault(self) -> None:
        kind = self.rng.choice([*KAFKA_FAULTS, *API_FAULTS, *PROCESS_FAULTS])
        if kind in self.without:
            return
        self.faults[kind] += 1
        self.step(f"FAULT {kind}")
        if kind == "not_controller_storm":
            self.kafka_control.call("POST", "/faults", {"kind": "not_controller", "count": self.rng.randrange(2, 6),
                                                        "move_controller": True})
        elif kind == "controller_move":
            self.kafka_control.call("POST", "/controller", {})
        elif kind == "throttled":
            self.kafka_control.call("POST", "/faults", {"kind": "throttled", "throttle_ms": 200, "count": 2})
        elif kind == "timed_out_after_apply":
            self.kafka_control.call("POST", "/faults", {"kind": "timed_out_after_apply", "count": 2})
        elif kind == "drop_connection":
            self.kafka_control.call("POST", "/faults", {"kind": "drop_connection", "after_apply": True,
                                                        "api_keys": [19, 20, 37, 44, 30, 31, 45]})
        elif kind == "broker_restart":
            broker = self.rng.choice([1, 2, 3])
            self.kafka_control.call("POST", f"/brokers/{broker}/down")
            time.sleep(self.rng.uniform(1, 3))
            self.kafka_control.call("POST", f"/brokers/{broker}/up")
        elif kind in ("api_409", "api_429", "api_500"):
            self.api_control.call("POST", "/faults", {"status": int(kind[-3:]), "count": self.rng.randrange(1, 4),
                                                      "method": "PATCH", "path": "/apis/kafkaops.io/"})
        elif kind in ("watch_cut", "watch_gone"):
            self.api_control.call("POST", "/watches/cut", {"gone": kind == "watch_gone"})
        elif kind == "slow_api":
            self.api_control.call("POST", "/faults", {"delay_s": 0.5, "count": 10, "path": "/apis/kafkaops.io/"})
        elif kind == "kill_during_reassignment":
            live = [k for k in sorted(self.topics) if k[0] == NS and k not in self.paused]
            if live:
                ns, name = self.rng.choice(live)
                spec = self.topics[(ns, name)]
                spec["replicationFactor"] = 3 if spec["replicationFactor"] < 3 else 1
                self._patch("KafkaTopic", ns, name, {"spec": {"replicationFactor": spec["replicationFactor"]}}, "rf")
                time.sleep(self.rng.uniform(0.3, 1.5))
            self.kill_operator()
        elif kind == "kill_during_finalizers":
            live = [k for k in sorted(self.topics) if k[0] == NS]
            for ns, name in self.rng.sample(live, min(3, len(live))):
                self.delete_topic(ns, name)
            time.sleep(self.rng.uniform(0.0, 0.5))
            self.kill_operator()
        else:
            self.kill_operator()

    def kill_operator(self) -> None:
        """kill -9 the operator (with peering: the active one, priority highest, index 0), restart it."""
        index = 0
        operator = self.operators[index]
        assert operator is not None
        self.step(f"kill -9 operator {index} (pid {operator.pid})")
        operator.kill()
        operator.stop()  # its (empty) directory; the log stays in the emulator's
        time.sleep(self.rng.uniform(0.5, 2.0))
        self.operators[index] = self._operator(index)
        self.operator_started[index] = time.monotonic()

    def sample(self) -> None:
        operator = self.operators[0] if getattr(self, "operators", None) else None
        if operator is None or operator.process.poll() is not None:
            return
        try:
            status = Path(f"/proc/{operator.pid}/status").read_text()
            rss = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS"))) * 1024
            fds = len(os.listdir(f"/proc/{operator.pid}/fd"))
        except (OSError, StopIteration):
            return
        self.samples.append((time.monotonic() - self.operator_started[0], rss, fds))

    def last_process_samples(self) -> list[tuple[float, int, int]]:
        """The samples of the current operator process (the time since start drops at a restart)."""
        start = max((i for i in range(1, len(self.samples)) if self.samples[i][0] < self.samples[i - 1][0]), default=0)
        return self.samples[start:]

    # -- the end --------------------------------------------------------------------------------
    def quiet(self) -> list[inv.Divergence]:
        """Faults off, paused resources resumed, then wait (bounded) for every invariant to hold."""
        self.step("quiet period")
        self.kafka_control.call("DELETE", "/faults")
        self.api_control.call("DELETE", "/faults")
        for broker in (1, 2, 3):
            self.kafka_control.call("POST", f"/brokers/{broker}/up")
        for ns, name in sorted(self.paused):
            self._patch("KafkaTopic", ns, name, {"metadata": {"annotations": {"kafkaops.io/paused": None}}}, "unpause")
        self.paused.clear()
        # deletions held by the cap (a person's confirmation lets them through; checked up to now)
        self.confirmed_at = time.time()
        self._patch("KafkaCluster", NS, "main", {"metadata": {"annotations": {"kafkaops.io/confirm-deletions": "true"}}},
                    "confirm deletions over the cap")
        started = time.monotonic()
        while True:
            found = self.check()
            if not found or time.monotonic() - started > self.quiet_timeout:
                self.quiet_seconds = time.monotonic() - started
                found += inv.check_secrets(self.exposed_texts(), self.passwords)  # once: the logs are long
                if self.duration >= 600:  # long runs: RSS and fds of the last operator process stay flat
                    found += inv.check_growth(self.last_process_samples(), warmup_s=120)
                return found
            time.sleep(1.0)

    def check(self) -> list[inv.Divergence]:
        objects = {kind: self.kube.call("GET", f"/apis/kafkaops.io/v1alpha1/{plural}")["items"]
                   for kind, plural in PLURALS.items()}
        kafka = self.kafka_control.call("GET", "/state")
        found = inv.check_settled([o for kind in PLURALS for o in objects[kind]])
        topics = [t for t in objects["KafkaTopic"] if not t["metadata"].get("deletionTimestamp")]
        found += inv.check_topics(topics, kafka, self.expect)
        found += inv.check_acls(objects["KafkaAcl"], kafka, self.expect)
        found += inv.check_broker_configs(objects["KafkaBrokerConfig"], kafka, self.expect)
        for ns in sorted(self.expect.deleted_namespaces):
            if self.kube.call("GET", f"/api/v1/namespaces/{ns}", ok_missing=True) is not None:
                found.append(inv.Divergence("no-wedged-deletion", f"Namespace {ns}", "still present"))
        if kafka["errors"]:
            found.append(inv.Divergence("double-healthy", "fake cluster", f"errors: {kafka['errors'][:3]}"))
        # the cap, checked on Kafka's own deletion times over the operator's full window (a deletion
        # holds its slot until a window after it ended: k8s/deletion_gate.py)
        found += inv.check_deletion_cap([tuple(d) for d in kafka["deletion_times"]], self.main_topics, CAP,
                                        WINDOW, self.confirmed_at)
        return found

    def exposed_texts(self) -> dict[str, str]:
        """What a person or a log shipper sees: every operator log, every Event, every status."""
        objects = {kind: self.kube.call("GET", f"/apis/kafkaops.io/v1alpha1/{plural}")["items"]
                   for kind, plural in PLURALS.items()}
        texts = {path.name: path.read_text(errors="replace") for path in sorted(self.api.directory.glob("operator-*.log"))}
        texts["events"] = json.dumps(self.kube.call("GET", "/api/v1/events")["items"])
        texts["statuses"] = json.dumps([o.get("status") for kind in objects for o in objects[kind]])
        return texts

    def report(self, found: list[inv.Divergence]) -> str:
        kafka_faults = self.kafka_control.call("GET", "/faults")["fired"]
        api_faults = self.api_control.call("GET", "/faults")["fired"]
        rss = [s[1] // 2**20 for s in self.samples]
        lines = [f"soak seed={self.seed} duration={self.duration:.0f}s mode={self.mode} replicas={self.replicas} "
                 f"steps={len(self.steps)} quiet={getattr(self, 'quiet_seconds', 0):.1f}s",
                 f"faults scheduled: {dict(sorted(self.faults.items()))}",
                 f"faults fired in Kafka: {kafka_faults}; in the API: {api_faults}",
                 f"operator RSS MiB (last process): first {rss[:1]} last {rss[-1:]} max {max(rss, default=0)}; "
                 f"fds last {self.samples[-1][2] if self.samples else '?'}"]
        if found:
            lines.append(f"FAILED: {len(found)} invariant violations (replay: bench/soak.py --seed {self.seed} "
                         f"--duration {self.duration:.0f} --mode {self.mode} --replicas {self.replicas})")
            lines += [f"  {d}" for d in found[:40]]
            lines.append("last steps:")
            lines += [f"  {s}" for s in self.steps[-25:]]
        else:
            lines.append("every invariant holds")
        return "\n".join(lines)


def seconds(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        return float(text[:-1]) * units[text[-1]] if text and text[-1] in units else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds or a number with s, m or h") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=seconds, default=120.0, help="workload and faults: 90, 90s, 30m, 1h [120s]")
    parser.add_argument("--seed", type=int, default=None, help="scenario seed [random, printed]")
    parser.add_argument("--mode", choices=["kraft", "zk"], default="kraft")
    parser.add_argument("--replicas", type=int, default=1, help="operator replicas (2: peering, active killed)")
    parser.add_argument("--quiet-timeout", type=float, default=90.0, help="bound of the quiet period [90]")
    parser.add_argument("--keep", action="store_true", help="keep the process logs (their directory is printed)")
    parser.add_argument("--without", action="append", default=[], metavar="STEP",
                        help="leave a workload step or fault kind out (repeatable), e.g. unmanage")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each step")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    soak = Soak(seed, args.duration, args.mode, args.replicas, args.quiet_timeout, args.verbose,
                without=frozenset(args.without))
    print(f"soak seed {seed}", flush=True)
    found: list[inv.Divergence] = []
    try:
        found = soak.run()
        report = soak.report(found)
        print(report)
        (soak.api.directory / "report.txt").write_text(report + "\n")
    finally:
        if hasattr(soak, "api"):
            (soak.api.directory / "steps.log").write_text("\n".join(soak.steps) + "\n")
        soak.stop(keep=args.keep or bool(found))
        if args.keep or found:
            print(f"logs and every step: {soak.api.directory}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
