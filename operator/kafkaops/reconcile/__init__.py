"""The reconcile engine: observe (bulk reads) -> plan (pure) -> apply (batched) -> wait (batched polling).

See README.md beside this file for the design and the safety rules.
"""

from kafkaops.reconcile.actions import Action, FieldChange, Plan, Problem, ResourcePlan, StepResult, StepState
from kafkaops.reconcile.desired import ClusterGroups, DesiredState, group_by_cluster
from kafkaops.reconcile.engine import Engine, Planned, RunOptions
from kafkaops.reconcile.observe import ObserveScope, observe
from kafkaops.reconcile.observed import ObservedConfig, ObservedState, ObservedTopic
from kafkaops.reconcile.outcome import Outcome, Report, State
from kafkaops.reconcile.ownership import FileOwnershipStore, NoOwnershipStore, Ownership, OwnershipStore
from kafkaops.reconcile.plan import PlanOptions, plan

__all__ = [
    "Action", "ClusterGroups", "DesiredState", "Engine", "FieldChange", "FileOwnershipStore", "NoOwnershipStore",
    "ObserveScope", "ObservedConfig", "ObservedState", "ObservedTopic", "Outcome", "Ownership", "OwnershipStore",
    "Plan", "Planned", "Problem", "Report", "ResourcePlan", "RunOptions", "State", "StepResult", "StepState",
    "group_by_cluster", "observe",
    "plan",
]
