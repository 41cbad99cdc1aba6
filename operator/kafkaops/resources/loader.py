"""Loading kafkaops manifests: YAML files and directories, or custom-resource dicts.

`load_paths` reads files (directories recursively: *.yaml and *.yml, sorted,
hidden directories skipped), splits multi-document files, skips documents of
other API groups with a note, ignores empty documents, and reports YAML syntax
errors and duplicate mapping keys with file and line. It does not validate:
that is validation.py's job. Parsing is libyaml's (CSafeLoader); plain documents are
turned into data and field positions in one walk (yaml_nodes.py).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from kafkaops.frozen import frozen
from kafkaops.resources.documents import Document, Source
from kafkaops.resources.issues import Severity, ValidationIssue, join_path
from kafkaops.resources.kinds import GROUP_VERSION, KINDS, is_kafkaops_api_version
from kafkaops.resources.yaml_nodes import construct

YAML_SUFFIXES = (".yaml", ".yml")

# Rule names of loading problems.
YAML_SYNTAX_ERROR = "YamlSyntaxError"
DUPLICATE_YAML_KEY = "DuplicateYamlKey"
UNKNOWN_KIND = "UnknownKind"
UNSUPPORTED_API_VERSION = "UnsupportedApiVersion"
FILE_NOT_FOUND = "FileNotFound"
UNREADABLE_FILE = "UnreadableFile"

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """The safe loader (libyaml's when available), resolving tags from memory: libyaml composes
    in C but calls this Python resolver for every node, which tries its regular expressions on
    every plain scalar (a tenth of loading a fleet's manifests, by py-spy), although the values
    repeat (`3`, `delete`, a cluster's name). The safe loader has no path resolvers, so a plain
    scalar's tag depends on its text alone and every other node's is its kind's default (the
    resolver is called for every node: mappings and sequences too)."""

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        # BaseResolver.resolve without path resolvers, its branches in the order they are taken
        if kind is yaml.ScalarNode:
            return _plain_scalar_tag(value) if implicit[0] else _STR_TAG
        return _MAP_TAG if kind is yaml.MappingNode else _SEQ_TAG

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass  # path resolvers only (none)

    def ascend_resolver(self) -> None:
        pass


assert not _BaseLoader.yaml_path_resolvers, "the loader's resolver shortcuts assume no path resolvers"
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG, _MAP_TAG, _SEQ_TAG = (_RESOLVER.DEFAULT_SCALAR_TAG, _RESOLVER.DEFAULT_MAPPING_TAG,
                                _RESOLVER.DEFAULT_SEQUENCE_TAG)


@lru_cache(maxsize=16384)
def _plain_scalar_tag(value: str) -> str:
    return _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))


@frozen
class LoadNote:
    """Something skipped on purpose (not an error): a document of another API group, say."""

    file: str
    index: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.index is None else f"{self.file}[{self.index}]"
        return f"{where}: {self.message}"


@frozen
class LoadResult:
    documents: tuple[Document, ...] = ()
    notes: tuple[LoadNote, ...] = ()
    errors: tuple[ValidationIssue, ...] = ()
    files: tuple[str, ...] = field(default=())

    def __add__(self, other: LoadResult) -> LoadResult:
        return LoadResult(
            self.documents + other.documents,
            self.notes + other.notes,
            self.errors + other.errors,
            self.files + other.files,
        )


def find_yaml_files(path: str | Path) -> list[Path]:
    """`path` itself if it is a file, else every *.yaml/*.yml below it, sorted, hidden dirs skipped."""
    root = Path(path)
    if not root.is_dir():
        return [root]
    found = [
        p
        for p in root.rglob("*")
        if p.suffix in YAML_SUFFIXES
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]
    return sorted(found, key=lambda p: p.as_posix())


def load_paths(paths: Iterable[str | Path]) -> LoadResult:
    """Load every kafkaops document under `paths` (files or directories)."""
    parts: list[LoadResult] = []
    seen: set[Path] = set()
    for path in paths:
        if not Path(path).exists():
            parts.append(LoadResult(errors=(_file_issue(str(path), None, None, "no such file or directory",
                                                        FILE_NOT_FOUND),)))
            continue
        for file in find_yaml_files(path):
            resolved = file.resolve()
            if resolved not in seen:
                seen.add(resolved)
                parts.append(load_file(file))
    return LoadResult(
        tuple(doc for part in parts for doc in part.documents),
        tuple(note for part in parts for note in part.notes),
        tuple(error for part in parts for error in part.errors),
        tuple(file for part in parts for file in part.files),
    )


def load_file(path: str | Path) -> LoadResult:
    name = str(path)
    try:
        text = Path(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return LoadResult(errors=(_file_issue(name, None, None, f"cannot read: {exc}", UNREADABLE_FILE),), files=(name,))
    return load_text(text, name)


def load_text(text: str, file: str = "<string>") -> LoadResult:
    """Load the documents of one YAML text, named `file` in sources and issues."""
    documents: list[Document] = []
    notes: list[LoadNote] = []
    errors: list[ValidationIssue] = []
    for index, node, data, (lines, columns), duplicates in _parse(text, file, errors):
        if data is None:
            continue
        line = node.start_mark.line + 1 if node is not None else None
        column = node.start_mark.column + 1 if node is not None else None
        loaded = _classify(data, file, index, line, lines, notes, errors, columns, column)
        if loaded is None:
            continue
        documents.append(loaded)
        for path, key_line, first_line in duplicates:
            errors.append(
                ValidationIssue(
                    Severity.ERROR, file, index, loaded.source.kind, loaded.source.name or None, path,
                    f"duplicate key at line {key_line} (first at line {first_line}): YAML would keep only the last",
                    DUPLICATE_YAML_KEY, key_line, loaded.source, loaded.columns.get(path),
                )
            )
    return LoadResult(tuple(documents), tuple(notes), tuple(errors), (file,))


def document_from_custom_resource(obj: Mapping[str, Any]) -> Document:
    """A Document for a custom-resource body from Kubernetes (file None, index 0)."""
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    kind = obj.get("kind")
    return Document(
        Source(
            None,
            0,
            kind if isinstance(kind, str) else "",
            _str_or_none(metadata.get("namespace")),
            _str_or_none(metadata.get("name")) or "",
        ),
        obj,
    )


def _parse(
    text: str, file: str, errors: list[ValidationIssue]
) -> Iterator[tuple[int, yaml.Node | None, Any, tuple[dict[str, int], dict[str, int]],
                        list[tuple[str, int, int]]]]:
    loader = _Loader(text)
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            plain = construct(node, loader) if node is not None else None
            if plain is not None:
                data, (lines, columns, duplicates) = plain
            else:  # merge keys, aliases, explicit tags: PyYAML's own constructor
                data = loader.construct_document(node)
                lines, columns, duplicates = _line_map(node)
            yield index, node, data, (lines, columns), duplicates
            index += 1
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        reason = f"YAML syntax error at {where}{problem}" + (f" ({context})" if context else "")
        errors.append(_file_issue(file, index, line, reason, YAML_SYNTAX_ERROR, mark.column + 1 if mark else None))
    finally:
        loader.dispose()


def _line_map(node: yaml.Node | None) -> tuple[dict[str, int], dict[str, int], list[tuple[str, int, int]]]:
    """Field path -> 1-based line and column for every mapping key and sequence item of a
    document, and the (path, line, first line) of every mapping key given twice."""
    lines: dict[str, int] = {}
    columns: dict[str, int] = {}
    duplicates: list[tuple[str, int, int]] = []

    def walk(current: yaml.Node, path: str) -> None:
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _MERGE_TAG:
                    child = join_path(path, key_node.value)
                    key_line = key_node.start_mark.line + 1
                    if child in lines:
                        duplicates.append((child, key_line, lines[child]))
                    else:
                        lines[child] = key_line
                        columns[child] = key_node.start_mark.column + 1
                    walk(value_node, child)
        elif isinstance(current, yaml.SequenceNode):
            for i, item in enumerate(current.value):
                child = join_path(path, i)
                if child not in lines:
                    lines[child], columns[child] = item.start_mark.line + 1, item.start_mark.column + 1
                walk(item, child)

    try:
        if node is not None:
            walk(node, "")
    finally:
        walk = None  # type: ignore[assignment]  # it refers to itself: break the cycle (see yaml_nodes.construct)
    return lines, columns, duplicates


def _classify(
    data: Any,
    file: str,
    index: int,
    line: int | None,
    lines: dict[str, int],
    notes: list[LoadNote],
    errors: list[ValidationIssue],
    columns: dict[str, int] | None = None,
    column: int | None = None,
) -> Document | None:
    if not isinstance(data, Mapping):
        notes.append(LoadNote(file, index, f"skipped: a {type(data).__name__}, not a Kubernetes object"))
        return None
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not is_kafkaops_api_version(api_version):
        what = f"{api_version}/{kind}" if api_version or kind else "a document without apiVersion/kind"
        notes.append(LoadNote(file, index, f"skipped: {what} is not a kafkaops.io resource"))
        return None
    metadata = data.get("metadata") if isinstance(data.get("metadata"), Mapping) else {}
    name = _str_or_none(metadata.get("name")) or ""
    namespace = _str_or_none(metadata.get("namespace"))
    kind_text = kind if isinstance(kind, str) else ""
    source = Source(file, index, kind_text, namespace, name)
    if kind_text not in KINDS:
        close = difflib.get_close_matches(kind_text, list(KINDS), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else f" (known: {', '.join(KINDS)})"
        errors.append(
            ValidationIssue(Severity.ERROR, file, index, kind_text or None, name or None, "kind",
                            f"unknown kafkaops.io kind {kind!r}{hint}", UNKNOWN_KIND, lines.get("kind", line), source)
        )
        return None
    if api_version != GROUP_VERSION:
        errors.append(
            ValidationIssue(Severity.ERROR, file, index, kind_text, name or None, "apiVersion",
                            f"unsupported apiVersion {api_version!r}; this kafkaops serves {GROUP_VERSION}",
                            UNSUPPORTED_API_VERSION, lines.get("apiVersion", line), source)
        )
        return None
    return Document(source, data, line, lines, {} if columns is None else columns, column)


def _file_issue(file: str, index: int | None, line: int | None, reason: str, rule: str,
                column: int | None = None) -> ValidationIssue:
    return ValidationIssue(Severity.ERROR, file, index, None, None, "", reason, rule, line, None, column)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
