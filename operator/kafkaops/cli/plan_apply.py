"""`kafkaops plan` and `kafkaops apply`: the reconcile engine behind a command line.

Both commands load and validate the manifests, route each valid resource to a
cluster (cli/targets.py), then run one engine per cluster inside a single
asyncio.run. Clusters are planned and applied concurrently: they are
independent (own connections, own Batcher, own section of the state file), so
a run over a whole repository takes as long as its slowest cluster rather than
the sum, and the output stays deterministic because it is rendered only once
every cluster has answered. A cluster that cannot be reached fails its own
resources and the others go on.

Streams: the report (validation issues, the plan, outcomes, or the JSON
document) goes to stdout; the confirmation prompt, the progress bar and fatal
errors go to stderr, so `kafkaops plan > plan.txt` captures the whole diff.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn, TypeVar

import click

from kafkaops.cli.interrupt import EXIT_SIGINT, Interrupt, summary_line
from kafkaops.cli.options import allow_empty_option, connection_options, connection_overrides, no_manifests_message
from kafkaops.cli.progress import ProgressDisplay
from kafkaops.cli.render import (
    RunResult,
    cluster_failure_text,
    invalid_count,
    plan_text,
    report_text,
    run_json,
    unroutable_text,
    validation_text,
)
from kafkaops.cli.sessions import (
    ReportingStore,
    Session,
    apply_session,
    close_sessions,
    make_store,
    plan_sessions,
    unanswered,
)
from kafkaops.cli.targets import Target, TargetError, Unroutable, resolve_targets
from kafkaops.reconcile.engine import RunOptions
from kafkaops.reconcile.ownership import OwnershipStore
from kafkaops.resources.validation import ValidatedSet, load_and_validate

DEFAULT_STATE_FILE = ".kafkaops/state.json"

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2

F = TypeVar("F", bound=Callable[..., Any])

# --- help texts (shared by both commands) ----------------------------------------------------

_PATHS_HELP = """\
Each PATH (-f, repeatable) is a file or a directory searched recursively for *.yaml and
*.yml. Files may hold several documents; documents that are not kafkaops.io resources are
skipped with a note. An invalid manifest is reported with its file, document index, field
path and reason, and nothing is sent to Kafka for it; the valid resources of the same run
are still processed."""

_CLUSTERS_HELP = """\
\b
Which cluster each resource goes to:
  --bootstrap-server HOST:PORT
      every resource in PATH goes to that cluster, whatever its clusterRef says
      (a single KafkaCluster in PATH still supplies the topicDeletion policy).
  without --bootstrap-server
      each resource goes to the KafkaCluster its clusterRef names, which must be
      among the manifests in PATH (so `-f clusters/` covers a whole repository).
      Credentials: --command-config FILE for every cluster; else the file
      <config dir>/<cluster name>.properties when it exists (config dir:
      --config-dir, $KAFKAOPS_CONFIG_DIR, or ~/.config/kafkaops); else the
      KafkaCluster's own TLS settings (system CAs) and no SASL.
  --command-config is a Kafka client.properties file (security.protocol, sasl.*,
  ssl.*). Passwords never appear in the output."""

_STATE_HELP = """\
\b
State file: kafkaops records there which config keys it set on each topic and
broker, so that a key removed from a manifest is reset to Kafka's default only
when kafkaops set it (keys set by others are never touched). Default:
$KAFKAOPS_STATE, else .kafkaops/state.json in the current directory (keep it,
e.g. in CI cache or next to the manifests; it holds no secret values, only
salted fingerprints of sensitive ones). `plan` only reads it; `apply` updates it.
--no-state remembers nothing: removed keys are then never reset."""

PLAN_HELP = f"""Show what `kafkaops apply` would change, without changing anything.

Validates the manifests, reads the cluster(s), and prints a diff per resource:
`+` create, `~` update (each changed field as old -> new), `-` delete, and `!`
for a resource whose change is refused (a partition decrease, say) with the
reason. Coloured on a terminal.

{_PATHS_HELP}

{_CLUSTERS_HELP}

{_STATE_HELP}

\b
Exit status:
  0  nothing to do
  2  changes are pending
  1  an error: an invalid manifest, a cluster that cannot be reached or
     planned, a resource with no cluster, or a change the plan refuses
     (the plan of everything valid is still shown)
"""

APPLY_HELP = f"""Apply the manifests: show the plan, ask, apply, wait, report each resource.

