"""Rendering of `kafkaops plan` / `kafkaops apply` results: text for people, JSON for programs.

Text goes through click.style + click.echo, so colours appear on a terminal and
are stripped when the output is piped or captured. Each resource is one header
line (`+` create, `~` update, `-` delete, `!` problem) followed by its changes
(`field: old -> new`, `field: + new`, `field: - old`) and its problem, then the
cluster's notes and a one-line summary. Sensitive config values never reach
this module in the clear: the engine's FieldChange masks them as "(sensitive)".

JSON (`--output json`) is one object, printed once at the end. Keys may be
added in later versions; existing keys keep their meaning:

    {
      "command": "plan" | "apply",
      "exitCode": 0 | 1 | 2,                 # the command's exit status
      "ok": true,                            # no error of any kind (invalid manifest, failure, problem)
      "validateOnly": false,                 # apply: --validate-only (nothing was changed)
      "applied": true,                       # apply: whether the apply ran (false: cancelled/refused)
      "clusters": [{
        "name": "dev",
        "bootstrap": "127.0.0.1:19092",
        "clusterId": "..." | null,
        "error": null | {"reason", "message", "retriable"},   # the whole cluster failed (unreachable...)
        "counts": {"create": 1, "update": 2, "partition-increase": 0, "replica-change": 0,
                   "delete": 0, "none": 5, "problem": 1},     # the plan, per action
        "states": {"applied": 3, "unchanged": 5, "failed": 1} | null,   # apply: outcomes per state
        "notes": ["..."],                    # e.g. undeclared topics kept; state file not saved
        "requests": {"Metadata": 2, "CreateTopics": 1},   # admin requests this command sent, by API
        "seconds": 1.25 | null,              # apply: time spent applying and waiting
        "resources": [{
          "kind": "KafkaTopic",
          "name": "orders",                  # Kafka-side name: topic, principal, brokers/<id>|brokers/default
          "source": {"file", "index", "kind", "namespace", "name"},   # file/index null: not declared (prune)
          "action": "none" | "create" | "update" | "partition-increase" | "replica-change" | "delete",
          "changes": [{"field": "config.retention.ms", "old": "1000" | null, "new": "2000" | null}],
          "problem": null | {"reason", "message", "retriable"},
          "state": null | "unchanged" | "applied" | "validated" | "failed",   # apply only
          "notes": ["..."]
        }]
      }],
      "unroutable": [{"kind", "name", "source", "reason", "message", "state"}],   # no cluster for them
      "invalid": [{"file", "index", "kind", "namespace", "name", "issues": [ValidationIssue.to_dict()]}],
      "warnings": [ValidationIssue.to_dict()],
      "skipped": [{"file", "index", "message"}],   # documents of other API groups
      "notes": ["..."]                              # run-wide notes
    }
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import click

from kafkaops.cli.targets import Unroutable
from kafkaops.reconcile.actions import Action, FieldChange, Plan, Problem, ResourcePlan
from kafkaops.reconcile.outcome import Outcome, Report, State
from kafkaops.reconcile.plan import DELETION_CAP_EXCEEDED
from kafkaops.resources.documents import Source
from kafkaops.resources.issues import ValidationIssue
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_TOPIC
from kafkaops.resources.models import KafkaAcl, KafkaBrokerConfig, KafkaTopic, Resource
from kafkaops.resources.users import KafkaClientQuota, KafkaUser
from kafkaops.resources.validation import ValidatedSet

_UPDATES = (Action.UPDATE, Action.PARTITION_INCREASE, Action.REPLICA_CHANGE)
_MARK = {Action.CREATE: ("+", "green"), Action.DELETE: ("-", "red"), Action.NONE: (" ", None)}
_DONE = {Action.CREATE: "created", Action.DELETE: "deleted", Action.NONE: "unchanged"}


# --- what is rendered ------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterResult:
    """One cluster's part of a run. `plan` is always there (for a cluster that could not be
    reached, a plan whose resources all carry `error`); `report` only once apply ran."""

    name: str
    bootstrap: str
    plan: Plan
    report: Report | None = None
    error: Problem | None = None
    notes: tuple[str, ...] = ()
    requests: Mapping[str, int] = field(default_factory=dict)
    planned: bool = True  # False: the cluster failed before a plan was made (unreachable, auth...)

    @property
    def has_changes(self) -> bool:
        return any(r.steps for r in self.plan.resources if r.problem is None)


@dataclass(frozen=True)
class RunResult:
    """Everything a plan or apply command did, for rendering and the exit status."""

    command: str  # "plan" | "apply"
    validated: ValidatedSet
    clusters: tuple[ClusterResult, ...] = ()
    unroutable: tuple[Unroutable, ...] = ()
    notes: tuple[str, ...] = ()
    validate_only: bool = False
    applied: bool = False
    interrupted: int | None = None  # apply stopped by a signal: the exit status (130 SIGINT, 143 SIGTERM)

    @property
    def has_changes(self) -> bool:
        return any(c.has_changes for c in self.clusters)

    @property
    def has_errors(self) -> bool:
        """Anything that makes the command exit 1: an invalid manifest, an unroutable resource,
        a failed cluster, a resource the plan refuses, or an outcome that failed."""
        if self.validated.errors or self.unroutable:
            return True
        for cluster in self.clusters:
            if cluster.error is not None or cluster.plan.problems:
                return True
            if cluster.report is not None and not cluster.report.ok:
                return True
        return False


def resource_identity(resource: Resource) -> tuple[Source, str, str]:
    """(source, kind, Kafka-side name) of a declared resource, named as the engine names it."""
    if isinstance(resource, KafkaTopic):
        return resource.source, KAFKA_TOPIC, resource.topic_name
    if isinstance(resource, KafkaAcl):
        return resource.source, KAFKA_ACL, resource.principal
    if isinstance(resource, KafkaBrokerConfig):
        key = "default" if resource.broker_id is None else str(resource.broker_id)
        return resource.source, KAFKA_BROKER_CONFIG, f"brokers/{key}"
    if isinstance(resource, KafkaUser):
        return resource.source, resource.kind, resource.principal
    if isinstance(resource, KafkaClientQuota):
        return resource.source, resource.kind, resource.entity_text
    return resource.source, resource.kind, resource.name


# --- text: validation ---------------------------------------------------------------------------


def issue_line(issue: ValidationIssue) -> str:
    """`file:line:column: [index] kind/name: path: reason (Rule)` (editors and CI jump to the field), red
    for errors, yellow for warnings (the same line `kafkaops validate` prints)."""
    return click.style(issue.text(), fg="red" if issue.is_error else "yellow")


def _escape(text: str, property_value: bool = False) -> str:
    out = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return out.replace(":", "%3A").replace(",", "%2C") if property_value else out


def github_annotation(issue: ValidationIssue) -> str:
    """A GitHub Actions workflow command: `::error file=F,line=L,col=C,title=Rule::message`."""
    level = "error" if issue.is_error else "warning"
    props = [f"file={_escape(issue.file, True)}"] if issue.file else []
    if issue.line is not None:
        props.append(f"line={issue.line}")
    if issue.column is not None:
        props.append(f"col={issue.column}")
    props.append(f"title={_escape(issue.rule, True)}")
    what = f"{issue.kind or '?'}/{issue.name or '<unnamed>'}: " if issue.kind or issue.name else ""
    middle = f"{issue.path}: " if issue.path else ""
    return f"::{level} {','.join(props)}::{_escape(what + middle + issue.reason)}"


def invalid_count(validated: ValidatedSet) -> int:
    """Invalid documents, plus errors tied to no document (a YAML syntax error loses the rest of its file)."""
    return len(validated.invalid) + sum(1 for issue in validated.errors if issue.source is None)


def validation_text(validated: ValidatedSet) -> list[str]:
    """Errors (with a header saying nothing was sent for them), warnings, and skipped documents."""
    lines: list[str] = []
    if validated.errors:
        count, errors = invalid_count(validated), len(validated.errors)
        # documents and error lines both counted, so that the header agrees with the lines below it
        lines.append(click.style(f"Invalid manifests: {count} document{_s(count)} with {errors} error{_s(errors)} "
                                 "(listed below), skipped: nothing is sent to Kafka for them", fg="red", bold=True))
        lines.extend("  " + issue_line(issue) for issue in validated.errors)
    lines.extend("  " + issue_line(issue) for issue in validated.warnings)
    lines.extend(click.style(f"note: {note}", dim=True) for note in validated.notes)
    return lines


# --- text: plans ----------------------------------------------------------------------------------------


def _where(source: Source) -> str:
    return "not declared" if source.file is None else f"{source.file}[{source.index}]"


def _mark(resource: ResourcePlan) -> tuple[str, str | None]:
    if resource.problem is not None:
        return "!", "red"
    if resource.action in _UPDATES:
        return "~", "yellow"
    return _MARK[resource.action]


def problem_text(problem: Problem) -> str:
    return f"{problem.reason}: {problem.message}" + (" (retriable)" if problem.retriable else "")


def _change_lines(resource: ResourcePlan) -> list[str]:
    # The header already names a created or deleted topic: its "topic" change would repeat it.
    shown = [c for c in resource.changes
             if not (c.field == "topic" and resource.action in (Action.CREATE, Action.DELETE))]
    return [f"      {change}" for change in shown]


def resource_text(resource: ResourcePlan, with_problem: bool = True) -> list[str]:
    mark, colour = _mark(resource)
    action = "" if resource.action is Action.NONE else f"{resource.action.value}; "
    header = f"  {mark} {resource.kind} {resource.name}  ({action}{_where(resource.source)})"
    lines = [click.style(header, fg=colour, bold=resource.problem is not None)]
    lines.extend(_change_lines(resource))
    if resource.problem is not None and with_problem:
        lines.append(click.style(f"      {problem_text(resource.problem)}", fg="red"))
    return lines


# What to check when a whole cluster fails, by the problem's reason.
_HINTS = {
    "ClusterUnreachable": "check --bootstrap-server (and --command-config for TLS/SASL)",
    "AuthenticationFailed": "check the credentials in --command-config",
}
NAMES_SHOWN = 3


def names_text(names: list[str], limit: int = NAMES_SHOWN) -> str:
    """`a, b, c and 10 more`: a count and the first names, for one-line summaries."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def cluster_error_line(cluster: ClusterResult, verb: str) -> str:
    """A cluster that failed as a whole, in ONE line: where, why, what to check, what was left.
    `verb`: "not checked" (plan) or "not applied" (apply)."""
    assert cluster.error is not None
    error = cluster.error
    hint = _HINTS.get(error.reason)
    names = [r.name for r in cluster.plan.resources]
    left = f"{len(names)} resource{_s(len(names))} {verb}" + (f": {names_text(names)}" if names else "")
    text = (f"Cluster {_cluster_title(cluster)}: {error.reason}: {error.message}"
            + (f"; {hint}" if hint else "") + f"; {left}")
    return click.style(text, fg="red", bold=True)


