"""`kafkaops validate PATH...`: check manifests without a cluster."""

from __future__ import annotations

import json

import click

from kafkaops.cli import collector
from kafkaops.cli.options import allow_empty_option, no_manifests_message
from kafkaops.cli.render import github_annotation, issue_line
from kafkaops.resources.issues import ValidationIssue
from kafkaops.resources.validation import ValidatedSet, load_and_validate


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("-f", "--filename", "filenames", multiple=True, type=click.Path(exists=True), metavar="PATH",
              help="Manifest file or directory (repeatable).")
@click.option("--output", "-o", "output", type=click.Choice(["text", "json", "github"]), default="text",
              help="github: workflow annotations [text].")
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@click.option("--verbose", "-v", is_flag=True, help="Also list the skipped documents.")
@allow_empty_option()
def validate(paths: tuple[str, ...], filenames: tuple[str, ...], output: str, strict: bool, verbose: bool,
             allow_empty: bool) -> None:
    """Check manifests against the schemas and Kafka's rules, without a cluster.

    \b
    Examples:
      kafkaops validate clusters/               # or -f clusters/; directories: *.yaml, *.yml
      kafkaops validate -o github clusters/     # annotations in a GitHub Actions job

    One line per issue: file:line:column: [document] kind/name: field: reason (Rule).
    Exit status 1 on an error, or when PATHs hold no kafkaops manifest. docs/cli.md.
    """
    paths = (*paths, *filenames)
    if not paths:
        raise click.UsageError("give the manifests: kafkaops validate PATH... (or -f PATH)")
    with collector.paused():
        collector.tune()  # full collections over the documents being loaded (collector.py)
        result = load_and_validate(paths)
    empty = None if allow_empty else no_manifests_message(paths, result.documents, len(result.errors))
    failed = bool(result.errors) or (strict and bool(result.warnings)) or empty is not None
    if empty is not None and output == "text":
        click.echo(f"Error: {empty}", err=True)
        raise SystemExit(1)
    if output == "json":
        click.echo(json.dumps(_as_json(result, failed, empty), indent=2))
    elif output == "github":
        for issue in (*result.errors, *result.warnings):
            click.echo(github_annotation(issue))
        if empty is not None:
            click.echo(f"::error title=NoManifests::{empty}")
        _print_summary(result)
    else:
        _print_text(result, verbose)
    raise SystemExit(1 if failed else 0)


def _as_json(result: ValidatedSet, failed: bool, error: str | None) -> dict[str, object]:
    return {
        "valid": not failed,
        "error": error,  # a run-wide error (no manifests at all), else null
        "errors": [issue.to_dict() for issue in result.errors],
        "warnings": [issue.to_dict() for issue in result.warnings],
        "resources": result.documents,
        "validResources": len(result.valid),
        "files": len(result.files),
        "skipped": [{"file": note.file, "index": note.index, "message": note.message} for note in result.notes],
    }


def _print_text(result: ValidatedSet, verbose: bool) -> None:
    # One line per issue, `file[index] kind/name: path: reason (Rule)`: errors first, then warnings
    # (coloured on a terminal; --output json carries the severity explicitly).
    for issue in (*result.errors, *result.warnings):
        click.echo(_line(issue))
    if verbose:
        for note in result.notes:
            click.echo(click.style(f"note: {note}", dim=True))
    _print_summary(result)


def _print_summary(result: ValidatedSet) -> None:
    errors, warnings = len(result.errors), len(result.warnings)
    summary = (f"{result.documents} resource{'s' if result.documents != 1 else ''} in {len(result.files)} "
               f"file{'s' if len(result.files) != 1 else ''}: {len(result.valid)} valid, {len(result.invalid)} invalid; "
               f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}")
    if result.notes:
        summary += f"; {len(result.notes)} document{'s' if len(result.notes) != 1 else ''} skipped"
    click.echo(click.style(summary, fg="red" if errors else ("yellow" if warnings else "green")))


def _line(issue: ValidationIssue) -> str:
    return issue_line(issue)  # shared with plan/apply, which print the same lines
