"""Validation: schema + rules for each document, set rules across documents, and the split of a
batch into valid resources (as models) and invalid ones (with their issues).

One bad document never stops the others: `validate_set` answers every valid
resource of the batch, so the engine can apply them and skip the rest.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkaops.resources.documents import Document, Source
from kafkaops.resources.issues import Finding, Severity, ValidationIssue
from kafkaops.resources.kinds import KINDS
from kafkaops.resources.loader import UNKNOWN_KIND, LoadNote, LoadResult, document_from_custom_resource, load_paths
from kafkaops.resources.models import (
    KafkaAcl,
    KafkaBrokerConfig,
    KafkaCluster,
    KafkaTopic,
    Resource,
    build_resource,
)
from kafkaops.resources.rules import check_rules
from kafkaops.resources.schema_check import SCHEMA_VIOLATION, check_schema
from kafkaops.resources.set_rules import check_set
from kafkaops.resources.users import KafkaClientQuota, KafkaUser


def _issue(doc: Document, finding: Finding) -> ValidationIssue:
    source = doc.source
    line, column = doc.position_of(finding.path)
    return ValidationIssue(
        finding.severity, source.file, source.index if source.file is not None else None, source.kind or None,
        source.name or None, finding.path, finding.reason, finding.rule, line, source, column,
    )


def check_document(doc: Document) -> list[ValidationIssue]:
    """Schema and rule issues of one document on its own."""
    if doc.kind not in KINDS:
        return [_issue(doc, Finding("kind", f"unknown kafkaops.io kind {doc.kind!r}", UNKNOWN_KIND))]
    rule_findings = check_rules(doc.kind, doc.body)
    covered = {f.path for f in rule_findings}
    schema_findings = [
        f for f in check_schema(doc.kind, doc.body)
        if f.path not in covered  # a rule says the same thing better
    ]
    return [_issue(doc, f) for f in (*schema_findings, *rule_findings)]


def validate_documents(docs: Sequence[Document]) -> list[ValidationIssue]:
    """Every issue of every document, then the issues across documents. Pure: no I/O."""
    return list(_validate(docs)[0])


def _validate(docs: Sequence[Document]) -> tuple[list[ValidationIssue], dict[Source, Resource]]:
    issues: list[ValidationIssue] = []
    models: dict[Source, Resource] = {}
    for doc in docs:
        own = check_document(doc)
        issues.extend(own)
        if not any(issue.is_error for issue in own):
            models[doc.source] = build_resource(doc)
    clusters = {source: model for source, model in models.items() if isinstance(model, KafkaCluster)}
    for doc, finding in check_set(docs, clusters):
        issues.append(_issue(doc, finding))
    return issues, models


@dataclass(frozen=True)
class ValidatedSet:
    """A batch split into what may be applied and what may not.

    `valid` holds the models of documents without errors, in input order;
    `invalid` maps each rejected document's Source to its issues (warnings
    included); `errors`/`warnings` list every issue, including ones tied to no
    document (a YAML syntax error); `notes` say what loading skipped.
    """

    valid: tuple[Resource, ...]
    invalid: Mapping[Source, tuple[ValidationIssue, ...]]
    errors: tuple[ValidationIssue, ...]
    warnings: tuple[ValidationIssue, ...]
    notes: tuple[LoadNote, ...] = ()
    documents: int = 0
    files: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def issues(self) -> tuple[ValidationIssue, ...]:
        return tuple(sorted(self.errors + self.warnings, key=_issue_order))

    def issues_for(self, source: Source) -> tuple[ValidationIssue, ...]:
        return tuple(i for i in self.issues if i.source == source)

    def clusters(self) -> tuple[KafkaCluster, ...]:
        return tuple(r for r in self.valid if isinstance(r, KafkaCluster))

    def topics(self) -> tuple[KafkaTopic, ...]:
        return tuple(r for r in self.valid if isinstance(r, KafkaTopic))

    def acls(self) -> tuple[KafkaAcl, ...]:
        return tuple(r for r in self.valid if isinstance(r, KafkaAcl))

    def broker_configs(self) -> tuple[KafkaBrokerConfig, ...]:
        return tuple(r for r in self.valid if isinstance(r, KafkaBrokerConfig))

    def users(self) -> tuple[KafkaUser, ...]:
        return tuple(r for r in self.valid if isinstance(r, KafkaUser))

    def client_quotas(self) -> tuple[KafkaClientQuota, ...]:
        return tuple(r for r in self.valid if isinstance(r, KafkaClientQuota))


def _issue_order(issue: ValidationIssue) -> tuple[Any, ...]:
    return (issue.file or "", issue.index if issue.index is not None else -1, issue.severity != Severity.ERROR,
            issue.line or 0, issue.path, issue.rule)


def validate_set(docs: Sequence[Document], load_errors: Iterable[ValidationIssue] = (),
                 notes: Iterable[LoadNote] = (), files: Iterable[str] = ()) -> ValidatedSet:
    """Validate `docs` (plus issues from loading them) into a ValidatedSet."""
    issues, models = _validate(docs)
    issues = [*load_errors, *issues]
    by_source: dict[Source, list[ValidationIssue]] = defaultdict(list)
    for issue in issues:
        if issue.source is not None:
            by_source[issue.source].append(issue)
    rejected = {source for source, items in by_source.items() if any(i.is_error for i in items)}
    return ValidatedSet(
        valid=tuple(models[d.source] for d in docs if d.source in models and d.source not in rejected),
        invalid={source: tuple(by_source[source]) for source in (d.source for d in docs) if source in rejected},
        errors=tuple(sorted((i for i in issues if i.is_error), key=_issue_order)),
        warnings=tuple(sorted((i for i in issues if not i.is_error), key=_issue_order)),
        notes=tuple(notes),
        documents=len(docs),
        files=tuple(files),
    )


def validate_load(result: LoadResult) -> ValidatedSet:
    return validate_set(result.documents, result.errors, result.notes, result.files)


def load_and_validate(paths: Iterable[str | Path]) -> ValidatedSet:
    """Load PATHs (files or directories) and validate everything found: what `kafkaops validate` runs."""
    return validate_load(load_paths(paths))


# --- single custom resources (the operator) ----------------------------------------


class InvalidResourceError(ValueError):
    """A custom resource failed validation; `issues` says why (errors first)."""

    def __init__(self, issues: Sequence[ValidationIssue]) -> None:
        self.issues = tuple(sorted(issues, key=lambda i: i.severity != Severity.ERROR))
        errors = [i for i in self.issues if i.is_error]
        first = errors[0] if errors else None
        super().__init__(f"{first.path}: {first.reason} ({first.rule})" if first else "invalid resource")

    @property
    def reason(self) -> str:
        """The first error's rule: a condition reason."""
        errors = [i for i in self.issues if i.is_error]
        return errors[0].rule if errors else SCHEMA_VIOLATION

    @property
    def message(self) -> str:
        """Every error on one line each: a condition message."""
        return "\n".join(f"{i.path}: {i.reason} ({i.rule})" if i.path else f"{i.reason} ({i.rule})"
                         for i in self.issues if i.is_error)


