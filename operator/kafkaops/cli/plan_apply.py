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

from kafkaops.cli import collector
from kafkaops.cli.interrupt import EXIT_SIGINT, Interrupt, exits_at_once, summary_line
from kafkaops.cli.options import (
    allow_empty_option,
    connection_options,
    connection_overrides,
    no_manifests_message,
    seconds,
)
from kafkaops.cli.passwords import with_passwords
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

# --- help (short; the long explanations are in docs/cli.md) ----------------------------------------

PLAN_HELP = """Show what `kafkaops apply` would change. Exit 0 none, 2 pending, 1 error.

\b
Examples:
  kafkaops plan -f clusters/                # each resource to the cluster its clusterRef names
  kafkaops plan -f topics/ --bootstrap-server kafka:9092 --command-config admin.properties
  kafkaops plan -f clusters/prod --prune -o json > plan.json
"""

APPLY_HELP = """Show the plan, ask, apply, wait, report. Exit 0 ok, 1 error, 130 Ctrl-C.

\b
Examples:
  kafkaops apply -f clusters/prod --secrets-dir ~/secrets   # asks first
"""


# --- options ---------------------------------------------------------------------------------


def common_options(command: F) -> F:
    """Options plan and apply share (applied bottom-up, so they list in this order)."""
    options = [
        click.option("-f", "--filename", "paths", multiple=True, type=click.Path(exists=True), metavar="PATH",
                     help="Manifest file or directory (repeatable)."),
        click.option("--bootstrap-server", "bootstrap", metavar="HOST:PORT",
                     help="One cluster for all (not clusterRef)."),
        click.option("--command-config", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
                     help="Kafka client.properties (TLS, SASL)."),
        click.option("--config-dir", type=click.Path(file_okay=False), metavar="DIR",
                     help="<cluster>.properties [~/.config/kafkaops]."),
        click.option("--state", "state_file", envvar="KAFKAOPS_STATE",
                     default=DEFAULT_STATE_FILE, type=click.Path(dir_okay=False),
                     metavar="FILE", help=f"State file [{DEFAULT_STATE_FILE}]."),
        click.option("--no-state", is_flag=True, help="No state file (removed keys stay)."),
        click.option("--secrets-dir", envvar="KAFKAOPS_SECRETS_DIR", type=click.Path(file_okay=False), metavar="DIR",
                     help="KafkaUser passwords: DIR/<secret>/<key>."),
        click.option("--prune", is_flag=True, help="Delete undeclared topics (if policy)."),
        allow_empty_option(),
        *connection_options(),
        click.option("--output", "-o", "output", type=click.Choice(["text", "json"]), default="text",
                     help="text or json [text]."),
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
    secrets_dir: str | None = None  # KafkaUser passwords (cli/passwords.py)


# --- the two flows ---------------------------------------------------------------------------------


def routing_notes(validated: ValidatedSet, bootstrap: str | None) -> tuple[str, ...]:
    clusters = validated.clusters()
    if bootstrap and len(clusters) > 1:
        return (f"--bootstrap-server: every resource goes to {bootstrap}; the {len(clusters)} KafkaClusters in "
                "PATH are ignored, so the topicDeletion policy is Retain",)
    return ()


EMIT_CHUNK = 2_000  # lines per write: click.echo flushes each call, and a plan of 5,000 topics is 30,000 lines


def emit(lines: list[str], err: bool = False) -> None:
    """Print `lines`, a chunk of them per write (one click.echo per line cost ~0.1 s at 30,000 lines)."""
    for start in range(0, len(lines), EMIT_CHUNK):
        click.echo("\n".join(lines[start:start + EMIT_CHUNK]), err=err)


def show_plan(result: RunResult, err: bool = False) -> None:
    emit(validation_text(result.validated), err)
    for cluster in result.clusters:
        emit(plan_text(cluster), err)
    emit(unroutable_text(result.unroutable), err)


async def run_plan(request: Request, store: OwnershipStore, validated: ValidatedSet, targets: list[Target],
                   unroutable: list[Unroutable]) -> RunResult:
    sessions = [Session(t, ReportingStore(store)) for t in targets]
    try:
        with exits_at_once(request.command):
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
        with exits_at_once(request.command):
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


def _load_and_run(request: Request) -> RunResult:
    collector.tune()
    validated = load_and_validate(request.paths)
    collector.tune()  # the manifests live for the whole run: out of every later full collection
    if not request.allow_empty and (message := no_manifests_message(request.paths, validated.documents,
                                                                    len(validated.errors))):
        fail(request, validated, message)
    try:
        targets, unroutable = resolve_targets(validated.valid, request.bootstrap, request.command_config,
                                              request.config_dir, **request.overrides)
        store = make_store(request.state_file)
        targets = with_passwords(targets, request.secrets_dir)
    except (TargetError, ValueError) as exc:  # ValueError: bad bootstrap, properties (SecurityConfigError), state
        fail(request, validated, str(exc))
    flow = run_plan if request.command == "plan" else run_apply
    try:
        return asyncio.run(flow(request, store, validated, targets, unroutable))
    except KeyboardInterrupt:  # before the apply started (it handles its own): nothing was changed
        click.echo(f"kafkaops {request.command}: interrupted (Ctrl-C) before anything was changed", err=True)
        raise SystemExit(EXIT_SIGINT) from None


def execute(request: Request) -> None:
    """Load, route, run, render, exit. Input errors that stop the whole run (no cluster can be
    told, a bad --bootstrap-server or properties file, an unreadable state file) exit 1 with a
    message, after the validation issues."""
    with collector.paused():  # loading, planning and applying build what lives to the end of the run
        result = _load_and_run(request)
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
    if not params["paths"]:
        raise click.UsageError("Missing option '-f' / '--filename'.")
    return Request(command, tuple(params["paths"]), params["bootstrap"], params["command_config"],
                   params["config_dir"], None if params["no_state"] else params["state_file"], params["output"],
                   options, params.get("yes", False),
                   {**connection_overrides(params["connect_timeout"], params["retry_budget"]), **(overrides or {})},
                   params["allow_empty"], params.get("secrets_dir"))


# --- the commands -----------------------------------------------------------------------------------------


@click.command("plan", help=PLAN_HELP)
@common_options
def plan(**params: Any) -> None:
    execute(request_from("plan", params, RunOptions(prune=params["prune"], validate_quotas=True)))


@click.command("apply", help=APPLY_HELP)
@common_options
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--validate-only", is_flag=True, help="Brokers validate; nothing is changed.")
@click.option("--no-wait", is_flag=True, help="Do not wait for the changes to complete.")
@click.option("--timeout", type=float, callback=seconds(positive=True), default=None, metavar="SEC",
              help="Wait at most this long [120s].")
def apply(**params: Any) -> None:
    timeout = params["timeout"]
    options = RunOptions(prune=params["prune"], validate_only=params["validate_only"], wait=not params["no_wait"],
                         validate_quotas=True)
    execute(request_from("apply", params, options, {"wait_timeout": timeout} if timeout is not None else None))