def plan_summary(cluster: ClusterResult) -> str:
    counts = Counter(r.action for r in cluster.plan.resources if r.problem is None)
    problems = len(cluster.plan.problems)
    unchanged = counts[Action.NONE]
    if cluster.error is not None:
        return cluster_error_line(cluster, "not checked")
    if not cluster.has_changes and not problems:
        return click.style(f"Plan for {cluster.name}: no changes ({unchanged} resource{_s(unchanged)} up to date)",
                           fg="green")
    text = (f"Plan for {cluster.name}: {counts[Action.CREATE]} to create, "
            f"{sum(counts[a] for a in _UPDATES)} to update, {counts[Action.DELETE]} to delete, "
            f"{problems} problem{_s(problems)}; {unchanged} unchanged")
    return click.style(text, fg="red" if problems else "yellow", bold=True)


def plan_text(cluster: ClusterResult) -> list[str]:
    """The readable diff of one cluster: each resource that changes or has a problem, notes, summary.
    A cluster that could not be planned is one line (cluster_error_line)."""
    if cluster.error is not None and not cluster.planned:
        return [cluster_error_line(cluster, "not checked")]
    lines = [click.style(f"Cluster {_cluster_title(cluster)}", bold=True)]
    capped = [r for r in cluster.plan.resources if _capped(r.problem)]
    for resource in cluster.plan.resources:
        if resource.pending and not _capped(resource.problem):  # a failed cluster's problem: in the summary
            lines.extend(resource_text(resource, with_problem=cluster.error is None))
    lines.extend(capped_text([r.name for r in capped], capped[0].problem) if capped else [])
    lines.extend(_notes(cluster.plan.notes + cluster.notes))
    lines.append(plan_summary(cluster))
    return lines


