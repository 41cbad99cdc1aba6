"""ValidationIssue: one problem with one document, named by file, index, field path and rule."""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from kafkaops.frozen import frozen

if TYPE_CHECKING:
    from kafkaops.resources.documents import Source


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@frozen
class ValidationIssue:
    """A problem found in a manifest.

    `path` is the field path (`spec.config.retention.ms`, `spec.acls[2].operations[1]`;
    empty for the document as a whole); `rule` a short CamelCase name that also
    serves as a Kubernetes condition reason. `source` ties the issue to its
    document when there is one (a YAML syntax error has none).
    """

    severity: Severity
    file: str | None
    index: int | None
    kind: str | None
    name: str | None
    path: str
    reason: str
    rule: str
    line: int | None = None
    source: Source | None = field(default=None, compare=False, repr=False)
    column: int | None = None  # 1-based, with `line`: where an editor or a CI annotation jumps to

    @property
    def is_error(self) -> bool:
        return self.severity == Severity.ERROR

    @property
    def location(self) -> str:
        where = self.file or "<object>"
        if self.index is not None:
            where += f"[{self.index}]"
        if self.kind or self.name:
            where += f" {self.kind or '?'}/{self.name or '<unnamed>'}"
        return where

    def __str__(self) -> str:
        middle = f"{self.path}: " if self.path else ""
        return f"{self.location}: {middle}{self.reason} ({self.rule})"

    @property
    def position(self) -> str | None:
        """`file:line:column` (or `file:line`) when the issue has a line, for editors and CI."""
        if self.file is None or self.line is None:
            return None
        return f"{self.file}:{self.line}" + (f":{self.column}" if self.column is not None else "")

    def text(self) -> str:
        """One line, `file:line:column: [index] kind/name: path: reason (Rule)`; str(self) without a line."""
        position = self.position
        if position is None:
            return str(self)
        what = f" {self.kind or '?'}/{self.name or '<unnamed>'}" if self.kind or self.name else ""
        index = f"[{self.index}]" if self.index is not None else ""
        middle = f"{self.path}: " if self.path else ""
        return f"{position}: {index}{what}: {middle}{self.reason} ({self.rule})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": str(self.severity),
            "file": self.file,
            "index": self.index,
            "line": self.line,
            "column": self.column,
            "kind": self.kind,
            "namespace": self.source.namespace if self.source else None,
            "name": self.name,
            "path": self.path,
            "reason": self.reason,
            "rule": self.rule,
        }


@frozen
class Finding:
    """What a rule reports about one document, before it is tied to the document's source."""

    path: str
    reason: str
    rule: str
    severity: Severity = Severity.ERROR


def error(path: str, reason: str, rule: str) -> Finding:
    return Finding(path, reason, rule, Severity.ERROR)


def warning(path: str, reason: str, rule: str) -> Finding:
    return Finding(path, reason, rule, Severity.WARNING)


def join_path(base: str, *parts: str | int) -> str:
    """`join_path("spec", "acls", 2, "operations")` -> `spec.acls[2].operations`."""
    out = base
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    return out
