"""Source (where a resource came from) and Document (a raw kafkaops manifest and its source)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from kafkaops.frozen import frozen


@frozen(order=True)
class Source:
    """Where a resource came from: a file and the 0-based index of the YAML document in it
    (file is None for an object read from Kubernetes), plus the object's kind, namespace and name.
    Every model, issue and outcome carries one so that it can be named."""

    file: str | None
    index: int
    kind: str
    namespace: str | None
    name: str
    # the key of the engine's per-resource maps (ten look-ups per resource in an apply): hashed once,
    # on first use, instead of from a fresh tuple of its five fields every time
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            cached = hash((self.file, self.index, self.kind, self.namespace, self.name))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __reduce__(self) -> tuple[type[Source], tuple[str | None, int, str, str | None, str]]:
        # rebuilt from its fields, hash not kept: a string's hash differs from process to process
        return Source, (self.file, self.index, self.kind, self.namespace, self.name)

    def __str__(self) -> str:
        where = f"{self.file}[{self.index}] " if self.file is not None else ""
        namespace = f"{self.namespace}/" if self.namespace else ""
        return f"{where}{self.kind}/{namespace}{self.name or '<unnamed>'}"


ResourceRef = Source


@frozen(eq=False)
class Document:
    """One kafkaops manifest as loaded, not yet validated.

    `lines` maps field paths (as in ValidationIssue.path) to 1-based line numbers
    when the document came from YAML text, `columns` to 1-based columns (`column`:
    the document's own).
    """

    source: Source
    body: Mapping[str, Any]
    line: int | None = None
    lines: Mapping[str, int] = field(default_factory=dict)
    columns: Mapping[str, int] = field(default_factory=dict)
    column: int | None = None

    @property
    def kind(self) -> str:
        return self.source.kind

    def line_of(self, path: str) -> int | None:
        """The line of `path`, or of its nearest parent that has one."""
        return self.position_of(path)[0]

    def position_of(self, path: str) -> tuple[int | None, int | None]:
        """(line, column) of `path`, or of its nearest parent that has one (editors jump there)."""
        while True:
            if path in self.lines:
                return self.lines[path], self.columns.get(path)
            cut = max(path.rfind("."), path.rfind("["))
            if cut <= 0:
                if path in self.lines:
                    return self.lines[path], self.columns.get(path)
                return self.line, self.column
            path = path[:cut]
