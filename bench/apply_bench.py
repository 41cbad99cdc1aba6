"""Benchmark: `kafkaops apply` of N topic manifests against noida-db, then a second apply.

Runs the CLI's path in-process (load + validate the files, plan, apply, wait) so
each phase can be timed, and compares with two floors: the same topics created
by one hand-built `create_topics` call (split only by the 10,000-record budget),
and the protocol's floor, the three steps any reconciler must take, hand-built
with no engine: one Metadata for every topic, that `create_topics`, then Metadata
until every partition has a leader.

Every timed row runs as the command runs its work: the cyclic collector paused (cli/collector.py:
paused), tuned before and after loading.

Reports, per phase: admin requests sent by API, wall time, this process's CPU
time (steadier than wall time on a shared machine; the server's is not in it),
peak RSS, and the ratio to the floor (requests and wall time). The second apply must send no
mutating request. Cross-checked with what noida-db says it served.

With --cli, the same manifests are then applied as a user types it, `kafkaops apply -f DIR
--bootstrap-server ... -y` in a process of its own (the console script's code, which also prints its
peak RSS at exit: start-up, loading, the plan and outcomes printed, 30,000 lines at 5,000 topics),
twice, and `kafkaops --version` times the start-up alone. Printed with them:
whether the modules' bytecode is cached. A checkout only ever run with PYTHONDONTWRITEBYTECODE set (some
machines set it) has none, and compiles every module at every start (~0.1 s more); an installed
wheel carries its bytecode.

With --librdkafka, the two floors are also taken with an independent client in C, librdkafka
(confluent-kafka's AdminClient, a test dependency), three times each: one `create_topics` of the
same topics, and read (all topics: it asks Metadata for a list of names only one name at a
time), create, wait. It tells how much of the protocol floor is this client's and how much the
protocol's own: the wait's Metadata answer (every partition of every new topic) against the
CreateTopics request.

Then the least reconciler: the protocol floor plus the least bookkeeping a reconciler that reports
per resource could keep (each manifest's NewTopic built in the timing, one plan record and one
outcome per resource): what apply's own bookkeeping (field changes, step results, expectations,
ownership, the Batcher's lanes) is measured against.

With --phases, apply #1 and the protocol floor are also timed step by step (read, the pure
plan, send, wait, and apply's recording of outcomes and ownership), each with the share of the
cyclic garbage collector's pauses (`Phases`): the two rows side by side show what the engine adds
to each step the protocol needs anyway.

    .venv/bin/python bench/apply_bench.py [--topics 5000] [--partitions 3] [--files 50] [--phases] [--cli] [--librdkafka]

Not a test: numbers vary with the machine; docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from importlib.util import cache_from_source
from pathlib import Path

import yaml

import kafkaops.cli.main as cli_main
from kafkaops.cli import collector
from kafkaops.kafka import AdminClient, Batcher, NewTopic
from kafkaops.kafka.sizing import topic_records
from kafkaops.reconcile import DesiredState, Engine, RunOptions, State
from kafkaops.reconcile.actions import Action, CreateTopic, ResourcePlan
from kafkaops.reconcile.outcome import Outcome
from kafkaops.resources.kinds import KAFKA_TOPIC
from kafkaops.reconcile import engine as engine_module
from kafkaops.resources import load_and_validate
from kafkaops.testing.servers import noida_activity, start_noida

MUTATING = ("CreateTopics", "DeleteTopics", "CreatePartitions", "IncrementalAlterConfigs", "CreateAcls", "DeleteAcls")


def write_manifests(root: Path, count: int, partitions: int, files: int) -> None:
    per_file = math.ceil(count / files)
    for f in range(files):
        docs = [
            {
                "apiVersion": "kafkaops.io/v1alpha1",
                "kind": "KafkaTopic",
                "metadata": {"name": f"bench.team{f}.topic{i}"},
                "spec": {"clusterRef": {"name": "bench"}, "partitions": partitions, "replicationFactor": 1,
                         "config": {"retention.ms": str(86_400_000 + i), "cleanup.policy": "delete"}},
            }
            for i in range(f * per_file, min(count, (f + 1) * per_file))
        ]
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: writing the input is not what is measured
        (root / f"team{f}.yaml").write_text(yaml.dump_all(docs, Dumper=dumper, sort_keys=False))


class Phases:
    """Where apply #1's wall time goes (--phases): the engine's steps, timed by wrapping the
    functions `Engine.plan` and `Engine.apply` call by name (a rename fails loudly here), and the
    cyclic garbage collector's pauses (gc.callbacks) charged to the step they fell in.

    read: Metadata and the observed state; plan: the pure plan(); send: apply_plans (the
    CreateTopics, their step results); wait: wait_for (the completion Metadata, expectations);
    record: outcomes, ownership and the report."""

    STEPS = (("plan", "plan"), ("apply_plans", "send"), ("wait_for", "wait"), ("ownership_changes", "record"))

    def __init__(self) -> None:
        self.marks: list[tuple[float, str]] = []
        self.pauses: list[tuple[float, float]] = []
        self._started = 0.0
        self.originals = {name: getattr(engine_module, name) for name, _ in self.STEPS}

    def on_collection(self, phase: str, info: dict) -> None:
        """gc.callbacks: a pause, as (when it started, how long it took)."""
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((self._started, time.perf_counter() - self._started))

    def mark(self, label: str) -> None:
        """From now on, time is charged to `label`."""
        self.marks.append((time.perf_counter(), label))

    def watch_collector(self) -> None:
        gc.callbacks.append(self.on_collection)

    def unwatch_collector(self) -> None:
        gc.callbacks.remove(self.on_collection)

    def install(self) -> None:
        def timed(name: str, label: str):  # a coroutine function is timed from its first step to its end
            original = self.originals[name]
            after = "record" if label in ("wait", "record") else "other"
            if asyncio.iscoroutinefunction(original):
                async def wrapper(*args, **kwargs):
                    self.mark(label)
                    try:
                        return await original(*args, **kwargs)
                    finally:
                        self.mark(after)
            else:
                def wrapper(*args, **kwargs):
                    self.mark(label)
                    try:
                        return original(*args, **kwargs)
                    finally:
                        self.mark(after)
            return wrapper

        for name, label in self.STEPS:
            setattr(engine_module, name, timed(name, label))
        self.watch_collector()

    def remove(self) -> None:
        for name, original in self.originals.items():
            setattr(engine_module, name, original)
        self.unwatch_collector()

    def summary(self, start: float, end: float) -> dict[str, tuple[float, float]]:
        """{step: (wall s, of it the collector's s)}: `read` before the pure plan, `record` after the
        wait, `other` between the steps (the Planned, the expectations)."""
        marks = [(start, "read"), *self.marks, (end, "")]
        out: dict[str, list[float]] = {}
        for (at, label), (until, _) in zip(marks, marks[1:]):
            spent = out.setdefault(label, [0.0, 0.0])
            spent[0] += until - at
            spent[1] += sum(d for s0, d in self.pauses if at <= s0 < until)
        return {k: (round(v[0], 3), round(v[1], 3)) for k, v in out.items()}


async def until_led(admin: AdminClient, names: list[str]) -> tuple[dict, int]:
    """Metadata for every topic until each of `names` has every partition led (the floors' wait):
    the topics of the last answer, and how many were asked."""
    polls = 0
    while True:
        polls += 1
        seen = (await admin.metadata(None)).topics
        if all(name in seen and seen[name].all_led for name in names):
            return seen, polls


def rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


# The console script's own two lines (`kafkaops = "kafkaops.cli.main:main"`), run by the venv's python with
# one addition: at exit the process prints its peak RSS (VmHWM). A child's ru_maxrss would not do: Linux
# counts into it the memory of the process it was forked from (this bench) up to its exec.
CLI = """import atexit, sys
def peak():
    with open("/proc/self/status") as status:
        sys.stderr.write(next(line for line in status if line.startswith("VmHWM:")))
atexit.register(peak)
from kafkaops.cli.main import main
sys.argv[0] = "kafkaops"
sys.exit(main())
"""


def run_command(args: list[str]) -> tuple[float, float, str]:
    """(wall s, peak RSS in MiB, stdout) of `kafkaops ARGS`, run to its end."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", CLI, *args], stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                              check=False)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    if done.returncode != 0:
        raise SystemExit(f"kafkaops {' '.join(args)} exited {done.returncode}:\n{text[-2000:]}{errors[-2000:]}")
    peak = re.search(r"^VmHWM:\s+(\d+) kB", errors, re.MULTILINE)
    return wall, int(peak.group(1)) / 1024 if peak else float("nan"), text


def footer_requests(text: str) -> dict[str, int]:
    """The requests the CLI's footer reports ("...; requests: CreateTopics 4, Metadata 3")."""
    found = re.findall(r"requests: (.*)$", text, re.MULTILINE)
    return {api: int(n) for api, n in re.findall(r"(\w+) (\d+)", found[-1])} if found else {}


def cli_rows(root: Path, bootstrap: str, state: Path) -> list[dict]:
    """`kafkaops apply` of `root` as a user types it, twice (create, then nothing to do), and the start-up alone."""
    rows = []
    for label in ("CLI apply #1", "CLI apply #2"):
        wall, rss, text = run_command(["apply", "-f", str(root), "--bootstrap-server", bootstrap,
                                       "-y", "--state", str(state)])
        counts = re.search(r"(\d+) applied, (\d+) failed, (\d+) unchanged", text)
        said = counts.group(0) if counts else text.strip().splitlines()[-1]  # or "Nothing to do: ..."
        rows.append({"phase": f"{label}: kafkaops apply", "wall_s": round(wall, 3), "requests": footer_requests(text),
                     "rss": round(rss, 1), "note": f"{said}; {len(text.splitlines())} lines printed"})
    walls = []
    for _ in range(5):
        wall, rss, _text = run_command(["--version"])
        walls.append(wall)
    bytecode = "cached" if Path(cache_from_source(cli_main.__file__)).exists() else "not cached (compiled at every start)"
    rows.append({"phase": "CLI start-up: kafkaops --version", "wall_s": round(min(walls), 3), "requests": {},
                 "rss": round(rss, 1), "note": f"best of 5 ({', '.join(f'{w:.3f}' for w in walls)}); bytecode {bytecode}"})
    return rows


def librdkafka_rows(bootstrap: str, count: int, partitions: int, runs: int = 3) -> list[dict]:
    """The floors taken with librdkafka (blocking): one create_topics, and read + create + wait."""
    from confluent_kafka.admin import AdminClient as RdKafkaAdmin
    from confluent_kafka.admin import NewTopic as RdKafkaTopic

    admin = RdKafkaAdmin({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.list_topics(timeout=30)  # connected before anything is timed, as the AdminClient above

    def topics(prefix: str) -> list[RdKafkaTopic]:
        return [RdKafkaTopic(f"{prefix}.{i}", partitions, 1, config={"retention.ms": str(86_400_000 + i),
                                                                   "cleanup.policy": "delete"}) for i in range(count)]

    def create(new: list[RdKafkaTopic]) -> None:
        for future in admin.create_topics(new, operation_timeout=60).values():
            future.result()

    def delete(new: list[RdKafkaTopic]) -> None:
        for future in admin.delete_topics([t.topic for t in new], operation_timeout=60).values():
            future.result()
        time.sleep(0.3)

    creates, floors, polls = [], [], []
    for run in range(runs):
        new = topics(f"rdkafka.create{run}")
        start = time.perf_counter()
        create(new)
        creates.append(time.perf_counter() - start)
        delete(new)
        new = topics(f"rdkafka.floor{run}")
        names = [t.topic for t in new]
        start = time.perf_counter()
        existing = admin.list_topics(timeout=30).topics
        create([t for t in new if t.topic not in existing])
        polls.append(0)
        while True:
            polls[-1] += 1
            seen = admin.list_topics(timeout=30).topics
            if all(name in seen and seen[name].partitions and all(p.leader >= 0 for p in seen[name].partitions.values())
                   for name in names):
                break
        floors.append(time.perf_counter() - start)
        delete(new)

    def median(values: list[float]) -> float:
        return round(sorted(values)[len(values) // 2], 3)

    return [
        {"phase": "librdkafka: one create_topics", "wall_s": median(creates), "requests": {}, "rss": "",
         "note": f"median of {runs} ({', '.join(f'{w:.3f}' for w in creates)})"},
        {"phase": "librdkafka: read, create, wait", "wall_s": median(floors), "requests": {}, "rss": "",
         "note": f"median of {runs} ({', '.join(f'{w:.3f}' for w in floors)}); {max(polls)} completion poll(s) at most; "
                 f"{median(floors) / median(creates):.2f}x its own create_topics"},
    ]


async def run(count: int, partitions: int, files: int, phases: bool = False, cli: bool = False,
              librdkafka: bool = False) -> list[dict]:
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp, start_noida() as server:
        root = Path(tmp)
        write_manifests(root, count, partitions, files)

        # every timed row runs as `kafkaops apply` runs its work (cli/plan_apply.py: execute): the
        # collector paused, tuned before and after loading
        with collector.paused():
            collector.tune()
            start, cpu = time.perf_counter(), time.process_time()
            validated = load_and_validate([root])
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        rows.append({"phase": "load + validate", "wall_s": round(wall, 3),
                     "cpu_s": round(cpu, 3), "requests": {},
                     "rss": rss_mib(), "note": f"{len(validated.valid)} valid, {len(validated.errors)} errors"})
        collector.tune()
        desired = DesiredState.of(validated.valid)

        async with AdminClient.connect(server.bootstrap) as admin:
            floor = [NewTopic(f"floor.{i}", partitions, 1, {"retention.ms": str(86_400_000 + i), "cleanup.policy": "delete"})
                     for i in range(count)]
            before = dict(admin.requests_by_api)
            with collector.paused():
                start, cpu = time.perf_counter(), time.process_time()
                failed = len((await admin.create_topics(floor)).failed())
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            sent = {k: v - before.get(k, 0) for k, v in admin.requests_by_api.items() if v != before.get(k, 0)}
            rows.append({"phase": "floor: one create_topics", "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                         "requests": sent,
                         "rss": rss_mib(), "note": f"{failed} failed"})
            await admin.delete_topics([t.name for t in floor])

            # the protocol's floor: what any reconciler must send, hand-built with no engine: which
            # topics exist (Metadata), create the missing ones, then Metadata until every partition
            # has a leader (CreateTopics answers before that: docs/architecture.md, "wait is batched polling").
            # Both Metadata ask for every topic, as apply's do here: its read lists every topic (to name
            # those not declared), and its wait asks for every topic when the names are most of the cluster
            minimal = [NewTopic(f"minimal.{i}", partitions, 1, {"retention.ms": str(86_400_000 + i),
                                                                 "cleanup.policy": "delete"}) for i in range(count)]
            names = [t.name for t in minimal]
            before = dict(admin.requests_by_api)
            timer = Phases() if phases else None
            if timer is not None:
                timer.watch_collector()
            with collector.paused():
                start, cpu = time.perf_counter(), time.process_time()
                existing = (await admin.metadata(None)).topics
                if timer is not None:
                    timer.mark("send")
                await admin.create_topics([t for t in minimal if t.name not in existing])
                if timer is not None:
                    timer.mark("wait")
                _, polls = await until_led(admin, names)
                end = time.perf_counter()
                wall, cpu = end - start, time.process_time() - cpu
            if timer is not None:
                timer.unwatch_collector()
            sent = {k: v - before.get(k, 0) for k, v in admin.requests_by_api.items() if v != before.get(k, 0)}
            rows.append({"phase": "protocol floor: read, create, wait", "wall_s": round(wall, 3),
                         "cpu_s": round(cpu, 3), "requests": sent, "rss": rss_mib(),
                         "note": f"{polls} completion poll(s)",
                         **({"steps": timer.summary(start, end)} if timer is not None else {})})
            await admin.delete_topics(names)

            # the least a reconciler that reports per resource would keep: the protocol floor with each
            # manifest's NewTopic built in the timing, one plan record per resource (its one step, no
            # field changes) and one outcome. What apply keeps beyond it (the field changes people read,
            # step results, expectations, the ownership record, the Batcher's lanes) is the rest of its time
            before = dict(admin.requests_by_api)
            with collector.paused():
                start, cpu = time.perf_counter(), time.process_time()
                existing = (await admin.metadata(None)).topics
                plans = [ResourcePlan(k.source, KAFKA_TOPIC, k.topic_name, Action.CREATE, (), (CreateTopic(NewTopic(
                    f"least.{k.topic_name}", k.partitions or -1, k.replication_factor or -1, dict(k.config.items()))),))
                    for k in desired.topics if f"least.{k.topic_name}" not in existing]
                answers = await admin.create_topics([p.steps[0].topic for p in plans])
                least = [p.steps[0].topic.name for p in plans]
                seen, _ = await until_led(admin, least)
                outcomes = [Outcome(p.source, p.kind, p.name, State.FAILED if answers[n].error else State.APPLIED, p.action,
                                    led=seen[n]) for p, n in zip(plans, least)]
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            sent = {k: v - before.get(k, 0) for k, v in admin.requests_by_api.items() if v != before.get(k, 0)}
            rows.append({"phase": "least reconciler: + plan, outcome", "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                         "requests": sent, "rss": rss_mib(),
                         "note": f"{sum(o.state is State.APPLIED for o in outcomes)} applied"})
            await admin.delete_topics(least)

            for label in ("apply #1", "apply #2"):
                engine = Engine(Batcher(admin, linger=0.0), cluster="bench")  # as the CLI's (cli/sessions.py)
                timer = Phases() if phases and label == "apply #1" else None
                if timer is not None:
                    timer.install()
                with collector.paused():
                    start, cpu = time.perf_counter(), time.process_time()
                    planned = await engine.plan(desired, RunOptions())
                    plan_wall = time.perf_counter() - start
                    report = await engine.apply(planned, RunOptions())
                    end = time.perf_counter()
                    wall, cpu = end - start, time.process_time() - cpu
                if timer is not None:
                    timer.remove()
                states: dict[str, int] = {}
                for outcome in report.outcomes:
                    states[outcome.state.value] = states.get(outcome.state.value, 0) + 1
                rows.append({"phase": f"{label}: plan + apply + wait", "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                             "plan_s": round(plan_wall, 3), "requests": dict(report.requests), "rss": rss_mib(),
                             "note": ", ".join(f"{n} {s}" for s, n in sorted(states.items())),
                             **({"steps": timer.summary(start, end)} if timer is not None else {})})
                assert all(o.state in (State.APPLIED, State.UNCHANGED) for o in report.outcomes)
            if cli or librdkafka:  # on a cluster without them, as the floors above had it
                await admin.delete_topics([t.topic_name for t in desired.topics])
        if librdkafka:  # before the command's apply leaves its 5,000 topics: librdkafka reads every topic
            rows.extend(librdkafka_rows(server.bootstrap, count, partitions))
        if cli:  # the same manifests again, by the real command
            rows.extend(cli_rows(root, server.bootstrap, root / "cli-state.json"))
        activity = noida_activity(server)
    records = sum(topic_records(t) for t in floor)
    floor_creates = rows[1]["requests"]["CreateTopics"]  # the client's own split of one maximal call
    rows.append({"phase": "server side (noida-db activity)", "wall_s": "", "requests": {}, "rss": "",
                 "note": f"CreateTopics served: {activity.count('CreateTopics')} "
                         f"(floor + apply #1{' + librdkafka' if librdkafka else ''}{' + CLI apply #1' if cli else ''}); "
                         f"{records} metadata records in the floor's topics, {math.ceil(records / 10_000)} requests "
                         f"at 10,000 records each"})
    for row in rows:
        creates = row["requests"].get("CreateTopics") if isinstance(row["requests"], dict) else None
        if creates:
            row["create_ratio_to_floor"] = round(creates / floor_creates, 2)
    floor_wall = rows[1]["wall_s"]
    protocol_wall = rows[2]["wall_s"]
    for row in rows:
        if str(row["phase"]).startswith(("apply #1", "CLI apply #1", "least reconciler")):
            row["wall_ratio_to_floor"] = round(row["wall_s"] / floor_wall, 2)
            row["wall_ratio_to_protocol_floor"] = round(row["wall_s"] / protocol_wall, 2)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--phases", action="store_true",
                        help="also time apply #1 and the protocol floor step by step, with the collector's share")
    parser.add_argument("--cli", action="store_true",
                        help="also apply the manifests with the real `kafkaops apply` command, twice, and time its start-up")
    parser.add_argument("--librdkafka", action="store_true",
                        help="also take the two floors with librdkafka (confluent-kafka), an independent client in C")
    args = parser.parse_args()
    rows = asyncio.run(run(args.topics, args.partitions, args.files, args.phases, args.cli, args.librdkafka))
    print(f"{args.topics} topics x {args.partitions} partitions in {args.files} files; python {sys.version.split()[0]}; "
          f"{platform.machine()}")
    for row in rows:
        extra = " ".join(f"{k}={row[k]}" for k in ("cpu_s", "plan_s", "create_ratio_to_floor", "wall_ratio_to_floor",
                                                    "wall_ratio_to_protocol_floor")
                         if k in row)
        print(f"{row['phase']:34} wall {row['wall_s']!s:>7} s  rss {row['rss']!s:>6} MiB  {extra}\n"
              f"{'':34} requests {row['requests']}  {row['note']}")
    second = next(r for r in rows if r["phase"].startswith("apply #2"))
    first = next(r for r in rows if r["phase"].startswith("apply #1"))
    mutating = {k: v for k, v in second["requests"].items() if k in MUTATING}
    print(f"apply #1: {first['requests'].get('CreateTopics', 0)} CreateTopics requests for {args.topics} topics (target <= 50)")
    print(f"apply #2: mutating requests {mutating or 'none'} (target: none)")
    timed = [r for r in rows if "steps" in r]
    if timed:
        names = ("read", "plan", "send", "other", "wait", "record")
        print("by step, wall s (of it the garbage collector's):\n" + f"{'':34} " + "".join(f"{n:>15}" for n in names))
        for row in timed:
            steps = row["steps"]
            print(f"{row['phase']:34} " + "".join(
                f"{(f'{steps[n][0]:.3f} ({steps[n][1]:.3f})' if n in steps else '-'):>15}" for n in names))


if __name__ == "__main__":
    main()