@dataclass(frozen=True)
class CheckedResource:
    resource: Resource | None
    issues: tuple[ValidationIssue, ...]

    @property
    def errors(self) -> tuple[ValidationIssue, ...]:
        return tuple(i for i in self.issues if i.is_error)

    @property
    def warnings(self) -> tuple[ValidationIssue, ...]:
        return tuple(i for i in self.issues if not i.is_error)


def check_custom_resource(obj: Mapping[str, Any]) -> CheckedResource:
    """Validate one custom-resource body (from Kubernetes) on its own; the model when it has no errors.

    Set rules (duplicates, clusterRef existence) need the whole set and are not run here.
    """
    doc = document_from_custom_resource(obj)
    issues = check_document(doc)
    if any(issue.is_error for issue in issues):
        return CheckedResource(None, tuple(issues))
    return CheckedResource(build_resource(doc), tuple(issues))


def from_custom_resource(obj: Mapping[str, Any]) -> Resource:
    """The model of a custom-resource body; InvalidResourceError (with every issue) if it is invalid."""
    checked = check_custom_resource(obj)
    if checked.resource is None:
        raise InvalidResourceError(checked.issues)
    return checked.resource


__all__ = [
    "CheckedResource",
    "InvalidResourceError",
    "ValidatedSet",
    "check_custom_resource",
    "check_document",
    "from_custom_resource",
    "load_and_validate",
    "validate_documents",
    "validate_load",
    "validate_set",
]

