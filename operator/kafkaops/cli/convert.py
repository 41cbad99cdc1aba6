"""`kafkaops convert --from strimzi`: rewrite Strimzi KafkaTopic / KafkaUser manifests as kafkaops ones.

The mapping is kafkaops.resources.convert_strimzi (pure); this module reads the files and writes the
output. docs/strimzi-migration.md is the guide.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
import yaml

from kafkaops.cli.render import issue_line
from kafkaops.resources.convert_strimzi import ConversionResult, ConvertOptions, StrimziDocument, convert as convert_docs
from kafkaops.resources.convert_strimzi import documents_of
from kafkaops.resources.issues import Severity, ValidationIssue
from kafkaops.resources.loader import find_yaml_files


def _read(paths: tuple[str, ...]) -> tuple[list[StrimziDocument], list[ValidationIssue]]:
    docs: list[StrimziDocument] = []
    problems: list[ValidationIssue] = []
    sources: list[tuple[str, str]] = []
    for path in paths:
        if path == "-":
            sources.append(("<stdin>", sys.stdin.read()))
            continue
        for file in find_yaml_files(path):
            try:
                sources.append((str(file), file.read_text("utf-8")))
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(ValidationIssue(Severity.ERROR, str(file), None, None, None, "",
                                                f"cannot read: {exc}", "UnreadableFile"))
    for name, text in sources:
        try:
            docs += documents_of(name, yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            problems.append(ValidationIssue(Severity.ERROR, name, None, None, None, "",
                                            f"not valid YAML: {exc}".replace("\n", " "), "InvalidYaml"))
    return docs, problems


def _file_name(kind: str, name: str, namespace: str | None) -> Path:
    base = Path(f"{kind.lower()}-{name}.yaml")
    return Path(namespace) / base if namespace else base


def _write(result: ConversionResult, output_dir: str | None) -> list[Path]:
    if output_dir is None:
        text = yaml.safe_dump_all([item.manifest for item in result.converted], sort_keys=False)
        click.echo(text, nl=False)
        return []
    written = []
    for item in result.converted:
        path = Path(output_dir) / _file_name(item.kind, item.name, item.namespace)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(item.manifest, sort_keys=False), "utf-8")
        written.append(path)
    return written


@click.command("convert")
@click.option("--from", "source", type=click.Choice(["strimzi"]), required=True,
              help="Input format.")
@click.option("-f", "--filename", "paths", multiple=True, required=True, metavar="PATH",
              help="File, directory or - (stdin); repeatable.")
@click.option("--output-dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="One file per resource here [stdout].")
@click.option("--cluster", default=None, metavar="NAME",
              help="clusterRef of all [strimzi.io/cluster label].")
@click.option("--deletion-policy", type=click.Choice(["Retain", "Delete", "none"]), default="Retain",
              help="Topics' deletionPolicy; none: the cluster's [Retain].")
def convert(source: str, paths: tuple[str, ...], output_dir: str | None, cluster: str | None,
            deletion_policy: str) -> None:
    """Convert Strimzi KafkaTopic and KafkaUser (ACL) manifests into kafkaops ones.

    \b
    Examples:
      kafkaops convert --from strimzi -f strimzi/ --cluster prod --output-dir kafkaops/
      kubectl get kafkatopics.kafka.strimzi.io -n kafka -o yaml \\
        | kafkaops convert --from strimzi -f - --cluster prod

    Fields not converted are reported on stderr (resource, field, reason); topics get
    deletionPolicy Retain. Exit 1 if a resource could not be converted (the others are
    written). The mapping: docs/cli.md; the guide: docs/strimzi-migration.md.
    """
    for path in paths:
        if path != "-" and not Path(path).exists():
            raise click.BadParameter(f"{path}: no such file or directory", param_hint="-f")
    documents, problems = _read(paths)
    options = ConvertOptions(cluster=cluster, deletion_policy=None if deletion_policy == "none" else deletion_policy)
    result = convert_docs(documents, options)
    for issue in (*problems, *result.errors, *result.warnings):
        click.echo(issue_line(issue), err=True)
    written = _write(result, output_dir)
    errors = len(problems) + len(result.errors)
    counts = {kind: sum(1 for item in result.converted if item.kind == kind) for kind in ("KafkaTopic", "KafkaAcl")}
    summary = (f"converted {counts['KafkaTopic']} KafkaTopic{'s' if counts['KafkaTopic'] != 1 else ''} and "
               f"{counts['KafkaAcl']} KafkaAcl{'s' if counts['KafkaAcl'] != 1 else ''} from {len(documents)} "
               f"document{'s' if len(documents) != 1 else ''}; {len(result.warnings)} not converted or skipped "
               f"(listed above), {errors} error{'s' if errors != 1 else ''}")
    if output_dir is not None:
        summary += f"; wrote {len(written)} file{'s' if len(written) != 1 else ''} under {output_dir}"
    click.echo(summary, err=True)
    raise SystemExit(1 if errors else 0)
