"""Partition reassignment: run a replica change (replication factor, assignment) through Kafka.

    plan = plan_change("orders", observed.assignment, 3, brokers)          # pure; placement.py
    progress = await run_reassignment(admin, plan, ReassignmentSettings(throttle_bytes_per_second=50_000_000),
                                      progress_callback=report, persist_throttle=store)

What a run does, in order (one `ReassignmentRun`, `start()` returns it):

1. **Preflight**: the cluster must offer AlterPartitionReassignments (45),
   ListPartitionReassignments (46) and ElectLeaders (43) (IncrementalAlterConfigs
   (44) too with a throttle): otherwise an `UnsupportedFeature` problem names
   the API and nothing is sent. One Metadata request gives the live brokers and
   current replicas; every target is validated against the live brokers
   (`replicas_problem`): a topic with a bad target is not moved, the others are.
   One ListPartitionReassignments: a partition already moving to our target (a
   previous run, before a restart) is adopted; one moving elsewhere was started
   outside kafkaops: reported as `external` and never touched. Partitions whose
   replicas already are the target count as done.
2. **Throttle** (optional, `throttle_bytes_per_second`): the two
   `*.replication.throttled.rate` broker configs on every broker involved
   (current and target replicas), and the topic configs
   `leader.replication.throttled.replicas` (`partition:broker` for the current
   replicas) and `follower.replication.throttled.replicas` (the adding
   replicas), appended to what is there. What kafkaops adds is described by a
   `ThrottleRecord`, handed to `persist_throttle` *before* anything is written.
3. **Move** in batches: never more than `max_partitions_moving` partitions of
   this run (or of a shared `MoveBudget`, per cluster) in flight. Each round:
   one ListPartitionReassignments for every unfinished partition (completion =
   the partition left the list; one now moving elsewhere, or a pending one
   that started moving, was taken over from outside: left alone), then what
   fits in the free slots is submitted (one AlterPartitionReassignments), then
   one DescribeLogDirs per broker involved gives the bytes (size of the adding
   replicas vs the largest current replica, i.e. the leader's). Progress is
   reported after every round, rounds are `poll_interval` apart.
4. **Unthrottle**: the record's entries and rates are removed (`cleanup_throttles`),
   then `persist_throttle(None)`.
5. **Elect**: one preferred leader election for the moved (and cancelled)
   partitions; ELECTION_NOT_NEEDED is success, other failures are notes.

`run.revert()` (a changed desired state while moving) cancels the partitions in
flight (Kafka puts them back on their previous replicas), submits nothing more,
removes the throttle: state `cancelled`. `timeout` does the same with a retriable
`ReassignmentTimeout` problem.

Throttles are never left behind: every exit of a run removes them (try/finally),
except a *cancelled task* (shutdown, crash) when the caller persists the record:
the moves then go on in Kafka, still throttled, and the next start calls
`cleanup_throttles(admin, record)` first, then forgets the record (it may then
run the plan again: moves still in flight to the same targets are adopted).
Without `persist_throttle`, a cancelled task removes the throttle before it ends.

One `ReassignmentManager` per cluster (`manager.py`) owns all of this for the CLI's Engine and the
operator alike: it plans from fresh metadata, starts runs under the cluster's `MoveBudget` with the
throttle record written ahead to the ownership store, follows them by name, runs them to the end
(or until Ctrl-C), and removes the throttles of runs that never finished. Nothing outside this
package sends Alter/ListPartitionReassignments (kafka/ offers the calls; observe reads the list
through the Batcher).

Modules: `manager.py` (`ReassignmentManager`, `ActiveRun`, `THROTTLE_OWNER`), `plan.py` (settings, `plan_change`, `MoveBudget`, problem reasons), `throttle.py`
(`ThrottleRecord`, `set_throttles`, `cleanup_throttles`), `progress.py` (`ReassignmentProgress`),
`run.py` (`start`, `run_reassignment`, `ReassignmentRun`), `cancel.py` (`cancel`, `detect_external`,
`in_flight_target`). Every
public name is importable from `kafkaops.reconcile.reassign`.

Errors come back as `Problem`s (`ReassignmentProgress.problem`, `.failed`); only
programming errors raise.
"""

from __future__ import annotations

from kafkaops.reconcile.reassign.plan import (
    EXTERNAL_REASSIGNMENT,
    INVALID_REPLICATION_FACTOR,
    INVALID_REPLICA_ASSIGNMENT,
    REASSIGNMENT_CANCELLED,
    REASSIGNMENT_TIMEOUT,
    THROTTLE_CLEANUP_FAILED,
    THROTTLE_FAILED,
    MoveBudget,
    PartitionMove,
    ReassignmentPlan,
    ReassignmentSettings,
    plan_change,
)
from kafkaops.reconcile.reassign.throttle import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    THROTTLE_RATES,
    THROTTLE_REPLICAS,
    PersistThrottle,
    ThrottleRecord,
    cleanup_throttles,
    set_throttles,
    throttle_entries,
)
from kafkaops.reconcile.reassign.progress import (
    ProgressCallback,
    ReassignmentProgress,
    ReassignmentState,
)
from kafkaops.reconcile.reassign.manager import (
    THROTTLE_OWNER,
    ActiveRun,
    ReassignmentManager,
    interrupted_moves,
    throttle_owner,
)
from kafkaops.reconcile.reassign.cancel import cancel, detect_external, in_flight_target
from kafkaops.reconcile.reassign.run import (
    MAX_FAILED_ROUNDS,
    ReassignmentRun,
    run_reassignment,
    start,
)

__all__ = [
    "ActiveRun",
    "ReassignmentManager",
    "THROTTLE_OWNER",
    "interrupted_moves",
    "throttle_owner",
    "EXTERNAL_REASSIGNMENT",
    "FOLLOWER_RATE",
    "FOLLOWER_REPLICAS",
    "INVALID_REPLICATION_FACTOR",
    "INVALID_REPLICA_ASSIGNMENT",
    "LEADER_RATE",
    "LEADER_REPLICAS",
    "MAX_FAILED_ROUNDS",
    "MoveBudget",
    "PartitionMove",
    "PersistThrottle",
    "ProgressCallback",
    "REASSIGNMENT_CANCELLED",
    "REASSIGNMENT_TIMEOUT",
    "ReassignmentPlan",
    "ReassignmentProgress",
    "ReassignmentRun",
    "ReassignmentSettings",
    "ReassignmentState",
    "THROTTLE_CLEANUP_FAILED",
    "THROTTLE_FAILED",
    "THROTTLE_RATES",
    "THROTTLE_REPLICAS",
    "ThrottleRecord",
    "cancel",
    "cleanup_throttles",
    "detect_external",
    "in_flight_target",
    "plan_change",
    "run_reassignment",
    "set_throttles",
    "start",
    "throttle_entries",
]
