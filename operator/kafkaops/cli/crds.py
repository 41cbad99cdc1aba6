"""`kafkaops crds`: print (or write, or check) the CRDs generated from the JSON Schemas."""

from __future__ import annotations

import click

from kafkaops.resources.crds import drifted_files, render_crds, write_crds


@click.command()
@click.option("--output-dir", "output_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Write one file per kind here [stdout].")
@click.option("--check", "check_dir", type=click.Path(file_okay=False, exists=True), default=None, metavar="DIR",
              help="Exit 1 if the files in DIR differ.")
def crds(output_dir: str | None, check_dir: str | None) -> None:
    """Print the CustomResourceDefinitions of the kafkaops.io kinds (YAML).

    \b
    Examples:
      kafkaops crds | kubectl apply -f -
      kafkaops crds --output-dir crds/
      kafkaops crds --check crds/               # in CI: exit 1 when crds/ drifted
    """
    if check_dir is not None:
        drifted = drifted_files(check_dir)
        for name in drifted:
            click.echo(f"{check_dir}/{name}: differs from the generated CRD", err=True)
        if drifted:
            click.echo("regenerate with: kafkaops crds --output-dir " + check_dir, err=True)
            raise SystemExit(1)
        click.echo(f"{check_dir}: CRDs are up to date")
        return
    if output_dir is not None:
        for path in write_crds(output_dir):
            click.echo(f"wrote {path}")
        return
    click.echo(render_crds(), nl=False)
