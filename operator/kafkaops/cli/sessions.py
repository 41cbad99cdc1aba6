"""One cluster during `kafkaops plan` / `apply`: its connection, engine and plan, or why it has none.

A cluster that cannot be reached or planned gets `Session.error` (a Problem) and every one of its
resources carries it; the other clusters go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kafkaops.cli.progress import ReassignmentDisplay
from kafkaops.cli.render import ClusterResult, resource_identity
from kafkaops.cli.targets import Target
from kafkaops.kafka import AdminClient, Batcher
from kafkaops.kafka.errors import AuthenticationFailed, ClusterUnreachable, KafkaOpsError
from kafkaops.reconcile.actions import Action, Plan, Problem, ResourcePlan
from kafkaops.reconcile.apply import INTERRUPTED, problem_from_exception
from kafkaops.reconcile.engine import Engine, Planned, RunOptions
from kafkaops.reconcile.outcome import Outcome, Report, State
from kafkaops.reconcile.ownership import (
    FileOwnershipStore,
    NoOwnershipStore,
    Ownership,
    OwnershipFileError,
    OwnershipStore,
)
from kafkaops.resources.models import Resource

CLUSTER_UNREACHABLE, AUTHENTICATION_FAILED = "ClusterUnreachable", "AuthenticationFailed"


class ReportingStore:
    """The state file, with save failures kept instead of raised.

    The engine records ownership after Kafka has already changed: an unwritable state file
    must not turn a successful apply into a traceback that hides what happened.
    """

    def __init__(self, inner: OwnershipStore) -> None:
        self.inner = inner
        self.errors: list[str] = []

    def load(self, cluster_id: str) -> Ownership:
        return self.inner.load(cluster_id)

    def update(self, cluster_id: str, changes: Mapping[str, Mapping[str, str | None] | None]) -> None:
        try:
            self.inner.update(cluster_id, changes)
        except (OSError, OwnershipFileError) as exc:
            self.errors.append(f"the state file was not updated ({exc}); config keys set by this apply will not "
                               "be reset if later removed from the manifests")


@dataclass
class Session:
    """One cluster during a run: its connection, engine and plan, or why it has none."""

    target: Target
    store: ReportingStore
    admin: AdminClient | None = None
    engine: Engine | None = None
    planned: Planned | None = None
    error: Problem | None = None

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{host}:{port}" for host, port in self.target.settings.bootstrap)

    @property
    def requests(self) -> dict[str, int]:
        return dict(self.admin.requests_by_api) if self.admin is not None else {}

    @property
    def plan(self) -> Plan:
        if self.planned is not None:
            return self.planned.plan
        assert self.error is not None
        return failed_plan(self.target, self.error)

    def result(self, report: Report | None = None, error: Problem | None = None) -> ClusterResult:
        return ClusterResult(self.target.name, self.bootstrap, self.plan, report, error or self.error,
                             tuple(self.store.errors), self.requests, planned=self.planned is not None)


def failed_plan(target: Target, problem: Problem) -> Plan:
    """A plan for a cluster that could not be planned: every resource carries the cluster's problem."""
    desired = target.desired
    declared: list[Resource] = [*desired.topics, *desired.acls, *desired.broker_configs]
    resources = tuple(
        ResourcePlan(source, kind, name, Action.NONE, problem=problem)
        for source, kind, name in map(resource_identity, declared)
    )
    return Plan(target.name, resources)


def failed_report(plan: Plan, problem: Problem | None = None) -> Report:
    """Outcomes for a cluster that failed as a whole: each resource failed with its problem."""
    outcomes = tuple(
        Outcome(r.source, r.kind, r.name, State.FAILED, r.action, r.changes, problem or r.problem)
        for r in plan.resources
    )
    return Report(plan.cluster, plan, outcomes)


def make_store(state_file: str | None) -> OwnershipStore:
    """The state store; a state file that exists but cannot be read stops the run before any connection."""
    if state_file is None:
        return NoOwnershipStore()
    store = FileOwnershipStore(state_file)
    store.load("")  # reads and checks the whole file: OwnershipFileError now rather than mid-run
    return store


async def open_session(session: Session, options: RunOptions) -> None:
    """Connect to one cluster and plan it; a cluster that cannot be reached gets `session.error`."""
    target = session.target
    session.admin = AdminClient(target.settings)
    try:
        await session.admin.start()
        # plan, apply and wait each submit their whole batch in one loop pass: no window to linger for
        session.engine = Engine(Batcher(session.admin, linger=0.0), ownership=session.store, cluster=target.name,
                                on_reassignment=ReassignmentDisplay(target.name), settings=target.engine)
        session.planned = await session.engine.plan(target.desired, options)
    except (KafkaOpsError, OSError, asyncio.TimeoutError) as exc:
        session.error = _cluster_problem(exc, f"cannot plan cluster {target.name!r} at {session.bootstrap}")


def _cluster_problem(exc: BaseException, what: str) -> Problem:
    if isinstance(exc, ClusterUnreachable):  # its cause names each address and why, in a few words
        return Problem(CLUSTER_UNREACHABLE, exc.cause, retriable=exc.retriable)
    if isinstance(exc, AuthenticationFailed):  # names the mechanism and the user, never the secret
        return Problem(AUTHENTICATION_FAILED, str(exc))
    if isinstance(exc, KafkaOpsError):
        return problem_from_exception(exc, what)
    return Problem(type(exc).__name__, f"{what}: {exc}", retriable=True)


async def close_sessions(sessions: list[Session]) -> None:
    await asyncio.gather(*(s.admin.close() for s in sessions if s.admin is not None), return_exceptions=True)


async def apply_session(session: Session, options: RunOptions, progress: Callable[[ResourcePlan], None] | None,
                        stop: asyncio.Event | None = None) -> ClusterResult:
    if session.engine is None or session.planned is None:
        return session.result(failed_report(session.plan))
    try:
        report = await session.engine.apply(session.planned, options, progress, stop)
    except (KafkaOpsError, OSError, asyncio.TimeoutError) as exc:
        problem = _cluster_problem(exc, f"apply to cluster {session.target.name!r} stopped; some changes may "
                                        "have been made")
        return session.result(failed_report(session.plan, problem), problem)
    return session.result(report)


def unanswered(sessions: list[Session], grace: float) -> list[ClusterResult]:
    """Results for an interrupted apply whose requests did not answer within `grace` seconds."""
    problem = Problem(INTERRUPTED, f"no answer within {grace:g}s after the interrupt: some changes may have been "
                                   "made (`kafkaops plan` shows what is left)", True)
    return [s.result(failed_report(s.plan, problem)) for s in sessions]


async def plan_sessions(sessions: list[Session], options: RunOptions) -> None:
    """Plan every cluster concurrently (the caller closes the sessions, whatever happens)."""
    await asyncio.gather(*(open_session(s, options) for s in sessions))