CAPPED_NAMES_SHOWN = 20


def _capped(problem: Problem | None) -> bool:
    return problem is not None and problem.reason == DELETION_CAP_EXCEEDED


def capped_text(names: list[str], problem: Problem | None) -> list[str]:
    """Topics --prune would delete over the cap: ONE line (count, cap, the first names), not one per topic."""
    assert problem is not None
    return [click.style(f"  ! {problem.reason}: {problem.message}; first {min(len(names), CAPPED_NAMES_SHOWN)}: "
                        f"{names_text(names, CAPPED_NAMES_SHOWN)} (-o json lists all {len(names)})",
                        fg="red", bold=True)]


def _cluster_title(cluster: ClusterResult) -> str:
    """`name (bootstrap, cluster id X)`; the bootstrap only once when the cluster is named after it."""
    details = [cluster.bootstrap] if cluster.bootstrap != cluster.name else []
    if cluster.plan.cluster_id:
        details.append(f"cluster id {cluster.plan.cluster_id}")
    return cluster.name + (f" ({', '.join(details)})" if details else "")


def unroutable_text(items: Iterable[Unroutable]) -> list[str]:
    lines: list[str] = []
    for item in items:
        source, kind, name = resource_identity(item.resource)
        lines.append(click.style(f"  ! {kind} {name}  ({_where(source)})", fg="red", bold=True))
        lines.append(click.style(f"      {item.reason}: {item.message}", fg="red"))
    if lines:
        lines.insert(0, click.style(f"Not sent to any cluster ({len(lines) // 2}):", fg="red", bold=True))
    return lines