Shows the same plan as `kafkaops plan`, asks for confirmation (unless --yes),
applies every change in batched requests, waits until Kafka shows each change
complete (unless --no-wait), and prints each resource's outcome. A failure
stops only the resource it concerns: the others are still applied. A progress
bar is shown on a terminal when many resources change.

Without --yes, apply needs a terminal to ask on: when stdin is not a terminal
(CI), it prints the plan and exits 1 without changing anything.

Deletion safety: a topic absent from the manifests is never deleted unless
--prune is given AND the KafkaCluster's topicDeletion.policy is Delete; if more
topics would be deleted than its topicDeletion.maxDeletionsPerReconcile, none
is, and the output says why. Kafka's internal topics are never pruned.

--validate-only sends every create and config change with Kafka's
validate-only flag: the brokers check them and nothing is changed (ACL and
topic deletions have no such mode and are skipped, with a note).

{_PATHS_HELP}

{_CLUSTERS_HELP}

{_STATE_HELP}

\b
Exit status:
  0  every resource succeeded (or there was nothing to do)
  1  any resource failed, any manifest was invalid, a cluster could not be
     reached, or the apply was not confirmed (the valid resources of other
     clusters and files are still applied)
"""


# --- options ---------------------------------------------------------------------------------


def common_options(command: F) -> F:
    """Options plan and apply share (applied bottom-up, so they list in this order)."""
    options = [
        click.option("-f", "--filename", "paths", multiple=True, required=True,
                     type=click.Path(exists=True), metavar="PATH",
                     help="A manifest file or a directory of them (repeatable)."),
        click.option("--bootstrap-server", "bootstrap", metavar="HOST:PORT[,HOST:PORT]",
                     help="Send every resource to this cluster, whatever its clusterRef says."),
        click.option("--command-config", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
                     help="Kafka client.properties (TLS, SASL) used for every cluster."),
        click.option("--config-dir", type=click.Path(file_okay=False), metavar="DIR",
                     help="Where <cluster>.properties files are looked up "
                          "[default: $KAFKAOPS_CONFIG_DIR or ~/.config/kafkaops]."),
        click.option("--state", "state_file", envvar="KAFKAOPS_STATE", show_envvar=True,
                     default=DEFAULT_STATE_FILE, show_default=True, type=click.Path(dir_okay=False),
                     metavar="FILE", help="The ownership state file (see above)."),
        click.option("--no-state", is_flag=True,
                     help="Use no state file (overrides --state): config keys removed from manifests are "
                          "never reset."),
        click.option("--prune", is_flag=True,
                     help="Delete topics absent from the manifests (plan: show which would be deleted); "
                          "only where the KafkaCluster's topicDeletion.policy is Delete, and at most "
                          "its maxDeletionsPerReconcile."),
        allow_empty_option(),
        *connection_options(),
        click.option("--output", "-o", "output", type=click.Choice(["text", "json"]), default="text",
                     show_default=True, help="Output format (json: one document on stdout, schema in "
                                             "kafkaops/cli/render.py)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


# --- one run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """What the user asked for, parsed from the options."""

    command: str
    paths: tuple[str, ...]
    bootstrap: str | None
    command_config: str | None
    config_dir: str | None
    state_file: str | None  # None: --no-state
    output: str
    options: RunOptions
    yes: bool = False
    overrides: Mapping[str, object] = field(default_factory=dict)
    allow_empty: bool = False


# --- the two flows ---------------------------------------------------------------------------------


def routing_notes(validated: ValidatedSet, bootstrap: str | None) -> tuple[str, ...]:
    clusters = validated.clusters()
    if bootstrap and len(clusters) > 1:
        return (f"--bootstrap-server: every resource goes to {bootstrap}; the {len(clusters)} KafkaClusters in "
                "PATH are ignored, so the topicDeletion policy is Retain",)
    return ()


def emit(lines: list[str], err: bool = False) -> None:
    for line in lines:
        click.echo(line, err=err)


def show_plan(result: RunResult, err: bool = False) -> None:
    emit(validation_text(result.validated), err)
    for cluster in result.clusters:
        emit(plan_text(cluster), err)
    emit(unroutable_text(result.unroutable), err)


async def run_plan(request: Request, store: OwnershipStore, validated: ValidatedSet, targets: list[Target],
                   unroutable: list[Unroutable]) -> RunResult:
    sessions = [Session(t, ReportingStore(store)) for t in targets]
    try:
        await plan_sessions(sessions, request.options)
        clusters = tuple(s.result() for s in sessions)
    finally:
        await close_sessions(sessions)
    return RunResult("plan", validated, clusters, tuple(unroutable), routing_notes(validated, request.bootstrap))


def stdin_is_interactive() -> bool:
    """Whether a person can answer the prompt (tests patch this)."""
    return sys.stdin is not None and sys.stdin.isatty()


def confirm(result: RunResult, text: bool) -> bool:
    """Ask on stderr (stdout stays the report). Called directly, blocking the event loop on
    purpose: nothing needs servicing while a person reads (idle connections are reopened on
    next use), and Ctrl-C then stops the prompt at once, which an input() in a worker thread
    would not. Ctrl-C or end of input count as "no"."""
    if not text:
        show_plan(result, err=True)
    names = ", ".join(c.name for c in result.clusters if c.has_changes)
    try:
        return click.confirm(f"Apply these changes to {names}?", default=False, err=True)
    except click.Abort:
        click.echo("", err=True)
        return False


def not_confirmed(planned: RunResult, request: Request) -> str | None:
    """Why the apply must not go ahead (None: go ahead). Nothing to do needs no confirmation."""
    if not planned.has_changes or request.yes:
        return None
    if not stdin_is_interactive():
        click.echo("kafkaops apply: not applied: stdin is not a terminal, so there is no one to confirm; "
                   "pass --yes to apply without asking. Nothing was changed.", err=True)
        return "not applied: no --yes and stdin is not a terminal"
    if not confirm(planned, request.output == "text"):
        click.echo("Apply cancelled: nothing was changed.", err=True)
        return "not applied: cancelled at the prompt"
    return None


def progress_for(sessions: list[Session]) -> ProgressDisplay:
    plans = [s.planned.plan for s in sessions if s.planned is not None]
    pending = [r for p in plans for r in p.pending]
    return ProgressDisplay(len(pending), sum(1 for r in pending if r.steps))


async def run_apply(request: Request, store: OwnershipStore, validated: ValidatedSet, targets: list[Target],
                    unroutable: list[Unroutable]) -> RunResult:
    """Plan every cluster, show the plan, get confirmation, apply every cluster concurrently."""
    sessions = [Session(t, ReportingStore(store)) for t in targets]
    try:
        await plan_sessions(sessions, request.options)
        planned = RunResult("apply", validated, tuple(s.result() for s in sessions), tuple(unroutable),
                            routing_notes(validated, request.bootstrap), request.options.validate_only)
        if request.output == "text":
            show_plan(planned)
        if (refused := not_confirmed(planned, request)) is not None:
            return replace(planned, notes=planned.notes + (refused,))
        interrupt = Interrupt()
        with progress_for(sessions) as progress, interrupt.installed():
            work = asyncio.gather(*(apply_session(s, request.options, progress, interrupt.stop) for s in sessions))
            clusters = await interrupt.bounded(work, lambda: unanswered(sessions, interrupt.grace))
        return replace(planned, clusters=tuple(clusters), applied=True, interrupted=interrupt.code)
    finally:
        await close_sessions(sessions)


def show_outcomes(result: RunResult) -> None:
    if not result.applied:
        return
    reached = [c for c in result.clusters if c.planned]  # the others' one-line error is above
    if not result.has_changes:
        if any(c.plan.problems for c in reached):
            click.echo(click.style("Nothing applied: every pending change is refused (the problems are above).",
                                   fg="red"))
        elif reached or not result.clusters:
            click.echo(click.style("Nothing to do: every resource is as declared.", fg="green"))
    else:
        for cluster in reached:
            emit(cluster_failure_text(cluster) if cluster.error is not None
                 else report_text(cluster, result.validate_only))
    if result.validate_only:
        click.echo(click.style("--validate-only: nothing was changed in Kafka.", fg="cyan", bold=True))


def footer(result: RunResult) -> list[str]:
    """Why the command exits 1, in one place at the end (the details are above)."""
    parts: list[str] = []
    if invalid := invalid_count(result.validated):
        parts.append(f"{invalid} invalid manifest{'s' if invalid != 1 else ''} skipped")
    if result.unroutable:
        parts.append(f"{len(result.unroutable)} resource(s) with no usable cluster")
    if down := [c.name for c in result.clusters if c.error is not None and c.planned]:
        parts.append(f"cluster(s) failed: {', '.join(down)}")  # unplanned ones said it in their own line
    failed = sum(len(c.report.failed) for c in result.clusters if c.report is not None and c.error is None)
    problems = sum(len(c.plan.problems) for c in result.clusters if c.error is None)
    if result.command == "apply" and result.applied and failed:
        parts.append(f"{failed} resource(s) failed")
    elif problems:
        parts.append(f"{problems} resource(s) with a problem")
    if not parts:
        return []
    return [click.style("Errors: " + "; ".join(parts) + " (details above)", fg="red", bold=True)]


def interrupted_text(result: RunResult, state_file: str | None) -> str:
    assert result.interrupted is not None
    outcomes = [(c.name, o.state, o.problem.reason if o.problem else None, o.problem.message if o.problem else "")
                for c in result.clusters if c.report is not None for o in c.report.outcomes]
    return click.style(summary_line(result.interrupted, outcomes, state_file), fg="yellow", bold=True)


def exit_code(result: RunResult) -> int:
    if result.interrupted is not None:
        return result.interrupted
    if result.has_errors:
        return EXIT_ERROR
    if result.command == "plan":
        return EXIT_CHANGES if result.has_changes else EXIT_OK
    return EXIT_OK if result.applied or not result.has_changes else EXIT_ERROR


def execute(request: Request) -> None:
    """Load, route, run, render, exit. Input errors that stop the whole run (no cluster can be
    told, a bad --bootstrap-server or properties file, an unreadable state file) exit 1 with a
    message, after the validation issues."""
    validated = load_and_validate(request.paths)
    if not request.allow_empty and (message := no_manifests_message(request.paths, validated.documents,
                                                                    len(validated.errors))):
        fail(request, validated, message)
    try:
        targets, unroutable = resolve_targets(validated.valid, request.bootstrap, request.command_config,
                                              request.config_dir, **request.overrides)
        store = make_store(request.state_file)
    except (TargetError, ValueError) as exc:  # ValueError: bad bootstrap, properties (SecurityConfigError), state
        fail(request, validated, str(exc))
    flow = run_plan if request.command == "plan" else run_apply
    try:
        result = asyncio.run(flow(request, store, validated, targets, unroutable))
    except KeyboardInterrupt:  # before the apply started (it handles its own): nothing was changed
        click.echo(f"kafkaops {request.command}: interrupted (Ctrl-C) before anything was changed", err=True)
        raise SystemExit(EXIT_SIGINT) from None
    code = exit_code(result)
    if request.output == "json":
        click.echo(json_text(result, code))
    else:
        if request.command == "plan":
            show_plan(result)  # apply showed it before asking
        else:
            show_outcomes(result)
        emit(footer(result) if result.interrupted is None else [interrupted_text(result, request.state_file)])
    raise SystemExit(code)


def fail(request: Request, validated: ValidatedSet, message: str) -> NoReturn:
    result = RunResult(request.command, validated, notes=(f"error: {message}",))
    if request.output == "json":
        click.echo(json_text(result, EXIT_ERROR))
    else:
        emit(validation_text(validated))
    click.echo(f"Error: {message}", err=True)
    raise SystemExit(EXIT_ERROR)


def json_text(result: RunResult, code: int) -> str:
    return json.dumps(run_json(result, code), indent=2)


def request_from(command: str, params: Mapping[str, Any], options: RunOptions,
                 overrides: Mapping[str, object] | None = None) -> Request:
    """A Request from a command's parsed options."""
    return Request(command, tuple(params["paths"]), params["bootstrap"], params["command_config"],
                   params["config_dir"], None if params["no_state"] else params["state_file"], params["output"],
                   options, params.get("yes", False),
                   {**connection_overrides(params["connect_timeout"], params["retry_budget"]), **(overrides or {})},
                   params["allow_empty"])


# --- the commands -----------------------------------------------------------------------------------------


@click.command("plan", help=PLAN_HELP)
@common_options
def plan(**params: Any) -> None:
    execute(request_from("plan", params, RunOptions(prune=params["prune"])))


@click.command("apply", help=APPLY_HELP)
@common_options
@click.option("--yes", "-y", is_flag=True, help="Apply without asking for confirmation.")
@click.option("--validate-only", is_flag=True,
              help="Ask the brokers to validate every change without making it; nothing is changed.")
@click.option("--no-wait", is_flag=True,
              help="Do not wait for Kafka to show the changes complete (outcomes then mean 'accepted').")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="How long to wait for changes to complete before reporting WaitTimeout [default: 120].")
def apply(**params: Any) -> None:
    timeout = params["timeout"]
    options = RunOptions(prune=params["prune"], validate_only=params["validate_only"], wait=not params["no_wait"])
    execute(request_from("apply", params, options, {"wait_timeout": timeout} if timeout is not None else None))