def _notes(notes: Iterable[str]) -> list[str]:
    return [click.style(f"  note: {note}", dim=True) for note in notes]


def _s(count: int) -> str:
    return "" if count == 1 else "s"


# --- text: apply outcomes -------------------------------------------------------------------------------


def _verb(outcome: Outcome) -> str:
    if outcome.state is State.FAILED:
        return "FAILED"
    if outcome.state is State.VALIDATED:
        return "validated"
    if outcome.action in _UPDATES:
        return "updated"
    return _DONE.get(outcome.action, outcome.action.value)


def outcome_text(outcome: Outcome) -> list[str]:
    colour = {State.FAILED: "red", State.INVALID: "red", State.VALIDATED: "cyan"}.get(outcome.state, "green")
    where = "" if outcome.source.file is None else f"  ({_where(outcome.source)})"
    lines = [click.style(f"  {_verb(outcome):<9} {outcome.kind} {outcome.name}{where}", fg=colour,
                         bold=outcome.state is State.FAILED)]
    if outcome.problem is not None:
        lines.append(click.style(f"      {problem_text(outcome.problem)}", fg="red"))
    lines.extend(f"      note: {note}" for note in outcome.notes)
    return lines


def requests_text(requests: Mapping[str, int]) -> str:
    return ", ".join(f"{api} {count}" for api, count in sorted(requests.items())) or "none"


def report_text(cluster: ClusterResult, validate_only: bool) -> list[str]:
    """One line per resource that changed or failed; unchanged ones only counted; then a summary."""
    report = cluster.report
    if report is None:
        return []
    title = "Validated against" if validate_only else "Applied to"
    lines = [click.style(f"{title} {_cluster_title(cluster)}", bold=True)]
    capped = [o for o in report.outcomes if _capped(o.problem)]
    for outcome in report.outcomes:
        if _capped(outcome.problem):
            continue
        if outcome.state is not State.UNCHANGED or outcome.problem is not None or outcome.notes:
            lines.extend(outcome_text(outcome))
    lines.extend(capped_text([o.name for o in capped], capped[0].problem) if capped else [])
    lines.extend(_notes(cluster.notes))
    states = Counter(o.state for o in report.outcomes)
    parts = [f"{states[State.VALIDATED]} validated" if validate_only else f"{states[State.APPLIED]} applied",
             f"{states[State.FAILED]} failed", f"{states[State.UNCHANGED]} unchanged"]
    verb = "Validate-only run on" if validate_only else "Apply to"
    summary = f"{verb} {cluster.name}: {', '.join(parts)} in {report.seconds:.1f}s; requests: {requests_text(cluster.requests)}"
    lines.append(click.style(summary, fg="red" if states[State.FAILED] else "green", bold=True))
    return lines


def cluster_failure_text(cluster: ClusterResult) -> list[str]:
    """For a cluster that failed as a whole during apply (its plan was shown already)."""
    if cluster.error is None:
        return []
    return [cluster_error_line(cluster, "not applied")]


# --- JSON ----------------------------------------------------------------------------------------------------


def _source_json(source: Source) -> dict[str, Any]:
    declared = source.file is not None
    return {"file": source.file, "index": source.index if declared else None, "kind": source.kind,
            "namespace": source.namespace, "name": source.name}


def problem_json(problem: Problem | None) -> dict[str, Any] | None:
    if problem is None:
        return None
    return {"reason": problem.reason, "message": problem.message, "retriable": problem.retriable}


def _change_json(change: FieldChange) -> dict[str, Any]:
    return {"field": change.field, "old": change.old, "new": change.new}


def _resource_json(resource: ResourcePlan, outcome: Outcome | None) -> dict[str, Any]:
    problem = outcome.problem if outcome is not None and outcome.problem is not None else resource.problem
    return {
        "kind": resource.kind,
        "name": resource.name,
        "source": _source_json(resource.source),
        "action": resource.action.value,
        "changes": [_change_json(c) for c in resource.changes],
        "problem": problem_json(problem),
        "state": outcome.state.value if outcome is not None else None,
        "notes": list(outcome.notes) if outcome is not None else [],
    }


def cluster_json(cluster: ClusterResult) -> dict[str, Any]:
    report = cluster.report
    outcomes = {o.source: o for o in report.outcomes} if report is not None else {}
    counts = {action.value: 0 for action in Action}
    counts.update(Counter(r.action.value for r in cluster.plan.resources if r.problem is None))
    counts["problem"] = len(cluster.plan.problems)
    return {
        "name": cluster.name,
        "bootstrap": cluster.bootstrap,
        "clusterId": cluster.plan.cluster_id,
        "error": problem_json(cluster.error),
        "counts": counts,
        "states": report.counts() if report is not None else None,
        "notes": list(cluster.plan.notes + cluster.notes),
        "requests": dict(sorted(cluster.requests.items())),
        "seconds": round(report.seconds, 3) if report is not None else None,
        "resources": [_resource_json(r, outcomes.get(r.source)) for r in cluster.plan.resources],
    }


def _invalid_json(validated: ValidatedSet) -> list[dict[str, Any]]:
    """Invalid documents with all their issues; errors tied to no document (YAML syntax) each on their own."""
    entries = [
        {**_source_json(source), "issues": [issue.to_dict() for issue in issues]}
        for source, issues in validated.invalid.items()
    ]
    for issue in validated.errors:
        if issue.source is None or issue.source not in validated.invalid:
            entries.append({"file": issue.file, "index": issue.index, "kind": issue.kind,
                            "namespace": None, "name": issue.name, "issues": [issue.to_dict()]})
    return entries


def run_json(result: RunResult, exit_code: int) -> dict[str, Any]:
    failed_state = State.FAILED.value if result.command == "apply" else None
    data: dict[str, Any] = {"command": result.command, "exitCode": exit_code, "ok": not result.has_errors}
    if result.command == "apply":
        data["validateOnly"] = result.validate_only
        data["applied"] = result.applied
        data["interrupted"] = result.interrupted is not None
    data["clusters"] = [cluster_json(c) for c in result.clusters]
    data["unroutable"] = [
        {"kind": kind, "name": name, "source": _source_json(source), "reason": item.reason, "message": item.message,
         "state": failed_state}
        for item in result.unroutable
        for source, kind, name in [resource_identity(item.resource)]
    ]
    data["invalid"] = _invalid_json(result.validated)
    data["warnings"] = [issue.to_dict() for issue in result.validated.warnings]
    data["skipped"] = [{"file": n.file, "index": n.index, "message": n.message} for n in result.validated.notes]
    data["notes"] = list(result.notes)
    return data
